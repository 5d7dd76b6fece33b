"""housekeeping_job on a real instance (SQLite storage on disk, the local compute log manager): runs
of the sandbox backdated past the retention are purged with their event logs and compute logs, and
the runs the asset pages, the growth check and the partition status read are kept."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, DefaultScheduleStatus, RunsFilter
from dagster._core.storage.runs.schema import RunsTable

from social_recording.dagster_defs.assets import ASSET_SPECS
from social_recording.dagster_defs.health_report import exhausted_baseline
from social_recording.dagster_defs.jobs.health import HEALTH_JOB
from social_recording.dagster_defs.jobs.housekeeping import HOUSEKEEPING_CRON, HOUSEKEEPING_JOB
from social_recording.domain.models import utcnow
from test_support.sandbox_env import SandboxEnv, make_env, token

pytestmark = pytest.mark.heavy(minutes=0.5)

A = "TokHouse1111111111111111111111111111111111"
B = "TokHouse2222222222222222222222222222222222"
TOKENS = [token(A, "2026-11-01T03:00:00Z", twitter="https://x.com/i/status/1000000000000000011"),
          token(B, "2026-11-02T03:00:00Z", telegram="https://t.me/housechat")]
RETRY_FAST = {"ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    return make_env(tmp_path, monkeypatch, TOKENS, extra={"SOCIAL_RECORDING_RETENTION_DAYS": "30"})


def backdate(instance: DagsterInstance, run_ids: list[str], days: float) -> None:
    """Move runs' creation, start, end and last update `days` into the past, as if they ran then."""
    now = utcnow()
    stamp = now - timedelta(days=days)
    with instance.run_storage.connect() as conn:  # type: ignore[attr-defined]
        conn.execute(RunsTable.update().where(RunsTable.c.run_id.in_(run_ids)).values(
            create_timestamp=stamp.replace(tzinfo=None), update_timestamp=stamp.replace(tzinfo=None),
            start_time=stamp.timestamp(), end_time=stamp.timestamp()))


def compute_log(instance: DagsterInstance, run_id: str) -> Path:
    """A step's captured stdout, as a run process writes it under the local compute log manager."""
    path = Path(instance.compute_log_manager.get_captured_local_path(  # type: ignore[attr-defined]
        [run_id, "compute_logs", "step"], "out"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("a step's output\n")
    return path


def test_housekeeping_purges_old_runs_and_keeps_what_is_still_read(env: SandboxEnv, tmp_path: Path) -> None:
    defs = env.defs()
    reconcile, retry = defs.resolve_job_def("reconcile_job"), defs.resolve_job_def("retry_job")
    with DagsterInstance.from_ref(DagsterInstance.local_temp(str(tmp_path / "dagster_home")).get_ref()) as instance:
        first = reconcile.execute_in_process(partition_key="2026-11-01", instance=instance).run_id
        again = reconcile.execute_in_process(partition_key="2026-11-01", instance=instance).run_id
        last = reconcile.execute_in_process(partition_key="2026-11-01", instance=instance).run_id
        other_day = reconcile.execute_in_process(partition_key="2026-11-02", instance=instance).run_id
        retries = [retry.execute_in_process(run_config=RETRY_FAST, instance=instance).run_id for _ in range(2)]
        health = defs.resolve_job_def(HEALTH_JOB).execute_in_process(instance=instance).run_id
        in_flight = "0" * 8 + "-0000-0000-0000-" + "0" * 12
        instance.add_run(DagsterRun(job_name="retry_job", run_id=in_flight, status=DagsterRunStatus.STARTED))
        old = [first, again, last, other_day, *retries, health, in_flight]
        backdate(instance, old, days=40)
        recent = retry.execute_in_process(run_config=RETRY_FAST, instance=instance).run_id
        backdate(instance, [recent], days=2)
        logs = {run_id: compute_log(instance, run_id) for run_id in [*old, recent]}

        latest = {spec.key: [r.run_id for r in instance.fetch_materializations(spec.key, limit=1).records]
                  for spec in ASSET_SPECS}
        holders = {run_id for ids in latest.values() for run_id in ids}
        # The first run of 2026-11-01 recorded the graph objects (the later ones found them recorded).
        assert first in holders and again not in holders
        baseline_before = exhausted_baseline(instance, utcnow())
        result = defs.resolve_job_def(HOUSEKEEPING_JOB).execute_in_process(instance=instance)
        assert result.success

        left = {r.dagster_run.run_id for r in instance.get_run_records(RunsFilter())} - {result.run_id}
        purged = {again, *retries, health} - holders
        assert again in purged and health in purged
        assert left == {first, last, other_day, in_flight, recent} | holders
        # The latest run of each partition stays (the partition shows done); so does a run holding an
        # asset's latest materialization (the catalog still shows when and by which run it was written).
        for key, ids in latest.items():
            assert [r.run_id for r in instance.fetch_materializations(key, limit=1).records] == ids, key
        # The growth check still finds its baseline observation.
        after = exhausted_baseline(instance, utcnow())
        assert baseline_before is not None and after == baseline_before
        for run_id in purged:
            assert instance.get_run_by_id(run_id) is None
            assert not list(instance.all_logs(run_id))  # the event log went with the record
            assert not logs[run_id].exists()  # and the compute logs with both
            assert not logs[run_id].parent.parent.exists()
        for run_id in left:
            assert logs[run_id].exists(), run_id
            assert run_id == in_flight or list(instance.all_logs(run_id)), run_id
        metadata = {e.step_output_data.output_name: e.step_output_data.metadata
                    for e in result.all_events if e.is_successful_output}["result"]
        assert metadata["runs_purged"].value == len(purged)

        # Idempotent: a second housekeeping run finds nothing more to purge.
        again_result = defs.resolve_job_def(HOUSEKEEPING_JOB).execute_in_process(instance=instance)
        assert [e.step_output_data.metadata["runs_purged"].value
                for e in again_result.all_events if e.is_successful_output] == [0]


def test_housekeeping_is_a_daily_schedule_with_the_retention_setting(env: SandboxEnv,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOCIAL_RECORDING_RETENTION_DAYS", "7")
    monkeypatch.setenv("SOCIAL_RECORDING_ENV", "prod")
    defs = env.defs()
    schedule = defs.resolve_schedule_def("housekeeping_schedule")
    assert schedule.job_name == HOUSEKEEPING_JOB and schedule.cron_schedule == HOUSEKEEPING_CRON
    assert schedule.default_status == DefaultScheduleStatus.RUNNING
    op_config = defs.resolve_job_def(HOUSEKEEPING_JOB).graph.node_named("purge_old_runs").definition.config_schema
    assert op_config.config_type.fields["retention_days"].default_value == 7
