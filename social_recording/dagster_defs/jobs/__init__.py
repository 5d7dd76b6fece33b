"""Jobs and partitions. Run tags feed the run-concurrency limits of dagster.yaml.

Every job runs its stages in the run's own process (`in_process_executor`): the stages are short
hand-offs around one recording step, and a process per stage would cost more than the stage.
"""

from datetime import date

from dagster import JobDefinition, in_process_executor, job

from social_recording.dagster_defs.graphs import reconcile_window, record_tokens, retry_urls
from social_recording.dagster_defs.partitions import daily_partitions

JOB_TAG = "social_recording/job"
"""dagster.yaml limits runs per value of this tag: retry 1 at a time, reconcile partitions N at a time."""

RUN_RETRY_TAGS = {"dagster/retry_on_asset_or_op_failure": "false"}
"""Dagster's run retries (dagster.yaml `run_retries`) re-execute a run that failed for an
infrastructure reason, never one whose stage failed: that failure is a recorded outcome (the tracker
failed, a URL hit an engine failure) which re-running the same run would not change."""


def make_reconcile_job(start: date) -> JobDefinition:
    @job(
        name="reconcile_job",
        partitions_def=daily_partitions(start),
        tags={JOB_TAG: "reconcile", **RUN_RETRY_TAGS},
        executor_def=in_process_executor,
        description="Backfill: records the tokens of a UTC day (by last transfer) that were never stored.",
    )
    def reconcile_job() -> None:
        reconcile_window()

    return reconcile_job


@job(tags={JOB_TAG: "retry", **RUN_RETRY_TAGS}, executor_def=in_process_executor,
     description="Re-attempts URLs that have not converged yet.")
def retry_job() -> None:
    retry_urls()


@job(tags={JOB_TAG: "live", **RUN_RETRY_TAGS}, executor_def=in_process_executor,
     description="Records a batch of freshly traded tokens.")
def live_tokens_job() -> None:
    record_tokens()
