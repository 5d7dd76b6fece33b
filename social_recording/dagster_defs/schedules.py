"""The schedules: the hourly retry and the daily reconcile of yesterday and today so far.

Schedules and sensors start RUNNING only when SOCIAL_RECORDING_ENV=prod: nothing spends money in a
dev or staging copy by accident.

No `from __future__ import annotations`: Dagster reads the schedule function's annotations.
"""

from datetime import date, timedelta

from dagster import (
    DefaultScheduleStatus,
    DefaultSensorStatus,
    JobDefinition,
    PartitionsDefinition,
    RunConfig,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from social_recording.dagster_defs.config import RetryConfig
from social_recording.dagster_defs.partitions import PartitionKeyError, check_partition_key

RECONCILE_CRON = "30 0 * * *"
"""Half an hour into each UTC day: yesterday is complete, late trades have reached the tracker."""


def default_status(env: str) -> tuple[DefaultScheduleStatus, DefaultSensorStatus]:
    """Only prod starts RUNNING: nothing spends money in dev by accident."""
    if env == "prod":
        return DefaultScheduleStatus.RUNNING, DefaultSensorStatus.RUNNING
    return DefaultScheduleStatus.STOPPED, DefaultSensorStatus.STOPPED


def make_retry_schedule(job: JobDefinition, status: DefaultScheduleStatus) -> ScheduleDefinition:
    return ScheduleDefinition(
        name="retry_schedule",
        job=job,
        cron_schedule="0 * * * *",
        execution_timezone="UTC",
        default_status=status,
        run_config=RunConfig(ops={"retry_urls": RetryConfig()}),
        description="Hourly retry with the default selection: the oldest due elements whose outcome a retry "
        "can change under this configuration.",
    )


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
