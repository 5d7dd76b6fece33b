"""Benchmark: run latency of the production deployment under the Dagster daemon (not a test).

    python bench/deploy_rehearsal.py

Runs the deployment rehearsal (test_support/rehearsal.py: deploy/entrypoint.sh's
code server, daemon and webserver on the production deploy/dagster.yaml, a local PostgreSQL, a
redis-server it starts, the sandbox upstream) and prints:
- the time from `launchPartitionBackfill` (two reconcile_job partitions) to both runs succeeded,
  and the part of it the backfill daemon took to turn the backfill into queued runs (it looks for
  new backfills every 30 s);
- per run: queued -> started (the run queue's dequeue interval plus starting the run process),
  its step time (the recording itself), and RUN_START -> RUN_SUCCESS;
- the recovery after each of its faults (rehearsal_faults.py) and the paid requests per distinct paid
  subject over the whole rehearsal.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from test_support.rehearsal import run_rehearsal  # noqa: E402


def main() -> int:
    report = run_rehearsal()
    failed = [r for r in report.backfill_runs + report.sensor_runs + report.schedule_runs if r.status != "SUCCESS"]
    for name, seconds in report.startup_s.items():
        print(f"startup: {name} in {seconds:.1f} s")
    for line in report.timing_lines():
        print(line)
    if failed or report.leftover_pids:
        print(f"FAILED runs: {[r.run_id for r in failed]}; processes left: {report.leftover_pids}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
