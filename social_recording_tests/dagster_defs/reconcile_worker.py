"""A run process for the Dagster-level crash tests (and nothing else):

    python -m social_recording_tests.dagster_defs.reconcile_worker <partition> [max_workers]

Executes reconcile_job for the partition in this process, with the settings of the environment and
the short lock timings of short_timings.py, and prints the run's success and its report's counters as
one JSON line. The test SIGKILLs it mid-run, as a run worker that dies would be.
"""

from __future__ import annotations

import json
import sys

from dagster import DagsterInstance

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import load_settings
from social_recording_tests.dagster_defs.short_timings import use_timings


def main(partition: str, max_workers: int) -> int:
    use_timings()
    job = build_definitions(load_settings()).resolve_job_def("reconcile_job")
    result = job.execute_in_process(
        partition_key=partition, instance=DagsterInstance.ephemeral(), raise_on_error=False,
        run_config={"ops": {"reconcile_window": {"config": {"max_workers": max_workers}}}},
    )
    print(json.dumps({"success": result.success}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2))
