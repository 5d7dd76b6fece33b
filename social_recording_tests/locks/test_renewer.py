"""One renewer per process keeps every held lease alive (locks/extender.py, LeaseRenewer): many
leases at once, each renewed past its TTL, without a thread per lease; a stopped lease is never
renewed again and never reported lost."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack

import pytest

from social_recording.locks import LockManager
from social_recording.locks.base import Lease
from social_recording.locks.extender import RENEW_WORKERS, shared_renewer
from social_recording_tests.locks.conftest import Backend


def test_many_leases_held_past_their_ttl_stay_ours_without_a_thread_each(backend: Backend, lm: LockManager) -> None:
    before = threading.active_count()
    with ExitStack() as stack:
        leases: list[Lease] = [stack.enter_context(lm.try_hold(f"social-url:https://ex{i}.example/", ttl=0.6))
                               for i in range(40)]
        assert all(lease.held for lease in leases)
        time.sleep(1.5)  # two and a half TTLs: only renewals keep them
        assert not [lease.lost_reason for lease in leases if lease.lost]
        assert all(backend.owner_of(lease.key) == lease.owner for lease in leases)
        # One scheduler and at most RENEW_WORKERS senders for the whole process, not one per lease.
        assert threading.active_count() - before <= RENEW_WORKERS + 1
    assert all(backend.owner_of(lease.key) is None for lease in leases)  # released on exit


def test_a_left_lease_is_not_renewed_again(backend: Backend, lm: LockManager) -> None:
    key = "social-record:Left"
    with lm.try_hold(key, ttl=0.5) as first:
        assert first.held
    with lm.try_hold(key, ttl=30.0) as second:  # the key is taken by a new owner right after
        assert second.held
        time.sleep(0.8)  # past the first lease's renewal time: nothing renews or reports it
        assert not first.lost and backend.owner_of(key) == second.owner


def test_the_renewer_of_a_process_is_one_object() -> None:
    assert shared_renewer() is shared_renewer()


def test_the_host_name_is_asked_once_per_process_not_once_per_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from social_recording.locks import extender

    asked: list[str] = []

    def gethostname() -> str:
        asked.append("host")
        return "worker-host"

    monkeypatch.setattr(socket, "gethostname", gethostname)
    monkeypatch.setattr(extender, "_identity", None)
    tokens = {extender.new_owner_token() for _ in range(50)}
    assert len(tokens) == 50 and all(t.startswith("worker-host:") for t in tokens)
    assert asked == ["host"]


def test_a_short_lease_taken_after_long_ones_is_still_renewed_in_time(backend: Backend, lm: LockManager) -> None:
    """The scheduler is woken only when a new lease is the first due: a short lease taken while it
    sleeps until a long one's renewal must be that case, or it expires unrenewed."""
    with ExitStack() as stack:
        for i in range(5):
            assert stack.enter_context(lm.try_hold(f"social-record:Long{i}", ttl=60.0)).held
        time.sleep(0.05)  # the scheduler now sleeps until the first long lease is due (20 s)
        short = stack.enter_context(lm.try_hold("social-record:Short", ttl=0.5))
        assert short.held
        time.sleep(1.3)  # more than two TTLs of the short lease
        assert not short.lost, short.lost_reason
        assert backend.owner_of(short.key) == short.owner


def test_leases_due_later_than_the_first_do_not_wake_the_scheduler() -> None:
    from social_recording.locks.extender import LeaseRenewer

    renewer = LeaseRenewer()
    woken: list[int] = []
    notify = renewer._cond.notify

    def counting(n: int = 1) -> None:
        woken.append(n)
        notify(n)

    renewer._cond.notify = counting  # type: ignore[method-assign]

    class Manager:
        def extend(self, key: str, owner: str, ttl: float) -> bool:
            return True

    now = time.monotonic()
    first = renewer.start(Manager(), Lease("k0", "o", True, fence=1), 60.0, now)  # type: ignore[arg-type]
    later = [renewer.start(Manager(), Lease(f"k{i}", "o", True, fence=1), 60.0, now + i)  # type: ignore[arg-type]
             for i in range(1, 20)]
    assert len(woken) == 1  # only the first lease, the one the scheduler must now wait for
    renewer.start(Manager(), Lease("sooner", "o", True, fence=1), 3.0, now)  # type: ignore[arg-type]
    assert len(woken) == 2
    for entry in (first, *later):
        renewer.stop(entry)
