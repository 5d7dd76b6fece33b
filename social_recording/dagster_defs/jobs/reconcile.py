"""reconcile_job: record the tokens of a past UTC day that were never stored — its config, stages,
graph, partitioned job, the daily `reconcile_schedule` and `reconcile_catch_up_sensor`
(docs/architecture.md, "Reconcile").

The graph `reconcile_window` reads the partition's window from the tracker (writes nothing), records
its tokens under the window's job lock, and reports; run config `{"ops": {"reconcile_window":
{"config": {...}}}}`, partition key `YYYY-MM-DD`.

The catch-up sensor: a partition's last run can end without recording its window: it failed (a
crash, a lock held past its wait, a backend gone), it was canceled, it never started (run monitoring
failed it), or it succeeded with tokens remaining (a `limit` or `deadline` in its config).
`reconcile_schedule` only revisits yesterday and today, so nothing else ever comes back for an older
day. The sensor reads each partition's last run and launches the partition once more for it, with a
run key made of the partition and that run's id: one catch-up per run left behind, however often it
is evaluated. It gives Dagster's own run retries the first go (a run must have ended SETTLE_S ago)
and gives up on a partition after MAX_CATCH_UPS catch-ups in a row left work behind too, saying so
in its skip reason and cursor. Elements a run left pending on stored tokens are the retry job's
(docs/architecture.md, "Runs tell the truth").

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from dagster import (
    Config,
    DagsterRunStatus,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    PartitionsDefinition,
    RunRecord,
    RunRequest,
    RunsFilter,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    TimeWindow,
    op,
    schedule,
    sensor,
)
from pydantic import Field

from social_recording.dagster_defs.backfill_start import make_backfill_start_sensor
from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.job_shape import JobConfig, one_node_job, staged_graph
from social_recording.dagster_defs.partitions import PartitionKeyError, check_partition_key, daily_partitions
from social_recording.dagster_defs.reporting import RecordedRun, skipped_note
from social_recording.dagster_defs.resources import RecordingPolicyResource
from social_recording.dagster_defs.sensor_answer import sensor_answer
from social_recording.dagster_defs.stages import (
    PREVIEW_ROWS,
    CallBounds,
    Recorded,
    default_status,
    preview,
    record_stage,
    stage_config,
    workers_field,
)
from social_recording.dagster_defs.termination import sigterm_terminates
from social_recording.recording.engine import Engine
from social_recording.recording.log_line import kv_fields
from social_recording.recording.reconcile import ReconcileWindow
from social_recording.recording.run_state import RunState
from social_recording.settings import Settings

RECONCILE_CRON = "30 0 * * *"
"""Half an hour into each UTC day: yesterday is complete, late trades have reached the tracker."""

# --------------------------------------------------------------------------- config


class WindowConfig(Config):
    """The window-reading stage."""

    min_af_count: int | None = Field(
        default=None, ge=1, description="AF investor floor; default SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD."
    )


class RecordWindowConfig(CallBounds):
    """The window-recording stage."""

    limit: int | None = Field(default=None, ge=1, description="Cap on tokens recorded in this run.")
    deadline_seconds: float | None = Field(
        default=None, gt=0, description="No token is started after this many seconds."
    )
    max_workers: int = workers_field()


class ReconcileConfig(WindowConfig, RecordWindowConfig, JobConfig):
    """`reconcile_job`: record the tokens of the partition's UTC day that were never stored."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "read_reconcile_window": stage_config(min_af_count=self.min_af_count),
            "record_window_tokens": stage_config(
                limit=self.limit, deadline_seconds=self.deadline_seconds, max_workers=self.max_workers,
                provider_concurrency=self.provider_concurrency or None),
        }


# --------------------------------------------------------------------------- stages, graph, job


def partition_window(context: OpExecutionContext) -> TimeWindow:
    """The partition's UTC day, refusing a key outside reconcile_job's partitions (a day before the
    first, a day that has not begun, no day at all) before any request: a run launched outside the
    UI's partition picker can carry any `dagster/partition` tag."""
    partitions_def = context.job_def.partitions_def
    assert partitions_def is not None, "partition_window is only used by reconcile_job"
    try:
        key = check_partition_key(partitions_def, context.partition_key)
    except PartitionKeyError as exc:
        raise Failure(description=str(exc)) from None
    window = context.partition_time_window
    if window.end > datetime.now(UTC):
        context.log.warning(f"partition {key} is not over yet: tokens traded later today are recorded by a "
                            "later run of this partition")
    return window


@op(description="Reads the partition's UTC day from the tracker: the tokens traded that day with enough AF "
                "investors, minus those already stored. Writes nothing; a tracker failure fails the run here.")
def read_reconcile_window(
    context: OpExecutionContext,
    config: WindowConfig,
    recording: RecordingEngineResource,
    policy: RecordingPolicyResource,
) -> Output[ReconcileWindow]:
    with sigterm_terminates(context):
        window = partition_window(context)
        min_af = config.min_af_count or policy.af_investor_threshold
        context.log.info(kv_fields("reconcile_start", {
            "partition": context.partition_key, "start": window.start.isoformat(), "end": window.end.isoformat(),
            "min_af_count": min_af,
        }))
        read = recording.get().reconcile.read_window(window.start, window.end, partition_key=context.partition_key,
                                                     min_af_count=min_af)
        counters = {"scanned": read.scanned, "filtered": read.filtered, "already_seen": read.already_seen,
                    "targets": len(read.targets), "malformed": len(read.malformed_items), "min_af_count": min_af}
        context.log.info(kv_fields("window_read", {"partition": context.partition_key, **counters}))
        metadata: dict[str, Any] = {k: MetadataValue.int(v) for k, v in counters.items()}
        metadata["targets_preview"] = preview(("address", "symbol"), [
            {"address": t.address, "symbol": t.symbol or ""} for t in read.targets[:PREVIEW_ROWS]])
        if read.malformed_items:
            metadata["malformed_items"] = MetadataValue.md("\n".join(f"- `{m}`" for m in read.malformed_items[:200]))
        return Output(read, metadata=metadata)


@op(description="Records the window's tokens under the partition's job lock (tokens stored since the window "
                "was read are skipped), one run-log line per URL, then observes the recorded data; fails when a "
                "token could not be read, a URL hit an engine failure or work was left behind (re-executing "
                "from this failure records what is left).")
def record_window_tokens(
    context: OpExecutionContext,
    config: RecordWindowConfig,
    window: ReconcileWindow,
    recording: RecordingEngineResource,
) -> RecordedRun:
    context.log.info(kv_fields("record_window", {
        "partition": window.partition_key, "targets": len(window.targets), "limit": config.limit,
        "deadline_seconds": config.deadline_seconds, "max_workers": config.max_workers,
    }))

    def record(engine: Engine, run: RunState) -> Recorded:
        outcome = engine.reconcile.record_window(
            window, limit=config.limit, deadline_seconds=config.deadline_seconds,
            max_workers=config.max_workers, run=run, keep_url_outcomes=False,
        )
        extra: dict[str, Any] = {}
        if outcome.malformed_items:
            extra["malformed_items"] = MetadataValue.md("\n".join(f"- `{m}`" for m in outcome.malformed_items[:200]))
        return Recorded(JobKind.RECONCILE, outcome.metadata(), outcome.tokens,
                        skipped=skipped_note(f"reconcile of {window.partition_key}", outcome.skipped,
                                             outcome.job_lock_waited_s),
                        extra=extra, run_tags={REMAINING_TAG: str(outcome.remaining)},
                        tokens_total=outcome.processed, created=outcome.created)

    return record_stage(context, recording, config.provider_concurrency, record)


reconcile_window = staged_graph(
    "reconcile_window", ReconcileConfig, lambda: record_window_tokens(read_reconcile_window()),
    "Records the tokens of the partition's UTC day that were never stored: read the day from the tracker, record "
    "its new tokens, report.")


def make_reconcile_job(start: date) -> JobDefinition:
    return one_node_job("reconcile_job", reconcile_window, JobKind.RECONCILE,
                        "Backfill: records the tokens of a UTC day (by last transfer) that were never stored.",
                        partitions_def=daily_partitions(start))


# --------------------------------------------------------------------------- schedule


def reconcile_run_requests(context: ScheduleEvaluationContext, partitions_def: PartitionsDefinition,
                           left_out: list[str]) -> list[RunRequest]:
    """Yesterday's partition and today's so far, each with a run key of the tick's day, so a tick
    evaluated twice launches nothing twice while the next day's tick runs both again. A day outside
    the partitions (yesterday on the first day, a tick evaluated for a date not yet begun) is left
    out, logged and appended to `left_out`, instead of failing the whole tick."""
    tick = context.scheduled_execution_time
    assert tick is not None
    today = tick.date()
    days = []
    for day in (today - timedelta(days=1), today):
        try:
            days.append(date.fromisoformat(check_partition_key(partitions_def, day.isoformat())))
        except PartitionKeyError as exc:
            context.log.warning(f"not reconciling {day.isoformat()}: {exc}")
            left_out.append(str(exc))
    return [
        RunRequest(
            run_key=f"reconcile:{day.isoformat()}:tick-{today.isoformat()}",
            partition_key=day.isoformat(),
            tags={"social_recording/trigger": "reconcile_schedule"},
        )
        for day in days
    ]


def make_reconcile_schedule(job: JobDefinition, status: DefaultScheduleStatus) -> ScheduleDefinition:
    partitions_def = job.partitions_def
    assert partitions_def is not None, "reconcile_schedule runs the partitioned reconcile_job"

    @schedule(
        name="reconcile_schedule",
        job=job,
        cron_schedule=RECONCILE_CRON,
        execution_timezone="UTC",
        default_status=status,
        description="Daily: reconcile yesterday (now complete) and today so far, so tokens the live sensor "
        "missed (gaps, failed live runs, tracker items that were unreadable) are recorded without an operator.",
    )
    def reconcile_schedule(context: ScheduleEvaluationContext) -> list[RunRequest] | SkipReason:
        left_out: list[str] = []
        requests = reconcile_run_requests(context, partitions_def, left_out)
        if not requests:
            return SkipReason("no partition to reconcile: " + "; ".join(left_out))
        context.log.info("reconciling partitions " + ", ".join(str(r.partition_key) for r in requests))
        return requests

    return reconcile_schedule


# --------------------------------------------------------------------------- catch-up sensor

REMAINING_TAG = "social_recording/remaining"
"""Set by a reconcile run's recording stage: the window's tokens it did not reach (a limit or a deadline)."""
CATCH_UP_OF_TAG = "social_recording/catch_up_of"
"""On a catch-up run: the id of the run it completes."""
CATCH_UP_TAG = "social_recording/catch_up"
"""On a catch-up run: how many catch-ups in a row this partition has had, this one included."""
PARTITION_TAG = "dagster/partition"
SENSOR_NAME = "reconcile_catch_up_sensor"

CATCH_UP_INTERVAL_S = 60
SETTLE_S = 60.0
"""A run must have ended this long ago: Dagster's run retries (created within seconds of a failure
from infrastructure) go first, and the sensor then sees the retry as the partition's last run."""
MAX_CATCH_UPS = 3
LOOKBACK = timedelta(days=14)
"""Runs created this long ago or later are read; an older partition's last run is left to its owner."""
RUN_LIMIT = 2000

_IN_PROGRESS = frozenset({DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                          DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING})


def left_behind(record: RunRecord) -> str | None:
    """Why a finished run left its window unrecorded, or None when it recorded all of it."""
    run = record.dagster_run
    if run.status is DagsterRunStatus.FAILURE:
        return "failed"
    if run.status is DagsterRunStatus.CANCELED:
        return "canceled"
    if run.status is DagsterRunStatus.SUCCESS:
        try:
            remaining = int(run.tags.get(REMAINING_TAG, "0"))
        except ValueError:
            remaining = 0
        if remaining > 0:
            return f"succeeded with {remaining} token(s) not reached"
    return None


@dataclass
class CatchUpCursor:
    """What the last evaluation did, for the person reading the sensor's page."""

    evaluated_at: str = ""
    partitions: int = 0
    launched: dict[str, str] = field(default_factory=dict)
    """partition -> the run it completes, with why (the last evaluation's launches)."""
    gave_up: dict[str, str] = field(default_factory=dict)
    """partition -> its last run, for partitions past MAX_CATCH_UPS (a person must look)."""

    def dump(self) -> str:
        return json.dumps({"evaluated_at": self.evaluated_at, "partitions": self.partitions,
                           "launched": self.launched, "gave_up": self.gave_up}, sort_keys=True)


@dataclass
class CatchUpEvaluation:
    run_requests: list[RunRequest]
    cursor: CatchUpCursor
    notes: list[str]
    skip_reason: str = ""


def evaluate_catch_up(
    records: Sequence[RunRecord],
    partitions_def: PartitionsDefinition,
    now: float,
    *,
    settle_s: float = SETTLE_S,
    max_catch_ups: int = MAX_CATCH_UPS,
) -> CatchUpEvaluation:
    """From reconcile runs (newest first): one run request per partition whose last run left its
    window unrecorded and ended at least `settle_s` before `now` (epoch seconds)."""
    last: dict[str, RunRecord] = {}
    for record in records:
        key = record.dagster_run.tags.get(PARTITION_TAG)
        if key and key not in last and partitions_def.has_partition_key(key):
            last[key] = record
    cursor = CatchUpCursor(evaluated_at=datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"),
                           partitions=len(last))
    requests: list[RunRequest] = []
    notes: list[str] = []
    in_progress = settling = 0
    for key in sorted(last):
        record = last[key]
        run = record.dagster_run
        if run.status in _IN_PROGRESS:
            in_progress += 1
            continue
        why = left_behind(record)
        if why is None:
            continue
        ended = record.end_time or record.update_timestamp.timestamp()
        if now - ended < settle_s:
            settling += 1
            continue
        try:
            attempt = int(run.tags.get(CATCH_UP_TAG, "0")) + 1
        except ValueError:
            attempt = 1
        if attempt > max_catch_ups:
            cursor.gave_up[key] = run.run_id
            notes.append(f"partition {key}: its last {max_catch_ups} catch-up runs left work behind too (last: run "
                         f"{run.run_id}, {why}); read that run's log, fix the cause, then re-execute it (a run "
                         "launched by a person starts the count again)")
            continue
        cursor.launched[key] = f"{run.run_id} ({why})"
        notes.append(f"partition {key}: its last run {run.run_id} {why}; launching catch-up {attempt} of "
                     f"{max_catch_ups}")
        requests.append(RunRequest(
            run_key=f"catch-up:{key}:{run.run_id}",
            partition_key=key,
            tags={CATCH_UP_OF_TAG: run.run_id, CATCH_UP_TAG: str(attempt),
                  "social_recording/trigger": SENSOR_NAME},
        ))
    skip = ""
    if not requests:
        skip = (f"no reconcile partition to catch up: read the last runs of {len(last)} partition(s) (runs created "
                f"in the last {LOOKBACK.days} days); {in_progress} in progress, {settling} ended less than "
                f"{settle_s:g} s ago (Dagster's run retries go first)")
        if cursor.gave_up:
            skip += "; gave up on " + ", ".join(f"{k} (run {r})" for k, r in sorted(cursor.gave_up.items())) + \
                    ": see the tick's log"
    return CatchUpEvaluation(requests, cursor, notes, skip)


def make_catch_up_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    partitions_def = job.partitions_def
    assert partitions_def is not None, "the catch-up sensor launches the partitioned reconcile_job"

    @sensor(
        name=SENSOR_NAME,
        job=job,
        minimum_interval_seconds=CATCH_UP_INTERVAL_S,
        default_status=status,
        description="Launches a reconcile partition again when its last run left tokens unrecorded (failed, "
        "canceled, never started, or succeeded with tokens not reached), once per such run, after Dagster's run "
        f"retries had their go; gives up on a partition after {MAX_CATCH_UPS} catch-ups in a row. Cursor: what "
        "the last evaluation launched and gave up on.",
    )
    def reconcile_catch_up_sensor(context: SensorEvaluationContext) -> SensorResult:
        now = time.time()
        records = context.instance.get_run_records(
            RunsFilter(job_name=job.name, created_after=datetime.fromtimestamp(now, UTC) - LOOKBACK), limit=RUN_LIMIT)
        result = evaluate_catch_up(records, partitions_def, now, settle_s=SETTLE_S, max_catch_ups=MAX_CATCH_UPS)
        for note in result.notes:
            context.log.info(note)
        return sensor_answer(result.cursor.dump(), result.run_requests, result.skip_reason)

    return reconcile_catch_up_sensor


def definitions(settings: Settings) -> Definitions:
    """The reconcile job with its daily schedule, its catch-up sensor and the sensor that starts a
    backfill's runs at once; merged into the code location by the builder."""
    schedule_status, sensor_status = default_status(settings.env)
    job = make_reconcile_job(settings.partition_start)
    return Definitions(
        jobs=[job],
        schedules=[make_reconcile_schedule(job, schedule_status)],
        sensors=[make_catch_up_sensor(job, sensor_status), make_backfill_start_sensor([job])],
    )
