"""The one place the recording engine is wired: the URL recorder, the token processor, reconcile and
retry over one store, one lock manager and one generator registry. Dagster's resources, the demo,
the benchmarks and the tests all build it here, so every caller records URLs the same way."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.models import utcnow
from social_recording.domain.policy import (
    DEFAULT_BACKOFF,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MIN_INTERVAL,
    Backoff,
)
from social_recording.locks.base import LockManager
from social_recording.locks.spend_budget import SpendBudgets
from social_recording.malloc_arenas import cap_malloc_arenas
from social_recording.platforms.base import GeneratorRegistry
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.job_lock import JobLock
from social_recording.recording.job_pool import JOB_LOCK_TTL_S, JOB_LOCK_WAIT_S
from social_recording.recording.processor import TOKEN_LOCK_TTL_S, TOKEN_LOCK_WAIT_S, TokenProcessor
from social_recording.recording.reconcile import ReconcileService
from social_recording.recording.retry import RetryService
from social_recording.recording.sources import ProfileSource, TokenRangeSource
from social_recording.recording.store_retry import WRITE_RETRY_S
from social_recording.recording.url_recorder import URL_LOCK_TTL_S, URL_LOCK_WAIT_S, UrlRecorder
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import Store


@dataclass(frozen=True)
class Timings:
    """Lock lifetimes and waits. Production keeps the defaults; fault tests shrink them to seconds."""

    url_lock_wait: float = URL_LOCK_WAIT_S
    url_lock_ttl: float = URL_LOCK_TTL_S
    token_lock_ttl: float = TOKEN_LOCK_TTL_S
    token_lock_wait: float = TOKEN_LOCK_WAIT_S
    job_lock_ttl: float = JOB_LOCK_TTL_S
    job_lock_wait: float = JOB_LOCK_WAIT_S
    write_retry_s: float = WRITE_RETRY_S


@dataclass(frozen=True)
class Engine:
    store: Store
    locks: LockManager
    recorder: UrlRecorder
    processor: TokenProcessor
    reconcile: ReconcileService
    retry: RetryService


class _NoRangeSource:
    """For engines that never reconcile (a test, a worker of one path): asking it is a wiring bug."""

    def scan_range(self, start: datetime, end: datetime, keep: object) -> object:
        raise RuntimeError("this engine was built without a tracker range source: it cannot reconcile")


def build_engine(
    store: Store,
    locks: LockManager,
    registry: GeneratorRegistry,
    profiles: ProfileSource,
    *,
    tracker: TokenRangeSource | None = None,
    enable_paid: bool,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    min_interval: timedelta = DEFAULT_MIN_INTERVAL,
    backoff: Backoff = DEFAULT_BACKOFF,
    timings: Timings = Timings(),
    clock: Callable[[], datetime] = utcnow,
    monotonic: Callable[[], float] = time.monotonic,
    recorder_type: Callable[..., UrlRecorder] = UrlRecorder,
    spool: AnswerSpool | None = None,
    spend_budgets: SpendBudgets | None = None,
) -> Engine:
    """Wire the engine. `tracker` is the reconcile's range source (the profile source often is one);
    `clock` dates what is recorded, `monotonic` measures run deadlines; `recorder_type` lets a test
    put a recorder subclass in (same arguments as `UrlRecorder`); `spend_budgets` are asked before
    every new paid request (docs/architecture.md, "Spend budgets"); `spool` keeps paid answers the
    store could not take (answer_spool.py; without it such an answer is lost and its open call counts
    as one failed call). The process's malloc arenas are capped here, before any recording thread
    starts (malloc_arenas.py)."""
    cap_malloc_arenas()
    recorder = recorder_type(
        store, locks, GraphWriter(store, retry_s=timings.write_retry_s), registry,
        enable_paid=enable_paid, max_attempts=max_attempts, url_lock_wait=timings.url_lock_wait,
        url_lock_ttl=timings.url_lock_ttl, clock=clock, spool=spool, backoff=backoff,
        **({"spend_budgets": spend_budgets} if spend_budgets is not None else {}),
    )
    processor = TokenProcessor(store, locks, profiles, recorder, token_lock_ttl=timings.token_lock_ttl,
                               token_lock_wait=timings.token_lock_wait, min_interval=min_interval, clock=clock)
    job_lock = JobLock(locks, ttl=timings.job_lock_ttl, wait=timings.job_lock_wait, monotonic=monotonic)
    range_source: TokenRangeSource = tracker if tracker is not None else _NoRangeSource()  # type: ignore[assignment]
    return Engine(
        store=store,
        locks=locks,
        recorder=recorder,
        processor=processor,
        reconcile=ReconcileService(store, range_source, processor, job_lock),
        retry=RetryService(store, processor, job_lock, clock),
    )
