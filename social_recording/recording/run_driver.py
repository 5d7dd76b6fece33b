"""The run skeleton every recording run shares: its bounds (deadline, job lock), the bounded pool, the
second look at the tokens it found locked out, and what an interrupt leaves.

Reconcile, retry and the live path differ in their units (a token, a token's URL batch) and in what
they count; the order of the steps and when a run stops starting units are the same, so they live
here once (docs/architecture.md, "Runs tell the truth").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from social_recording.locks.base import Lease
from social_recording.recording._text import kv
from social_recording.recording.job_pool import Interruption, PoolRun, check_max_workers, run_bounded
from social_recording.recording.outcomes import TokenOutcome, TokenStatus
from social_recording.recording.run_state import RunState

log = logging.getLogger("social_recording.recording")

U = TypeVar("U")
R = TypeVar("R")


@dataclass
class RunDriver:
    """One run's bounds, and `drive` to work through its units within them."""

    run: RunState
    max_workers: int
    token_lock_wait: float
    """How long the second look waits for each locked-out token's lock (0: no second look)."""
    deadline: float | None = None
    """Seconds from `entered` after which no unit starts (None: no deadline)."""
    job: Lease | None = None
    """The run's job lock (None: the live path holds none); lost, no unit starts."""
    monotonic: Callable[[], float] = time.monotonic
    entered: float = field(default=-1.0)

    def __post_init__(self) -> None:
        self.max_workers = check_max_workers(self.max_workers)
        if self.entered < 0:
            self.entered = self.monotonic()

    def deadline_reached(self) -> bool:
        return self.deadline is not None and self.monotonic() - self.entered >= self.deadline

    def lock_lost(self) -> bool:
        return self.job is not None and self.job.lost

    def stopped(self) -> bool:
        return self.deadline_reached() or self.lock_lost()

    def drive(
        self,
        units: Sequence[U],
        work: Callable[[U, float], R],
        on_error: Callable[[U, Exception], R],
        *,
        status: Callable[[R], TokenOutcome],
        unit_name: str,
        then: str,
        limit: int | None = None,
    ) -> tuple[PoolRun[R], list[R]]:
        """Run `work(unit, 0.0)` over `units` in order, then `work(unit, token_lock_wait)` once more on
        those whose result (`status`) is LOCKED_OUT, unless the run stopped. An interrupt is reported
        in the run's log as `unit_name` finished / in flight / not started, and `then` what records
        them. Returns the first pass and the results with the second look's in place."""

        def on_interrupt(i: Interruption) -> None:
            self.run.interrupted(i.describe(unit_name, then))

        pool = run_bounded(units, lambda unit: work(unit, 0.0), on_error, max_workers=self.max_workers,
                           limit=limit, deadline_reached=self.deadline_reached, lock_lost=self.lock_lost,
                           on_interrupt=on_interrupt)
        results = pool.results
        locked = [i for i, r in enumerate(results) if status(r).status is TokenStatus.LOCKED_OUT]
        if not locked or self.token_lock_wait <= 0 or self.stopped():
            return pool, results
        log.info(kv(event="locked_out_again", tokens=len(locked), wait_s=self.token_lock_wait))
        second = run_bounded([units[i] for i in locked], lambda unit: work(unit, self.token_lock_wait), on_error,
                             max_workers=self.max_workers, limit=None, deadline_reached=self.stopped,
                             lock_lost=lambda: False, on_interrupt=on_interrupt)
        merged = list(results)
        for i, result in zip(locked, second.results, strict=False):
            merged[i] = result
        return pool, merged
