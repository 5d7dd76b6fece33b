"""Convergence in numbers: what the store holds, what one run did, and the health checks.

Operators need to see, without opening runs one by one, how many URLs are `ok`, failing, stuck or
`exhausted`, and whether that is getting better. This module computes those figures and the checks
from the Store protocol and a run's counters, in plain Python: the Dagster layer turns them into
asset observations and asset checks, the status command into text and JSON.

The checks, and why each bound is what it is:

- **stuck `pending`**: a `pending` element is created right before its token's URLs are recorded,
  so a healthy one is younger than the run recording it. One older than `STUCK_PENDING_AFTER`
  outlived its run, and the retry job, which takes never-recorded elements first, has not reached it.
- **starvation**: an element the default retry selection would take, due for more than
  `STARVED_AFTER_CYCLES` retry cycles past its back-off, means the retry job is not keeping up (or
  not running). The same selection rules as the retry job (`candidates.retry_query`) decide what
  counts, so what the retry deliberately leaves alone (no generator, paid calls off) is never flagged.
- **`exhausted` growth**: a URL that spent its call budget is a legitimate outcome, but many at once
  point at a provider outage or a bug burning budgets.
- **paid requests per distinct paid subject** (sandbox only, from its ledger): exactly 1.00 unless a
  payment was made twice for an answer (retries after a transient failure are the URL's call budget).
- **counters match a recount** (the hourly health job only): the figures above are read from counters
  the writes keep; the hourly job recounts and repairs them, and says what differed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import ensure_utc
from social_recording.domain.paid import PaidLedgerFigures as PaidLedgerFigures
from social_recording.domain.paid import paid_ledger_figures as paid_ledger_figures  # the checks' figures
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL, due_by
from social_recording.domain.status import RETRYABLE, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.recording._text import safe_url
from social_recording.recording.candidates import by_status, retry_query
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import URL_LOCK_TTL_S
from social_recording.store.base import (
    CandidateQuery,
    HealthStore,
    SelectionStore,
    WaitingElement,
    WaitingElements,
)
from social_recording.store.counts import CountDrift

RETRY_CYCLE = timedelta(hours=1)
"""How often `retry_schedule` runs (hourly; a test keeps its cron and this equal)."""

LONGEST_RUN = timedelta(hours=2)
"""The longest a recording run is expected to keep an element `pending`. A run records each token's
URLs right after creating them, so a healthy `pending` element lives seconds to minutes; a run that
dies leaves its unrecorded elements to the next hourly retry, which takes never-recorded elements
before any other. Two hours covers a run dying late in a long backfill plus that next retry."""

STUCK_PENDING_AFTER = timedelta(seconds=URL_LOCK_TTL_S) + LONGEST_RUN
"""A `pending` element older than this outlived the run that created it (plus the time a crashed
holder's URL lock blocks the URL) and no retry has recorded it."""

STARVED_AFTER_CYCLES = 2
"""Retry cycles a due element may be left unpicked before it counts as starving: one cycle can be
missed by a run that was skipped (another holds the job lock) or stopped at its limit."""

STARVED_AFTER = DEFAULT_MIN_INTERVAL + STARVED_AFTER_CYCLES * RETRY_CYCLE
"""Given as a run interval (`policy.due_by`): elements due for two retry cycles in which the hourly
retry should have taken them (with the flat back-off: 3 h since the last recording, or since the
creation of a never-recorded one)."""

EXHAUSTED_WINDOW = timedelta(hours=1)
"""The growth check compares with the figure observed at least this long ago."""

EXAMPLES = 5
"""Failing elements named by a check: enough to start looking, short enough to read."""


class Severity(StrEnum):
    """How loudly a failing check speaks (mapped to Dagster's WARN / ERROR)."""

    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True)
class RunFigures:
    """What one run did, from its counters."""

    urls: int = 0
    converged: int = 0
    calls_made: int = 0
    calls_reused: int = 0
    paid_calls: int = 0

    @classmethod
    def of(cls, run: RunState) -> RunFigures:
        return cls(
            urls=run.urls,
            converged=run.converged,
            calls_made=run.attempted,
            calls_reused=run.reused,
            paid_calls=run.paid_requests,
        )


@dataclass(frozen=True)
class StoreFigures:
    """What the store holds right now: elements by status (all nine, zero included) and by platform,
    tokens, objects per collection, first metric points and token links."""

    by_status: Mapping[FetchStatus, int]
    by_platform: Mapping[str, Mapping[FetchStatus, int]]
    tokens: int
    objects: Mapping[ObjectKind, int]
    metrics: int
    links: int

    @classmethod
    def read(cls, store: HealthStore) -> StoreFigures:
        """From the store's counters: one small read whatever the store's size (docs/architecture.md,
        "Health figures")."""
        counts = store.counts()
        by_platform: dict[str, dict[FetchStatus, int]] = {}
        by_status = {s: 0 for s in FetchStatus}
        for (platform, status), n in sorted(counts.by_platform.items()):
            by_platform.setdefault(platform, {s: 0 for s in FetchStatus})[status] += n
            by_status[status] += n
        return cls(
            by_status=by_status,
            by_platform=by_platform,
            tokens=counts.tokens,
            objects={kind: counts.objects.get(kind, 0) for kind in ObjectKind},
            metrics=counts.metrics,
            links=counts.links,
        )

    @property
    def urls(self) -> int:
        return sum(self.by_status.values())

    @property
    def not_converged(self) -> int:
        """Elements a retry may still change (error, unsupported, skipped_paid, pending)."""
        return sum(n for s, n in self.by_status.items() if s in RETRYABLE)


@dataclass(frozen=True)
class Example:
    """One element a check names, fit for logs and the UI (the URL redacted, the detail capped)."""

    token: str
    url: str
    status: str
    platform: str
    waiting_since: str
    attempts: int
    detail: str

    @classmethod
    def of(cls, element: WaitingElement) -> Example:
        return cls(
            token=element.address,
            url=safe_url(element.url),
            status=element.status.value,
            platform=element.platform or "(not canonical)",
            waiting_since=_iso(element.since) + ("" if element.recorded else " (created, never recorded)"),
            attempts=element.attempts,
            detail=safe_url(element.detail or ""),
        )

    def as_row(self) -> dict[str, str | int]:
        return {
            "token": self.token, "url": self.url, "status": self.status, "platform": self.platform,
            "waiting_since": self.waiting_since, "attempts": self.attempts, "detail": self.detail,
        }


@dataclass(frozen=True)
class HealthCheck:
    """One check's verdict: `figures` are numbers to plot, `examples` name what fails it."""

    name: str
    passed: bool
    severity: Severity
    summary: str
    figures: Mapping[str, int | float] = field(default_factory=dict)
    examples: tuple[Example, ...] = ()
    subjects: tuple[str, ...] = ()
    """Paid subjects requested more than once (the ledger check)."""


STUCK_PENDING = "no_stuck_pending"
STARVED_RETRIES = "no_starved_retries"
EXHAUSTED_GROWTH = "exhausted_growth_bounded"
PAID_ONCE = "paid_once_per_subject"
COUNTS_MATCH = "counts_match_recount"


def _iso(value: datetime) -> str:
    return ensure_utc(value).isoformat(timespec="seconds").replace("+00:00", "Z")


def _count_text(found: WaitingElements) -> str:
    return f"at least {found.count}" if found.capped else str(found.count)


def _waiting_figures(found: WaitingElements, now: datetime) -> dict[str, int | float]:
    oldest_h = max(((now - e.since).total_seconds() / 3600 for e in found.oldest), default=0.0)
    return {"elements": found.count, "oldest_hours": round(oldest_h, 2)}


def check_stuck_pending(store: HealthStore, now: datetime, *, after: timedelta = STUCK_PENDING_AFTER) -> HealthCheck:
    """ERROR: nothing at all, not even a failure, is recorded for these URLs, and since the retry job
    takes never-recorded elements before any other, one surviving past the bound means nothing is
    recording them (runs dying, retry stopped, or a stored URL no run can take). Non-canonical URLs
    are included: the retry selection leaves them to this check."""
    query = CandidateQuery(frozenset({FetchStatus.PENDING}), due_by(now, after), EXAMPLES)
    found = store.waiting_elements(query, canonical_only=False)
    bound = hours_text(after)
    if found.count == 0:
        summary = f"no pending element is older than {bound}"
    else:
        summary = (f"{_count_text(found)} pending element(s) older than {bound}: never recorded, and no run "
                   "has reached them since (is retry_schedule running? did runs fail?)")
    return HealthCheck(STUCK_PENDING, found.count == 0, Severity.ERROR, summary, _waiting_figures(found, now),
                       tuple(Example.of(e) for e in found.oldest))


def check_starved_retries(
    store: HealthStore,
    now: datetime,
    *,
    enable_paid: bool,
    usable_platforms: Collection[Platform],
    after: timedelta = STARVED_AFTER,
) -> HealthCheck:
    """WARN: these elements hold a recorded status and will be retried; they are late, not lost.
    It says the retry job is behind (a backlog larger than its limit per run) or not running."""
    query = retry_query(now=now, min_interval=after, limit=EXAMPLES, enable_paid=enable_paid,
                        usable_platforms=usable_platforms)
    found = store.waiting_elements(query)
    late = hours_text(after - DEFAULT_MIN_INTERVAL)
    if found.count == 0:
        summary = f"every element the retry job would take was taken within {late} of coming due"
    else:
        summary = (f"{_count_text(found)} element(s) the default retry selection would take have been due for "
                   f"more than {late} ({STARVED_AFTER_CYCLES} retry cycles): the retry job is behind or not running")
    figures = _waiting_figures(found, now)
    return HealthCheck(STARVED_RETRIES, found.count == 0, Severity.WARN, summary, figures,
                       tuple(Example.of(e) for e in found.oldest))


@dataclass(frozen=True)
class ExhaustedBaseline:
    """An earlier observation of the number of `exhausted` elements."""

    exhausted: int
    at: datetime


def check_exhausted_growth(
    current: int, baseline: ExhaustedBaseline | None, now: datetime, *, max_per_hour: int
) -> HealthCheck:
    """WARN: `exhausted` is a recorded outcome (a dead target, or a budget spent on failures); a
    burst needs a look (a provider outage?) and can be reopened by a retry naming `exhausted`, but
    nothing is lost or paid twice.

    The growth is measured against `baseline` (the caller picks the latest observation at least
    `EXHAUSTED_WINDOW` old, or the earliest one when none is that old) and allowed `max_per_hour`
    per hour of the window, a window shorter than an hour counting as a full hour."""
    if max_per_hour < 0:
        raise ValueError(f"max_per_hour must be >= 0, got {max_per_hour!r}")
    if baseline is None:
        return HealthCheck(EXHAUSTED_GROWTH, True, Severity.WARN,
                           f"{current} exhausted element(s); no earlier observation to compare with yet",
                           {"exhausted": current, "growth": 0, "allowed": max_per_hour, "window_hours": 0.0})
    window_h = max(now - baseline.at, timedelta(0)) / timedelta(hours=1)
    allowed = max_per_hour * max(1.0, window_h)
    growth = current - baseline.exhausted
    passed = growth <= allowed
    since = _iso(baseline.at)
    summary = (f"exhausted grew by {growth} since {since} ({current} now), within the bound of {allowed:g}"
               if passed else
               f"exhausted grew by {growth} since {since} ({current} now), more than the {allowed:g} allowed "
               f"({max_per_hour} per hour): a provider outage or a bug spending call budgets?")
    figures: dict[str, int | float] = {"exhausted": current, "growth": growth, "allowed": round(allowed, 2),
                                       "window_hours": round(window_h, 2)}
    return HealthCheck(EXHAUSTED_GROWTH, passed, Severity.WARN, summary, figures)


def check_paid_once(ledger: PaidLedgerFigures) -> HealthCheck:
    """ERROR: a subject paid for again after it was answered is a payment made twice for one
    answer, the first promise broken (in the sandbox nothing is billed, but the same code pays real
    providers in production). Requests repeated after a transient failure (5xx, 429, 402) are the
    URL's retry budget and are set aside; an explicit retry naming an answered status (one fresh call
    by request) shows here too."""
    distinct = ledger.distinct_subjects
    ratio = (ledger.paid_requests - ledger.retries_after_failure) / distinct if distinct else 1.0
    raw = ledger.paid_requests / distinct if distinct else 1.0
    passed = not ledger.repeated
    subjects = tuple(f"{service} {safe_url(subject)} x{n}" for (service, subject), n in
                     list(ledger.repeated.items())[:EXAMPLES])
    retries = (f"; {ledger.retries_after_failure} more were retries after a transient failure"
               if ledger.retries_after_failure else "")
    if passed:
        summary = (f"{ledger.paid_requests - ledger.retries_after_failure} paid request(s) for {distinct} "
                   f"distinct paid subject(s): {ratio:.2f} per subject{retries}")
    else:
        summary = (f"{len(ledger.repeated)} paid subject(s) paid for again after an answer: {ratio:.2f} paid "
                   f"requests per distinct subject instead of 1.00{retries}")
    figures: dict[str, int | float] = {
        "paid_requests": ledger.paid_requests,
        "distinct_paid_subjects": distinct,
        "paid_requests_per_subject": round(ratio, 2),
        "paid_requests_per_subject_with_retries": round(raw, 2),
        "retries_after_failure": ledger.retries_after_failure,
        "paid_again_after_answer": ledger.after_answer,
    }
    return HealthCheck(PAID_ONCE, passed, Severity.ERROR, summary, figures, subjects=subjects)


def check_counts(drift: CountDrift) -> HealthCheck:
    """WARN: the store's figures are read from counters that every write keeps (docs/architecture.md,
    "Health figures"); this is their hourly recount. A counter that differed was repaired by it: the
    figures shown since the last recount were off by that much (a write made around the store, or on
    MongoDB a process stopped between a write and its counter). One left unrepaired moved while it was
    recounted and is looked at again next hour."""
    diffs = drift.differences
    shown = "; ".join(f"{key} kept {kept}, recounted {recounted}"
                      for key, (kept, recounted) in list(diffs.items())[:EXAMPLES])
    took = f"{drift.recount_seconds:.2f} s"
    if not diffs:
        summary = f"every counter matched the recount ({took})"
    elif drift.unrepaired:
        summary = (f"{len(diffs)} counter(s) differed from the recount ({took}), {len(drift.repaired)} repaired, "
                   f"{len(drift.unrepaired)} moving while recounted (looked at again next hour): {shown}")
    else:
        summary = f"{len(diffs)} counter(s) differed from the recount ({took}) and were repaired: {shown}"
    figures: dict[str, int | float] = {
        "counters_differing": len(diffs),
        "counters_repaired": len(drift.repaired),
        "drift": sum(abs(recounted - kept) for kept, recounted in diffs.values()),
        "recount_seconds": round(drift.recount_seconds, 3),
    }
    return HealthCheck(COUNTS_MATCH, not diffs, Severity.WARN, summary, figures)


def hours_text(value: timedelta) -> str:
    """`2 h 03 min`, `3 h`: how the checks write their bounds."""
    minutes = round(value.total_seconds() / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes % 60 else f"{minutes // 60} h"


# ----------------------------------------------------------------------------- the status command


@dataclass(frozen=True)
class NextRetry:
    """When the retry job next has work: elements due now (counted up to a bound) and, when none
    is, the moment the first one comes due. The hourly schedule's next tick is separate."""

    due_now: int
    due_now_capped: bool
    next_due_at: datetime | None
    next_tick: datetime
    due_by_status: Mapping[str, int] = field(default_factory=dict)
    """The elements due now by status (what the next run really takes; counted up to the bound)."""


DUE_PROBE = 1000
"""The status command counts due elements up to this many."""


def next_tick(now: datetime) -> datetime:
    """The next top of the hour (`retry_schedule` runs at minute 0, UTC)."""
    now = ensure_utc(now)
    return now.replace(minute=0, second=0, microsecond=0) + RETRY_CYCLE


def next_retry(
    store: SelectionStore, now: datetime, *, enable_paid: bool, usable_platforms: Collection[Platform]
) -> NextRetry:
    """What the default retry selection (the schedule's) would take now, and when it next has work."""
    due = store.select_candidates(retry_query(now=now, min_interval=DEFAULT_MIN_INTERVAL, limit=DUE_PROBE,
                                              enable_paid=enable_paid, usable_platforms=usable_platforms))
    next_due: datetime | None = None
    if due:
        next_due = ensure_utc(now)
    else:
        # Every element of the selection, whatever its back-off: the first returned is the oldest.
        far = datetime.max.replace(tzinfo=UTC)
        first = store.select_candidates(retry_query(now=far, min_interval=timedelta(0), limit=1,
                                                    enable_paid=enable_paid, usable_platforms=usable_platforms))
        if first:
            next_due = first[0].due_time(now)
    return NextRetry(len(due), len(due) >= DUE_PROBE, next_due, next_tick(now), by_status(due))


def oldest_waiting(store: HealthStore, now: datetime, limit: int) -> tuple[WaitingElement, ...]:
    """The longest-waiting elements a retry could still change (every retryable status, non-canonical
    URLs included), longest due first, whether due yet or not."""
    query = CandidateQuery(RETRYABLE, datetime.max.replace(tzinfo=UTC), limit)
    return store.waiting_elements(query, canonical_only=False).oldest


def status_rows(figures: StoreFigures) -> Iterable[tuple[str, dict[str, int]]]:
    """(platform, {status: n, ..., "total": n}) per platform, for the status command's table."""
    for platform, counts in sorted(figures.by_platform.items()):
        row = {s.value: counts.get(s, 0) for s in FetchStatus}
        row["total"] = sum(counts.values())
        yield platform, row
