"""reconcile_catch_up_sensor: launches again the reconcile partitions whose last run left tokens unrecorded.

A partition's last run can end without recording its window: it failed (a crash, a lock held past its
wait, a backend gone), it was canceled, it never started (run monitoring failed it), or it succeeded
with tokens remaining (a `limit` or `deadline` in its config). `reconcile_schedule` only revisits
yesterday and today, so nothing else ever comes back for an older day. The sensor reads each
partition's last run and launches the partition once more for it, with a run key made of the
partition and that run's id: one catch-up per run left behind, however often it is evaluated. It
gives Dagster's own run retries the first go (a run must have ended SETTLE_S ago) and gives up on a
partition after MAX_CATCH_UPS catch-ups in a row left work behind too, saying so in its skip reason
and cursor. Elements a run left pending on stored tokens are the retry job's (docs/architecture.md,
"Runs tell the truth").

No `from __future__ import annotations`: Dagster reads the sensor function's annotations.
"""

import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    JobDefinition,
    PartitionsDefinition,
    RunRecord,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

warnings.filterwarnings("ignore", message="Parameter `owners` of initializer", category=Warning)

REMAINING_TAG = "social_recording/remaining"
"""Set by a reconcile run's report: the window's tokens it did not reach (a limit or a deadline)."""
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
        if not result.run_requests:
            return SensorResult(skip_reason=SkipReason(result.skip_reason), cursor=result.cursor.dump())
        return SensorResult(run_requests=result.run_requests, cursor=result.cursor.dump())

    return reconcile_catch_up_sensor
