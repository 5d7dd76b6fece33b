"""Dagster's recovery in the deployment: a daemon killed while a backfill submits its runs, restarted,
and the backfill completes; a dead daemon fails its health check at once, and a hung one (SIGSTOP) is
ended by its health check once its heartbeats are older than its interval plus
DAGSTER_DAEMON_HEARTBEAT_TOLERANCE, then replaced by the restart policy (a supervisor doing what
compose does; the tolerance is shortened here, production's bound is computed from the same terms).

Natively, as the rehearsal (rehearsal.py): deploy/entrypoint.sh's code server, daemon and webserver on
the production deploy/dagster.yaml and a real PostgreSQL. The crash is made to land exactly where it
hurts: a lock on the instance's `event_logs` table holds the backfill daemon between creating a
partition's run and submitting it (its first write to that table); the daemon is SIGKILLed there and
its waiting statement dropped with it, as a killed process's would be, and the lock released.
Without recovery the run stays NOT_STARTED until run monitoring fails it and the backfill ends
COMPLETED_FAILED (what an operator saw happen after 247 s).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from social_recording.dagster_defs.recovery import STRANDED_AFTER_S, STRANDED_SENSOR_INTERVAL_S, SUBMITTED_BY
from test_support.rehearsal import (
    BACKFILL_JOB,
    BACKFILL_RUNNING,
    INSTANCE_CONFIG,
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
    stop_backfill_start_sensor,
    wait_location_loaded,
    wait_until,
    with_events,
)
from test_support.sandbox_env import token
from test_support.table_lock import TableLock

pytestmark = [pytest.mark.integration, pytest.mark.heavy(minutes=2)]

STRANDED_WAIT_S = 90.0
"""Guard: the backfill daemon looks for new backfills every 30 s."""
RECOVERY_GUARD_S = 150.0
"""Guard only, and well below what today's failure took (a start timeout of 180 s plus a monitoring
poll of up to 120 s) so that a regression fails here instead of waiting for it."""
HUNG_GUARD_S = 180.0
TEST_TOLERANCE_S = 30
"""The daemon's heartbeat tolerance in this test (production: HEARTBEAT_TOLERANCE_S, 120 s): 60 s of
silence in all, what the check allowed before and a loaded machine never reached on a healthy daemon."""
CHECK_INTERVAL_S = 5.0
"""How often the supervisor runs the health check here (compose: every 30 s)."""
COMPOSE_CHECK_INTERVAL_S = 30.0
HEARTBEAT_INTERVAL_S = 30.0
"""Dagster's DEFAULT_HEARTBEAT_INTERVAL_SECONDS (deploy/entrypoint.sh's DAEMON_HEARTBEAT_INTERVAL_S)."""


@dataclass
class CrashReport:
    partitions: list[str]
    stranded_partition: str
    backfill_status: str
    runs: list[RunRecord]
    kill_to_unhealthy_s: float
    first_check_after_kill_failed: bool
    """The health check run first after the daemon's SIGKILL (and its exit) failed."""
    restart_to_complete_s: float
    restart_to_healthy_s: float
    hung_to_killed_s: float
    hung_to_replaced_s: float
    """SIGSTOP -> a new daemon process running."""
    hung_to_healthy_s: float
    """SIGSTOP -> the new daemon's health check passing."""
    restarts: int
    heartbeat_tolerance_s: int

    def timing_lines(self) -> list[str]:
        return [
            f"daemon SIGKILLed mid-backfill: restart -> backfill {self.backfill_status}: "
            f"{self.restart_to_complete_s:.1f} s (stranded partition {self.stranded_partition})",
            f"daemon health check: failing {self.kill_to_unhealthy_s:.1f} s after SIGKILL, "
            f"passing {self.restart_to_healthy_s:.1f} s after restart",
            f"hung daemon (SIGSTOP, tolerance {self.heartbeat_tolerance_s} s, checks every {CHECK_INTERVAL_S:g} s): "
            f"ended by its check {self.hung_to_killed_s:.1f} s after, replaced {self.hung_to_replaced_s:.1f} s after, "
            f"healthy again {self.hung_to_healthy_s:.1f} s after (bound {hung_bound(self.heartbeat_tolerance_s, CHECK_INTERVAL_S):g} s; "
            f"in production, tolerance 120 s and checks every 30 s: {hung_bound(120, COMPOSE_CHECK_INTERVAL_S):g} s "
            f"+ a restart)",
        ]


def hung_bound(tolerance_s: float, check_interval_s: float) -> float:
    """Latest a hung daemon is ended after it stopped: its last heartbeat up to an interval before,
    found stale an interval plus the tolerance after that heartbeat, by a check that comes at most a
    check interval later and takes a few seconds (a Python CLI on a loaded machine)."""
    return HEARTBEAT_INTERVAL_S + tolerance_s + check_interval_s + 15.0


# --------------------------------------------------------------------------- helpers


def _first_failing_check(dep: Deployment, since: float, timeout: float) -> float:
    """Seconds from `since` until `entrypoint.sh check daemon` first fails."""
    daemon = dep.services["daemon"]
    wait_until("the daemon's health check to fail", lambda: not daemon.healthy(), dep, timeout, every=1.0)
    return time.monotonic() - since


def crash_daemon_mid_backfill(root: Path) -> CrashReport:
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=3), today - timedelta(days=2)]
    tokens = [token(f"RcvD{i}token", f"{d}T09:00:00Z", website=f"https://github.com/recovery/day{i}")
              for i, d in enumerate(days)]
    partitions = [d.isoformat() for d in days]
    with deployment(root, tokens, date(days[0].year, days[0].month, 1), heartbeat_tolerance_s=TEST_TOLERANCE_S) as dep:
        gql = GraphQL(dep.cfg.webserver_port)
        try:
            wait_location_loaded(gql, dep)
            return _crash_and_recover(gql, dep, partitions)
        finally:
            gql.close()


def _crash_and_recover(gql: GraphQL, dep: Deployment, partitions: list[str]) -> CrashReport:
    daemon = dep.services["daemon"]
    assert daemon.proc is not None
    stop_backfill_start_sensor(gql)  # this test is about the backfill daemon's own submission
    result = gql(M_BACKFILL, params={
        "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
        "partitionNames": partitions,
    })["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RehearsalError(f"launchPartitionBackfill: {result}")
    backfill_id = result["backfillId"]
    backfill_filter = {"tags": [{"key": "dagster/backfill", "value": backfill_id}]}

    # 1. The backfill daemon creates a partition's run and is held before submitting it.
    lock = TableLock(dep.cfg.postgres, "event_logs")
    try:
        def stranded() -> RunRecord | None:
            created = [r for r in runs(gql, backfill_filter) if r.status == "NOT_STARTED"]
            return created[0] if created and lock.waiters() else None

        orphan: RunRecord = wait_until("a backfill run created and held before its submission", stranded, dep,
                                   STRANDED_WAIT_S)
        # 2. Killed there.
        killed_at = time.monotonic()
        os.killpg(daemon.proc.pid, signal.SIGKILL)
        daemon.proc.wait(timeout=30)
        lock.drop_waiters()
        first_check_after_kill_failed = not daemon.healthy()
    finally:
        lock.release()
    kill_to_unhealthy = _first_failing_check(dep, killed_at, 30.0)
    (still,) = runs(gql, {"runIds": [orphan.run_id]})
    assert still.status == "NOT_STARTED", still.status

    # 3. Restarted, as compose's `restart: unless-stopped` does.
    restarted_at = time.monotonic()
    daemon.start()
    restart_to_healthy = dep.wait_healthy("daemon")

    def finished() -> str | None:
        status = backfill_status(gql, backfill_id)
        return None if status in BACKFILL_RUNNING else status

    status = wait_until(f"backfill {backfill_id} to end", finished, dep, RECOVERY_GUARD_S, every=1.0)
    restart_to_complete = time.monotonic() - restarted_at
    backfill_runs = [with_events(gql, r) for r in runs(gql, backfill_filter)]

    # 4. A hung daemon (stopped, not dead), under a supervisor as compose runs it: its health check
    #    ends it once its heartbeats are too old, and the restart policy starts a new one.
    assert daemon.proc is not None
    hung_pid = daemon.proc.pid
    supervisor = dep.supervise("daemon", CHECK_INTERVAL_S)
    try:
        hung_at = time.monotonic()
        os.killpg(hung_pid, signal.SIGSTOP)
        restart = wait_until("the hung daemon to be ended and replaced",
                             lambda: supervisor.restarts[0] if supervisor.restarts else None, dep, HUNG_GUARD_S,
                             every=0.5)
    finally:
        supervisor.stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(hung_pid, signal.SIGCONT)
    hung_to_healthy = restart.restarted_at - hung_at + dep.wait_healthy("daemon")
    assert daemon.proc is not None and daemon.proc.pid != hung_pid

    return CrashReport(
        partitions=partitions, stranded_partition=orphan.tags.get("dagster/partition", "?"),
        backfill_status=status, runs=backfill_runs, kill_to_unhealthy_s=kill_to_unhealthy,
        first_check_after_kill_failed=first_check_after_kill_failed,
        restart_to_complete_s=restart_to_complete, restart_to_healthy_s=restart_to_healthy,
        hung_to_killed_s=restart.exited_at - hung_at, hung_to_replaced_s=restart.restarted_at - hung_at,
        hung_to_healthy_s=hung_to_healthy, restarts=len(supervisor.restarts),
        heartbeat_tolerance_s=TEST_TOLERANCE_S,
    )


# --------------------------------------------------------------------------- the test


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[CrashReport]:
    result = crash_daemon_mid_backfill(Path(tmp_path_factory.mktemp("daemon-crash")))
    request.config.stash[RECOVERY_TIMINGS] = result.timing_lines()
    yield result


def test_the_backfill_completes_after_the_daemon_was_killed_mid_submission(report: CrashReport) -> None:
    assert report.backfill_status == "COMPLETED_SUCCESS", [(r.tags.get("dagster/partition"), r.status)
                                                           for r in report.runs]
    by_partition = {r.tags["dagster/partition"]: r for r in report.runs}
    # Who made each run (a sensor's name and run key, a retry's parent) says where a second one came from.
    made_by = [(r.tags.get("dagster/partition"), r.status, r.tags.get("dagster/sensor_name"),
                r.tags.get("dagster/run_key"), r.tags.get("dagster/parent_run_id")) for r in report.runs]
    assert sorted(by_partition) == report.partitions and len(report.runs) == len(report.partitions), made_by
    assert all(r.status == "SUCCESS" for r in report.runs)
    # The stranded run is the one the sensor submitted, after the bound and not before.
    stranded = by_partition[report.stranded_partition]
    assert any(m.startswith(SUBMITTED_BY) for m in stranded.messages), stranded.messages[:10]
    assert stranded.started is not None and stranded.started - stranded.created >= STRANDED_AFTER_S


def test_a_dead_daemon_fails_its_health_check_at_once(report: CrashReport) -> None:
    # The process check needs no Python: the first check after the kill fails (an event, not a timing:
    # the seconds it took are printed with the session's timings).
    assert report.first_check_after_kill_failed


def test_a_hung_daemon_is_ended_by_its_check_and_replaced_within_its_tolerance(report: CrashReport) -> None:
    # Not after the bound; then one restart. The check judges the last heartbeat, which may already be
    # most of the tolerance old when the daemon stops (a loaded machine delays heartbeats), so the kill
    # can come well before `tolerance` seconds after the stop: only the upper bound is the promise.
    assert 0 < report.hung_to_killed_s <= hung_bound(report.heartbeat_tolerance_s, CHECK_INTERVAL_S)
    assert report.restarts == 1  # replaced once (how soon after is printed with the timings)


def test_the_stranded_bound_comes_before_run_monitorings_start_timeout() -> None:
    for path in (INSTANCE_CONFIG, INSTANCE_CONFIG.parent.parent / "dagster.yaml"):
        monitoring = yaml.safe_load(path.read_text())["run_monitoring"]
        assert monitoring["enabled"] is True
        # Submitted by the sensor (bound + a tick or two) well before monitoring would fail it.
        assert monitoring["start_timeout_seconds"] > STRANDED_AFTER_S + 2 * STRANDED_SENSOR_INTERVAL_S
