"""One LockManager contract, run against real Redis and a real SQLite file, across OS processes.

Try once and renew while held; wait a bounded time; a lost lease is reported, never silent; the TTL
only bounds how long a dead holder blocks.
Time bounds below are generous guards, not performance assertions.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import pytest

from social_recording.locks import LockManager
from social_recording_tests.locks import workers
from social_recording_tests.locks.conftest import SPAWN, Backend

Spawn = Callable[..., BaseProcess]
GUARD = 20.0  # seconds; only ever hit when something is broken


def wait_until(predicate: Callable[[], bool], timeout: float = GUARD, step: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def start_holder(spawn: Spawn, backend: Backend, key: str, ttl: float, seconds: float) -> tuple[BaseProcess, Any, Any, str]:
    """A child process holding `key`; returns (process, done event, queue, owner) once it holds."""
    ready, done, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    proc = spawn(workers.hold, backend.url, key, ttl, seconds, ready, done, out)
    assert ready.wait(GUARD), "holder process never took the lock"
    tag, owner = out.get(timeout=GUARD)
    assert tag == "held" and owner, "holder process could not take a free key"
    return proc, done, out, owner


def test_satisfies_the_protocol(lm: LockManager) -> None:
    assert isinstance(lm, LockManager)


def test_mutual_exclusion_across_processes(backend: Backend, spawn: Spawn, tmp_path: Path) -> None:
    """4 processes x 50 non-atomic read-modify-write increments under hold_within end at exactly 200."""
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    start = SPAWN.Barrier(4)
    procs = [spawn(workers.increment, backend.url, "social-url:https://x.com/i/status/1", str(counter), 50, start)
             for _ in range(4)]
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    assert int(counter.read_text()) == 200


def test_mutual_exclusion_across_threads_of_one_process(lm: LockManager, tmp_path: Path) -> None:
    """Threads share one manager (one client / connection pool per process) and still exclude."""
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    failures: list[str] = []

    def work() -> None:
        for _ in range(25):
            with lm.hold_within("social-record:So1anaMint", ttl=5.0, wait=60.0) as lease:
                if not lease.held:
                    failures.append("not held")
                    return
                value = int(counter.read_text())
                time.sleep(0.001)
                counter.write_text(str(value + 1))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert failures == []
    assert int(counter.read_text()) == 100


def test_try_hold_gives_up_at_once_and_hold_within_after_wait(backend: Backend, lm: LockManager, spawn: Spawn) -> None:
    key = "social-record:HeldElsewhere"
    proc, done, out, _ = start_holder(spawn, backend, key, ttl=5.0, seconds=GUARD)

    # "At once": one try, no waiting; counted, not timed (a busy machine makes one try slow).
    tries: list[str] = []
    acquire = lm.acquire  # type: ignore[attr-defined]

    def counted(k: str, owner: str, ttl: float) -> int:
        tries.append(k)
        return int(acquire(k, owner, ttl))

    lm.acquire = counted  # type: ignore[attr-defined]
    with lm.try_hold(key, ttl=5.0) as lease:
        assert lease.held is False and not lease
        assert lease.lost is False
    assert tries == [key]
    del lm.acquire  # type: ignore[attr-defined]

    started = time.monotonic()
    with lm.hold_within(key, ttl=5.0, wait=0.5) as lease:
        waited = time.monotonic() - started
        assert lease.held is False  # it gave up
    # It waited its whole `wait` first (a lower bound: a busy machine only waits longer).
    assert lease.waited_ms >= 500.0
    assert waited >= 0.5

    done.set()
    assert out.get(timeout=GUARD) == ("lost", False)
    proc.join(timeout=GUARD)
    assert proc.exitcode == 0
    with lm.try_hold(key, ttl=5.0) as lease:  # released by its holder -> free again
        assert lease.held is True and lease.waited_ms >= 0.0


def test_sigkilled_holder_frees_the_key_after_its_ttl(backend: Backend, lm: LockManager, spawn: Spawn) -> None:
    key = "social-url:https://t.me/killed"
    proc, _, _, owner = start_holder(spawn, backend, key, ttl=1.5, seconds=600.0)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join(timeout=GUARD)
    assert proc.exitcode == -signal.SIGKILL

    # Nobody released it: the key is still the dead holder's until its TTL runs out.
    assert backend.owner_of(key) == owner
    with lm.try_hold(key, ttl=1.5) as lease:
        assert lease.held is False

    with lm.hold_within(key, ttl=1.5, wait=GUARD) as lease:
        assert lease.held is True
        assert backend.owner_of(key) == lease.owner != owner


def test_holder_working_past_its_ttl_keeps_the_lock(backend: Backend, lm: LockManager, spawn: Spawn) -> None:
    """Auto-extension: a live holder keeps the key for 2.5 TTLs; nobody else gets in meanwhile."""
    key = "social-reconcile:reconcile:2026-01-01"
    # TTL 2 s: the extender runs every ttl/3 and tolerates a ~1.3 s scheduling stall on a loaded machine.
    proc, done, out, owner = start_holder(spawn, backend, key, ttl=2.0, seconds=5.0)
    attempts = 0
    result: tuple[str, bool] | None = None
    while result is None:  # the holder keeps the key until we set `done`, so no race at the end
        with lm.try_hold(key, ttl=2.0) as lease:
            attempts += 1
            assert lease.held is False, f"took a key its live holder was still extending (attempt {attempts})"
        if not out.empty():
            result = out.get()
        else:
            time.sleep(0.15)
    assert result == ("lost", False)  # the holder never lost it
    done.set()
    assert attempts >= 5  # we kept trying while the holder worked
    proc.join(timeout=GUARD)
    assert proc.exitcode == 0
    assert backend.owner_of(key) is None  # released on exit
    assert owner


@pytest.mark.parametrize("how", ["deleted", "stolen"])
def test_lease_whose_key_vanished_reports_lost(
    backend: Backend, lm: LockManager, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = f"social-url:https://github.com/o/{how}"
    ttl = 0.9
    caplog.set_level(logging.WARNING, logger="social_recording.locks")
    with lm.try_hold(key, ttl=ttl) as lease:
        assert lease.held and not lease.lost
        if how == "deleted":
            backend.delete(key)
        else:
            backend.steal(key, "thief-owner")
        gone_at = time.monotonic()
        assert wait_until(lambda: lease.lost), "lease never noticed it lost its key"
        noticed_after = time.monotonic() - gone_at
        assert not lease  # bool(lease) is False once lost
        assert lease.lost_reason and "refused" in lease.lost_reason
    # ttl/3 + margin; the guard is loose on purpose (loaded CI), the report prints the real figure
    assert noticed_after < ttl / 3 + 5.0
    assert any(key in r.getMessage() and "lost" in r.getMessage() for r in caplog.records)
    if how == "stolen":
        assert backend.owner_of(key) == "thief-owner"  # release did not delete the thief's key
    else:
        assert backend.owner_of(key) is None


def test_only_the_owner_releases(backend: Backend, lm: LockManager, spawn: Spawn) -> None:
    key = "social-record:OwnedByChild"
    proc, done, out, owner = start_holder(spawn, backend, key, ttl=5.0, seconds=GUARD)
    with lm.try_hold(key, ttl=5.0) as lease:
        assert lease.held is False
    # Leaving a lease that never held must not delete the holder's key.
    assert backend.owner_of(key) == owner
    with lm.try_hold(key, ttl=5.0) as lease:
        assert lease.held is False
    done.set()
    assert out.get(timeout=GUARD) == ("lost", False)
    proc.join(timeout=GUARD)
    assert backend.owner_of(key) is None


def test_locks_are_not_reentrant(backend: Backend, lm: LockManager) -> None:
    key = "social-record:Reentrant"
    with lm.try_hold(key, ttl=5.0) as outer:
        assert outer.held
        with lm.try_hold(key, ttl=5.0) as inner:
            assert inner.held is False
        with lm.hold_within(key, ttl=5.0, wait=0.2) as inner:
            assert inner.held is False
        # The inner leases' exits did not release the outer one.
        assert backend.owner_of(key) == outer.owner
        assert not outer.lost
    assert backend.owner_of(key) is None


def test_exception_in_block_propagates_and_releases(backend: Backend, lm: LockManager) -> None:
    key = "social-url:https://youtube.com/watch?v=boom"
    with pytest.raises(RuntimeError, match="boom"), lm.hold_within(key, ttl=5.0, wait=1.0) as lease:
        assert lease.held
        raise RuntimeError("boom")
    assert backend.owner_of(key) is None
    with lm.try_hold(key, ttl=5.0) as again:
        assert again.held


def test_distinct_keys_do_not_contend(lm: LockManager) -> None:
    with lm.try_hold("social-url:https://x.com/a", ttl=5.0) as a, lm.try_hold("social-url:https://x.com/b", ttl=5.0) as b:
        assert a.held and b.held


@pytest.mark.parametrize(
    ("key", "ttl", "wait"),
    [("", 1.0, 0.0), ("k", 0.0, 0.0), ("k", -1.0, 0.0), ("k", 1.0, -0.5), ("k", float("nan"), 0.0),
     ("k", float("inf"), 0.0), ("k", 1.0, float("inf"))],
)
def test_bad_arguments_name_the_value(lm: LockManager, key: str, ttl: float, wait: float) -> None:
    with pytest.raises(ValueError) as err, lm.hold_within(key, ttl=ttl, wait=wait):
        pass
    assert repr(key) in str(err.value)
