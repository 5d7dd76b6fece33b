"""backfill_start_sensor: a backfill's runs within seconds of its launch, not at the backfill daemon's
next look.

Dagster's backfill daemon looks for new backfills every 30 s, a constant of Dagster 1.13 with no
instance setting, so a backfill launched from the UI showed its first run up to 30 s later. This
sensor, evaluated every few seconds on the sensor daemon's threads, requests the runs of a new job
backfill of this code location itself: one run per partition, with the backfill's tags and its id
tag, as the daemon would create them. When the daemon comes to the backfill it skips every
partition that already has a run of the backfill (what it does after a restart), waits for the runs
and completes the backfill as usual; it keeps everything this sensor leaves: a re-execution from
failure, a backfill with run config of its own, an asset backfill, one older than FRESH_S.

The daemon and this sensor can both act on a backfill only if the daemon's look falls within the
second it takes the sensor's runs to be created, or after the daemon process was killed in the
middle of this sensor's tick (the resumed tick and the backfill daemon's first look both create the
runs left); a partition then gets a second run, which waits for the first one's window lock and
records nothing new (docs/architecture.md, "Reconcile").

No `from __future__ import annotations`: Dagster reads the sensor function's annotations.
"""

import json
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from dagster import (
    DefaultSensorStatus,
    JobDefinition,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus, PartitionBackfill
from dagster._core.storage.tags import BACKFILL_ID_TAG

from social_recording.dagster_defs.sensor_interval import live_minimum_interval
from social_recording.settings import DAEMON_SENSOR_LOOP_S

BACKFILL_START_INTERVAL_S = live_minimum_interval(DAEMON_SENSOR_LOOP_S)
"""Every loop of the sensor daemon (every 5 s, Dagster's shortest; a minimum of exactly 5 s would
skip every other loop, see `live_minimum_interval`)."""
FRESH_S = 20
"""Backfills launched at most this long ago are this sensor's; older ones, the daemon's (it looks
every 30 s, so a backfill this sensor missed, say while the code server restarted, waits no longer
than it did before)."""
REMEMBERED = 50
"""Backfill ids kept in the cursor (a backfill is started once)."""


def _partition_set(job_name: str) -> str:
    return f"{job_name}_partition_set"


def startable(backfill: PartitionBackfill, jobs: Sequence[str]) -> str | None:
    """The job whose runs this sensor requests for `backfill`, or None when the daemon keeps it."""
    origin = backfill.partition_set_origin
    if (backfill.status != BulkActionStatus.REQUESTED or origin is None or backfill.asset_selection
            or backfill.from_failure or backfill.reexecution_steps or backfill.run_config
            or backfill.last_submitted_partition_name or not backfill.partition_names):
        return None
    return next((job for job in jobs if _partition_set(job) == origin.partition_set_name), None)


def start_backfills(context: SensorEvaluationContext, jobs: Sequence[str],
                    now: float | None = None) -> SensorResult:
    """Request the runs of every new backfill of `jobs` that has none yet."""
    moment = now if now is not None else time.time()
    started: list[str] = json.loads(context.cursor) if context.cursor else []
    instance = context.instance
    fresh = instance.get_backfills(filters=BulkActionsFilter(
        statuses=[BulkActionStatus.REQUESTED],
        created_after=datetime.fromtimestamp(moment, UTC) - timedelta(seconds=FRESH_S)))
    requests: list[RunRequest] = []
    for backfill in fresh:
        job = startable(backfill, jobs)
        if job is None or backfill.backfill_id in started:
            continue
        if instance.get_run_ids(RunsFilter(tags={BACKFILL_ID_TAG: backfill.backfill_id}), limit=1):
            continue  # the daemon got there first
        started.append(backfill.backfill_id)
        tags = {**(backfill.tags or {}), BACKFILL_ID_TAG: backfill.backfill_id}
        requests += [RunRequest(run_key=f"{backfill.backfill_id}:{key}", job_name=job, partition_key=key, tags=tags)
                     for key in backfill.partition_names or ()]
        context.log.info(f"starting backfill {backfill.backfill_id}: {len(backfill.partition_names or ())} "
                         f"{job} run(s), one per partition")
    cursor = json.dumps(started[-REMEMBERED:])
    if not requests:
        return SensorResult(skip_reason=SkipReason("no new backfill to start"), cursor=cursor)
    return SensorResult(run_requests=requests, cursor=cursor)


def make_backfill_start_sensor(jobs: Sequence[JobDefinition]) -> SensorDefinition:
    """Running in every environment: it starts only what an operator launched."""
    names = [job.name for job in jobs]

    @sensor(
        name="backfill_start_sensor",
        jobs=list(jobs),
        minimum_interval_seconds=BACKFILL_START_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Starts the runs of a backfill launched from the UI within seconds (one per partition, tagged "
        "with the backfill), instead of at the backfill daemon's next look (every 30 s); the daemon then "
        "completes the backfill as usual. Launches nothing else.",
    )
    def backfill_start_sensor(context: SensorEvaluationContext) -> SensorResult:
        return start_backfills(context, names)

    return backfill_start_sensor
