"""What backfill_start_sensor does for a backfill it took, until the backfill is settled: request the
partitions a dropped tick left without a run, reopen a backfill the daemon completed before its runs
ended (why: backfill_start.py's docstring; the rule: `watch_action`, docs/operations.md, "Recovery").
"""

from collections.abc import Sequence
from dataclasses import dataclass

from dagster import DagsterRunStatus, RunRequest, RunsFilter, SensorEvaluationContext
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.storage.dagster_run import NOT_FINISHED_STATUSES
from dagster._core.storage.tags import BACKFILL_ID_TAG, PARTITION_NAME_TAG

COMPLETED = frozenset({BulkActionStatus.COMPLETED, BulkActionStatus.COMPLETED_SUCCESS,
                       BulkActionStatus.COMPLETED_FAILED})
FAILED_RUN = frozenset({DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED})


def partition_set_name(job_name: str) -> str:
    return f"{job_name}_partition_set"


@dataclass(frozen=True)
class Watch:
    """What a taken backfill needs at this evaluation (`watch_action`)."""

    request: tuple[str, ...] = ()
    """Partitions to request again: they have no run and no tick of this sensor will create one."""
    reopen: bool = False
    """Set the backfill back to REQUESTED: the daemon completed it before its runs ended."""
    settled: bool = False
    """Nothing left to watch."""


def watch_action(status: BulkActionStatus, missing: Sequence[str], unfinished: bool, failed: bool) -> Watch:
    """The one rule for a backfill this sensor took (docs/operations.md, "Recovery"). Evaluated only
    when every earlier tick of the sensor has created its runs or was dropped, so a partition without
    a run now never gets one unless requested here; the daemon creates none past the checkpoint."""
    if status not in COMPLETED and status != BulkActionStatus.REQUESTED:
        return Watch(settled=True)  # canceled or failed: the operator's or the daemon's
    premature = status in COMPLETED and bool(
        missing or unfinished or (failed and status != BulkActionStatus.COMPLETED_FAILED))
    return Watch(request=tuple(missing), reopen=premature,
                 settled=status in COMPLETED and not premature)


def run_requests(backfill: PartitionBackfill, job: str, keys: Sequence[str]) -> list[RunRequest]:
    """One run per partition with the backfill's tags, as the daemon would create it; the run key makes
    a resumed tick skip the runs it created before a crash."""
    tags = {**(backfill.tags or {}), BACKFILL_ID_TAG: backfill.backfill_id}
    return [RunRequest(run_key=f"{backfill.backfill_id}:{key}", job_name=job, partition_key=key, tags=tags)
            for key in keys]


def watch_backfill(context: SensorEvaluationContext, backfill_id: str,
                   jobs: Sequence[str]) -> tuple[list[RunRequest], bool]:
    """Requests for a taken backfill's partitions left without a run, and whether it is settled."""
    instance = context.instance
    backfill = instance.get_backfill(backfill_id)
    origin = backfill.partition_set_origin if backfill else None
    job = next((j for j in jobs if origin and partition_set_name(j) == origin.partition_set_name), None)
    if backfill is None or job is None:
        return [], True
    runs = instance.get_runs(RunsFilter(tags={BACKFILL_ID_TAG: backfill_id}))
    have = {run.tags.get(PARTITION_NAME_TAG) for run in runs}
    missing = [key for key in backfill.partition_names or () if key not in have]
    action = watch_action(backfill.status, missing,
                          unfinished=any(run.status in NOT_FINISHED_STATUSES for run in runs),
                          failed=any(run.status in FAILED_RUN for run in runs))
    if action.reopen:
        instance.update_backfill(backfill.with_status(BulkActionStatus.REQUESTED))
        context.log.warning(f"backfill {backfill_id} was completed before its runs ended; reopened so the "
                            "backfill daemon completes it again")
    if action.request:
        context.log.warning(f"backfill {backfill_id}: partitions {', '.join(action.request)} have no run (a tick "
                            "of this sensor was dropped); requesting them again")
    return run_requests(backfill, job, action.request), action.settled


