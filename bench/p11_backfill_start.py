"""P11: launch of a backfill -> its first run, under the real daemon, on both instance configs.

    python bench/p11_backfill_start.py [--instances dev deploy] [--repeat 4]

Starts the services as P7 does (`dev`: `dg dev` on the top-level dagster.yaml, SQLite; `deploy`:
the deployment rehearsal's webserver, daemon and code server natively on deploy/dagster.yaml,
PostgreSQL), then launches one-partition backfills of reconcile_job through the webserver's API as
the UI's "Launch backfill" does, and times the launch to the creation of the backfill's first run.
Alternated: with backfill_start_sensor stopped (Dagster's backfill daemon alone, a look every 30 s:
the baseline) and running (this pipeline). Also reports whether each backfill completed with its
one run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from _common import Table, median  # noqa: I001  (bench/ on sys.path)
from p7_freshness import deploy_services, dev_services

from test_support.rehearsal import (
    BACKFILL_JOB,
    M_BACKFILL,
    M_START_SENSOR,
    Q_BACKFILL,
    Q_RUNS,
    REPO_SELECTOR,
    GraphQL,
)

SENSOR = "backfill_start_sensor"
M_STOP_SENSOR = """mutation($id: String!) { stopSensor(id: $id) { __typename
  ... on StopSensorMutationResult { instigationState { status } } ... on PythonError { message } } }"""
Q_SENSOR_IDS = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { id sensorState { status } } } }"""
WAIT_S = 90.0


def _set_sensor(gql: GraphQL, running: bool) -> None:
    selector = {**REPO_SELECTOR, "sensorName": SENSOR}
    if running:
        gql(M_START_SENSOR, selector=selector)
    else:
        sensor = gql(Q_SENSOR_IDS, selector=selector)["sensorOrError"]
        stopped = gql(M_STOP_SENSOR, id=sensor["id"])["stopSensor"]
        if stopped["__typename"] != "StopSensorMutationResult":
            raise SystemExit(f"P11: stopSensor: {stopped}")
    time.sleep(6)  # a sensor daemon loop, so the next backfill meets the new state


def _first_run_s(gql: GraphQL, partition: str) -> tuple[float, str]:
    launched = time.time()
    result = gql(M_BACKFILL, params={
        "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
        "partitionNames": [partition]})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise SystemExit(f"P11: launchPartitionBackfill: {result}")
    backfill_id = result["backfillId"]
    run_filter = {"tags": [{"key": "dagster/backfill", "value": backfill_id}]}
    while time.time() - launched < WAIT_S:
        runs = gql(Q_RUNS, filter=run_filter)["runsOrError"]["results"]
        if runs:
            first = min(r["creationTime"] for r in runs) - launched
            break
        time.sleep(0.2)
    else:
        raise SystemExit(f"P11: no run of backfill {backfill_id} within {WAIT_S:g} s")
    while time.time() - launched < WAIT_S * 2:  # completed, with one run: the daemon kept its part
        status = gql(Q_BACKFILL, id=backfill_id)["partitionBackfillOrError"].get("status")
        if status in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"):
            break
        time.sleep(1)
    runs = gql(Q_RUNS, filter=run_filter)["runsOrError"]["results"]
    return first, f"{status}, {len(runs)} run(s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--instances", nargs="+", choices=("dev", "deploy"), default=["dev", "deploy"])
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args(argv)
    table = Table("P11", "launch of a one-partition backfill -> its first run created, s",
                  ["instance", "backfill_start_sensor", "median", "min", "max", "each", "ended"])
    for instance in args.instances:
        services = dev_services if instance == "dev" else deploy_services
        with tempfile.TemporaryDirectory(prefix="p11-") as tmp, services(Path(tmp), "new") as running:
            samples: dict[bool, list[float]] = {True: [], False: []}
            ended: dict[bool, list[str]] = {True: [], False: []}
            # dev: the default partitions (from 2026-11-01); deploy: the rehearsal's (the last 7 days)
            first = date(2026, 11, 1) if instance == "dev" else date.today() - timedelta(days=7)
            days = (first + timedelta(days=i) for i in range(2 * args.repeat))
            for _ in range(args.repeat):
                for on in (False, True):
                    _set_sensor(running.gql, on)
                    took, end = _first_run_s(running.gql, next(days).isoformat())
                    samples[on].append(took)
                    ended[on].append(end)
            for on in (False, True):
                s = samples[on]
                table.add(instance, "running (this pipeline)" if on else "stopped (baseline: the daemon alone)",
                          median(s), min(s), max(s), " ".join(f"{v:.1f}" for v in s),
                          "; ".join(sorted(set(ended[on]))))
        table.print()  # after each instance: a failure later keeps what was measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
