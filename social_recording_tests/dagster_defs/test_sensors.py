"""The sensors and the schedule, evaluated with `build_sensor_context` on a test instance."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
)
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster._core.test_utils import create_run_for_test

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.dagster_defs.jobs.live import (
    LIVE_BATCH_SIZE,
    LIVE_MAX_LOOKBACK,
    LiveCursor,
    evaluate_token_flow,
)
from social_recording.settings import load_settings
from test_support.sandbox_env import SandboxEnv, make_env, token


def _addr(i: int) -> str:
    return f"TokLive{i:03d}" + "x" * 33


@pytest.fixture()
def live_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SandboxEnv, list[dict[str, Any]]]:
    """25 tokens with enough AF investors traded in the last hour (the last two at the same
    instant), plus one below the floor."""
    now = datetime.now(UTC).replace(microsecond=0)
    base = now - timedelta(minutes=50)
    tokens = [token(_addr(i), base + timedelta(minutes=i), website=f"https://github.com/live{i}/repo")
              for i in range(24)]
    tokens.append(token(_addr(24), base + timedelta(minutes=23), website="https://github.com/live24/repo"))
    tokens.append(token(_addr(99), base + timedelta(minutes=5), investors=2))
    return make_env(tmp_path, monkeypatch, tokens), tokens


class _TickLog(logging.Handler):
    """Collects what an evaluation writes to its tick's log (`context.log`)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _evaluate(env: SandboxEnv, name: str, cursor: str | None = None,
              instance: DagsterInstance | None = None,
              tick_log: _TickLog | None = None) -> SensorResult | SkipReason | RunRequest:
    defs = env.defs()
    sensor_def = defs.resolve_sensor_def(name)
    with build_sensor_context(instance=instance or DagsterInstance.ephemeral(), cursor=cursor,
                              resources=env.resources()) as ctx:
        if tick_log is not None:
            ctx.log.addHandler(tick_log)
        return sensor_def(ctx)


def _skip(result: SensorResult | SkipReason | RunRequest) -> str | None:
    """The skip message of an evaluation that launched nothing (None when it launched runs)."""
    if isinstance(result, SkipReason):
        return result.skip_message or ""
    if isinstance(result, SensorResult) and result.skip_reason is not None:
        assert not result.run_requests
        return result.skip_reason.skip_message or ""
    return None


def _addresses(request: RunRequest) -> list[str]:
    return [t["address"] for t in request.run_config["ops"]["record_tokens"]["config"]["tokens"]]


def test_token_flow_launches_batches_and_a_reevaluation_launches_nothing_new(live_env) -> None:
    env, tokens = live_env
    first = _evaluate(env, "token_flow_sensor")
    assert isinstance(first, SensorResult)
    requests = first.run_requests or []
    assert [len(_addresses(r)) for r in requests] == [20, 5]
    launched = [a for r in requests for a in _addresses(r)]
    assert sorted(launched) == sorted(_addr(i) for i in range(25))  # not the one below the floor
    assert len({r.run_key for r in requests}) == 2
    cursor = LiveCursor.parse(first.cursor)
    last = max(datetime.fromisoformat(t["last_transfer_at"]) for t in tokens)
    assert cursor.ts == last and sorted(cursor.at_ts) == sorted([_addr(23), _addr(24)])

    # Same cursor again (e.g. the tick's cursor update was lost): exactly the same run keys.
    again = _evaluate(env, "token_flow_sensor")
    assert isinstance(again, SensorResult)
    assert [r.run_key for r in again.run_requests or []] == [r.run_key for r in requests]
    # The advanced cursor: nothing new in the window.
    empty = _evaluate(env, "token_flow_sensor", cursor=first.cursor)
    assert "no new token with >= 3 AF investors traded between" in (_skip(empty) or "")
    assert isinstance(empty, SensorResult) and LiveCursor.parse(empty.cursor) == cursor
    # The launched run config is valid for live_tokens_job.
    job = env.defs().resolve_job_def("live_tokens_job")
    assert job.execute_in_process(run_config=requests[1].run_config, instance=DagsterInstance.ephemeral()).success
    assert set(env.statuses()) == set(_addresses(requests[1]))


@dataclass
class _T:
    address: str
    last_transfer_at: datetime
    investor_count: int = 5
    symbol: str | None = None


class _FakeTracker:
    def __init__(self, tokens: Sequence[_T]) -> None:
        self.tokens = list(tokens)
        self.calls: list[tuple[datetime, datetime]] = []

    def tokens_in_range(self, start: datetime, end: datetime) -> list[_T]:
        self.calls.append((start, end))
        return [t for t in self.tokens if start <= t.last_transfer_at < end]


NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def test_cursor_advances_only_past_launched_tokens_even_on_a_shared_timestamp() -> None:
    at = NOW - timedelta(minutes=30)
    # 20 tokens fill batch 1 exactly; the 20th shares its timestamp with the 21st and 22nd.
    tokens = [_T(f"a{i:02d}", at + timedelta(seconds=i)) for i in range(19)]
    tie = at + timedelta(seconds=19)
    tokens += [_T("b-tie-1", tie), _T("b-tie-2", tie), _T("b-tie-3", tie), _T("c-late", tie + timedelta(seconds=1))]
    tracker = _FakeTracker(tokens)
    first = evaluate_token_flow(LiveCursor(), tracker, 3, NOW, max_runs=1)  # room for one batch only
    assert [len(r.run_config["ops"]["record_tokens"]["config"]["tokens"]) for r in first.run_requests] == [20]
    assert first.cursor.ts == tie and first.cursor.at_ts == ["b-tie-1"]
    second = evaluate_token_flow(first.cursor, tracker, 3, NOW, max_runs=1)
    launched = [t["address"] for r in second.run_requests for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
    assert launched == ["b-tie-2", "b-tie-3", "c-late"]  # none dropped, none repeated
    assert second.cursor.ts == tie + timedelta(seconds=1)
    third = evaluate_token_flow(second.cursor, tracker, 3, NOW)
    assert third.run_requests == []
    # A token that trades again later is a new batch (new key), launched again.
    tracker.tokens.append(_T("a00", NOW - timedelta(seconds=5)))
    fourth = evaluate_token_flow(second.cursor, tracker, 3, NOW)
    assert [t["address"] for r in fourth.run_requests for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]] == ["a00"]


def test_large_window_is_paged_within_the_budget_and_old_cursors_are_clamped() -> None:
    tokens = [_T(f"t{i:03d}", NOW - timedelta(hours=40) + timedelta(hours=i)) for i in range(40)]
    tracker = _FakeTracker(tokens)
    ticks = iter(range(1000))
    result = evaluate_token_flow(LiveCursor(NOW - timedelta(days=30), []), tracker, 3, NOW,
                                 budget_s=3.5, clock=lambda: float(next(ticks)))
    # Clamped to LIVE_MAX_LOOKBACK, pages of 6 h, and no page started once 3.5 "seconds" were used.
    assert tracker.calls[0][0] == NOW - LIVE_MAX_LOOKBACK
    assert all(end - start <= timedelta(hours=6) for start, end in tracker.calls)
    assert len(tracker.calls) == 4
    assert any("budget" in n for n in result.notes) and any("reconcile_job" in n for n in result.notes)
    seen_until = tracker.calls[-1][1]
    launched = [t["address"] for r in result.run_requests for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
    assert launched == [t.address for t in tokens if t.last_transfer_at < seen_until]
    assert result.cursor.ts == max(t.last_transfer_at for t in tokens if t.last_transfer_at < seen_until)
    # The next evaluation continues from the cursor and picks up the rest.
    rest = evaluate_token_flow(result.cursor, tracker, 3, NOW)
    launched_rest = [t["address"] for r in rest.run_requests for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
    assert launched_rest == [t.address for t in tokens if t.last_transfer_at >= seen_until]
    assert len(rest.run_requests) == -(-len(launched_rest) // LIVE_BATCH_SIZE)


def test_empty_window_is_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env(tmp_path, monkeypatch, [token(_addr(1), "2026-11-02T10:00:00Z")])
    result = _evaluate(env, "token_flow_sensor")
    assert _skip(result) is not None


RETRY_TOKEN = token("TokRetry" + "r" * 34, "2026-11-10T03:00:00Z", website="https://youtube.com/watch?v=Err0rVideo1",
                    telegram="https://t.me/retrychat")


def _add_run(instance: DagsterInstance, status: DagsterRunStatus, job_name: str = "retry_job") -> None:
    """A run record of `job_name` in `status` on the instance, as the run queue / a run worker leaves it."""
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("social_recording"),
                                                    "__repository__"), job_name)
    run = create_run_for_test(instance, job_name=job_name, status=status, remote_job_origin=origin)
    stored = instance.get_run_by_id(run.run_id)
    assert stored is not None and stored.status == status


def test_retry_sensor_launches_only_when_no_retry_run_is_queued_or_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path, monkeypatch, [RETRY_TOKEN], {"https://youtube.com/watch?v=Err0rVideo1": "error"})
    instance = DagsterInstance.ephemeral()
    assert _skip(_evaluate(env, "retry_candidates_sensor", instance=instance)) is not None  # empty store

    # A stored token whose URLs were never attempted: pending candidates, no back-off.
    store_url = env.store_url
    from social_recording.domain.models import TokenProfile
    from social_recording.store import open_store

    store = open_store(store_url)
    store.create_pending_token(TokenProfile(address=RETRY_TOKEN["address"], image="x",
                                            urls=["https://youtube.com/watch?v=Err0rVideo1", "https://t.me/retrychat"]))
    store.close()
    result = _evaluate(env, "retry_candidates_sensor", instance=instance)
    assert isinstance(result, SensorResult) and result.run_requests and result.cursor
    assert _skip(result) is None
    request = result.run_requests[0]
    assert request.run_key and request.tags["social_recording/candidate_urls"] == "2"
    # the default selection (no statuses named): the same query the job runs
    assert not request.run_config["ops"]["retry_urls"]["config"].get("statuses")
    assert _evaluate(env, "retry_candidates_sensor", instance=instance).run_requests[0].run_key == request.run_key  # type: ignore[union-attr]
    # the cursor remembers the launch: an unchanged selection is not launched again within the back-off
    again = _evaluate(env, "retry_candidates_sensor", cursor=result.cursor, instance=instance)
    assert "were launched at" in (_skip(again) or "")
    assert isinstance(again, SensorResult) and again.cursor == result.cursor  # kept, visible

    for status in (DagsterRunStatus.QUEUED, DagsterRunStatus.STARTED):
        other = DagsterInstance.ephemeral()
        _add_run(other, status)
        skipped = _evaluate(env, "retry_candidates_sensor", instance=other)
        assert status.value.lower() in (_skip(skipped) or "")
    finished = DagsterInstance.ephemeral()
    _add_run(finished, DagsterRunStatus.SUCCESS)
    assert isinstance(_evaluate(env, "retry_candidates_sensor", instance=finished), SensorResult)

    # After a real attempt the error URL is inside its back-off and the telegram one is ok.
    job = env.defs().resolve_job_def("retry_job")
    assert job.execute_in_process(run_config=request.run_config, instance=instance).success
    assert env.statuses()[RETRY_TOKEN["address"]] == {"https://youtube.com/watch?v=Err0rVideo1": "error",
                                                      "https://t.me/retrychat": "ok"}
    skip = _evaluate(env, "retry_candidates_sensor", cursor=result.cursor, instance=instance)
    assert "is due" in (_skip(skip) or "")


def test_retry_sensor_run_key_changes_with_the_selection_and_frozen_rows_never_starve_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More than `limit` elements whose outcome cannot change (discord links: no generator) are not
    candidates at all, so one due URL behind them is launched; after its run the selection changes."""
    env = make_env(tmp_path, monkeypatch, [RETRY_TOKEN], {})
    from social_recording.domain.models import TokenProfile
    from social_recording.store import open_store

    store = open_store(env.store_url)
    job = env.defs().resolve_job_def("retry_job")
    instance = DagsterInstance.ephemeral()
    for i in range(60):
        store.create_pending_token(TokenProfile(address=f"D{i:03d}", image="x", urls=[f"https://discord.com/invite/c{i}"]))
    assert job.execute_in_process(instance=instance, run_config={"ops": {"retry_urls": {"config": {"limit": 100}}}}).success
    assert _skip(_evaluate(env, "retry_candidates_sensor", instance=instance)) is not None
    store.create_pending_token(TokenProfile(address="ZZZ", image="x", urls=["https://github.com/o/due"]))
    store.close()
    first = _evaluate(env, "retry_candidates_sensor", instance=instance)
    assert isinstance(first, SensorResult) and first.run_requests
    assert first.run_requests[0].tags["social_recording/candidate_urls"] == "1"


@pytest.mark.parametrize("env_name, running", [("dev", False), ("stage", False), ("prod", True)])
def test_schedules_and_sensors_run_by_default_only_in_prod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env_name: str, running: bool
) -> None:
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_ENV": env_name})
    defs = build_definitions(load_settings())
    schedule = defs.resolve_schedule_def("retry_schedule")
    assert schedule.cron_schedule == "0 * * * *" and schedule.execution_timezone == "UTC"
    assert (schedule.default_status == DefaultScheduleStatus.RUNNING) is running
    for name in ("retry_candidates_sensor", "token_flow_sensor"):
        assert (defs.resolve_sensor_def(name).default_status == DefaultSensorStatus.RUNNING) is running


# --------------------------------------------------------------------------- reasons, cursors, tick logs


def test_a_quiet_feed_says_what_it_read_and_its_cursor_moves_up_visibly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing qualifies: the skip reason names the floor, the range read, the tokens scanned and
    those below the floor; the cursor is set (even on a first evaluation) and stays at most
    LIVE_RESCAN behind the end of the read, so a quiet feed does not re-read an ever longer range."""
    now = datetime.now(UTC)
    env = make_env(tmp_path, monkeypatch, [token(_addr(7), now - timedelta(minutes=10), investors=2,
                                                 website="https://github.com/quiet/repo")])
    tick_log = _TickLog()
    first = _evaluate(env, "token_flow_sensor", tick_log=tick_log)
    reason = _skip(first) or ""
    assert "no new token with >= 3 AF investors traded between" in reason
    assert "scanned 1 token(s) in 1 page(s), 1 below the floor" in reason
    assert isinstance(first, SensorResult) and first.cursor
    cursor = LiveCursor.parse(first.cursor)
    assert cursor.ts is not None and timedelta(minutes=59) < now - cursor.ts < timedelta(minutes=61)
    assert tick_log.lines == []  # a tick that launches nothing says it on the tick only, never in the terminal

    # A cursor ten hours old: the read covers all of it (two pages), then the cursor moves up.
    old = LiveCursor(now - timedelta(hours=10), ["some-address"])
    second = _evaluate(env, "token_flow_sensor", cursor=old.dump())
    assert f"between {old.ts.isoformat(timespec='seconds')}" in (_skip(second) or "")  # type: ignore[union-attr]
    assert "in 2 page(s)" in (_skip(second) or "")
    moved = LiveCursor.parse(second.cursor)  # type: ignore[union-attr]
    assert moved.ts is not None and moved.ts > now - timedelta(hours=1, minutes=1) and moved.at_ts == []


def test_a_cut_read_never_moves_the_cursor_past_what_it_launched() -> None:
    """The time budget stops the read: the cursor stays at the last token launched, so the next
    evaluation reads on from there."""
    tokens = [_T(f"t{i}", NOW - timedelta(hours=30) + timedelta(hours=i)) for i in range(3)]
    ticks = iter(range(100))
    result = evaluate_token_flow(LiveCursor(NOW - timedelta(hours=31), []), _FakeTracker(tokens), 3, NOW,
                                 budget_s=0.5, clock=lambda: float(next(ticks)))
    assert [t["address"] for r in result.run_requests
            for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]] == ["t0", "t1", "t2"]
    assert result.cursor.ts == tokens[-1].last_transfer_at and result.cursor.at_ts == ["t2"]
    assert any("time budget" in n for n in result.notes)


def test_retry_sensor_skip_reasons_name_the_check_and_keep_the_cursor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path, monkeypatch, [], paid=False)
    cursor = '{"digest": "abc", "launched_at": "2026-11-20T10:00:00+00:00", "candidates": 3}'
    tick_log = _TickLog()
    result = _evaluate(env, "retry_candidates_sensor", cursor=cursor, tick_log=tick_log)
    reason = _skip(result) or ""
    assert reason.startswith("nothing is due: the default selection takes error, pending, unsupported for want "
                             "of a generator that now exists (")
    assert "github" in reason and "; not skipped_paid: paid calls are off, and none of it is due by " in reason
    assert reason.endswith("(each element's back-off dates it when it is recorded)")
    assert isinstance(result, SensorResult) and json.loads(result.cursor or "")["digest"] == "abc"
    assert tick_log.lines == []  # the reason is on the tick only: a skipped tick prints nothing


def test_retry_schedule_requests_the_default_selection_through_the_retry_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_env(tmp_path, monkeypatch, [])
    defs = build_definitions(load_settings())
    schedule = defs.resolve_schedule_def("retry_schedule")
    with build_schedule_context(scheduled_execution_time=NOW, repository_def=defs.get_repository_def()) as ctx:
        requests = list(schedule.evaluate_tick(ctx).run_requests or [])
    assert len(requests) == 1
    config = requests[0].run_config["ops"]["retry_urls"]["config"]
    assert config["limit"] == 50 and not config.get("statuses")
    assert defs.resolve_job_def("retry_job").execute_in_process(
        run_config=requests[0].run_config, instance=DagsterInstance.ephemeral()).success


# --------------------------------------------------------------------------- how often the live sensor ticks


@pytest.mark.parametrize("poll, expected", [(None, 4), ("5", 4), ("31", 30), ("60", 59)])
def test_token_flow_sensor_interval_follows_the_poll_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, poll: str | None, expected: int
) -> None:
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_LIVE_POLL_SECONDS": poll} if poll else None)
    sensor = build_definitions(load_settings()).resolve_sensor_def("token_flow_sensor")
    assert sensor.minimum_interval_seconds == expected


@pytest.mark.parametrize("started_ago, due", [(4.98, True), (4.2, True), (3.9, False)])
def test_the_daemon_evaluates_the_live_sensor_on_every_one_of_its_loops(started_ago: float, due: bool) -> None:
    """Dagster's own rule (the daemon's `is_under_min_interval`): its sensor loop comes back every
    DAEMON_SENSOR_LOOP_S seconds, and the last tick started a few milliseconds into the previous loop,
    so the next loop finds a little less than 5 s elapsed. With a minimum of 5 it would skip that loop
    (one tick every 10 s); with the sensor's own minimum it is due."""
    from dagster._core.definitions.run_request import InstigatorType
    from dagster._core.scheduler.instigation import InstigatorState, InstigatorStatus, SensorInstigatorData
    from dagster._daemon.sensor import is_under_min_interval

    from social_recording.dagster_defs.sensor_interval import live_minimum_interval
    from social_recording.settings import DAEMON_SENSOR_LOOP_S, LIVE_POLL_SECONDS

    @dataclass
    class _Remote:
        min_interval_seconds: int

    from dagster._core.remote_origin import RemoteInstigatorOrigin

    origin = RemoteInstigatorOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("loc"), "repo"),
                                    "token_flow_sensor")
    started = datetime.now(UTC).timestamp() - started_ago
    state = InstigatorState(origin, InstigatorType.SENSOR, InstigatorStatus.RUNNING,
                            SensorInstigatorData(last_tick_start_timestamp=started))
    ours = _Remote(live_minimum_interval(LIVE_POLL_SECONDS))
    assert is_under_min_interval(state, ours) is not due  # type: ignore[arg-type]
    assert is_under_min_interval(state, _Remote(DAEMON_SENSOR_LOOP_S)) is True  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="poll_seconds must be >= 5"):
        live_minimum_interval(DAEMON_SENSOR_LOOP_S - 1)


@pytest.mark.parametrize("status", [DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING])
def test_while_a_live_run_is_on_its_way_the_next_tokens_wait_for_one_batch(live_env, status) -> None:
    """Under load (the queue full, processes slow to start) a run per tick would only add processes:
    the sensor launches nothing and reads nothing while a live run is queued or starting, keeping
    its cursor, and launches everything traded meanwhile once it has started. A running one does
    not hold it."""
    env, _ = live_env
    waiting = DagsterInstance.ephemeral()
    _add_run(waiting, status, "live_tokens_job")
    _add_run(waiting, DagsterRunStatus.QUEUED)  # another job's queued run never holds the live sensor
    held = _evaluate(env, "token_flow_sensor", instance=waiting)
    assert "1 live_tokens_job run(s) not started yet (queued or starting)" in (_skip(held) or "")
    assert isinstance(held, SensorResult) and held.cursor == LiveCursor().dump()
    assert [e for e in env.ledger() if e.service == "tracker"] == []  # the tracker was not read

    running = DagsterInstance.ephemeral()
    _add_run(running, DagsterRunStatus.STARTED, "live_tokens_job")
    launched = _evaluate(env, "token_flow_sensor", instance=running)
    assert isinstance(launched, SensorResult) and [len(_addresses(r)) for r in launched.run_requests or []] == [20, 5]
