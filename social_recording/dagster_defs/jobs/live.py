"""live_tokens_job: record a batch of freshly traded tokens — its config, stage, graph, job and
`token_flow_sensor`, which polls the tracker and launches a run per batch (docs/architecture.md,
"Live").

The graph `record_tokens` records the batch the sensor launched and reports; run config
`{"ops": {"record_tokens": {"config": {"tokens": [{"address": ..., "symbol": ...}]}}}}`. The
sensor's run keys come from the batch, its skip reasons name what was read, its cursor is JSON an
operator can read; which tokens traded is the business rule of `recording.live_feed`.

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from dagster import (
    Config,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    JobDefinition,
    OpExecutionContext,
    RunConfig,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    op,
    sensor,
)
from pydantic import Field

from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.job_shape import JobConfig, one_node_job, staged_graph
from social_recording.dagster_defs.reporting import RecordedRun
from social_recording.dagster_defs.resources import RecordingPolicyResource, TrackerResource
from social_recording.dagster_defs.sensor_answer import sensor_answer
from social_recording.dagster_defs.sensor_interval import live_minimum_interval
from social_recording.dagster_defs.stages import (
    CallBounds,
    Recorded,
    default_status,
    record_stage,
    seconds,
    stage_config,
    workers_field,
)
from social_recording.recording.engine import Engine
from social_recording.recording.live_feed import (
    LIVE_INITIAL_LOOKBACK,
    LIVE_MAX_LOOKBACK,
    LIVE_PAGE,
    LiveCursor,
    LiveRangeSource,
    TradedToken,
    scan_traded,
)
from social_recording.recording.log_line import kv_fields
from social_recording.recording.outcomes import TokenOutcome, TokenStatus
from social_recording.recording.run_state import RunState
from social_recording.settings import LIVE_POLL_SECONDS, Settings

__all__ = [
    "LIVE_BATCH_SIZE",
    "LIVE_INITIAL_LOOKBACK",
    "LIVE_MAX_LOOKBACK",
    "LIVE_PAGE",
    "LiveCursor",
    "evaluate_token_flow",
    "live_tokens_job",
    "make_token_flow_sensor",
    "runs_on_their_way",
]

LIVE_BATCH_SIZE = 20
LIVE_EVAL_BUDGET_S = 30.0
"""Dagster gives a sensor evaluation 60 s; no new page starts after this many seconds (one tracker
call may take up to ~18 s with its retries)."""
LIVE_MAX_RUNS_PER_TICK = 25
"""At most this many live runs (x LIVE_BATCH_SIZE tokens) per evaluation; the rest waits one tick."""

# --------------------------------------------------------------------------- config


class TokenRef(Config):
    address: str = Field(min_length=1, description="Mint address.")
    symbol: str = Field(default="", description="Display symbol (informational).")


class LiveBatchConfig(CallBounds):
    """The live recording stage."""

    tokens: list[TokenRef] = Field(description="Tokens to record, as launched by token_flow_sensor.")
    max_workers: int = workers_field()


class RecordTokensConfig(LiveBatchConfig, JobConfig):
    """`live_tokens_job`: the batch token_flow_sensor launched (at most 20 tokens)."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "record_live_tokens": stage_config(
                tokens=[t.model_dump() for t in self.tokens], max_workers=self.max_workers,
                provider_concurrency=self.provider_concurrency or None),
        }


# --------------------------------------------------------------------------- stage, graph, job


def live_counters(results: list[TokenOutcome], by_status: dict[str, int]) -> dict[str, Any]:
    counters: dict[str, Any] = {
        "tokens": len(results),
        "created": sum(1 for r in results if r.created),
        "dropped_values": sum(len(r.dropped) for r in results),
        "unresolved_values": sum(r.unresolved for r in results),
        **{f"tokens_{s.value}": sum(1 for r in results if r.status is s) for s in TokenStatus},
    }
    counters.update({f"urls_{k}": v for k, v in sorted(by_status.items())})
    return counters


@op(description="Records a batch of freshly traded tokens launched by token_flow_sensor (a stored token only "
                "reopens pending and error URLs past their back-off), one run-log line per URL, then observes the "
                "recorded data; fails when a token could not be read (the sensor's cursor has passed it), a URL "
                "hit an engine failure or work was left behind.")
def record_live_tokens(
    context: OpExecutionContext,
    config: LiveBatchConfig,
    recording: RecordingEngineResource,
) -> RecordedRun:
    tokens = list(dict((t.address, t) for t in config.tokens).values())  # one unit per address
    context.log.info(kv_fields("live_start", {"tokens": len(tokens), "max_workers": config.max_workers}))

    def record(engine: Engine, run: RunState) -> Recorded:
        results = engine.processor.record_batch([(t.address, t.symbol or None) for t in tokens], run,
                                                max_workers=min(config.max_workers, max(1, len(tokens))))
        return Recorded(JobKind.LIVE, live_counters(results, run.status_counts()), results)

    return record_stage(context, recording, config.provider_concurrency, record)


record_tokens = staged_graph(
    "record_tokens", RecordTokensConfig, record_live_tokens,
    "Records a batch of freshly traded tokens launched by token_flow_sensor, then reports.")
live_tokens_job = one_node_job("live_tokens_job", record_tokens, JobKind.LIVE, "Records a batch of freshly traded tokens.")


# --------------------------------------------------------------------------- sensor


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


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
        skip = (f"no new token with >= {threshold} AF investors traded between {seconds(scan.start)} and "
                f"{seconds(scan.read_until)}: scanned {scan.scanned} token(s) in {scan.pages} page(s), "
                f"{scan.below_threshold} below the floor, the rest launched before")
    return LiveEvaluation(requests, new_cursor, list(scan.notes), scan.scanned, scan.pages, skip)


NOT_STARTED_YET = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING]
"""A run created but whose process has not begun executing: waiting in the queue, or starting."""


def runs_on_their_way(context: SensorEvaluationContext, job_name: str) -> int:
    """Runs of `job_name` created but not started yet (queued, or their process starting). While one
    is on its way, the live sensor launches nothing: under load (the run queue full, processes slow
    to start) tokens then wait in the tracker and leave together, so fewer runs (a process each)
    compete for the machine; when runs start within a tick, as on a machine with room, every tick's
    tokens still leave at once (docs/architecture.md, "Freshness")."""
    return context.instance.get_runs_count(RunsFilter(job_name=job_name, statuses=NOT_STARTED_YET))


def make_token_flow_sensor(
    job: JobDefinition, status: DefaultSensorStatus, poll_seconds: int = LIVE_POLL_SECONDS
) -> SensorDefinition:
    @sensor(
        name="token_flow_sensor",
        job=job,
        minimum_interval_seconds=live_minimum_interval(poll_seconds),
        default_status=status,
        description=f"Polls the tracker every {poll_seconds} s (one range request) for freshly traded tokens with "
        f"enough AF investors and launches live_tokens_job per batch of at most {LIVE_BATCH_SIZE} tokens. "
        "Cursor: the last trade time launched (and the tokens launched at exactly that time).",
    )
    def token_flow_sensor(
        context: SensorEvaluationContext, tracker: TrackerResource, policy: RecordingPolicyResource
    ) -> SensorResult:
        cursor = LiveCursor.parse(context.cursor)
        waiting = runs_on_their_way(context, job.name)
        if waiting:
            reason = (f"{waiting} {job.name} run(s) not started yet (queued or starting): the tokens traded since "
                      "then go out together, in as few runs as possible, once they have (the tracker is read then)")
            return sensor_answer(cursor.dump(), skip_reason=reason)
        now = datetime.now(UTC)
        result = evaluate_token_flow(cursor, tracker.client(), policy.af_investor_threshold, now)
        for note in result.notes:
            context.log.info(note)
        if result.run_requests:
            context.log.info(f"launching {len(result.run_requests)} live run(s) for "
                             f"{sum(int(r.tags['social_recording/tokens']) for r in result.run_requests)} token(s) "
                             f"(scanned {result.scanned} in {result.pages} page(s)); cursor -> {result.cursor.dump()}")
        return sensor_answer(result.cursor.dump(), result.run_requests, result.skip_reason)

    return token_flow_sensor


def definitions(settings: Settings) -> Definitions:
    """The live job with the token-flow sensor that launches it; merged by the builder."""
    _, sensor_status = default_status(settings.env)
    return Definitions(
        jobs=[live_tokens_job],
        sensors=[make_token_flow_sensor(live_tokens_job, sensor_status, settings.live_poll_seconds)],
    )
