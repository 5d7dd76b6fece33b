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
