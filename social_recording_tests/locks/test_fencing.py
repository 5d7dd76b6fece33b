"""Fencing tokens, ownership checks at the backend, and renewals that survive short backend trouble.

Run against a real redis-server and a real SQLite file (see conftest). A stale holder is only kept
from overwriting a newer one if every acquisition's token is larger than all before it, across
processes and across a lock server that lost its memory; and a renewal that fails for a moment
must not throw away the work done under the lease.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from multiprocessing.process import BaseProcess
from pathlib import Path

import pytest
import redis

from social_recording.locks import LockManager, open_lock_manager
from social_recording.locks.sqlite import SqliteLockManager
from social_recording_tests.locks import workers
from social_recording_tests.locks.conftest import SPAWN, Backend
from test_support.sqlite_faults import hold_write_lock

Spawn = Callable[..., BaseProcess]


def test_every_acquisition_gets_a_larger_fence(lm: LockManager) -> None:
    seen: list[int] = []
    for key in ("social-url:https://x.com/i/status/1", "social-url:https://x.com/i/status/2"):
        for _ in range(3):
            with lm.try_hold(key, ttl=5.0) as lease:
                assert lease.held and lease.fence > 0
                seen.append(lease.fence)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_a_lease_not_held_has_no_fence(lm: LockManager) -> None:
    key = "social-record:Mint1"
    with lm.try_hold(key, ttl=5.0) as first, lm.try_hold(key, ttl=5.0) as second:
        assert first.held and not second.held
        assert second.fence == 0
        assert not second.confirm()


def test_fences_increase_across_processes(backend: Backend, spawn: Spawn) -> None:
    """4 processes x 10 acquisitions of one key: 40 distinct tokens, and in each process increasing."""
    key = "social-url:https://example.com/shared"
    start, out = SPAWN.Barrier(4), SPAWN.Queue()
    procs = [spawn(workers.take_fences, backend.url, key, 10, start, out) for _ in range(4)]
    batches = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    every = [f for batch in batches for f in batch]
    assert len(every) == 40 and len(set(every)) == 40
    assert all(batch == sorted(batch) for batch in batches)


def _forget_everything(backend: Backend) -> None:
    """The lock server lost its memory: Redis restarted without persistence, or the file's rows gone."""
    if backend.sqlite_path is None:
        client = redis.Redis.from_url(backend.url)
        try:
            client.flushall()
        finally:
            client.close()
        return
    with closing(sqlite3.connect(backend.sqlite_path, isolation_level=None)) as conn:
        conn.execute("DELETE FROM locks")
        conn.execute("DELETE FROM lock_fence")


def test_a_lock_server_that_forgot_everything_still_hands_out_larger_fences(backend: Backend) -> None:
    manager = backend.manager()
    key = "social-url:https://x.com/i/status/7"
    try:
        for _ in range(5):
            with manager.try_hold(key, ttl=5.0):
                pass
        with manager.try_hold(key, ttl=5.0) as before:
            last = before.fence
        _forget_everything(backend)
        with manager.try_hold(key, ttl=5.0) as after:
            assert after.held
            assert after.fence > last
    finally:
        manager.close()


def test_confirm_asks_the_backend(lm: LockManager, backend: Backend) -> None:
    key = "social-url:https://t.me/somechannel"
    with lm.try_hold(key, ttl=30.0) as lease:
        assert lease.confirm()
        backend.steal(key, "thief")
        # The renewal thread has not run yet (ttl/3 = 10 s): only the backend knows.
        assert not lease.lost
        assert not lease.confirm()
        assert lease.lost
    assert backend.owner_of(key) == "thief"  # leaving did not delete the thief's key
    with lm.try_hold(key, ttl=30.0) as other:
        assert not other.held and not other.confirm()


def test_confirm_is_false_after_delete(lm: LockManager, backend: Backend) -> None:
    key = "social-url:https://github.com/o/r"
    with lm.try_hold(key, ttl=30.0) as lease:
        backend.delete(key)
        assert not lease.confirm()


def test_confirm_is_false_when_the_backend_is_unreachable() -> None:
    from test_support.redis_server import running_redis

    server = running_redis()
    url = server.__enter__()
    stopped = False
    try:
        manager = open_lock_manager(url + "?socket_timeout=0.5&socket_connect_timeout=0.5", outage_s=0.5)
        with manager.try_hold("social-url:https://x.com/i/status/9", ttl=30.0) as lease:
            server.__exit__(None, None, None)
            stopped = True
            assert not lease.confirm()
        manager.close()
    finally:
        if not stopped:
            server.__exit__(None, None, None)


def test_redis_renewal_failures_are_retried_until_the_backend_answers(redis_url: str) -> None:
    """CLIENT PAUSE WRITE blocks the renewal script longer than the client's socket timeout, several
    times in a row; the lease is not lost once the server answers again (keys do not expire while
    writes are paused). The pause ends well before the lease's expiry (margins for a loaded machine:
    one blocked renewal may take ~0.7 s with the client's own reconnect retries)."""
    manager = open_lock_manager(redis_url + "?socket_timeout=0.15")
    admin = redis.Redis.from_url(redis_url)
    key = "social-url:https://x.com/i/status/11"
    try:
        with manager.try_hold(key, ttl=3.0) as lease:
            time.sleep(0.8)  # just before the first renewal (ttl/3 = 1 s)
            admin.execute_command("CLIENT", "PAUSE", "1200", "WRITE")
            time.sleep(3.0)  # the first renewals time out, later ones succeed
            assert not lease.lost, lease.lost_reason
            assert lease.confirm()
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
        manager.close()


def test_redis_renewal_failures_past_the_expiry_lose_the_lease(redis_url: str) -> None:
    manager = open_lock_manager(redis_url + "?socket_timeout=0.15")
    admin = redis.Redis.from_url(redis_url)
    key = "social-url:https://x.com/i/status/12"
    try:
        with manager.try_hold(key, ttl=1.0) as lease:
            admin.execute_command("CLIENT", "PAUSE", "3000", "WRITE")
            deadline = time.monotonic() + 10
            while not lease.lost and time.monotonic() < deadline:
                time.sleep(0.05)
            assert lease.lost
            assert "renewal failed" in (lease.lost_reason or "")
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
        manager.close()


def test_sqlite_renewal_survives_a_write_lock_held_past_the_busy_timeout(tmp_path: Path) -> None:
    path = str(tmp_path / "locks.db")
    manager = SqliteLockManager(path, busy_timeout=0.1)
    key = "social-url:https://youtube.com/watch?v=abc"
    try:
        with manager.try_hold(key, ttl=3.0) as lease:
            time.sleep(0.9)  # just before the first renewal (ttl/3 = 1 s)
            started = threading.Event()
            blocker = threading.Thread(target=hold_write_lock, args=(path, 1.2, started))
            blocker.start()
            assert started.wait(5)
            blocker.join()
            time.sleep(1.2)  # the next renewal lands
            assert not lease.lost, lease.lost_reason
            assert lease.confirm()
    finally:
        manager.close()


@pytest.mark.parametrize("kind", ["redis", "sqlite"])
def test_a_paused_holder_finds_its_key_taken(kind: str, redis_url: str, tmp_path: Path) -> None:
    """Simulates a holder that slept past its TTL (its renewal thread never ran): the key is free,
    a second holder takes it with a larger fence, and the first one's `confirm` says no."""
    url = redis_url if kind == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    first_manager, second_manager = open_lock_manager(url), open_lock_manager(url)
    key = "social-url:https://x.com/i/status/13"
    try:
        with first_manager.try_hold(key, ttl=0.6) as first:
            first_ext = first  # keep a reference; pretend its process is stopped:
            time.sleep(0.05)
            # Stop renewals by expiring the key behind the holder's back, as a pause would.
            if kind == "redis":
                r = redis.Redis.from_url(redis_url)
                r.pexpire(key, 1)
                r.close()
            else:
                with closing(sqlite3.connect(str(tmp_path / "locks.db"), isolation_level=None)) as conn:
                    conn.execute("UPDATE locks SET expires_at = 0 WHERE key = ?", (key,))
            time.sleep(0.05)
            with second_manager.try_hold(key, ttl=5.0) as second:
                assert second.held and second.fence > first_ext.fence
                assert not first_ext.confirm()
                assert second.confirm()
    finally:
        first_manager.close()
        second_manager.close()
