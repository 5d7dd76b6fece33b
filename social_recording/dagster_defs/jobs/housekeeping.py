"""housekeeping_job: purges old runs with their event logs and compute logs, daily with
`housekeeping_schedule`.

What is purged and what is kept is `retention.py`'s; this module is the op, the job and the
schedule. The retention comes from `SOCIAL_RECORDING_RETENTION_DAYS` (default 30) as the op's
default config, so a launch from the Launchpad may purge with another value
(docs/operations.md, "Retention").

No `from __future__ import annotations`: Dagster reads annotations at decoration time.
"""

from datetime import timedelta

from dagster import (
    Definitions,
    Field,
    IntSource,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    op,
)

from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.job_shape import one_node_job, utc_schedule
from social_recording.dagster_defs.retention import DEFAULT_MAX_RUNS, describe, purge_old_runs
from social_recording.dagster_defs.stages import default_status
from social_recording.domain.models import utcnow
from social_recording.settings import Settings

HOUSEKEEPING_JOB = "housekeeping_job"
HOUSEKEEPING_CRON = "40 3 * * *"
"""Daily at 03:40 UTC: away from the hourly retry (minute 0) and health (minute 15) runs."""


def make_housekeeping_job(retention_days: int) -> JobDefinition:
    @op(
        name="purge_old_runs",
        config_schema={
            "retention_days": Field(IntSource, default_value=retention_days,
                                    description="Purge runs that finished more than this many days ago."),
            "max_runs": Field(IntSource, default_value=DEFAULT_MAX_RUNS,
                              description="At most this many runs per housekeeping run (the rest wait a day)."),
        },
    )
    def purge_old_runs_op(context: OpExecutionContext) -> Output[int]:
        days = int(context.op_config["retention_days"])
        max_runs = int(context.op_config["max_runs"])
        if days < 1 or max_runs < 1:
            raise ValueError(f"retention_days and max_runs must be >= 1, got {days} and {max_runs}")
        report = purge_old_runs(context.instance, utcnow(), timedelta(days=days), max_runs=max_runs)
        context.log.info(describe(report))
        return Output(len(report.purged), metadata={
            "runs_purged": MetadataValue.int(len(report.purged)),
            "old_runs_kept": MetadataValue.int(len(report.kept)),
            "cutoff": MetadataValue.text(report.cutoff.isoformat(timespec="seconds")),
            "more_left": MetadataValue.bool(report.more_left),
        })

    return one_node_job(
        HOUSEKEEPING_JOB, purge_old_runs_op, JobKind.HOUSEKEEPING,
        f"Purges runs that finished more than {retention_days} days ago, with their event logs and compute logs, "
        "keeping the runs the asset pages, the health checks and the partition status still read.")


def definitions(settings: Settings) -> Definitions:
    """The housekeeping job and its daily schedule; merged by the builder."""
    schedule_status, _ = default_status(settings.env)
    job = make_housekeeping_job(settings.retention_days)
    schedule = utc_schedule("housekeeping_schedule", job, HOUSEKEEPING_CRON, schedule_status,
                            "Daily purge of old runs, event logs and compute logs (SOCIAL_RECORDING_RETENTION_DAYS).")
    return Definitions(jobs=[job], schedules=[schedule])
