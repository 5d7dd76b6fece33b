"""A partition key outside reconcile_job's partitions is refused before any request (the tracker
included), whichever way the run is launched: the GraphQL API (what the UI calls), the CLI's
`--tags`, a schedule. Dagster itself checks keys only where it builds them (the UI's partition
picker, `--partition`, execute_in_process)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, build_schedule_context
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.dagster_defs.partitions import PartitionKeyError, check_partition_key, daily_partitions
from social_recording.settings import load_settings
from test_support.sandbox_env import SandboxEnv, make_env, token

START = "2026-11-01"
A = "TokPart11111111111111111111111111111111111"


def _bad_keys() -> list[str]:
    future = (datetime.now(UTC).date() + timedelta(days=3)).isoformat()
    return ["1999-01-01", "2026-10-31", future, "garbage", "2026-13-45", ""]


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    return make_env(tmp_path, monkeypatch, [token(A, "2026-11-03T08:00:00Z", website="https://github.com/o/part")],
                    extra={"SOCIAL_RECORDING_PARTITION_START": START})


def _assert_names_key_and_range(message: str, key: str) -> None:
    assert f"partition key {key!r} is not a partition of reconcile_job" in message, message
    assert f"{START} to {datetime.now(UTC).date().isoformat()}" in message, message


# --------------------------------------------------------------------------- the rule


@pytest.mark.parametrize("key", _bad_keys())
def test_the_check_names_the_key_and_the_valid_range(key: str) -> None:
    with pytest.raises(PartitionKeyError) as raised:
        check_partition_key(daily_partitions(date.fromisoformat(START)), key)
    _assert_names_key_and_range(str(raised.value), key)


def test_the_first_day_and_today_are_partitions() -> None:
    partitions = daily_partitions(date.fromisoformat(START))
    today = datetime.now(UTC).date().isoformat()
    assert check_partition_key(partitions, START) == START
    assert check_partition_key(partitions, today) == today


# --------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("key", ["1999-01-01", "garbage"])
def test_cli_tags_with_a_bad_key_fail_before_the_tracker_is_asked(env: SandboxEnv, key: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dagster", "job", "execute", "-m", "social_recording.definitions",
         "-j", "reconcile_job", "--tags", json.dumps({"dagster/partition": key})],
        capture_output=True, text=True, timeout=180, check=False, cwd=env.root,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    _assert_names_key_and_range(output, key)
    assert env.ledger() == []  # no request at all: the tracker's range query included
    assert env.tokens() == {}


def test_cli_tags_with_a_good_key_still_record(env: SandboxEnv) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dagster", "job", "execute", "-m", "social_recording.definitions",
         "-j", "reconcile_job", "--tags", json.dumps({"dagster/partition": "2026-11-03"})],
        capture_output=True, text=True, timeout=180, check=False, cwd=env.root,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert env.statuses() == {A: {"https://github.com/o/part": "ok"}}


# --------------------------------------------------------------------------- GraphQL (the UI's launch)


LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


def test_graphql_launch_with_a_bad_key_fails_before_the_tracker_is_asked(env: SandboxEnv, tmp_path: Path) -> None:
    """The webserver's launchRun, in process, against the code location served over gRPC as in the
    deployment; the run is launched and fails in its first stage."""
    workspace = tmp_path / "workspace.yaml"
    workspace.write_text("load_from:\n  - python_module:\n      module_name: social_recording.definitions\n"
                         "      location_name: social_recording\n")
    key = "1999-01-01"
    (tmp_path / "instance").mkdir()
    direct = {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}}
    with DagsterInstance.local_temp(str(tmp_path / "instance"), overrides=direct) as instance, \
            define_out_of_process_context(str(workspace), None, instance) as context:
        result = execute_dagster_graphql(context, LAUNCH, {"params": {
            "selector": {"repositoryLocationName": "social_recording", "repositoryName": "__repository__",
                         "jobName": "reconcile_job"},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
        }})
        launched = result.data["launchRun"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        run_id = launched["run"]["runId"]
        run = _wait_finished(instance, run_id)
        assert run.status == DagsterRunStatus.FAILURE
        failures = [e.dagster_event.step_failure_data for e in instance.all_logs(run_id)
                    if e.dagster_event is not None and e.dagster_event.is_step_failure]
        messages = "\n".join(f.error.message for f in failures if f.error is not None)
    _assert_names_key_and_range(messages, key)
    assert env.ledger() == []
    assert env.tokens() == {}


def _wait_finished(instance: DagsterInstance, run_id: str, timeout: float = 120.0) -> DagsterRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is not None and run.is_finished:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not finish within {timeout:g}s")


# --------------------------------------------------------------------------- schedules


def test_the_schedule_leaves_out_a_day_before_the_first_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the first day of the partitions, yesterday is no partition: the tick asks for today only
    and says why, instead of failing the tick."""
    today = datetime.now(UTC).date()
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_PARTITION_START": today.isoformat()})
    defs = build_definitions(load_settings())
    schedule = defs.resolve_schedule_def("reconcile_schedule")
    tick = datetime(today.year, today.month, today.day, 0, 30, tzinfo=UTC)
    with build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as ctx:
        result = schedule.evaluate_tick(ctx)
    assert [r.partition_key for r in result.run_requests or []] == [today.isoformat()]


def test_a_tick_with_no_valid_day_is_skipped_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tick evaluated for days outside the partitions (here: before the first) launches nothing."""
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_PARTITION_START": START})
    defs = build_definitions(load_settings())
    schedule = defs.resolve_schedule_def("reconcile_schedule")
    tick = datetime(2026, 10, 20, 0, 30, tzinfo=UTC)
    with build_schedule_context(scheduled_execution_time=tick, repository_def=defs.get_repository_def()) as ctx:
        result = schedule.evaluate_tick(ctx)
    assert not result.run_requests
    assert result.skip_message is not None
    _assert_names_key_and_range(result.skip_message, "2026-10-20")
