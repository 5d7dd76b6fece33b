"""stranded_runs_sensor submits exactly the backfill runs left created and never submitted, once they
have waited long enough (the whole crash and restart: deploy/test_daemon_recovery.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context

from social_recording.dagster_defs.recovery import STRANDED_AFTER_S, submit_stranded_runs
from test_support.sandbox_env import make_env

QUEUED = {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}}


def test_a_backfill_run_younger_than_the_bound_is_left_to_its_submitter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Submitting an old one needs a run launched through the workspace (a remote origin): that
    path runs in deploy/test_daemon_recovery.py."""
    env = make_env(tmp_path, monkeypatch, [])
    defs = env.defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance"), overrides=QUEUED) as instance:
        run = instance.create_run_for_job(defs.resolve_job_def("retry_job"), tags={"dagster/backfill": "bf1"})
        with build_sensor_context(instance=instance, repository_def=defs.get_repository_def()) as context:
            result = submit_stranded_runs(context, now=time.time() + STRANDED_AFTER_S - 5)
        assert f"no backfill run has waited {STRANDED_AFTER_S} s" in (result.skip_message or "")
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.NOT_STARTED  # type: ignore[union-attr]


def test_nothing_is_submitted_without_a_run_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env(tmp_path, monkeypatch, [])
    defs = env.defs()
    with DagsterInstance.ephemeral() as instance:
        run = instance.create_run_for_job(defs.resolve_job_def("retry_job"), tags={"dagster/backfill": "bf1"})
        with build_sensor_context(instance=instance, repository_def=defs.get_repository_def()) as context:
            result = submit_stranded_runs(context, now=time.time() + 3600)
        assert "not the queued one" in (result.skip_message or "")
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.NOT_STARTED  # type: ignore[union-attr]
