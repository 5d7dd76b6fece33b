"""The kinds of job this code location runs, and the run tag that carries the kind.

The instance's run queue limits runs per value of `JOB_TAG` (dagster.yaml, deploy/dagster.yaml and the
Helm values: retry 1 at a time, reconcile partitions N at a time, live runs M at a time); a test reads
the three files and checks every limit names a kind here and every recording kind is limited.
"""

from __future__ import annotations

from enum import StrEnum

JOB_TAG = "social_recording/job"


class JobKind(StrEnum):
    RECONCILE = "reconcile"
    RETRY = "retry"
    LIVE = "live"
    HOUSEKEEPING = "housekeeping"
    HEALTH = "health"

    @property
    def tag(self) -> dict[str, str]:
        """The run tag a job of this kind carries (a plain string: Dagster stores tags as text)."""
        return {JOB_TAG: self.value}


RECORDING_KINDS = frozenset({JobKind.RECONCILE, JobKind.RETRY, JobKind.LIVE})
"""The kinds that record URLs (and so pay): each has its run limit in the instance's run queue."""
