"""The two sensors. Deterministic run keys from the work item; every evaluation explains itself.

A skip reason names what was checked (the range read, how many tokens, the floor, the back-off),
every evaluation writes its notes to the tick's log (`context.log`), and both cursors are JSON an
operator can read in the UI. Which tokens traded and which elements are due are business rules of
`recording` (`live_feed`, `candidates`); here they become run requests.

No `from __future__ import annotations`: Dagster reads the sensors' resource annotations.
"""

import hashlib
import json
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    JobDefinition,
    RunConfig,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from social_recording.dagster_defs.config import RecordTokensConfig, RetryConfig, TokenRef
from social_recording.dagster_defs.jobs import JOB_TAG
from social_recording.dagster_defs.resources import (
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
)
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL, DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.urls import Platform
from social_recording.recording.candidates import (
    DEFAULT_LIMIT,
    by_status,
    describe_default,
    retry_query,
    select,
)
from social_recording.recording.live_feed import (
    LIVE_INITIAL_LOOKBACK,
    LIVE_MAX_LOOKBACK,
    LIVE_PAGE,
    LiveCursor,
    LiveRangeSource,
    TradedToken,
    scan_traded,
)
from social_recording.store.base import Store

# Dagster's own @sensor decorator passes its beta `owners` parameter to SensorDefinition and warns
# about itself on every load; nothing of ours uses `owners`.
warnings.filterwarnings("ignore", message="Parameter `owners` of initializer", category=Warning)

__all__ = [
    "LIVE_BATCH_SIZE",
    "LIVE_INITIAL_LOOKBACK",
    "LIVE_MAX_LOOKBACK",
    "LIVE_PAGE",
    "LiveCursor",
    "RetryCursor",
    "evaluate_retry_candidates",
    "evaluate_token_flow",
    "make_retry_candidates_sensor",
    "make_token_flow_sensor",
]

LIVE_BATCH_SIZE = 20
LIVE_EVAL_BUDGET_S = 30.0
"""Dagster gives a sensor evaluation 60 s; no new page starts after this many seconds (one tracker
call may take up to ~18 s with its retries)."""
LIVE_MAX_RUNS_PER_TICK = 25
"""At most this many live runs (x LIVE_BATCH_SIZE tokens) per evaluation; the rest waits one tick."""
ACTIVE_RUN_STATUSES = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _at(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts.items())


# --------------------------------------------------------------------------- live


def live_run_key(batch: Sequence[TradedToken]) -> str:
    """From the batch's window (first/last last_transfer_at) and its addresses: the same batch always
    maps to the same key, so a re-evaluation never launches it twice (Dagster drops a known key),
    while a batch with any new token or a new trade gets a new key and is never dropped."""
    stamps = [t.last_transfer_at for t in batch if t.last_transfer_at is not None]
    first = min(stamps).isoformat() if stamps else "none"
    last = max(stamps).isoformat() if stamps else "none"
    return f"live:{first}:{last}:{_digest(sorted(t.address for t in batch))}"


@dataclass
class LiveEvaluation:
    run_requests: list[RunRequest]
    cursor: LiveCursor
    notes: list[str]
    scanned: int = 0
    pages: int = 0
    skip_reason: str = ""
    """Why nothing is launched (empty when runs are), naming what was read."""


def evaluate_token_flow(
    cursor: LiveCursor,
    tracker: LiveRangeSource,
    threshold: int,
    now: datetime,
    *,
    budget_s: float = LIVE_EVAL_BUDGET_S,
    max_runs: int = LIVE_MAX_RUNS_PER_TICK,
    clock: Callable[[], float] = time.monotonic,
) -> LiveEvaluation:
    """Read the live feed from the cursor to `now` and turn what qualifies into run requests of at
    most LIVE_BATCH_SIZE tokens; the cursor moves past exactly the tokens launched (and, after a
    complete read, up to the feed's rescan bound)."""
    scan = scan_traded(cursor, tracker, threshold, now, cap=max_runs * LIVE_BATCH_SIZE, budget_s=budget_s,
                       clock=clock)
    requests: list[RunRequest] = []
    for i in range(0, len(scan.tokens), LIVE_BATCH_SIZE):
        batch = scan.tokens[i : i + LIVE_BATCH_SIZE]
        config = RecordTokensConfig(tokens=[TokenRef(address=t.address, symbol=t.symbol or "") for t in batch])
        requests.append(
            RunRequest(
                run_key=live_run_key(batch),
                run_config=RunConfig(ops={"record_tokens": config}),
                tags={"social_recording/tokens": str(len(batch))},
            )
        )
    new_cursor = scan.cursor_after(cursor, scan.tokens)
    skip = ""
    if not requests:
        skip = (f"no new token with >= {threshold} AF investors traded between {_at(scan.start)} and "
                f"{_at(scan.read_until)}: scanned {scan.scanned} token(s) in {scan.pages} page(s), "
                f"{scan.below_threshold} below the floor, the rest launched before")
    return LiveEvaluation(requests, new_cursor, list(scan.notes), scan.scanned, scan.pages, skip)


def make_token_flow_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="token_flow_sensor",
        job=job,
        minimum_interval_seconds=30,
        default_status=status,
        description="Polls the tracker for freshly traded tokens with enough AF investors and launches "
        f"live_tokens_job per batch of at most {LIVE_BATCH_SIZE} tokens. Cursor: the last trade time "
        "launched (and the tokens launched at exactly that time).",
    )
    def token_flow_sensor(
        context: SensorEvaluationContext, tracker: TrackerResource, policy: RecordingPolicyResource
    ) -> SensorResult:
        cursor = LiveCursor.parse(context.cursor)
        now = datetime.now(UTC)
        result = evaluate_token_flow(cursor, tracker.client(), policy.af_investor_threshold, now)
        for note in result.notes:
            context.log.info(note)
        if not result.run_requests:
            context.log.info(f"{result.skip_reason}; cursor {result.cursor.dump()}")
            return SensorResult(skip_reason=SkipReason(result.skip_reason), cursor=result.cursor.dump())
        context.log.info(f"launching {len(result.run_requests)} live run(s) for "
                         f"{sum(int(r.tags['social_recording/tokens']) for r in result.run_requests)} token(s) "
                         f"(scanned {result.scanned} in {result.pages} page(s)); cursor -> {result.cursor.dump()}")
        return SensorResult(run_requests=result.run_requests, cursor=result.cursor.dump())

    return token_flow_sensor


# --------------------------------------------------------------------------- retry


@dataclass
class RetryCursor:
    """The last launch of retry_candidates_sensor: which selection (its digest) and when."""

    digest: str | None = None
    launched_at: datetime | None = None
    candidates: int = 0

    @classmethod
    def parse(cls, raw: str | None) -> "RetryCursor":
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            at = datetime.fromisoformat(data["launched_at"]) if data.get("launched_at") else None
            return cls(digest=data.get("digest"), launched_at=at, candidates=int(data.get("candidates", 0)))
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()  # an unreadable cursor only means "no launch remembered"

    def dump(self) -> str:
        return json.dumps({"digest": self.digest, "launched_at": self.launched_at.isoformat() if self.launched_at else None,
                           "candidates": self.candidates})


def active_retry_run(context: SensorEvaluationContext, job_name: str) -> str | None:
    """The status of a queued or running retry run, if any: never two at once."""
    records = context.instance.get_run_records(RunsFilter(job_name=job_name, statuses=ACTIVE_RUN_STATUSES), limit=1)
    return records[0].dagster_run.status.value.lower() if records else None


def evaluate_retry_candidates(
    store: Store, cursor: RetryCursor, now: datetime, *, enable_paid: bool, usable_platforms: Collection[Platform]
) -> RunRequest | SkipReason:
    """Launch retry_job when the retry job's own selection (the same query) finds due elements. The
    run key is the selection's digest: it changes whenever the set changes (every recording moves an
    element's `checked_at`), and an unchanged set is launched again once per back-off period, so a
    selection a run could not finish (locks held elsewhere) is not forgotten."""
    query = retry_query(now=now, min_interval=DEFAULT_MIN_INTERVAL, limit=DEFAULT_LIMIT,
                        enable_paid=enable_paid, usable_platforms=usable_platforms)
    found = select(store, query)
    takes = describe_default(enable_paid=enable_paid, usable_platforms=usable_platforms)
    if not found:
        return SkipReason(
            f"nothing is due: the default selection takes {takes}, and none of it was recorded before "
            f"{_at(query.checked_before)} (back-off {DEFAULT_MIN_INTERVAL_MINUTES} min)"
        )
    digest = found.digest
    if (
        cursor.digest == digest
        and cursor.launched_at is not None
        and now - cursor.launched_at < DEFAULT_MIN_INTERVAL
    ):
        return SkipReason(
            f"the same {len(found)} due element(s) ({_counts(by_status(found.candidates))}) were launched at "
            f"{_at(cursor.launched_at)} "
            f"(selection {digest}); launching them again after {DEFAULT_MIN_INTERVAL_MINUTES} min if still due"
        )
    bucket = int(now.timestamp() // DEFAULT_MIN_INTERVAL.total_seconds())
    return RunRequest(
        run_key=f"retry:{digest}:{bucket}",
        run_config=RunConfig(ops={"retry_urls": RetryConfig()}),
        tags={"social_recording/candidate_urls": str(len(found)), JOB_TAG: "retry"},
    )


def make_retry_candidates_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="retry_candidates_sensor",
        job=job,
        minimum_interval_seconds=300,
        default_status=status,
        description="Launches retry_job when its default selection finds due elements (error and pending, "
        "skipped_paid when paid calls are on, unsupported recorded for want of a generator that now exists) "
        "and no retry run is queued or running. Cursor: the last selection launched (its fingerprint) and when.",
    )
    def retry_candidates_sensor(
        context: SensorEvaluationContext,
        store: StoreResource,
        platforms: PlatformsResource,
        policy: RecordingPolicyResource,
    ) -> SensorResult:
        active = active_retry_run(context, job.name)
        if active:
            reason = f"a {job.name} run is already {active} (one at a time); the next evaluation looks again"
            context.log.info(f"{reason}; cursor {context.cursor or 'none'}")
            return SensorResult(skip_reason=SkipReason(reason), cursor=context.cursor)
        cursor = RetryCursor.parse(context.cursor)
        now = datetime.now(UTC)
        result = evaluate_retry_candidates(store.get(), cursor, now, enable_paid=policy.enable_paid,
                                           usable_platforms=platforms.registry().usable_platforms())
        if isinstance(result, SkipReason):
            context.log.info(f"{result.skip_message}; cursor {cursor.dump()}")
            return SensorResult(skip_reason=result, cursor=cursor.dump())
        count = int(result.tags.get("social_recording/candidate_urls", "0"))
        new_cursor = RetryCursor(digest=result.run_key.split(":")[1] if result.run_key else None, launched_at=now,
                                 candidates=count)
        context.log.info(f"launching retry_job for {count} due element(s); cursor -> {new_cursor.dump()}")
        return SensorResult(run_requests=[result], cursor=new_cursor.dump())

    return retry_candidates_sensor
