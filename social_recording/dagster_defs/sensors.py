"""The retry schedule and the two sensors (DESIGN §7). Deterministic run keys from the work item.

No `from __future__ import annotations`: Dagster reads the sensors' resource annotations.
"""

import hashlib
import json
import time
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

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
from social_recording.recording.candidates import DEFAULT_LIMIT, retry_query, select
from social_recording.store.base import Store
from social_recording.upstream.tracker import TrackedToken

# Dagster's own @sensor decorator passes its beta `owners` parameter to SensorDefinition and warns
# about itself on every load; nothing of ours uses `owners`.
warnings.filterwarnings("ignore", message="Parameter `owners` of initializer", category=Warning)

LIVE_BATCH_SIZE = 20
LIVE_INITIAL_LOOKBACK = timedelta(hours=1)
"""First evaluation ever (no cursor): look this far back; older tokens are reconcile's job."""
LIVE_MAX_LOOKBACK = timedelta(days=2)
"""A cursor older than this (sensor stopped for days) is clamped: the gap is reconcile's job
(daily partitions), and an evaluation must not page through weeks every 30 s."""
LIVE_PAGE = timedelta(hours=6)
"""One tracker range query covers at most this much time, so a long gap is fetched in bounded pages."""
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


# --------------------------------------------------------------------------- live


@dataclass
class LiveCursor:
    """The last `last_transfer_at` launched, plus the addresses launched at exactly that instant
    (so a token sharing the boundary timestamp is neither dropped nor launched twice)."""

    ts: datetime | None = None
    at_ts: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: str | None) -> "LiveCursor":
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            ts = datetime.fromisoformat(data["ts"]) if data.get("ts") else None
            if ts is not None:
                ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
            return cls(ts=ts, at_ts=sorted(str(a) for a in data.get("at_ts", [])))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"token_flow_sensor cursor is not JSON {{ts, at_ts}}: {raw[:200]!r}") from exc

    def dump(self) -> str:
        return json.dumps({"ts": self.ts.isoformat() if self.ts else None, "at_ts": sorted(self.at_ts)})

    def already_launched(self, address: str, last_transfer_at: datetime) -> bool:
        if self.ts is None:
            return False
        return last_transfer_at < self.ts or (last_transfer_at == self.ts and address in self.at_ts)

    def advance(self, address: str, last_transfer_at: datetime) -> None:
        if self.ts is None or last_transfer_at > self.ts:
            self.ts = last_transfer_at
            self.at_ts = [address]
        elif last_transfer_at == self.ts and address not in self.at_ts:
            self.at_ts.append(address)


def live_run_key(batch: Sequence[TrackedToken]) -> str:
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


class LiveRangeSource(Protocol):
    """What the sensor needs of the tracker client (TrackerClient; a fake in unit tests)."""

    def tokens_in_range(self, start: datetime, end: datetime) -> Sequence[TrackedToken]: ...


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
    """Page the tracker from the cursor to `now`; return run requests and the cursor advanced past
    exactly the tokens launched. Stops paging once enough tokens for `max_runs` batches are known
    or the time budget is used; what is left is fetched again next tick from the cursor."""
    started = clock()
    notes: list[str] = []
    floor = now - LIVE_MAX_LOOKBACK
    if cursor.ts is None:
        start = now - LIVE_INITIAL_LOOKBACK
    elif cursor.ts < floor:
        start = floor
        notes.append(f"cursor {cursor.ts.isoformat()} is older than {LIVE_MAX_LOOKBACK}; tokens traded "
                     f"before {floor.isoformat()} are left to reconcile_job")
    else:
        start = cursor.ts
    cap = max_runs * LIVE_BATCH_SIZE
    fresh: dict[str, TrackedToken] = {}
    scanned = pages = 0
    page_start = start
    while page_start < now:
        if pages and clock() - started > budget_s:
            notes.append(f"evaluation budget of {budget_s:g}s used; paged up to {page_start.isoformat()}")
            break
        page_end = min(page_start + LIVE_PAGE, now)
        page = tracker.tokens_in_range(page_start, page_end)
        pages += 1
        scanned += len(page)
        for t in page:
            ts = t.last_transfer_at
            if ts is None or t.investor_count < threshold or cursor.already_launched(t.address, ts):
                continue
            prev = fresh.get(t.address)
            if prev is None or (prev.last_transfer_at is not None and ts > prev.last_transfer_at):
                fresh[t.address] = t
        page_start = page_end
        if len(fresh) >= cap:
            break
    ordered = sorted(fresh.values(), key=lambda t: (t.last_transfer_at, t.address))
    if len(ordered) > cap:
        notes.append(f"{len(ordered) - cap} tokens left for the next evaluation")
        ordered = ordered[:cap]
    requests: list[RunRequest] = []
    new_cursor = LiveCursor(cursor.ts, list(cursor.at_ts))
    for i in range(0, len(ordered), LIVE_BATCH_SIZE):
        batch = ordered[i : i + LIVE_BATCH_SIZE]
        config = RecordTokensConfig(tokens=[TokenRef(address=t.address, symbol=t.symbol or "") for t in batch])
        requests.append(
            RunRequest(
                run_key=live_run_key(batch),
                run_config=RunConfig(ops={"record_tokens": config}),
                tags={"social_recording/tokens": str(len(batch))},
            )
        )
        for t in batch:
            assert t.last_transfer_at is not None
            new_cursor.advance(t.address, t.last_transfer_at)
    return LiveEvaluation(requests, new_cursor, notes, scanned, pages)


def make_token_flow_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="token_flow_sensor",
        job=job,
        minimum_interval_seconds=30,
        default_status=status,
        description="Polls the tracker for freshly traded tokens and launches live_tokens_job per batch "
        f"(<= {LIVE_BATCH_SIZE} tokens). Cursor: the last last_transfer_at launched.",
    )
    def token_flow_sensor(
        context: SensorEvaluationContext, tracker: TrackerResource, policy: RecordingPolicyResource
    ) -> SensorResult | SkipReason:
        cursor = LiveCursor.parse(context.cursor)
        now = datetime.now(UTC)
        result = evaluate_token_flow(cursor, tracker.client(), policy.af_investor_threshold, now)
        for note in result.notes:
            context.log.info(note)
        if not result.run_requests:
            since = (cursor.ts or now - LIVE_INITIAL_LOOKBACK).isoformat()
            return SkipReason(
                f"no new token with >= {policy.af_investor_threshold} AF investors traded since {since} "
                f"({result.scanned} scanned in {result.pages} page(s))"
            )
        context.log.info(f"launching {len(result.run_requests)} live run(s); cursor -> {result.cursor.dump()}")
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
    names = "/".join(sorted(s.value for s in query.statuses))
    if not found:
        return SkipReason(
            f"no {names} element is due: none recorded before {query.checked_before.isoformat(timespec='seconds')} "
            f"(back-off {DEFAULT_MIN_INTERVAL_MINUTES} min); paid calls {'on' if enable_paid else 'off'}, "
            f"usable platforms: {', '.join(sorted(p.value for p in usable_platforms)) or 'none'}"
        )
    digest = found.digest
    if (
        cursor.digest == digest
        and cursor.launched_at is not None
        and now - cursor.launched_at < DEFAULT_MIN_INTERVAL
    ):
        return SkipReason(
            f"the same {len(found)} due element(s) were launched at {cursor.launched_at.isoformat(timespec='seconds')} "
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
        "skipped_paid when paid calls are on, unsupported when a generator now exists) and no retry run is "
        "queued or running.",
    )
    def retry_candidates_sensor(
        context: SensorEvaluationContext,
        store: StoreResource,
        platforms: PlatformsResource,
        policy: RecordingPolicyResource,
    ) -> SensorResult | SkipReason:
        active = active_retry_run(context, job.name)
        if active:
            return SkipReason(f"a retry run is already {active}; the next evaluation looks again")
        cursor = RetryCursor.parse(context.cursor)
        now = datetime.now(UTC)
        result = evaluate_retry_candidates(store.get(), cursor, now, enable_paid=policy.enable_paid,
                                           usable_platforms=platforms.registry().usable_platforms())
        if isinstance(result, SkipReason):
            context.log.info(result.skip_message or "")
            return result
        count = int(result.tags.get("social_recording/candidate_urls", "0"))
        new_cursor = RetryCursor(digest=result.run_key.split(":")[1] if result.run_key else None, launched_at=now,
                                 candidates=count)
        context.log.info(f"launching retry_job for {count} due element(s); cursor -> {new_cursor.dump()}")
        return SensorResult(run_requests=[result], cursor=new_cursor.dump())

    return retry_candidates_sensor
