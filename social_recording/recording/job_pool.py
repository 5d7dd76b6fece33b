"""A bounded worker pool that stops STARTING units on a limit, a deadline, a lost job lock or an
interrupt (the run terminated from the UI, Ctrl-C).

Units already started always finish: a token (reconcile) or a token's URL batch (retry) is the unit
of work, and cutting one mid-way would redo finished URLs next time (a paid call included). On an
interrupt the pool reports what it leaves (`on_interrupt`), waits for the units in flight, then lets
the interrupt go on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

MAX_WORKERS_LIMIT = 32
DEFAULT_MAX_WORKERS = 8
"""Tokens in flight per run. A token's URLs run side by side under the per-provider call bounds
(recording/concurrency.py), so 8 tokens of 2–4 URLs keep 16 or more calls in flight."""

JOB_LOCK_TTL_S = 120.0
"""Job locks (reconcile windows, retry) are auto-extended while held: the TTL only decides how long a
crashed run blocks the next one."""
JOB_LOCK_WAIT_S = JOB_LOCK_TTL_S + 30.0
"""How long a run waits for its job lock. A crashed run's lock expires within the TTL of its last
renewal, so a re-execution right after a crash waits it out and does the work; a run still waiting
after this is waiting for a live run that holds the window (docs/architecture.md, "Runs tell the
truth")."""
ALREADY_RUNNING = "already running"
"""The outcome of a run whose job lock stayed held for its whole wait: another live run is doing the
same work. This run recorded nothing and says so (its report fails it)."""

INTERRUPT_POLL_S = 0.5
"""How often the waiting thread wakes to act on an interrupt that another thread received."""

STOPPED_BY_LIMIT = "limit"
STOPPED_BY_DEADLINE = "deadline"
STOPPED_BY_DRAINED = "drained"
STOPPED_BY_LOCK_LOST = "lock_lost"


@dataclass(frozen=True)
class Interruption:
    """Where an interrupted pool stood: units finished, in flight (finishing now), never started."""

    finished: int
    in_flight: int
    not_started: int

    def describe(self, units: str, then: str) -> str:
        """The run-log line: what the interrupted run did, what it finishes, what it leaves, and who
        picks that up (`then`)."""
        return (f"run interrupted (terminated or stopped): {self.finished} {units} finished, {self.in_flight} "
                f"in flight finish and are written before the run stops, {self.not_started} not started: {then}")


@dataclass(frozen=True)
class PoolRun(Generic[R]):
    results: list[R]
    """In unit order, one per started unit."""
    started: int
    stopped_by: str


def check_max_workers(max_workers: object) -> int:
    if not isinstance(max_workers, int) or isinstance(max_workers, bool) or not 1 <= max_workers <= MAX_WORKERS_LIMIT:
        raise ValueError(f"max_workers must be an integer in 1..{MAX_WORKERS_LIMIT}, got {max_workers!r}")
    return max_workers


def check_deadline(deadline_seconds: object) -> float | None:
    if deadline_seconds is None:
        return None
    if (
        not isinstance(deadline_seconds, int | float)
        or isinstance(deadline_seconds, bool)
        or not deadline_seconds > 0
    ):
        raise ValueError(f"deadline_seconds must be a number > 0 or None, got {deadline_seconds!r}")
    return float(deadline_seconds)


def check_limit(limit: object, *, allow_none: bool) -> int | None:
    if limit is None and allow_none:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"limit must be an integer >= 1{' or None' if allow_none else ''}, got {limit!r}")
    return limit


def run_bounded(
    units: Sequence[T],
    work: Callable[[T], R],
    on_error: Callable[[T, Exception], R],
    *,
    max_workers: int,
    limit: int | None,
    deadline_reached: Callable[[], bool],
    lock_lost: Callable[[], bool],
    on_interrupt: Callable[[Interruption], None] | None = None,
) -> PoolRun[R]:
    """Run `work` over `units` with at most `max_workers` in flight, starting units in order."""
    results: dict[int, R] = {}
    running = _Running()

    def tracked(unit: T) -> R:
        with running.one():
            return work(unit)

    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="recording")
    try:
        stopped_by, next_index = _drive(units, tracked, on_error, pool, results, max_workers=max_workers,
                                        limit=limit, deadline_reached=deadline_reached, lock_lost=lock_lost)
    except BaseException as exc:
        # An interrupt reaches the thread that waits here, possibly inside `submit`, where the
        # executor may not yet know the thread it was starting: so queued units are cancelled and the
        # units that started are waited for by their own count, not by the executor's shutdown.
        pool.shutdown(wait=False, cancel_futures=True)
        if on_interrupt is not None and not isinstance(exc, Exception):
            with contextlib.suppress(Exception):  # the report must not replace the interrupt
                on_interrupt(running.interruption(len(units)))
        running.wait_idle()
        pool.shutdown(wait=True)  # and a unit its thread had taken but not yet begun
        raise
    pool.shutdown(wait=True)
    return PoolRun([results[i] for i in sorted(results)], next_index, stopped_by)


class _Running:
    """How many units are running and have finished, counted by the units themselves."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._finished = 0

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        with self._cond:
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._finished += 1
                self._cond.notify_all()

    def interruption(self, total: int) -> Interruption:
        with self._cond:
            return Interruption(finished=self._finished, in_flight=self._running,
                                not_started=total - self._finished - self._running)

    def wait_idle(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._running == 0)


def _drive(
    units: Sequence[T],
    work: Callable[[T], R],
    on_error: Callable[[T, Exception], R],
    pool: ThreadPoolExecutor,
    results: dict[int, R],
    *,
    max_workers: int,
    limit: int | None,
    deadline_reached: Callable[[], bool],
    lock_lost: Callable[[], bool],
) -> tuple[str, int]:
    """Start units in order while none of the stops applies; collect results; (stopped_by, started)."""
    stopped_by = STOPPED_BY_DRAINED
    next_index = 0
    stopping = False
    inflight: dict[Future[R], int] = {}
    while True:
        while not stopping and len(inflight) < max_workers and next_index < len(units):
            if limit is not None and next_index >= limit:
                stopped_by, stopping = STOPPED_BY_LIMIT, True
            elif deadline_reached():
                stopped_by, stopping = STOPPED_BY_DEADLINE, True
            elif lock_lost():
                stopped_by, stopping = STOPPED_BY_LOCK_LOST, True
            else:
                inflight[pool.submit(work, units[next_index])] = next_index
                next_index += 1
        if not inflight:
            return stopped_by, next_index
        # A bounded wait: a signal handled by a worker thread is only acted on by this thread once it
        # wakes, and a terminated run should stop starting units within a second, not after a unit.
        done, _ = wait(list(inflight), timeout=INTERRUPT_POLL_S, return_when=FIRST_COMPLETED)
        for fut in done:
            index = inflight.pop(fut)
            try:
                results[index] = fut.result()
            except Exception as exc:  # work() should not raise; keep the run going if it does
                results[index] = on_error(units[index], exc)
