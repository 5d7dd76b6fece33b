"""The schedules: the daily reconcile of yesterday and today so far, and their default status."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import DefaultScheduleStatus, RunRequest, build_schedule_context

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import load_settings
from test_support.sandbox_env import make_env


def test_reconcile_schedule_requests_yesterday_and_today(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_env(tmp_path, monkeypatch, [])
    defs = build_definitions(load_settings())
    schedule = defs.resolve_schedule_def("reconcile_schedule")
    assert schedule.cron_schedule == "30 0 * * *" and schedule.execution_timezone == "UTC"
    assert schedule.job_name == "reconcile_job"
    tick = datetime(2026, 11, 12, 0, 30, tzinfo=UTC)
    with build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as ctx:
        result = schedule.evaluate_tick(ctx)
    requests = list(result.run_requests or [])
    assert all(isinstance(r, RunRequest) for r in requests)
    assert [r.partition_key for r in requests] == ["2026-11-11", "2026-11-12"]
    assert len({r.run_key for r in requests}) == 2
    # the same tick evaluated again asks for the same run keys (Dagster launches each once) ...
    with build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as ctx:
        again = [r.run_key for r in schedule.evaluate_tick(ctx).run_requests or []]
    assert again == [r.run_key for r in requests]
    # ... and the next day's tick reconciles its own two days
    with build_schedule_context(scheduled_execution_time=datetime(2026, 11, 13, 0, 30, tzinfo=UTC), repository_def=defs.get_repository_def()) as ctx:
        nxt = list(schedule.evaluate_tick(ctx).run_requests or [])
    assert [r.partition_key for r in nxt] == ["2026-11-12", "2026-11-13"]
    assert not {r.run_key for r in nxt} & {r.run_key for r in requests}


def test_todays_partition_exists_so_the_schedule_can_run_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_env(tmp_path, monkeypatch, [])
    job = build_definitions(load_settings()).resolve_job_def("reconcile_job")
    assert job.partitions_def is not None
    today = datetime.now(UTC).date().isoformat()
    assert today in job.partitions_def.get_partition_keys()


@pytest.mark.parametrize("env_name, running", [("dev", False), ("stage", False), ("prod", True)])
def test_reconcile_schedule_runs_by_default_only_in_prod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env_name: str, running: bool
) -> None:
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_ENV": env_name})
    schedule = build_definitions(load_settings()).resolve_schedule_def("reconcile_schedule")
    assert (schedule.default_status == DefaultScheduleStatus.RUNNING) is running
