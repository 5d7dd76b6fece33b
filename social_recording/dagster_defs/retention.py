"""Run retention: which finished runs are old enough to purge, and purging them with their event logs
and compute logs.

Dagster's own `retention` setting covers schedule and sensor ticks only; run records, their event
logs and the step logs on disk grow forever otherwise. A run is purged when it finished (success,
failure, canceled) before the cutoff, unless something the project still reads lives in it:

- the latest materialization and the latest observation of each recorded-data asset (the catalog's
  "last materialized", the asset page's latest figures);
- the observation `exhausted_growth_bounded` compares with (`baseline_observations`);
- the latest run of each partition of a partitioned job (Dagster's partition status and the
  reconcile catch-up read them: a day stays "done" however old its run).

A run still queued or in progress is never touched. Each purge is bounded (`max_runs`), so the first
housekeeping of a large instance spreads over a few days instead of one long run
(docs/operations.md, "Retention").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
from dagster._core.storage.tags import PARTITION_NAME_TAG

from social_recording.dagster_defs.assets import ASSET_SPECS
from social_recording.dagster_defs.health_report import baseline_observations

DEFAULT_MAX_RUNS = 5_000
FINISHED = [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]


@dataclass
class PurgeReport:
    cutoff: datetime
    purged: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    """Old runs kept, with why."""
    compute_logs_kept: bool = False
    """The instance's compute log manager cannot delete by run (a cloud bucket's own lifecycle rule must)."""
    more_left: bool = False
    """`max_runs` stopped the purge: the next housekeeping run continues."""


def runs_still_read(instance: DagsterInstance, now: datetime) -> dict[str, str]:
    """Run ids holding what the project reads from the instance, with what it is."""
    keep: dict[str, str] = {}
    for spec in ASSET_SPECS:
        name = "/".join(spec.key.path)
        for kind, fetch in (("materialization", instance.fetch_materializations),
                            ("observation", instance.fetch_observations)):
            for record in fetch(spec.key, limit=1).records:
                keep.setdefault(record.run_id, f"the latest {kind} of {name}")
    for record in baseline_observations(instance, now):
        keep.setdefault(record.run_id, "the observation exhausted_growth_bounded compares with")
    return keep


def _latest_of_partition(instance: DagsterInstance, job_name: str, partition: str,
                         cache: dict[tuple[str, str], str | None]) -> str | None:
    key = (job_name, partition)
    if key not in cache:
        records = instance.get_run_records(
            RunsFilter(job_name=job_name, tags={PARTITION_NAME_TAG: partition}), limit=1)
        cache[key] = records[0].dagster_run.run_id if records else None
    return cache[key]


def purge_old_runs(instance: DagsterInstance, now: datetime, retention: timedelta, *, max_runs: int = DEFAULT_MAX_RUNS,
                   say: Callable[[str], Any] = lambda _line: None) -> PurgeReport:
    """Delete the finished runs older than `retention` (their records, event logs and compute logs),
    keeping the ones listed in the module docstring."""
    report = PurgeReport(cutoff=now - retention)
    still_read = runs_still_read(instance, now)
    partitions: dict[tuple[str, str], str | None] = {}
    old = instance.get_run_records(RunsFilter(statuses=FINISHED, updated_before=report.cutoff),
                                   limit=max_runs + len(still_read) + 1, ascending=True)
    for record in old:
        run = record.dagster_run
        ended = record.end_time if record.end_time is not None else record.update_timestamp.timestamp()
        if ended >= report.cutoff.timestamp():
            continue
        partition = run.tags.get(PARTITION_NAME_TAG)
        if run.run_id in still_read:
            report.kept[run.run_id] = still_read[run.run_id]
        elif partition and _latest_of_partition(instance, run.job_name, partition, partitions) == run.run_id:
            report.kept[run.run_id] = f"the latest run of {run.job_name} partition {partition}"
        elif len(report.purged) >= max_runs:
            report.more_left = True
            break
        else:
            _delete_run(instance, run.run_id, report)
            report.purged.append(run.run_id)
    say(describe(report))
    return report


def _delete_run(instance: DagsterInstance, run_id: str, report: PurgeReport) -> None:
    """The run's compute logs first (a failure there leaves the record, so the next purge retries)."""
    if not report.compute_logs_kept:
        try:
            instance.compute_log_manager.delete_logs(prefix=[run_id])
        except NotImplementedError:
            report.compute_logs_kept = True
    instance.delete_run(run_id)


def describe(report: PurgeReport, shown: int = 5) -> str:
    def some(ids: Iterable[str]) -> str:
        ids = list(ids)
        return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")

    text = (f"purged {len(report.purged)} run(s) that finished before {report.cutoff.isoformat(timespec='seconds')} "
            "with their event logs and compute logs")
    if report.purged:
        text += f" ({some(report.purged)})"
    if report.kept:
        text += f"; kept {len(report.kept)} older run(s) still read: " + "; ".join(
            f"{run_id}: {why}" for run_id, why in list(report.kept.items())[:shown])
    if report.compute_logs_kept:
        text += "; the compute log manager cannot delete by run: expire its logs where it stores them"
    if report.more_left:
        text += "; more old runs are left for the next housekeeping run"
    return text
