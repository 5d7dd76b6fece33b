"""`drain` and `resume` on a real instance (SQLite storage on disk) and the code location loaded by
module, as on a host without the deployment's workspace file: in prod every schedule and sensor
starts running; drain stops them all, waits for a run in flight and names it when the wait times out,
and exits 0 once it finished; resume gives each its default back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.scheduler.instigation import InstigatorStatus

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]
SCHEDULES = ("health_schedule", "housekeeping_schedule", "reconcile_schedule", "retry_schedule")
SENSORS = ("backfill_start_sensor", "reconcile_catch_up_sensor", "retry_candidates_sensor", "stranded_runs_sensor",
           "token_flow_sensor")


def test_the_lists_above_are_every_schedule_and_sensor_of_the_code_location() -> None:
    """A schedule or sensor added later is drained too: the lists this test checks are complete."""
    from social_recording.definitions import defs

    repo = defs.get_repository_def()
    assert {s.name for s in repo.schedule_defs} == set(SCHEDULES)
    assert {s.name for s in repo.sensor_defs} == set(SENSORS)


def command(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "social_recording", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)


def test_drain_stops_everything_waits_for_runs_and_resume_restores_defaults(tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIAL_RECORDING_", "DAGSTER_"))}
    env.update(DAGSTER_HOME=str(home), SOCIAL_RECORDING_ENV="prod",
               SOCIAL_RECORDING_STORE_URL=f"sqlite:///{tmp_path / 'store.db'}")
    run_id = "11111111-2222-3333-4444-555555555555"
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_run(DagsterRun(job_name="retry_job", run_id=run_id, status=DagsterRunStatus.STARTED))

    timed_out = command(["drain", "--timeout", "2", "--poll", "0.5"], env)
    assert timed_out.returncode == 1, timed_out.stdout + timed_out.stderr
    for name in SCHEDULES:
        assert f"schedule {name}: stopped" in timed_out.stdout
    for name in SENSORS:
        assert f"sensor {name}: stopped" in timed_out.stdout
    assert "waiting for 1 run(s)" in timed_out.stdout
    assert f"still going: run {run_id} (retry_job, STARTED)" in timed_out.stderr
    with DagsterInstance.from_config(str(home)) as instance:
        states = {s.name: s.status for s in instance.all_instigator_state()}
        assert states == {name: InstigatorStatus.STOPPED for name in (*SCHEDULES, *SENSORS)}
        run = instance.get_run_by_id(run_id)
        assert run is not None
        instance.report_run_failed(run)  # the run ends (its process would report it)

    drained = command(["drain", "--timeout", "30"], env)
    assert drained.returncode == 0, drained.stdout + drained.stderr
    assert "was already stopped" in drained.stdout and "drained: no run or backfill in flight" in drained.stdout

    resumed = command(["resume"], env)
    assert resumed.returncode == 0, resumed.stderr
    for name in (*SCHEDULES, *SENSORS):
        assert f"{name}: running (its default)" in resumed.stdout
    with DagsterInstance.from_config(str(home)) as instance:
        assert {s.name for s in instance.all_instigator_state() if s.status == InstigatorStatus.STOPPED} == set()

    bad = command(["drain", "--timeout", "-1"], env)
    assert bad.returncode == 2 and "--timeout must be >= 0" in bad.stderr
