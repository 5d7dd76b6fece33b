"""backfill_start_sensor requests a new backfill's runs itself, one per partition with the backfill's
tags, once, taking the backfill from the daemon; it requests again what a dropped tick left without a
run and reopens a backfill completed before its runs ended; it leaves to Dagster's backfill daemon what it does not start (the runs' whole life
under the real daemon: bench/p11_backfill_start.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance, DagsterRunStatus, build_sensor_context
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.remote_origin import (
    GrpcServerCodeLocationOrigin,
    RemotePartitionSetOrigin,
    RemoteRepositoryOrigin,
)

from social_recording.dagster_defs.backfill_start import FRESH_S, start_backfills
from social_recording.dagster_defs.backfill_watch import Watch, watch_action
from test_support.sandbox_env import make_env

JOBS = ["reconcile_job"]
DAYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def _backfill(backfill_id: str, *, age_s: float = 1.0, partition_set: str = "reconcile_job_partition_set",
              **fields: Any) -> PartitionBackfill:
    origin = RemotePartitionSetOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=GrpcServerCodeLocationOrigin(host="localhost", port=4266,
                                                              location_name="social_recording"),
            repository_name="__repository__"),
        partition_set_name=partition_set)
    values: dict[str, Any] = {"backfill_id": backfill_id, "status": BulkActionStatus.REQUESTED, "from_failure": False,
                              "tags": {"team": "ops"}, "backfill_timestamp": time.time() - age_s,
                              "partition_set_origin": origin, "partition_names": DAYS, **fields}
    return PartitionBackfill(**values)


def _create_runs(instance: DagsterInstance, defs: Any, backfill_id: str, days: list[str],
                 status: DagsterRunStatus = DagsterRunStatus.NOT_STARTED) -> None:
    for day in days:
        instance.create_run_for_job(defs.resolve_job_def("reconcile_job"), status=status,
                                    tags={"dagster/backfill": backfill_id, "dagster/partition": day})


def _evaluate(instance: DagsterInstance, env_defs: Any, cursor: str | None = None) -> Any:
    with build_sensor_context(instance=instance, repository_def=env_defs.get_repository_def(),
                              cursor=cursor) as context:
        return start_backfills(context, JOBS)


def test_a_new_backfill_gets_one_run_per_partition_at_once_and_only_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("newbf"))
        first = _evaluate(instance, defs)
        requests = first.run_requests
        assert [(r.job_name, r.partition_key) for r in requests] == [("reconcile_job", d) for d in DAYS]
        assert all(r.tags == {"team": "ops", "dagster/backfill": "newbf"} for r in requests)
        assert [r.run_key for r in requests] == [f"newbf:{d}" for d in DAYS]
        assert json.loads(first.cursor) == {"started": ["newbf"], "watching": ["newbf"]}
        # Taken from the backfill daemon before the runs are requested: it creates none past the checkpoint.
        taken = instance.get_backfill("newbf")
        assert taken is not None and taken.last_submitted_partition_name == DAYS[-1]
        _create_runs(instance, defs, "newbf", DAYS)  # what the sensor daemon does with the requests
        again = _evaluate(instance, defs, cursor=first.cursor)  # started once, never twice
        assert again.run_requests == [] and again.skip_reason is not None
        assert json.loads(again.cursor)["watching"] == ["newbf"]  # until the daemon completes it


def test_the_cursor_of_the_sensor_before_the_watch_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("oldbf"))
        result = _evaluate(instance, defs, cursor=json.dumps(["oldbf"]))
        assert result.run_requests == [] and json.loads(result.cursor) == {"started": ["oldbf"], "watching": []}


def test_a_tick_dropped_before_its_runs_leaves_no_partition_without_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tick that requested the runs created one and was dropped (the sensor stopped in the middle):
    the next evaluation requests the two left, with the same run keys, and nothing more."""
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("dropbf"))
        first = _evaluate(instance, defs)
        _create_runs(instance, defs, "dropbf", DAYS[:1])
        again = _evaluate(instance, defs, cursor=first.cursor)
        assert [(r.partition_key, r.run_key) for r in again.run_requests] == [(d, f"dropbf:{d}") for d in DAYS[1:]]


@pytest.mark.parametrize(("status", "run_status", "reopened"), [
    (BulkActionStatus.COMPLETED_SUCCESS, DagsterRunStatus.STARTED, True),  # completed before its runs ended
    (BulkActionStatus.COMPLETED_SUCCESS, DagsterRunStatus.FAILURE, True),  # ... and one failed since
    (BulkActionStatus.COMPLETED_FAILED, DagsterRunStatus.FAILURE, False),  # what the daemon concluded
    (BulkActionStatus.COMPLETED_SUCCESS, DagsterRunStatus.SUCCESS, False),
])
def test_a_backfill_completed_before_its_runs_ended_is_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: BulkActionStatus, run_status: DagsterRunStatus,
    reopened: bool,
) -> None:
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("earlybf"))
        first = _evaluate(instance, defs)
        _create_runs(instance, defs, "earlybf", DAYS, status=run_status)
        taken = instance.get_backfill("earlybf")
        assert taken is not None
        instance.update_backfill(taken.with_status(status))
        again = _evaluate(instance, defs, cursor=first.cursor)
        after = instance.get_backfill("earlybf")
        assert after is not None and again.run_requests == []
        assert after.status == (BulkActionStatus.REQUESTED if reopened else status)
        assert json.loads(again.cursor)["watching"] == (["earlybf"] if reopened else [])


@pytest.mark.parametrize(("status", "missing", "unfinished", "failed", "expected"), [
    (BulkActionStatus.REQUESTED, ["d2"], False, False, Watch(request=("d2",))),
    (BulkActionStatus.REQUESTED, [], True, False, Watch()),
    (BulkActionStatus.COMPLETED_SUCCESS, ["d2"], False, False, Watch(request=("d2",), reopen=True)),
    (BulkActionStatus.COMPLETED_SUCCESS, [], True, False, Watch(reopen=True)),
    (BulkActionStatus.COMPLETED_SUCCESS, [], False, True, Watch(reopen=True)),
    (BulkActionStatus.COMPLETED_FAILED, [], False, True, Watch(settled=True)),
    (BulkActionStatus.COMPLETED_SUCCESS, [], False, False, Watch(settled=True)),
    (BulkActionStatus.CANCELING, ["d2"], True, False, Watch(settled=True)),
    (BulkActionStatus.CANCELED, ["d2"], False, True, Watch(settled=True)),
    (BulkActionStatus.FAILED, ["d2"], False, False, Watch(settled=True)),
])
def test_the_watch_rule(status: BulkActionStatus, missing: list[str], unfinished: bool, failed: bool,
                        expected: Watch) -> None:
    assert watch_action(status, missing, unfinished, failed) == expected


@pytest.mark.parametrize("left", [
    {"from_failure": True}, {"run_config": {"ops": {}}}, {"reexecution_steps": ["x"]},
    {"last_submitted_partition_name": "2026-11-01"}, {"partition_set": "retry_job_partition_set"},
    {"age_s": FRESH_S + 5}, {"status": BulkActionStatus.CANCELING},
])
def test_what_it_does_not_start_is_left_to_the_backfill_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, left: dict[str, Any]
) -> None:
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("leftbf", **left))
        assert _evaluate(instance, defs).run_requests == []


def test_a_backfill_the_daemon_already_started_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    defs = make_env(tmp_path, monkeypatch, []).defs()
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        instance.add_backfill(_backfill("daemonbf"))
        instance.create_run_for_job(defs.resolve_job_def("reconcile_job"), tags={"dagster/backfill": "daemonbf"})
        assert _evaluate(instance, defs).run_requests == []


def test_it_runs_in_every_environment_for_the_partitioned_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It starts only what an operator launched: running by default in dev too (the other sensors,
    which spend, start stopped there)."""
    from dagster import DefaultSensorStatus

    defs = make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_ENV": "dev"}).defs()
    sensor = defs.resolve_sensor_def("backfill_start_sensor")
    assert sensor.default_status == DefaultSensorStatus.RUNNING
    assert [t.job_name for t in sensor.targets] == ["reconcile_job"]
    assert sensor.minimum_interval_seconds == 4  # every 5 s loop of the sensor daemon, none skipped
