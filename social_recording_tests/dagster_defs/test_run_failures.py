"""Runs that could not do their work fail visibly instead of finishing green."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from dagster import DagsterEventType, DagsterInstance, Failure, TimeWindow

from social_recording.dagster_defs.jobs.reconcile import partition_window
from social_recording.dagster_defs.partitions import daily_partitions
from social_recording.domain.status import Cause
from test_support.sandbox_env import log_lines, make_env, token

A = "TokFail111111111111111111111111111111111111"


def test_live_run_fails_when_its_tokens_could_not_be_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tracker is down: the token is not recorded, so the run must fail (the live sensor's cursor
    has moved past it; a green run would hide it)."""
    env = make_env(tmp_path, monkeypatch, [token(A, "2026-11-12T03:00:00Z", website="https://example.com")],
                   extra={"SOCIAL_RECORDING_UPSTREAM": "live", "SOCIAL_RECORDING_TRACKER_URL": "http://127.0.0.1:1",
                          "SOCIAL_RECORDING_AF_GROUP_IDS": "g1", "SOCIAL_RECORDING_TRACKER_API_KEY": "k-SECRET-1"})
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("live_tokens_job").execute_in_process(
        run_config={"ops": {"record_tokens": {"config": {"tokens": [{"address": A, "symbol": "F"}]}}}},
        instance=instance, raise_on_error=False,
    )
    assert not result.success
    failure = result.failure_data_for_node("record_tokens")
    assert failure is not None
    assert "1 of 1 token(s) failed" in failure.error.message and A in failure.error.message
    assert "k-SECRET-1" not in failure.error.message
    assert env.tokens() == {}


class _Ctx:
    """What `partition_window` reads from an op context: the job's partitions, the key, its window."""

    def __init__(self, key: str) -> None:
        self.job_def = SimpleNamespace(partitions_def=daily_partitions(date(2026, 11, 1)))
        self.partition_key = key
        self.log = logging.getLogger("test")

    @property
    def partition_time_window(self) -> TimeWindow:
        return self.job_def.partitions_def.time_window_for_partition_key(self.partition_key)


@pytest.mark.parametrize("key", ["2026-13-45", "1999-01-01", "2099-01-01"])
def test_reconcile_refuses_a_key_outside_its_partitions(key: str) -> None:
    """Keys outside the set through real launches: test_partition_keys.py."""
    with pytest.raises(Failure, match=f"partition key '{key}' is not a partition of reconcile_job"):
        partition_window(_Ctx(key))  # type: ignore[arg-type]


def test_reconcile_warns_about_a_day_that_is_not_over(caplog: pytest.LogCaptureFixture) -> None:
    today = datetime.now(UTC).date()
    with caplog.at_level(logging.WARNING, logger="test"):
        window = partition_window(_Ctx(today.isoformat()))  # type: ignore[arg-type]
    assert window.start.date() == today and "not over yet" in caplog.text


def test_no_profile_tokens_are_named_in_the_run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env(tmp_path, monkeypatch, [token(A, "2026-11-12T03:00:00Z", website="https://example.com",
                                                 image=None)])
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-12",
                                                                            instance=instance)
    assert result.success and result.output_for_node("reconcile_window")["no_profile"] == 1
    lines = log_lines(instance, result.run_id, "token_not_recorded")
    assert len(lines) == 1 and A in lines[0] and "no image" in lines[0]


def test_reexecuting_from_failure_runs_the_recording_stage_again_and_records_what_was_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stage that did the work fails, so the UI's "Re-execute from failure" runs the recording
    stage again, on the window its first stage read, then the report: it records the token the
    first run could not read (a stored one is not recorded twice) and the run succeeds."""
    from dagster import ReexecutionOptions, build_reconstructable_job, execute_job

    from social_recording.upstream.profile import TokenProfileReader

    b = "TokFailB22222222222222222222222222222222222"
    env = make_env(tmp_path, monkeypatch, [token(A, "2026-11-12T03:00:00Z", website="https://github.com/o/a"),
                                           token(b, "2026-11-12T04:00:00Z", website="https://github.com/o/b")])
    read = TokenProfileReader.read

    def tracker_down_for_a(self: TokenProfileReader, address: str) -> object:
        if address == A:
            raise RuntimeError("tracker by-addresses: HTTP 503 after 3 attempts")
        return read(self, address)

    monkeypatch.setattr(TokenProfileReader, "read", tracker_down_for_a)
    job = build_reconstructable_job("test_support.sandbox_env", "job_named",
                                    reconstructable_args=("reconcile_job",))
    (tmp_path / "instance").mkdir()
    with DagsterInstance.local_temp(str(tmp_path / "instance")) as instance:
        first = execute_job(job, instance, tags={"dagster/partition": "2026-11-12"}, raise_on_error=False)
        assert not first.success
        failed = [e.step_key for e in instance.all_logs(first.run_id, of_type=DagsterEventType.STEP_FAILURE)]
        assert failed == ["reconcile_window.record_window_tokens"]
        assert set(env.tokens()) == {b}

        monkeypatch.setattr(TokenProfileReader, "read", read)  # the tracker answers again
        with execute_job(job, instance,
                         reexecution_options=ReexecutionOptions.from_failure(first.run_id, instance)) as again:
            assert again.success
            started = [e.step_key for e in instance.all_logs(again.run_id, of_type=DagsterEventType.STEP_START)]
            assert started == ["reconcile_window.record_window_tokens", "reconcile_window.report"]
            counters = again.output_for_node("reconcile_window")
            assert (counters["already_seen"], counters["processed"], counters["remaining"]) == (1, 1, 0)
    assert env.statuses() == {A: {"https://github.com/o/a": "ok"}, b: {"https://github.com/o/b": "ok"}}
    assert [e.subject for e in env.ledger() if e.service == "github"] == ["repo:o/b", "repo:o/a"]


def test_an_engine_failure_fails_the_run_after_recording_everything_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug of ours inside one generator, before its request: that URL is an engine failure (no
    attempt guessed; the element is an `error` whose cause and detail say so, counted on its URL so a
    defect stops being selected after the budget), the token's other URLs are recorded, and the run
    is marked failed naming the defect."""
    from social_recording.platforms.github.generator import GitHubGenerator

    def broken(self: object, url: str, ctx: object) -> object:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(GitHubGenerator, "generate", broken)
    env = make_env(tmp_path, monkeypatch, [token(A, "2026-11-12T03:00:00Z", website="https://github.com/o/r",
                                                 telegram="https://t.me/failchat")])
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-12", instance=instance, raise_on_error=False)
    assert not result.success
    failure = result.failure_data_for_node("reconcile_window")
    assert failure is not None and "1 URL(s) ended in an engine failure" in failure.error.message
    statuses = env.statuses()[A]
    assert statuses == {"https://github.com/o/r": "error", "https://t.me/failchat": "ok"}
    element = env.tokens()[A].element("https://github.com/o/r")
    assert element is not None and element.attempts == 0 and element.attempted_at is None
    assert element.cause is Cause.ENGINE_FAILURE and "before any request (1 of 5)" in (element.detail or "")
