"""The retry schedule and the two sensors (DESIGN §7). Deterministic run keys from the work item."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from dagster import (
    DagsterRunStatus,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    JobDefinition,
    RunConfig,
    RunRequest,
    RunsFilter,
    ScheduleDefinition,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from social_recording.dagster_defs.config import RecordTokensConfig, RetryConfig, TokenRef
from social_recording.dagster_defs.resources import RecordingPolicyResource, StoreResource, TrackerResource
from social_recording.domain.policy import backoff_passed
from social_recording.domain.status import RETRYABLE

LIVE_BATCH_SIZE = 20
LIVE_INITIAL_LOOKBACK = timedelta(hours=1)
LIVE_PAGE = timedelta(hours=6)
LIVE_EVAL_BUDGET_S = 45.0
"""Dagster gives a sensor evaluation 60 s; stop paging well before that."""
LIVE_MAX_RUNS_PER_TICK = 50
RETRY_MIN_INTERVAL = timedelta(minutes=60)
RETRY_SENSOR_SCAN_LIMIT = 5000
ACTIVE_RUN_STATUSES = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


def default_status(env: str) -> tuple[DefaultScheduleStatus, DefaultSensorStatus]:
    """Only prod starts RUNNING: nothing spends money in dev by accident (DESIGN §7)."""
    if env == "prod":
        return DefaultScheduleStatus.RUNNING, DefaultSensorStatus.RUNNING
    return DefaultScheduleStatus.STOPPED, DefaultSensorStatus.STOPPED


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
    def parse(cls, raw: str | None) -> LiveCursor:
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            ts = datetime.fromisoformat(data["ts"]) if data.get("ts") else None
            if ts is not None and ts.tzinfo is None:
                ts = ts.replace(tzinfo=UTC)
            return cls(ts=ts, at_ts=sorted(str(a) for a in data.get("at_ts", [])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"token_flow_sensor cursor is not valid JSON {{ts, at_ts}}: {raw!r}") from exc

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


def live_run_key(batch: list[Any]) -> str:
    """Built from the batch's addresses and its window (first/last last_transfer_at): the same
    batch always maps to the same key, so a re-evaluation never launches twice."""
    first = min(t.last_transfer_at for t in batch).isoformat()
    last = max(t.last_transfer_at for t in batch).isoformat()
    return f"live:{first}:{last}:{_digest(sorted(t.address for t in batch))}"


def evaluate_token_flow(
    cursor: LiveCursor,
    tracker: TrackerResource,
    threshold: int,
    now: datetime,
    *,
    budget_s: float = LIVE_EVAL_BUDGET_S,
    clock: Any = time.monotonic,
) -> tuple[list[RunRequest], LiveCursor, list[str]]:
    """Page the tracker from the cursor to now; return run requests, the advanced cursor and notes."""
    client = tracker.client()
    started = clock()
    start = cursor.ts or (now - LIVE_INITIAL_LOOKBACK)
    notes: list[str] = []
    fresh: dict[str, Any] = {}
    page_start = start
    while page_start < now:
        if clock() - started > budget_s:
            notes.append(f"evaluation budget used; paged up to {page_start.isoformat()}")
            break
        page_end = min(page_start + LIVE_PAGE, now)
        for t in client.tokens_in_range(page_start, page_end):
            if t.investor_count < threshold or cursor.already_launched(t.address, t.last_transfer_at):
                continue
            prev = fresh.get(t.address)
            if prev is None or t.last_transfer_at > prev.last_transfer_at:
                fresh[t.address] = t
        page_start = page_end
    ordered = sorted(fresh.values(), key=lambda t: (t.last_transfer_at, t.address))
    requests: list[RunRequest] = []
    new_cursor = LiveCursor(cursor.ts, list(cursor.at_ts))
    for i in range(0, len(ordered), LIVE_BATCH_SIZE):
        if len(requests) >= LIVE_MAX_RUNS_PER_TICK:
            notes.append(f"{len(ordered) - i} tokens left for the next tick")
            break
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
            new_cursor.advance(t.address, t.last_transfer_at)
    return requests, new_cursor, notes


def make_token_flow_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="token_flow_sensor",
        job=job,
        minimum_interval_seconds=30,
        default_status=status,
        description="Polls the tracker for freshly traded tokens and launches live_tokens_job per batch.",
    )
    def token_flow_sensor(
        context: SensorEvaluationContext, tracker: TrackerResource, policy: RecordingPolicyResource
    ) -> SensorResult | SkipReason:
        cursor = LiveCursor.parse(context.cursor)
        now = datetime.now(UTC)
        requests, new_cursor, notes = evaluate_token_flow(cursor, tracker, policy.af_investor_threshold, now)
        for note in notes:
            context.log.info(note)
        if not requests:
            since = cursor.ts.isoformat() if cursor.ts else (now - LIVE_INITIAL_LOOKBACK).isoformat()
            return SkipReason(f"no new tokens with >= {policy.af_investor_threshold} AF investors since {since}")
        return SensorResult(run_requests=requests, cursor=new_cursor.dump())

    return token_flow_sensor


# --------------------------------------------------------------------------- retry


def retry_candidates(store: StoreResource, now: datetime) -> list[tuple[str, str, int, str | None]]:
    """(token, url, attempts, attempted_at) of retryable URLs past their back-off."""
    out: list[tuple[str, str, int, str | None]] = []
    docs = store.get().find_tokens_by_url_statuses(RETRYABLE, None, RETRY_SENSOR_SCAN_LIMIT)
    for doc in docs:
        for el in doc.social_urls:
            if el.status in RETRYABLE and backoff_passed(el.attempted_at, now, RETRY_MIN_INTERVAL):
                stamp = el.attempted_at.isoformat() if el.attempted_at else None
                out.append((doc.address, el.url, el.attempts, stamp))
    return out


def make_retry_candidates_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="retry_candidates_sensor",
        job=job,
        minimum_interval_seconds=300,
        default_status=status,
        description="Launches retry_job when URLs past their back-off exist and no retry run is active.",
    )
    def retry_candidates_sensor(context: SensorEvaluationContext, store: StoreResource) -> RunRequest | SkipReason:
        active = context.instance.get_run_records(RunsFilter(job_name="retry_job", statuses=ACTIVE_RUN_STATUSES), limit=1)
        if active:
            return SkipReason(f"a retry run is already {active[0].dagster_run.status.value.lower()}")
        candidates = retry_candidates(store, datetime.now(UTC))
        if not candidates:
            return SkipReason("no retryable URL is past its back-off")
        # The key changes only when the candidates change (a new attempt stamps attempted_at), so a
        # set that a retry cannot move (e.g. unsupported discord links) launches once, not forever.
        return RunRequest(
            run_key=f"retry:{_digest(sorted(candidates))}",
            run_config=RunConfig(ops={"retry_urls": RetryConfig()}),
            tags={"social_recording/candidate_urls": str(len(candidates))},
        )

    return retry_candidates_sensor


def make_retry_schedule(job: JobDefinition, status: DefaultScheduleStatus) -> ScheduleDefinition:
    return ScheduleDefinition(
        name="retry_schedule",
        job=job,
        cron_schedule="0 * * * *",
        execution_timezone="UTC",
        default_status=status,
        run_config=RunConfig(ops={"retry_urls": RetryConfig()}),
        description="Hourly retry with the default statuses (error, unsupported, skipped_paid, pending).",
    )
