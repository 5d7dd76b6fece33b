"""A daemon SIGKILLed in the middle of backfill_start_sensor's tick, after the tick created a
backfill's first run and before the others, then restarted: every partition gets exactly one run
and the backfill completes. Before the sensor took the backfill from the backfill daemon (its
checkpoint moved past the last partition), the resumed tick and the backfill daemon's first look
both created the runs left: two of three partitions ran twice.

Natively, as the rehearsal (rehearsal.py), on the production deploy/dagster.yaml and a real
PostgreSQL. The kill lands at a known point: a lock on the instance's `event_logs` table holds the
sensor daemon between creating the first run and submitting it (its first write to that table).
Until the kill, the backfill daemon's own run inserts are held too (backfill_daemon_hold.py): its
look (every 30 s) may come before the sensor's tick (every 5 s) on a busy machine, and would then
create the first run itself; held, it creates none, the sensor takes the backfill, and the first run
is the sensor's, which the test checks. The hold is gone before the restart, so what the backfill
daemon does after it is its own.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from test_support.backfill_daemon_hold import BackfillDaemonHold
from test_support.rehearsal import (
    BACKFILL_JOB,
    BACKFILL_RUNNING,
    M_BACKFILL,
    RECOVERY_TIMINGS,
    REPO_SELECTOR,
    Deployment,
    GraphQL,
    RehearsalError,
    RunRecord,
    backfill_status,
    deployment,
    runs,
    wait_location_loaded,
    wait_until,
)
from test_support.sandbox_env import token
from test_support.table_lock import TableLock

pytestmark = [pytest.mark.integration, pytest.mark.heavy(minutes=1.25)]

SENSOR = "backfill_start_sensor"
HELD_WAIT_S = 60.0
"""Guard: the sensor looks every 5 s (and takes only backfills launched 20 s ago or less)."""
COMPLETE_GUARD_S = 180.0
"""Guard only: the resumed tick submits the runs at once; the backfill daemon completes the backfill
at its first look after they end (every 30 s)."""


@dataclass
class CrashReport:
    backfill_id: str
    partitions: list[str]
    held: RunRecord
    """The run the tick had created when the daemon was killed."""
    before_restart: list[RunRecord]
    backfill_status: str
    runs: list[RunRecord]
    restart_to_complete_s: float
    daemon_held: int
    """The backfill daemon's run inserts held at the kill (its look came before the sensor's tick)."""


def crash_daemon_mid_tick(root: Path) -> CrashReport:
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=n) for n in (4, 3, 2)]
    tokens = [token(f"BsCr{i}token", f"{d}T09:00:00Z", website=f"https://github.com/startcrash/day{i}")
              for i, d in enumerate(days)]
    with deployment(root, tokens, date(days[0].year, days[0].month, 1)) as dep:
        gql = GraphQL(dep.cfg.webserver_port)
        try:
            wait_location_loaded(gql, dep)
            return _crash_and_restart(gql, dep, [d.isoformat() for d in days])
        finally:
            gql.close()


def _crash_and_restart(gql: GraphQL, dep: Deployment, partitions: list[str]) -> CrashReport:
    daemon = dep.services["daemon"]
    hold = BackfillDaemonHold(dep.cfg.postgres)
    lock = TableLock(dep.cfg.postgres, "event_logs")
    try:
        result = gql(M_BACKFILL, params={
            "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
            "partitionNames": partitions,
        })["launchPartitionBackfill"]
        if result["__typename"] != "LaunchBackfillSuccess":
            raise RehearsalError(f"launchPartitionBackfill: {result}")
        backfill_id = result["backfillId"]
        backfill_filter = {"tags": [{"key": "dagster/backfill", "value": backfill_id}]}

        def held() -> RunRecord | None:
            created = runs(gql, backfill_filter)
            return created[0] if created and lock.waiters() else None

        first = wait_until("the tick's first run created and held before its submission", held, dep, HELD_WAIT_S)
        assert daemon.proc is not None
        daemon_held = len(hold.waiters())
        os.killpg(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(timeout=30)
        lock.drop_waiters()
        hold.drop_waiters()
    finally:
        lock.release()
        hold.release()
    before_restart = runs(gql, backfill_filter)

    restarted_at = time.monotonic()
    daemon.start()
    dep.wait_healthy("daemon")

    def finished() -> str | None:
        status = backfill_status(gql, backfill_id)
        return None if status in BACKFILL_RUNNING else status

    status = wait_until(f"backfill {backfill_id} to end", finished, dep, COMPLETE_GUARD_S, every=1.0)
    return CrashReport(backfill_id=backfill_id, partitions=partitions, held=first, before_restart=before_restart,
                       backfill_status=status, runs=runs(gql, backfill_filter),
                       restart_to_complete_s=time.monotonic() - restarted_at, daemon_held=daemon_held)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[CrashReport]:
    result = crash_daemon_mid_tick(Path(tmp_path_factory.mktemp("start-crash")))
    request.config.stash[RECOVERY_TIMINGS] = [
        f"daemon SIGKILLed mid-tick of {SENSOR}: restart -> backfill {result.backfill_status}: "
        f"{result.restart_to_complete_s:.1f} s, {len(result.runs)} run(s) for {len(result.partitions)} partitions "
        f"(the backfill daemon's inserts held at the kill: {result.daemon_held})"]
    yield result


def _made_by(records: list[RunRecord]) -> list[tuple[str | None, ...]]:
    return [(r.tags.get("dagster/partition"), r.status, r.tags.get("dagster/sensor_name"), r.tags.get("dagster/run_key"))
            for r in records]


def test_the_kill_landed_in_the_sensors_tick_after_its_first_run(report: CrashReport) -> None:
    assert report.held.tags.get("dagster/sensor_name") == SENSOR, _made_by([report.held])
    assert [r.run_id for r in report.before_restart] == [report.held.run_id], _made_by(report.before_restart)
    assert report.held.status == "NOT_STARTED"


def test_every_partition_has_exactly_one_run_after_the_restart(report: CrashReport) -> None:
    made_by = _made_by(report.runs)
    assert sorted(r.tags["dagster/partition"] for r in report.runs) == report.partitions, made_by
    # All the sensor's, each with the run key of its partition: the backfill daemon created none.
    assert sorted(r.tags.get("dagster/run_key", "") for r in report.runs) == [
        f"{report.backfill_id}:{p}" for p in report.partitions], made_by
    assert all(r.status == "SUCCESS" for r in report.runs), made_by
    assert report.backfill_status == "COMPLETED_SUCCESS", made_by
