"""reconcile_catch_up_sensor: a reconcile partition whose last run left tokens unrecorded is launched
again, once per such run, after Dagster's run retries had their go; a person is told when it gives up.
Real runs on a real (temporary) Dagster instance; the sensor's rules on hand-made run records."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    RunRecord,
    SensorResult,
    build_sensor_context,
)

import social_recording.dagster_defs.jobs.reconcile as catch_up
from social_recording.dagster_defs.jobs.reconcile import (
    CATCH_UP_OF_TAG,
    CATCH_UP_TAG,
    MAX_CATCH_UPS,
    REMAINING_TAG,
    evaluate_catch_up,
)
from social_recording.dagster_defs.partitions import daily_partitions
from social_recording.locks import open_lock_manager
from social_recording.recording.engine import Timings
from social_recording.recording.reconcile import reconcile_lock_key
from social_recording_tests.dagster_defs.short_timings import use_timings
from test_support.sandbox_env import make_env, token

FAILED_DAY, LIMITED_DAY, DONE_DAY = "2026-11-05", "2026-11-06", "2026-11-07"
PARTITIONS = daily_partitions(datetime(2026, 11, 1).date())


def test_the_sensor_launches_again_the_partitions_whose_last_run_left_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three partitions run for real: one fails (another run held its window for the whole wait), one
    succeeds with a token not reached (limit 1), one records everything. The sensor launches the
    first two again, with run keys that name the run they complete."""
    tokens = [token(f"Cu{d[-2:]}{i}token", f"{d}T1{i}:00:00Z", website=f"https://github.com/cu/{d[-2:]}{i}")
              for d in (FAILED_DAY, LIMITED_DAY, DONE_DAY) for i in range(2)]
    env = make_env(tmp_path, monkeypatch, tokens)
    use_timings(Timings(job_lock_wait=0.2), monkeypatch)
    instance = DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    defs = env.defs()
    job = defs.resolve_job_def("reconcile_job")
    locks = open_lock_manager(env.store_url)
    try:
        with locks.try_hold(reconcile_lock_key(FAILED_DAY), 30.0):
            failed = job.execute_in_process(partition_key=FAILED_DAY, instance=instance, raise_on_error=False)
    finally:
        locks.close()
    limited = job.execute_in_process(partition_key=LIMITED_DAY, instance=instance,
                                     run_config={"ops": {"reconcile_window": {"config": {"limit": 1}}}})
    done = job.execute_in_process(partition_key=DONE_DAY, instance=instance)
    assert not failed.success and limited.success and done.success
    limited_run = instance.get_run_by_id(limited.run_id)
    assert limited_run is not None and limited_run.tags[REMAINING_TAG] == "1"

    sensor = defs.resolve_sensor_def("reconcile_catch_up_sensor")
    assert sensor.job_name == "reconcile_job"
    monkeypatch.setattr(catch_up, "SETTLE_S", 0.0)  # the runs above just ended
    result = sensor(build_sensor_context(instance=instance))
    assert isinstance(result, SensorResult) and result.run_requests
    by_day = {r.partition_key: r for r in result.run_requests}
    assert sorted(by_day) == [FAILED_DAY, LIMITED_DAY]
    assert by_day[FAILED_DAY].run_key == f"catch-up:{FAILED_DAY}:{failed.run_id}"
    assert by_day[LIMITED_DAY].tags[CATCH_UP_OF_TAG] == limited.run_id and by_day[LIMITED_DAY].tags[CATCH_UP_TAG] == "1"
    cursor = json.loads(result.cursor or "{}")
    assert cursor["partitions"] == 3 and sorted(cursor["launched"]) == [FAILED_DAY, LIMITED_DAY]
    assert "failed" in cursor["launched"][FAILED_DAY] and "1 token(s) not reached" in cursor["launched"][LIMITED_DAY]
    again = sensor(build_sensor_context(instance=instance))
    assert isinstance(again, SensorResult)
    assert sorted(r.run_key or "" for r in again.run_requests) == sorted(r.run_key or "" for r in result.run_requests)

    # The catch-up of the limited partition records the rest: nothing is left to catch up there.
    request = by_day[LIMITED_DAY]
    rerun = job.execute_in_process(partition_key=LIMITED_DAY, instance=instance, tags=request.tags)
    assert rerun.success and rerun.output_for_node("reconcile_window")["remaining"] == 0
    after = sensor(build_sensor_context(instance=instance))
    assert isinstance(after, SensorResult)
    assert [r.partition_key for r in after.run_requests] == [FAILED_DAY]


def _record(day: str, status: DagsterRunStatus, *, ended_ago: float = 600.0, tags: dict[str, str] | None = None,
            run_id: str | None = None) -> RunRecord:
    now = time.time()
    run = DagsterRun(job_name="reconcile_job", run_id=run_id, status=status,
                     tags={"dagster/partition": day, **(tags or {})})
    stamp = datetime.fromtimestamp(now - ended_ago, UTC)
    return RunRecord(storage_id=1, dagster_run=run, create_timestamp=stamp, update_timestamp=stamp,
                     start_time=now - ended_ago - 5, end_time=now - ended_ago)


def test_only_each_partitions_last_run_counts() -> None:
    newest_first = [_record(FAILED_DAY, DagsterRunStatus.SUCCESS), _record(FAILED_DAY, DagsterRunStatus.FAILURE)]
    assert evaluate_catch_up(newest_first, PARTITIONS, time.time()).run_requests == []


def test_runs_in_progress_or_just_ended_are_left_alone() -> None:
    records = [_record(FAILED_DAY, DagsterRunStatus.STARTED), _record(LIMITED_DAY, DagsterRunStatus.FAILURE, ended_ago=5)]
    out = evaluate_catch_up(records, PARTITIONS, time.time(), settle_s=60)
    assert out.run_requests == []
    assert "1 in progress, 1 ended less than 60 s ago" in out.skip_reason


def test_canceled_runs_are_caught_up_and_unknown_partitions_are_not() -> None:
    records = [_record(FAILED_DAY, DagsterRunStatus.CANCELED), _record("1999-01-01", DagsterRunStatus.FAILURE)]
    out = evaluate_catch_up(records, PARTITIONS, time.time())
    assert [r.partition_key for r in out.run_requests] == [FAILED_DAY]


def test_it_gives_up_after_the_bound_and_says_what_to_do() -> None:
    last = _record(FAILED_DAY, DagsterRunStatus.FAILURE, tags={CATCH_UP_TAG: str(MAX_CATCH_UPS)}, run_id="r-last")
    out = evaluate_catch_up([last], PARTITIONS, time.time())
    assert out.run_requests == [] and out.cursor.gave_up == {FAILED_DAY: "r-last"}
    assert f"gave up on {FAILED_DAY} (run r-last)" in out.skip_reason
    assert any("fix the cause, then re-execute it" in note for note in out.notes)
    second = _record(FAILED_DAY, DagsterRunStatus.FAILURE, tags={CATCH_UP_TAG: "1"}, run_id="r-1")
    (request,) = evaluate_catch_up([second], PARTITIONS, time.time()).run_requests
    assert request.tags[CATCH_UP_TAG] == "2" and request.run_key == f"catch-up:{FAILED_DAY}:r-1"
