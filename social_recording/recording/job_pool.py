"""A bounded worker pool that stops STARTING units on a limit, a deadline or a lost job lock.

Units already started always finish: a token (reconcile) or a token's URL batch (retry) is the unit
of work, and cutting one mid-way would redo finished URLs next time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
ALREADY_RUNNING = "already running"
"""The outcome of a run whose job lock is held: skipped, not failed (another run is doing the same work)."""

STOPPED_BY_LIMIT = "limit"
STOPPED_BY_DEADLINE = "deadline"
STOPPED_BY_DRAINED = "drained"
STOPPED_BY_LOCK_LOST = "lock_lost"


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
) -> PoolRun[R]:
    """Run `work` over `units` with at most `max_workers` in flight, starting units in order."""
    results: dict[int, R] = {}
    stopped_by = STOPPED_BY_DRAINED
    next_index = 0
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="recording") as pool:
        inflight: dict[Future[R], int] = {}
        stopping = False
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
                break
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            for fut in done:
                index = inflight.pop(fut)
                try:
                    results[index] = fut.result()
                except Exception as exc:  # work() should not raise; keep the run going if it does
                    results[index] = on_error(units[index], exc)
    return PoolRun([results[i] for i in sorted(results)], next_index, stopped_by)
