"""How a recording job holds its job lock and starts its run: reconcile (one lock per window) and
retry (one lock in all) are built the same way, so the lock's TTL, its wait and the clock that
measures the run's deadline are one object they both take (docs/architecture.md, "Runs tell the
truth")."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from social_recording.domain.bounds import at_least
from social_recording.locks.base import Lease, LockManager
from social_recording.recording.job_pool import JOB_LOCK_TTL_S, JOB_LOCK_WAIT_S
from social_recording.recording.run_driver import RunDriver
from social_recording.recording.run_state import RunState


@dataclass(frozen=True)
class JobLock:
    """A job's lock, waited for: a run re-executed right after a crash waits for the crashed run's
    lock to expire and then does the work, instead of skipping it."""

    locks: LockManager
    ttl: float = JOB_LOCK_TTL_S
    wait: float = JOB_LOCK_WAIT_S
    monotonic: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        at_least("job_lock_wait", self.wait, 0, "seconds")

    def hold(self, key: str) -> AbstractContextManager[Lease]:
        return self.locks.hold_within(key, self.ttl, self.wait)

    def driver(self, run: RunState, job: Lease, entered: float, *, max_workers: int, token_lock_wait: float,
               deadline: float | None) -> RunDriver:
        """The run's driver under the held lock, its deadline counted from `entered`."""
        return RunDriver(run, max_workers, token_lock_wait, deadline=deadline, job=job,
                         monotonic=self.monotonic, entered=entered)
