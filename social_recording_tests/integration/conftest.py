"""Shared by the multi-process tests: worker processes on one store (a SQLite file, or a database on
the session's Mongo-protocol server) and one lock backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from social_recording.domain.models import SocialUrl
from social_recording.store import Store, open_store
from social_recording.store.sqlite import SqliteStore
from test_support.mongo_server import MongoServer

REPO = Path(__file__).resolve().parents[2]
GUARD = 60.0


@dataclass
class Env:
    redis_url: str
    lock_url: str
    store_url: str
    """`sqlite:///<file>` or `mongodb://.../<db>`: what every worker opens."""

    @classmethod
    def sqlite(cls, redis_url: str, lock_url: str, path: Path) -> Env:
        """A SQLite store file, its schema created once before the workers race for it."""
        SqliteStore(path).close()
        return cls(redis_url, lock_url, f"sqlite:///{path}")

    @property
    def store_path(self) -> Path:
        """The SQLite file (the tests of SQLite's own faults)."""
        if not self.store_url.startswith("sqlite:///"):
            raise ValueError(f"not a SQLite store: {self.store_url!r}")
        return Path(self.store_url[len("sqlite:///"):])

    def open_store(self) -> Store:
        return open_store(self.store_url)

    def config(self, name: str, **extra: Any) -> str:
        return json.dumps({
            "name": name,
            "redis_url": self.redis_url,
            "lock_url": self.lock_url,
            "store_url": self.store_url,
            **extra,
        })

    def spawn(self, name: str, **extra: Any) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.Popen(
            [sys.executable, "-m", "social_recording_tests.recording.engine_worker", self.config(name, **extra)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )


@pytest.fixture()
def mongo_store_url(mongo_server: MongoServer) -> Iterator[str]:
    """A fresh database on the session's Mongo-protocol server, its indexes created once before the
    workers race for it; dropped afterwards."""
    with mongo_server.scratch_db() as db_name:
        url = mongo_server.with_db(db_name)
        open_store(url).close()
        yield url


def store_url_of(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> str:
    """`sqlite`: a file under tmp_path (schema created); `mongo`: a database on the session's server."""
    if kind == "sqlite":
        SqliteStore(tmp_path / "store.db").close()
        return f"sqlite:///{tmp_path / 'store.db'}"
    url: str = request.getfixturevalue("mongo_store_url")
    return url


MONGO = pytest.mark.mongo_server
ENV_PARAMS = [
    pytest.param(("redis", "sqlite"), id="redis-sqlite"),
    pytest.param(("sqlite", "sqlite"), id="sqlite-sqlite"),
    pytest.param(("redis", "mongo"), id="redis-mongo", marks=MONGO),
]
"""(lock backend, store): both lock backends on SQLite, and production's pair, Redis locks on the Mongo
store (the SQLite lock manager with a Mongo store is no deployment anyone runs)."""


@pytest.fixture(params=ENV_PARAMS)
def env(request: pytest.FixtureRequest, redis_url: str, tmp_path: Path) -> Iterator[Env]:
    locks, store = request.param
    lock_url = redis_url if locks == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    yield Env(redis_url, lock_url, store_url_of(request, store, tmp_path))


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 0, err[-3000:]
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def wait_until(cond: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=GUARD)
    assert proc.returncode == -signal.SIGKILL


def element(store: Store, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


