"""backfill_start_sensor: a backfill's runs within seconds of its launch, not at the backfill daemon's
next look.

Dagster's backfill daemon looks for new backfills every 30 s, a constant of Dagster 1.13 with no
instance setting, so a backfill launched from the UI showed its first run up to 30 s later. This
sensor, evaluated every few seconds on the sensor daemon's threads, requests the runs of a new job
backfill of this code location itself: one run per partition, with the backfill's tags and its id
tag, as the daemon would create them. The daemon keeps everything this sensor leaves: a
re-execution from failure, a backfill with run config of its own, an asset backfill, one older than
FRESH_S.

Only one of them creates a backfill's runs, whatever crashes. Before requesting the runs, the sensor
moves the backfill's checkpoint (last_submitted_partition_name) past its last partition, so the
daemon creates none and only waits for them and completes the backfill. A daemon SIGKILLed in the
middle of the tick leaves its requests stored; the restarted daemon submits them (their run keys
skip the runs already created) while the backfill daemon, at its first look, skips the backfill.
A tick dropped instead of resumed (the sensor stopped in the middle, a tick older than a day) would
leave partitions without a run, and a backfill can be completed before the runs exist (the daemon
looked between the checkpoint and the first run); so the sensor watches each backfill it took
until it is completed with all its runs ended: `watch_action` requests the partitions left without
a run and reopens a backfill completed too early. The sensor is evaluated only after its previous
tick created its runs or was dropped, so a partition without a run then gets none from elsewhere.
The one window left: the daemon's look already under way when the sensor takes the backfill (it
read no run and no checkpoint); a partition then gets a second run, which waits for the first
one's window lock and records nothing new (docs/architecture.md, "Reconcile").

No `from __future__ import annotations`: Dagster reads the sensor function's annotations.
"""

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from dagster import (
    DefaultSensorStatus,
    JobDefinition,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus, PartitionBackfill
from dagster._core.instance import DagsterInstance
from dagster._core.storage.tags import BACKFILL_ID_TAG

from social_recording.dagster_defs.backfill_watch import partition_set_name, run_requests, watch_backfill
from social_recording.dagster_defs.sensor_answer import sensor_answer
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


def startable(backfill: PartitionBackfill, jobs: Sequence[str]) -> str | None:
    """The job whose runs this sensor requests for `backfill`, or None when the daemon keeps it."""
    origin = backfill.partition_set_origin
    if (backfill.status != BulkActionStatus.REQUESTED or origin is None or backfill.asset_selection
            or backfill.from_failure or backfill.reexecution_steps or backfill.run_config
            or backfill.last_submitted_partition_name or not backfill.partition_names):
        return None
    return next((job for job in jobs if partition_set_name(job) == origin.partition_set_name), None)


def _take(instance: DagsterInstance, backfill: PartitionBackfill) -> None:
    """Move the backfill's checkpoint past its last partition before its runs are requested: the
    backfill daemon then creates no run for it (a resumed tick of this sensor is the only creator
    after a crash) and only waits for the runs and completes it."""
    names = list(backfill.partition_names or ())
    instance.update_backfill(backfill.with_partition_checkpoint(names[-1]))


@dataclass
class Cursor:
    """The sensor's cursor (JSON)."""

    started: list[str] = field(default_factory=list)
    """Backfills started (each once)."""
    watching: list[str] = field(default_factory=list)
    """Started backfills not settled yet."""

    @classmethod
    def load(cls, raw: str | None) -> "Cursor":
        data = json.loads(raw) if raw else []
        if isinstance(data, list):  # the cursor before backfills were watched
            return cls(started=data)
        return cls(started=data["started"], watching=data["watching"])

    def dump(self) -> str:
        return json.dumps({"started": self.started[-REMEMBERED:], "watching": self.watching[-REMEMBERED:]})


def start_backfills(context: SensorEvaluationContext, jobs: Sequence[str],
                    now: float | None = None) -> SensorResult:
    """Request the runs of every new backfill of `jobs` that has none yet, and those of a backfill
    taken earlier that a dropped tick left without a run."""
    moment = now if now is not None else time.time()
    cursor = Cursor.load(context.cursor)
    instance = context.instance
    requests: list[RunRequest] = []
    for backfill_id in list(cursor.watching):
        again, settled = watch_backfill(context, backfill_id, jobs)
        requests += again
        if settled:
            cursor.watching.remove(backfill_id)
    fresh = instance.get_backfills(filters=BulkActionsFilter(
        statuses=[BulkActionStatus.REQUESTED],
        created_after=datetime.fromtimestamp(moment, UTC) - timedelta(seconds=FRESH_S)))
    for backfill in fresh:
        job = startable(backfill, jobs)
        if job is None or backfill.backfill_id in cursor.started:
            continue
        if instance.get_run_ids(RunsFilter(tags={BACKFILL_ID_TAG: backfill.backfill_id}), limit=1):
            continue  # the daemon got there first
        _take(instance, backfill)
        cursor.started.append(backfill.backfill_id)
        cursor.watching.append(backfill.backfill_id)
        requests += run_requests(backfill, job, backfill.partition_names or ())
        context.log.info(f"starting backfill {backfill.backfill_id}: {len(backfill.partition_names or ())} "
                         f"{job} run(s), one per partition")
    return sensor_answer(cursor.dump(), requests, "no new backfill to start")


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
