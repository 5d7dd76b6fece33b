"""stranded_runs_sensor: submits the backfill runs that a daemon crash left created but never submitted.

Dagster's backfill daemon creates each partition's run, then submits it to the run queue. A daemon
killed between the two leaves a run NOT_STARTED that nothing submits: the restarted daemon skips the
partition (it has a run) and waits for that run, run monitoring fails it at its start timeout, and
the whole backfill ends "completed with failures" — a job backfill counts that failed run even when
a run retry later succeeds. This sensor finishes the interrupted submission the way the daemon would
have (the queued run coordinator's own `submit_run`), once the run has waited long enough that no
live submitter can still be about to do it. Schedules and sensors finish their own interrupted
submissions; runs launched from the UI that never started are failed by run monitoring and retried
by run retries (docs/architecture.md, "Deployment").

No `from __future__ import annotations`: Dagster reads the sensor function's annotations.
"""

import time

from dagster import (
    DagsterRunStatus,
    DefaultSensorStatus,
    QueuedRunCoordinator,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    SubmitRunContext,
    sensor,
)
from dagster._core.storage.tags import BACKFILL_ID_TAG

STRANDED_AFTER_S = 30
"""A backfill run still NOT_STARTED this long after its creation was left by a submitter that stopped
(a live daemon submits it within milliseconds). Below run monitoring's start timeout (dagster.yaml),
which would otherwise fail it first; a test keeps the two apart."""
STRANDED_SENSOR_INTERVAL_S = 15
SUBMITTED_BY = "stranded_runs_sensor"


def submit_stranded_runs(context: SensorEvaluationContext, now: float | None = None) -> SkipReason:
    """Submit every backfill run of this code location's jobs that has been NOT_STARTED for at least
    STRANDED_AFTER_S; say what was done (the sensor never requests runs of its own)."""
    instance = context.instance
    coordinator = instance.run_coordinator
    if not isinstance(coordinator, QueuedRunCoordinator):
        return SkipReason(f"the instance's run coordinator is {type(coordinator).__name__}, not the queued one: "
                          "runs are launched when they are created and cannot be stranded between the two")
    cutoff = (now if now is not None else time.time()) - STRANDED_AFTER_S
    jobs = set(context.repository_def.job_names) if context.repository_def is not None else set()
    records = instance.get_run_records(RunsFilter(statuses=[DagsterRunStatus.NOT_STARTED]))
    stranded = [
        r.dagster_run for r in records
        if r.dagster_run.tags.get(BACKFILL_ID_TAG) and r.dagster_run.job_name in jobs
        and r.create_timestamp.timestamp() <= cutoff
    ]
    for run in stranded:
        instance.report_engine_event(
            f"{SUBMITTED_BY}: this backfill run was created but never submitted (the process that created "
            f"it stopped first); submitting it to the run queue now", run)
        coordinator.submit_run(SubmitRunContext(run, workspace=None))  # type: ignore[arg-type]
        context.log.info(f"submitted stranded run {run.run_id} ({run.job_name}, backfill "
                         f"{run.tags[BACKFILL_ID_TAG]}, partition {run.tags.get('dagster/partition')})")
    if stranded:
        return SkipReason(f"submitted {len(stranded)} stranded backfill run(s): "
                          + ", ".join(r.run_id for r in stranded))
    return SkipReason(f"no backfill run has waited {STRANDED_AFTER_S} s or more without being submitted")


def make_stranded_runs_sensor(status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="stranded_runs_sensor",
        minimum_interval_seconds=STRANDED_SENSOR_INTERVAL_S,
        default_status=status,
        description="Submits backfill runs that a daemon crash left created but never submitted, so the "
        "backfill completes instead of failing them at run monitoring's start timeout. Launches no run "
        "of its own.",
    )
    def stranded_runs_sensor(context: SensorEvaluationContext) -> SkipReason:
        return submit_stranded_runs(context)

    return stranded_runs_sensor
