"""A backend that fails under a holder: the lease reports `lost`, logs the key (never a password),
and leaving the block does not raise (the key frees itself after its TTL). Also: a manager used in a
forked child makes its own connections."""

from __future__ import annotations

import logging
import multiprocessing as mp
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import redis

from social_recording.locks import LockManager, open_lock_manager
from test_support.redis_server import running_redis

PASSWORD = "s3cr3t-lock-pw"
GUARD = 20.0


def wait_lost(lease_lost: object, timeout: float = GUARD) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if getattr(lease_lost, "lost", False):
            return True
        time.sleep(0.02)
    return False


def test_redis_going_away_marks_the_lease_lost(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="social_recording.locks")
    key = "social-url:https://x.com/i/status/42"
    server = running_redis()  # a private server we can stop (the shared one must stay up)
    url = server.__enter__()
    stopped = False
    try:
        admin = redis.Redis.from_url(url)
        admin.config_set("requirepass", PASSWORD)
        admin.close()
        authed = url.replace("redis://", f"redis://:{PASSWORD}@")
        manager = open_lock_manager(authed, outage_s=1.0)  # the release is waited for, then given up
        with manager.try_hold(key, ttl=0.9) as lease:
            assert lease.held
            server.__exit__(None, None, None)  # the server dies while we hold the key
            stopped = True
            assert wait_lost(lease), "lease did not notice its backend went away"
            assert lease.lost_reason and "renewal failed" in lease.lost_reason
        manager.close()
    finally:
        if not stopped:
            server.__exit__(None, None, None)
    messages = [r.getMessage() for r in caplog.records]
    assert any(key in m and "lost" in m for m in messages)
    assert any("release failed" in m for m in messages)  # exit did not raise; it logged
    assert all(PASSWORD not in m for m in messages)
    assert PASSWORD not in (lease.lost_reason or "")
    assert PASSWORD not in repr(manager)


def test_sqlite_failing_under_a_holder_marks_the_lease_lost(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="social_recording.locks")
    db = tmp_path / "social.db"
    manager = open_lock_manager(f"sqlite:///{db}")
    key = "social-record:Broken"
    with manager.try_hold(key, ttl=0.9) as lease:
        assert lease.held
        with closing(sqlite3.connect(db, isolation_level=None)) as admin:
            admin.execute("DROP TABLE locks")  # every later statement on it fails
        assert wait_lost(lease)
        assert lease.lost_reason and "no such table" in lease.lost_reason
    messages = [r.getMessage() for r in caplog.records]
    assert any(key in m and "lost" in m for m in messages)
    manager.close()


def _use_in_child(manager: LockManager, key: str, out: Any) -> None:
    with manager.try_hold(key, ttl=2.0) as lease:
        out.put(lease.held)


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
def test_manager_used_after_fork_gets_its_own_connections(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = request.getfixturevalue("redis_url") if kind == "redis" else f"sqlite:///{tmp_path / 'f.db'}"
    manager = open_lock_manager(url)
    with manager.try_hold("social-record:Parent", ttl=2.0) as parent_lease:  # connection made in parent
        assert parent_lease.held
        ctx = mp.get_context("fork")
        out = ctx.SimpleQueue()
        child = ctx.Process(target=_use_in_child, args=(manager, "social-record:Child", out))
        child.start()
        child.join(timeout=GUARD)
        assert child.exitcode == 0
        assert out.get() is True
        # The parent's connection still works after the child used (and dropped) its own.
        with manager.try_hold("social-record:Parent", ttl=2.0) as again:
            assert again.held is False
        with manager.try_hold("social-record:Child", ttl=2.0) as child_key:
            assert child_key.held is True  # the child released it on exit
    manager.close()


def test_a_busy_process_reuses_its_sqlite_lock_connections(tmp_path: Path) -> None:
    """32 threads at once, twice: the second round finds every connection of the first idle in the
    pool instead of opening (and setting up) new ones."""
    import threading

    from social_recording.locks.sqlite import SqliteLockManager

    manager = SqliteLockManager(tmp_path / "locks.db")
    opened: list[int] = []
    original = manager._open

    def counting_open() -> Any:
        opened.append(1)
        return original()

    manager._open = counting_open  # type: ignore[method-assign]

    def hold(barrier: threading.Barrier) -> None:
        with manager._conn() as conn:
            conn.execute("SELECT 1").fetchone()
            barrier.wait(timeout=30)  # all 32 connections in use at once

    for _ in range(2):
        barrier = threading.Barrier(32)
        threads = [threading.Thread(target=hold, args=(barrier,)) for _ in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    manager.close()
    assert len(opened) == 32
