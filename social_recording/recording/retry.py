"""Retry: re-attempt URLs that have not converged, fairly and finitely (docs/architecture.md, "Retry").

The URL axis: the candidates come from our own store (zero upstream calls) through the one selection
shared with the sensor (`candidates.py`: oldest first, back-off and limit in the database), and each
goes through `record_urls` (token lock, URL lock, gate inside the lock). The holders of one URL
selected together cost one call: the first records the answer, the others adopt it in the same run.
Raw values whose shortlink failed transiently are resolved again here too.

Two steps, as retry_job runs them: `select_due` (reads the store only), then `record_selection`,
which takes the retry job lock and keeps only the selected elements that are still due and
unchanged, so an element another run recorded in between is not recorded twice.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from social_recording.domain.models import utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import RunIntent, Selected, Why
from social_recording.locks.base import Lease
from social_recording.recording._text import describe_error, kv
from social_recording.recording.candidates import (
    DEFAULT_LIMIT,
    describe_default,
    describe_named,
    retry_query,
    select,
)
from social_recording.recording.job_lock import JobLock
from social_recording.recording.job_pool import (
    ALREADY_RUNNING,
    DEFAULT_MAX_WORKERS,
    STOPPED_BY_DEADLINE,
    STOPPED_BY_DRAINED,
    STOPPED_BY_LIMIT,
    STOPPED_BY_LOCK_LOST,
    check_deadline,
    check_limit,
    check_max_workers,
)
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import emit
from social_recording.store.base import Candidate, Store

log = logging.getLogger("social_recording.recording")

RETRY_LOCK_KEY = "social-reconcile:retry"
REMAINING_PROBE = 1000
"""How far past `limit` a run looks to report `remaining` (a bound, so a huge backlog costs nothing)."""

# Kept importable from here: the retry job's public defaults.
__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_MIN_INTERVAL_MINUTES",
    "RetryOutcome",
    "RetrySelection",
    "RetryService",
]


def _check_addresses(token_addresses: Sequence[str] | None) -> list[str] | None:
    """None or an empty list both mean "every token" (an empty config list is the natural "unset")."""
    if token_addresses is None:
        return None
    if isinstance(token_addresses, str) or not isinstance(token_addresses, Sequence):
        raise ValueError(f"token_addresses must be a list of addresses or None, got {token_addresses!r}")
    for a in token_addresses:
        if not isinstance(a, str) or not a.strip():
            raise ValueError(f"token_addresses must hold non-empty strings, got {a!r}")
    return list(dict.fromkeys(token_addresses)) or None


def _check_interval(min_interval_minutes: object) -> int:
    if (
        not isinstance(min_interval_minutes, int)
        or isinstance(min_interval_minutes, bool)
        or min_interval_minutes < 0
    ):
        raise ValueError(f"min_interval_minutes must be an integer >= 0, got {min_interval_minutes!r}")
    return min_interval_minutes


@dataclass(frozen=True)
class RetrySelection:
    """The due elements one retry run will process, fixed before anything is recorded."""

    statuses: tuple[str, ...]
    """The statuses the selection covers (the default set, or the ones named)."""
    named: tuple[str, ...] | None
    """The statuses as named by the caller; None for the default selection."""
    token_addresses: tuple[str, ...] | None
    min_interval_minutes: int
    limit: int
    selected_at: datetime
    candidates: tuple[Candidate, ...] = ()
    """Oldest first, at most `limit`."""
    remaining: int = 0
    """Due elements past the limit (counted up to REMAINING_PROBE)."""
    held_back: int = 0
    """Elements of the selected statuses still inside their back-off (counted up to REMAINING_PROBE)."""
    takes: str = ""
    """What the selection takes, in words (`describe_default` / `describe_named`)."""

    @property
    def tokens(self) -> int:
        return len({c.address for c in self.candidates})

    def request(self) -> RunIntent:
        """What a run recording this selection was asked for: the statuses named (if any) belong to
        the run, and every element is judged as of the selection."""
        if self.named is None:
            return RunIntent(Why.RETRY, since=self.selected_at)
        return RunIntent(Why.RETRY_NAMED, since=self.selected_at, named=frozenset(FetchStatus(s) for s in self.named))


@dataclass(frozen=True)
class RetryOutcome:
    takes: str
    """What the run's selection takes, in words (`RetrySelection.takes`)."""
    skipped: str | None = None
    """"already running" when another retry run held the job lock for the whole wait (it records the
    selection; this run recorded nothing, and its report says so)."""
    candidate_urls: int = 0
    """Due elements this run selected (at most `limit`)."""
    processed: int = 0
    """URLs handed to the recorder."""
    converged: int = 0
    """Processed URLs whose status changed to an absorbing one (ok, not_found, blocked, invalid,
    exhausted). Staying 0 run after run is the sign retry spins uselessly."""
    locked_out: int = 0
    lost: int = 0
    """URLs whose lock was no longer ours (nothing written, or written after a reported loss)."""
    engine_failures: int = 0
    remaining: int = 0
    """Due elements past this run's limit (counted up to REMAINING_PROBE)."""
    skipped_by_interval: int = 0
    """Elements of the selected statuses the back-off held back (counted up to REMAINING_PROBE)."""
    stopped_by: str | None = None
    unresolved: dict[str, int] = field(default_factory=dict)
    """Raw values tried again: resolved / retrying / dropped / locked_out / lost."""
    url_outcomes: tuple[UrlOutcome, ...] = ()
    """Every URL outcome; empty when the caller asked not to keep them (`keep_url_outcomes=False`)."""
    status_counts: dict[str, int] = field(default_factory=dict)
    job_lock_waited_s: float = 0.0
    """How long the run waited for the retry job's lock (a crashed run's, until it expired)."""
    changed_meanwhile: int = 0
    """Selected elements another run recorded between the selection and this run's recording
    (staged runs only): left as that run recorded them."""

    def metadata(self) -> dict[str, object]:
        return {
            "selection": self.takes,
            "skipped": self.skipped or "",
            "candidate_urls": self.candidate_urls,
            "processed": self.processed,
            "converged": self.converged,
            "locked_out": self.locked_out,
            "lost": self.lost,
            "engine_failures": self.engine_failures,
            "remaining": self.remaining,
            "skipped_by_interval": self.skipped_by_interval,
            "stopped_by": self.stopped_by or "",
            "changed_meanwhile": self.changed_meanwhile,
            "job_lock_waited_s": round(self.job_lock_waited_s, 1),
            **{f"unresolved_{k}": v for k, v in sorted(self.unresolved.items())},
            **{f"urls_{k}": v for k, v in sorted(self.status_counts.items())},
        }


@dataclass(frozen=True)
class RetryService:
    """Retry's two steps over the engine's store and token processor; `clock` dates the selection."""

    store: Store
    processor: TokenProcessor
    job_lock: JobLock
    clock: Callable[[], datetime] = utcnow

    def select_due(
        self,
        *,
        statuses: Collection[FetchStatus | str] | None = None,
        token_addresses: Sequence[str] | None = None,
        limit: int = DEFAULT_LIMIT,
        min_interval_minutes: int = DEFAULT_MIN_INTERVAL_MINUTES,
        now: datetime | None = None,
    ) -> RetrySelection:
        """The first step: the retry selection (the one query the sensor runs too, with this engine's
        spending switches), validated and fixed: oldest first, past the back-off, at most `limit`,
        and how many more are due. `statuses=None` is the default selection (only what can change
        under this configuration). Reads the store only."""
        addresses = _check_addresses(token_addresses)
        checked_limit = check_limit(limit, allow_none=False)
        assert checked_limit is not None
        interval = _check_interval(min_interval_minutes)
        recorder = self.processor.recorder
        at = now if now is not None else self.clock()
        query = retry_query(
            now=at,
            min_interval=timedelta(minutes=interval),
            limit=checked_limit + REMAINING_PROBE,
            statuses=statuses,
            addresses=addresses,
            enable_paid=recorder.enable_paid,
            usable_platforms=recorder.registry.usable_platforms(),
        )
        found = select(self.store, query).candidates
        held_back = self.store.count_held_back(query, REMAINING_PROBE)
        return RetrySelection(
            statuses=tuple(sorted(s.value for s in query.statuses)),
            named=None if statuses is None else tuple(sorted(str(s) for s in query.statuses)),
            token_addresses=None if addresses is None else tuple(addresses),
            min_interval_minutes=interval,
            limit=checked_limit,
            selected_at=at,
            candidates=tuple(found[:checked_limit]),
            remaining=len(found) - min(len(found), checked_limit),
            held_back=held_back,
            takes=describe_default(enable_paid=recorder.enable_paid, usable_platforms=recorder.registry.usable_platforms())
            if statuses is None else describe_named(query.statuses),
        )

    def record_selection(
        self,
        selection: RetrySelection,
        *,
        deadline_seconds: float | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
        run: RunState | None = None,
        keep_url_outcomes: bool = True,
    ) -> RetryOutcome:
        """The second step: under the retry job lock (skipped when another retry run holds it), keep
        the selected elements that are still due and unchanged (one query), record them, then
        resolve kept raw values again. With `keep_url_outcomes=False` the per-URL outcomes are only
        counted (in `run` and in the counters), so a selection of any size costs the same memory."""
        entered = self.job_lock.monotonic()
        if not isinstance(selection, RetrySelection):
            raise ValueError(f"selection must be a RetrySelection, got {selection!r}")
        deadline = check_deadline(deadline_seconds)
        max_workers = check_max_workers(max_workers)
        run = run if run is not None else RunState(timedelta(minutes=selection.min_interval_minutes))
        with self.job_lock.hold(RETRY_LOCK_KEY) as job:
            if not job.held:
                log.info(kv(event="retry_skipped", reason=ALREADY_RUNNING))
                return RetryOutcome(selection.takes, skipped=ALREADY_RUNNING, job_lock_waited_s=job.waited_ms / 1000.0,
                                    candidate_urls=len(selection.candidates),
                                    remaining=selection.remaining + len(selection.candidates))
            current = self._still_due(selection)
            changed = len(selection.candidates) - len(current.candidates)
            if changed:
                log.info(kv(event="retry_changed_meanwhile", elements=changed))
            outcome = self._record_held(current, job, entered, deadline=deadline, max_workers=max_workers,
                                        run=run, keep_url_outcomes=keep_url_outcomes)
        return replace(outcome, candidate_urls=len(selection.candidates), changed_meanwhile=changed)

    def _still_due(self, selection: RetrySelection) -> RetrySelection:
        """The selected elements that the same query still returns with the same last recording."""
        if not selection.candidates:
            return selection
        fresh = self.select_due(
            statuses=selection.named,
            token_addresses=sorted({c.address for c in selection.candidates}),
            limit=len(selection.candidates) + REMAINING_PROBE,
            min_interval_minutes=selection.min_interval_minutes,
        )
        unchanged = {(c.address, c.url, c.checked_at) for c in fresh.candidates}
        kept = tuple(c for c in selection.candidates if (c.address, c.url, c.checked_at) in unchanged)
        return replace(selection, candidates=kept)

    def _record_held(
        self,
        selection: RetrySelection,
        job: Lease,
        entered: float,
        *,
        deadline: float | None,
        max_workers: int,
        run: RunState,
        keep_url_outcomes: bool,
    ) -> RetryOutcome:
        selected = selection.candidates
        run.ask(selection.request())
        by_token: dict[str, list[Candidate]] = {}
        for c in selected:  # fair order kept: a token's first due element decides its place
            by_token.setdefault(c.address, []).append(c)
        units = list(by_token.items())

        driver = self.job_lock.driver(run, job, entered, max_workers=max_workers, deadline=deadline,
                                       token_lock_wait=self.processor.token_lock_wait)

        def work(unit: tuple[str, list[Candidate]], wait: float) -> _Batch:
            address, candidates = unit
            batch = _Batch(keep_url_outcomes)
            if driver.stopped():
                return batch
            # One token lock for the token's batch; its URLs side by side, one URL lock each. Each
            # element is judged against how the selection saw it, not how the token lock finds it.
            # A token locked out is looked at again at the end (its outcomes not counted yet).
            seen = {c.url: Selected(c.status, c.checked_at) for c in candidates}
            outcomes = self.processor.record_urls(address, list(seen), run, driver.stopped,
                                                   seen, lock_wait=wait, emit_locked_out=wait > 0)
            if wait == 0 and outcomes and all(o.status is EngineOutcome.LOCKED_OUT for o in outcomes):
                batch.locked_out = tuple(outcomes)
                return batch
            for outcome in outcomes:
                batch.add(outcome)
            return batch

        def on_error(unit: tuple[str, list[Candidate]], exc: Exception) -> _Batch:
            address, candidates = unit
            batch = _Batch(keep_url_outcomes)
            for c in candidates:
                batch.add(emit(run, UrlOutcome(address, c.url, None, EngineOutcome.FAILED, False, False, 0.0, 0.0,
                                               describe_error(exc))))
            return batch

        pool, batches = driver.drive(units, work, on_error, status=_Batch.token_status, unit_name="token batch(es)",
                                     then="the next retry run selects their URLs again")
        for batch in batches:  # not looked at again (the run stopped): counted as they were
            batch.count_locked_out(run)
        interval = timedelta(minutes=selection.min_interval_minutes)
        unresolved, cut_raw = self._retry_unresolved(selection.selected_at - interval, selection.limit, run,
                                                     driver.deadline_reached, driver.lock_lost)
        lost = job.lost

        total = _Batch(keep_url_outcomes)
        for batch in batches:
            total.merge(batch)
        processed = total.processed
        cut_in_run = len(selected) - processed
        # Raw values left untried (their turn came after the deadline or the lock's loss) stop the run
        # as much as URLs left unrecorded: "drained" would hide them.
        if pool.stopped_by == STOPPED_BY_LOCK_LOST or (lost and (cut_in_run or cut_raw)):
            stopped_by = STOPPED_BY_LOCK_LOST
        elif cut_in_run or cut_raw:
            stopped_by = STOPPED_BY_DEADLINE
        elif selection.remaining:
            stopped_by = STOPPED_BY_LIMIT
        else:
            stopped_by = STOPPED_BY_DRAINED
        outcome = RetryOutcome(
            selection.takes,
            candidate_urls=len(selected),
            processed=processed,
            converged=total.converged,
            locked_out=total.status_counts.get(str(EngineOutcome.LOCKED_OUT), 0),
            lost=total.lost,
            engine_failures=total.engine_failures,
            remaining=selection.remaining + cut_in_run,
            skipped_by_interval=selection.held_back,
            stopped_by=stopped_by,
            unresolved=unresolved,
            job_lock_waited_s=job.waited_ms / 1000.0,
            url_outcomes=tuple(total.outcomes),
            status_counts=dict(total.status_counts),
        )
        log.info(kv(event="retry_done", **{k: v for k, v in outcome.metadata().items() if not k.startswith("urls_")}))
        return outcome

    def _retry_unresolved(
        self,
        checked_before: datetime,
        limit: int,
        run: RunState,
        deadline_reached: Callable[[], bool],
        lock_lost: Callable[[], bool],
    ) -> tuple[dict[str, int], bool]:
        """Raw values kept because their shortlink failed transiently: resolve them again. Also says
        whether the deadline or the job lock's loss left some of them untried."""
        counts: Counter[str] = Counter()
        for address, value in self.store.select_unresolved(checked_before, limit):
            if deadline_reached() or lock_lost():
                return dict(counts), True
            try:
                counts[self.processor.resolve_unresolved(address, value, run)] += 1
            except Exception as exc:  # a backend failed for this value: the next run tries again
                log.warning(kv(event="unresolved_failed", token=address, field=value.field, error=type(exc).__name__))
                counts["failed"] += 1
        return dict(counts), False


class _Batch:
    """The URL outcomes of one unit (a token's selected URLs): counted, and kept only when asked.
    `locked_out` holds the outcomes of a token found locked out, until the run looks at it again."""

    def __init__(self, keep: bool) -> None:
        self._keep = keep
        self.locked_out: tuple[UrlOutcome, ...] = ()
        self.outcomes: list[UrlOutcome] = []
        self.status_counts: Counter[str] = Counter()
        self.processed = 0
        self.converged = 0
        self.lost = 0
        self.engine_failures = 0

    def add(self, outcome: UrlOutcome) -> None:
        if self._keep:
            self.outcomes.append(outcome)
        self.status_counts[str(outcome.status)] += 1
        self.processed += 1
        self.converged += int(outcome.converged)
        self.lost += int(outcome.lease_lost or outcome.status == EngineOutcome.LOST)
        self.engine_failures += int(outcome.engine_failure)

    def token_status(self) -> TokenOutcome:
        """The unit as a token outcome (what the second look at locked-out tokens reads)."""
        address = self.locked_out[0].token if self.locked_out else ""
        return TokenOutcome(address, TokenStatus.LOCKED_OUT if self.locked_out else TokenStatus.RECORDED)

    def count_locked_out(self, run: RunState) -> None:
        for outcome in self.locked_out:
            self.add(emit(run, outcome))
        self.locked_out = ()

    def merge(self, other: _Batch) -> None:
        self.outcomes.extend(other.outcomes)
        self.status_counts.update(other.status_counts)
        self.processed += other.processed
        self.converged += other.converged
        self.lost += other.lost
        self.engine_failures += other.engine_failures
