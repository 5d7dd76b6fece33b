"""Engine fixtures: a real SQLite store file and real lock managers (Redis; SQLite where cheap)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from social_recording.locks import open_lock_manager
from social_recording.locks.base import LockManager
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import MemoryCounter, StepClock


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "store.db")
    yield s
    s.close()


@pytest.fixture()
def locks(redis_url: str) -> Iterator[LockManager]:
    """The production lock backend: a real redis-server."""
    manager = open_lock_manager(redis_url)
    yield manager
    manager.close()


@pytest.fixture(params=["redis", "sqlite"])
def any_locks(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LockManager]:
    """Lock-sensitive scenarios run on both backends."""
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = f"sqlite:///{tmp_path / 'locks.db'}"
    manager = open_lock_manager(url)
    yield manager
    manager.close()


@pytest.fixture()
def counter() -> MemoryCounter:
    return MemoryCounter()


@pytest.fixture()
def clock() -> StepClock:
    return StepClock()
