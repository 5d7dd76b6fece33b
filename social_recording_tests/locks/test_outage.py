"""A lock server that stops answering for a moment is waited out (locks/outage.py): taking, probing,
checking and releasing a key, and asking the shared rate limiter, ride through a real redis-server
restarted with its append-only file (and a SQLite file held busy past its busy timeout); past the
bound the error names the backend, never its password."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from social_recording.locks import LockBackendUnavailable, open_lock_manager
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.outbound.limits import Rate, RateLimited
from test_support.redis_server import RedisProcess, restartable_redis

PASSWORD = "outage-pw-s3cr3t"
DOWN_S = 2.0
KEY = "social-record:OutageToken"


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[RedisProcess]:
    with restartable_redis(tmp_path / "redis", password=PASSWORD) as proc:
        yield proc


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # handed to the test
            out["error"] = exc
        out["ended"] = time.monotonic()

    thread = threading.Thread(target=run)
    return thread, out


def _restart_while(server: RedisProcess, fn: Callable[[], Any]) -> dict[str, Any]:
    """Stop the server, call `fn` in a thread while it is down, start it again after DOWN_S.
    `out["waited"]`: the call returned only once the server was started again (an order of events,
    not a duration: a busy machine may start the thread late)."""
    server.stop()
    thread, out = _in_thread(fn)
    thread.start()
    time.sleep(DOWN_S)
    restarting = time.monotonic()
    server.start()
    thread.join(60)
    assert not thread.is_alive()
    if "error" in out:
        raise out["error"]
    out["waited"] = out["ended"] >= restarting
    return out


def test_a_token_lock_taken_while_the_server_restarts_is_waited_for(server: RedisProcess) -> None:
    """The finding: taking a token lock raised ConnectionError and the token failed at once."""
    manager = open_lock_manager(server.url)

    def take() -> bool:
        with manager.try_hold(KEY, ttl=30.0) as lease:
            return lease.held

    out = _restart_while(server, take)
    assert out["value"] is True
    assert out["waited"]
    manager.close()


def test_a_release_sent_during_a_restart_lands_once_the_server_is_back(server: RedisProcess) -> None:
    """The finding: a release that failed left the key blocking re-runs for its TTL."""
    manager = open_lock_manager(server.url)
    holding = manager.try_hold(KEY, ttl=60.0)
    lease = holding.__enter__()
    assert lease.held
    _restart_while(server, lambda: holding.__exit__(None, None, None))
    client = server.client()
    try:
        assert client.exists(KEY) == 0  # released now, not 60 s from now
    finally:
        client.close()
    with manager.try_hold(KEY, ttl=30.0) as again:
        assert again.held
    manager.close()


def test_a_waiter_on_a_held_url_lock_rides_the_restart(server: RedisProcess) -> None:
    """The finding: URLs waiting on a URL lock while Redis was down ended as engine failures."""
    holder, waiter = open_lock_manager(server.url), open_lock_manager(server.url)
    key = "social-url:https://x.com/i/status/77"
    holding = holder.try_hold(key, ttl=60.0)
    assert holding.__enter__().held
    thread, out = _in_thread(lambda: _held_within(waiter, key))
    thread.start()
    time.sleep(0.3)  # the waiter is polling
    server.restart(DOWN_S)
    holding.__exit__(None, None, None)
    thread.join(60)
    assert "error" not in out, out.get("error")
    assert out["value"] is True
    holder.close()
    waiter.close()


def _held_within(manager: Any, key: str) -> bool:
    with manager.hold_within(key, ttl=30.0, wait=30.0) as lease:
        return bool(lease.held)


def test_the_ownership_check_before_a_paid_call_waits_for_the_server(server: RedisProcess) -> None:
    """Before: an unreachable server answered "not ours", so the paid URL was dropped as `lost`."""
    manager = open_lock_manager(server.url)
    with manager.try_hold(KEY, ttl=60.0) as lease:
        out = _restart_while(server, lease.confirm)
        assert out["value"] is True and not lease.lost
    manager.close()


def test_past_the_bound_the_error_names_the_backend_without_its_password(server: RedisProcess) -> None:
    manager = open_lock_manager(server.url, outage_s=0.5)
    server.stop()
    started = time.monotonic()
    with pytest.raises(LockBackendUnavailable) as caught, manager.try_hold(KEY, ttl=30.0):
        pass
    assert time.monotonic() - started >= 0.5
    message = str(caught.value)
    assert f"redis://:***@127.0.0.1:{server.port}/0" in message and "taking social-record:OutageToken" in message
    assert PASSWORD not in message
    manager.close()


def test_a_wrong_password_is_not_waited_for(server: RedisProcess, caplog: pytest.LogCaptureFixture) -> None:
    manager = open_lock_manager(server.url.replace(PASSWORD, "wrong"))
    caplog.set_level(logging.WARNING, logger="social_recording.locks")
    with pytest.raises(Exception) as caught, manager.try_hold(KEY, ttl=30.0):
        pass
    assert not isinstance(caught.value, LockBackendUnavailable)
    # Not taken for an outage: no wait began (its first failure is logged as "did not answer ... waiting").
    assert not [r for r in caplog.records if "did not answer" in r.getMessage()], caplog.text
    manager.close()


def test_the_rate_limiter_waits_out_a_restart_and_then_refuses_naming_the_backend(server: RedisProcess) -> None:
    """The finding: an unreachable limiter failed paid URLs at once. Now the request waits for the
    server; a server gone past the bound refuses it (nothing sent), naming the backend."""
    limiter = open_rate_limiter(server.url, {"twitterapi": (Rate(20, 1),)})
    out = _restart_while(server, lambda: limiter.acquire("twitterapi"))
    assert out["waited"]
    assert limiter.used("twitterapi") == [1]
    limiter.close()
    short = open_rate_limiter(server.url, {"twitterapi": (Rate(20, 1),)}, outage_s=0.5)
    server.stop()
    with pytest.raises(RateLimited) as caught:
        short.acquire("twitterapi")
    assert caught.value.unavailable
    assert f"redis://:***@127.0.0.1:{server.port}/0" in str(caught.value) and PASSWORD not in str(caught.value)
    short.close()


def _hold_write_lock(path: Path, seconds: float, started: threading.Event) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        started.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")


def test_a_sqlite_file_busy_past_its_busy_timeout_is_waited_out(tmp_path: Path) -> None:
    """Replaces "busy means not acquired": a token whose key was free was skipped as `locked_out`
    because the store (same file) wrote for longer than the busy timeout. Now the take waits; a file
    busy past the bound raises, naming it."""
    from social_recording.locks.sqlite import SqliteLockManager

    db = tmp_path / "social.db"
    manager = SqliteLockManager(db, busy_timeout=0.2, outage_s=10.0)
    with manager.try_hold("social-record:Warmup", ttl=1.0) as lease:  # creates the file and the table
        assert lease.held
    started = threading.Event()
    writer = threading.Thread(target=_hold_write_lock, args=(db, 1.5, started))
    writer.start()
    assert started.wait(10)
    with manager.try_hold("social-record:Busy", ttl=5.0) as lease:
        assert lease.held  # after the writer finished, not "held by someone else"
    writer.join()
    short = SqliteLockManager(db, busy_timeout=0.1, outage_s=0.3)
    started.clear()
    writer = threading.Thread(target=_hold_write_lock, args=(db, 2.0, started))
    writer.start()
    assert started.wait(10)
    with pytest.raises(LockBackendUnavailable, match=f"sqlite:///{db}"), short.try_hold("social-record:B", ttl=5.0):
        pass
    writer.join()
    manager.close()
    short.close()


def test_the_backend_and_the_call_are_named_only_when_the_backend_fails_to_answer() -> None:
    """Naming the backend and the call (masking a password, redacting the key) is text nobody reads
    while the backend answers: a holder pays for it only on a failure, and the error still names both."""
    from social_recording.locks.outage import ride_out

    asked: list[str] = []

    def named(text: str) -> Callable[[], str]:
        return lambda: asked.append(text) or text

    assert ride_out(lambda: 7, is_outage=lambda e: True, bound=1.0, backend=named("redis://:***@h:6379/0"),
                    what=named("taking social-url:X")) == 7
    assert asked == []

    def refused() -> int:
        raise ConnectionError("refused")

    clock = iter(float(t) for t in range(100))
    with pytest.raises(LockBackendUnavailable) as caught:
        ride_out(refused, is_outage=lambda e: isinstance(e, ConnectionError), bound=2.0,
                 backend=named("redis://:***@h:6379/0"), what=named("taking social-url:X"),
                 sleep=lambda s: None, clock=lambda: next(clock))
    assert "redis://:***@h:6379/0" in str(caught.value) and "taking social-url:X" in str(caught.value)
    assert set(asked) == {"redis://:***@h:6379/0", "taking social-url:X"}
