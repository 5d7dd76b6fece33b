"""The jobs as stages: what each stage shows, the run config users already use, the per-URL run-log
events, the bounded outcome table, the report hook, and the descriptions."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterEventType, DagsterInstance

from social_recording.dagster_defs import reporting
from social_recording.dagster_defs.run_log import PROBLEM_ROWS, TABLE_ROWS, RunLog, UrlLog
from social_recording.domain.status import FetchStatus
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.run_state import RunState, RunSummary
from test_support.sandbox_env import (
    SandboxEnv,
    log_lines,
    make_env,
    output_metadata,
    step_metadata,
    token,
)

A = "TokStageA111111111111111111111111111111111"
B = "TokStageB222222222222222222222222222222222"
TOKENS = [
    token(A, "2026-11-10T03:00:00Z", website="https://github.com/stage/a", telegram="https://t.me/stagechat"),
    token(B, "2026-11-10T05:00:00Z", website="https://youtube.com/watch?v=Err0rVideo1"),
]
TARGETS = {"https://youtube.com/watch?v=Err0rVideo1": "error"}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    return make_env(tmp_path, monkeypatch, TOKENS, TARGETS)


def _stages(job: Any) -> list[str]:
    graph_node = next(iter(job.graph.node_dict.values()))
    return sorted(f"{graph_node.name}.{n}" for n in graph_node.definition.node_dict)


def test_each_job_is_a_graph_of_named_stages_run_in_process(env: SandboxEnv) -> None:
    defs = env.defs()
    expected = {
        "retry_job": ["retry_urls.record_retry_candidates", "retry_urls.report", "retry_urls.select_retry_candidates"],
        "reconcile_job": ["reconcile_window.read_reconcile_window", "reconcile_window.record_window_tokens",
                          "reconcile_window.report"],
        "live_tokens_job": ["record_tokens.record_live_tokens", "record_tokens.report"],
    }
    for name, stages in expected.items():
        job = defs.resolve_job_def(name)
        assert _stages(job) == stages
        assert job.executor_def.name == "in_process"
        assert job.tags["social_recording/job"] in ("retry", "reconcile", "live")


def test_every_stage_shows_its_own_typed_output(env: SandboxEnv) -> None:
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    result = defs.resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10", instance=instance)
    assert result.success
    read = step_metadata(result, "reconcile_window.read_reconcile_window")
    assert (read["scanned"], read["filtered"], read["already_seen"], read["targets"]) == (2, 2, 0, 2)
    assert {r.data["address"] for r in read["targets_preview"].records} == {A, B}
    window = result.output_for_node("reconcile_window.read_reconcile_window")
    assert type(window).__name__ == "ReconcileWindow" and len(window.targets) == 2
    recorded = result.output_for_node("reconcile_window.record_window_tokens")
    assert type(recorded).__name__ == "RecordedRun"
    assert recorded.summary.urls == 3 and recorded.summary.by_status == {"error": 1, "ok": 2}
    assert recorded.summary.attempted == 3 and recorded.table.total == 3
    report = output_metadata(result, "reconcile_window")
    assert report["urls_called"] == 3 and report["url_status_counts"] == {"error": 1, "ok": 2}
    assert report["url_outcomes_shown"] == "3 of 3 URL outcomes: 1 of 1 non-ok, 2 of 2 ok"
    assert [r.data["status"] for r in report["url_outcomes"].records][0] == "error"  # problems first

    retry = defs.resolve_job_def("retry_job").execute_in_process(
        instance=instance,
        run_config={"ops": {"retry_urls": {"config": {"statuses": ["error"], "limit": 10,
                                                      "min_interval_minutes": 0, "max_workers": 2}}}})
    assert retry.success
    selected = step_metadata(retry, "retry_urls.select_retry_candidates")
    assert selected["candidate_urls"] == 1 and selected["selection"] == "error (as named)"
    assert selected["selected_by_status"] == {"error": 1}
    assert retry.output_for_node("retry_urls")["selection"] == "error (as named)"
    assert [r.data["url"] for r in selected["candidates_preview"].records] == ["https://youtube.com/watch?v=Err0rVideo1"]
    assert retry.output_for_node("retry_urls")["processed"] == 1


def test_each_url_is_one_run_log_event_of_one_short_line_status_first(env: SandboxEnv) -> None:
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                            instance=instance)
    events = [e for e in instance.all_logs(result.run_id) if e.user_message.startswith("url_outcome ")]
    messages = [e.user_message for e in events]
    assert len(messages) == 3 and all("\n" not in m and len(m) < 300 for m in messages), messages
    error = next(e for e in events if "status=error" in e.user_message)
    assert error.user_message == ("url_outcome status=error platform=youtube url=https://youtube.com/watch?v=Err0rVideo1 "
                                  f"token={B} call=made why=\"ExternalFetchError: UPSTREAM: youtube: HTTP 503 from www.googleapis.com "
                                  "after 3 attempt(s)\""), error.user_message
    assert {m.split()[1] for m in messages} == {"status=ok", "status=error"}
    report = output_metadata(result, "reconcile_window")
    table = report["url_outcomes"]
    assert [c.name for c in table.schema.columns] == ["status", "platform", "url", "token", "call", "why",
                                                      "waited_ms", "took_ms"]
    assert {r.data["token"] for r in table.records} == {"TokSta…111111", "TokSta…222222"}
    markdown = report["url_outcomes_md"]
    assert ("| error | youtube | [https://youtube.com/watch?v=Err0rVideo1](https://youtube.com/watch?v=Err0rVideo1) "
            "| TokSta…222222 | made | ExternalFetchError: UPSTREAM: youtube: HTTP 503 from www.googleapis.com after 3 "
            "attempt(s) |") in markdown.splitlines(), markdown


def _outcome(i: int, status: FetchStatus | EngineOutcome) -> UrlOutcome:
    return UrlOutcome(f"T{i}", f"https://github.com/o/r{i}", "github", status, True, False, 1.0, 2.0, "d")


class _Log:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.threads: set[str] = set()

    def info(self, message: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.sent.append(("info", message))

    def warning(self, message: str) -> None:
        self.threads.add(threading.current_thread().name)
        self.sent.append(("warning", message))


def test_url_log_writes_one_event_per_url_in_order_from_its_writer_thread_with_warnings_as_warnings() -> None:
    log = _Log()
    with UrlLog(log) as url_log:
        for i in range(7):
            url_log.add(_outcome(i, EngineOutcome.FAILED if i == 4 else FetchStatus.OK))
        url_log.warn("the run's own warning")
    assert [m.split()[4] for _, m in log.sent[:7]] == [f"token=T{i}" for i in range(7)]
    assert [level for level, _ in log.sent] == ["info"] * 4 + ["warning"] + ["info"] * 2 + ["warning"]
    assert log.sent[4][1].startswith("url_outcome status=failed platform=github url=https://github.com/o/r4 ")
    assert log.sent[-1] == ("warning", "the run's own warning")
    assert log.threads == {"url-log"}  # the recording threads never wait for the event log
    assert url_log.lines == 7 and url_log.messages == 8


def test_the_call_word_and_a_long_why_cut_to_one_line() -> None:
    log = _Log()
    url_log = UrlLog(log)  # outside the context: written at once
    url_log.add(UrlOutcome("T", "https://github.com/o/r", "github", FetchStatus.OK, False, True, 0.0, 0.1,
                           "reused ok of T2"))
    url_log.add(UrlOutcome("T", "https://github.com/o/s", "github", FetchStatus.ERROR, False, False, 0.0, 0.1,
                           "x" * 500))
    reused, long = (m for _, m in log.sent)
    assert " call=reused why=\"reused ok of T2\"" in reused
    assert " call=none why=" in long and len(long) < 300 and long.endswith("…")


def test_the_outcome_table_keeps_every_problem_up_to_a_bound_then_a_sample_of_ok_rows() -> None:
    """The run log listens to the run's state: it sees every outcome the state counts."""
    log = RunLog(UrlLog(_Log()))
    run = RunState(listener=log)
    for i in range(PROBLEM_ROWS + 50):
        run.note(_outcome(i, FetchStatus.ERROR))
    for i in range(TABLE_ROWS):
        run.note(_outcome(10_000 + i, FetchStatus.OK))
    rows = log.rows()
    assert len(rows.rows) == TABLE_ROWS and rows.total == PROBLEM_ROWS + 50 + TABLE_ROWS
    assert (rows.shown_not_ok, rows.not_ok, rows.shown_ok, rows.ok) == (PROBLEM_ROWS, PROBLEM_ROWS + 50,
                                                                         TABLE_ROWS - PROBLEM_ROWS, TABLE_ROWS)
    assert rows.caption().startswith(f"{TABLE_ROWS} of {rows.total} URL outcomes")
    assert run.summary().by_status == {"error": PROBLEM_ROWS + 50, "ok": TABLE_ROWS}


def test_every_recording_stage_hands_the_run_summary_to_the_assets_hook(
    env: SandboxEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, Any, RunSummary]] = []
    monkeypatch.setattr(reporting, "report_to_assets",
                        lambda context, store, health, recorded: calls.append((store, health, recorded.summary)))
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    config = {"ops": {"record_tokens": {"config": {"tokens": [{"address": A}]}}}}
    assert defs.resolve_job_def("live_tokens_job").execute_in_process(run_config=config, instance=instance).success
    assert defs.resolve_job_def("retry_job").execute_in_process(instance=instance).success
    assert len(calls) == 2
    store, health, summary = calls[0]
    assert env.store_url.endswith(str(store.path))  # the run's own store (closed with the run)
    assert health.enable_paid is True and health.ledger is not None and "github" in health.usable_platforms
    assert (summary.urls, summary.by_status, summary.attempted, summary.converged) == (2, {"ok": 2}, 2, 2)
    assert calls[1][2].urls == 0


def test_the_recording_stage_that_did_the_work_fails_after_recording_and_reporting(
    env: SandboxEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failure is on the stage that recorded (so "Re-execute from failure" runs it again, see
    test_run_failures.py); it still logs its counters, observes the assets and evaluates the health
    checks first, and carries the counters and the per-URL table in its failure."""
    from social_recording.platforms.github.generator import GitHubGenerator

    def broken(self: object, url: str, ctx: object) -> object:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(GitHubGenerator, "generate", broken)
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance, raise_on_error=False)
    assert not result.success
    failures = [e for e in result.all_events if e.is_step_failure]
    assert [e.step_key for e in failures] == ["reconcile_window.record_window_tokens"]
    started = [e.step_key for e in result.all_events if e.event_type == DagsterEventType.STEP_START]
    assert "reconcile_window.report" not in started
    assert log_lines(instance, result.run_id, "reconcile_done ")  # reported before failing
    metadata = failures[0].step_failure_data.user_failure_data.metadata
    assert metadata["urls_called"].value == 2
    assert metadata["url_status_counts"].value == {"error": 1, "failed": 1, "ok": 1}
    assert {r.data["status"] for r in metadata["url_outcomes"].value.records} == {"failed", "ok", "error"}
    observed = [e.step_key for e in instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_OBSERVATION)]
    checked = [e.step_key for e in instance.all_logs(result.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)]
    assert set(observed) == set(checked) == {"reconcile_window.record_window_tokens"}
    assert env.statuses()[A]["https://t.me/stagechat"] == "ok"


def test_descriptions_stand_on_their_own(env: SandboxEnv) -> None:
    """Every job, stage, resource, schedule and sensor describes itself, without pointing at documents
    outside the repository."""
    defs = env.defs()
    texts: dict[str, str | None] = {}
    for name in ("reconcile_job", "retry_job", "live_tokens_job"):
        job = defs.resolve_job_def(name)
        texts[name] = job.description
        for node in job.graph.iterate_node_defs():
            texts[f"{name}/{node.name}"] = node.description
    for name in ("retry_schedule", "reconcile_schedule"):
        texts[name] = defs.resolve_schedule_def(name).description
    for name in ("retry_candidates_sensor", "token_flow_sensor"):
        texts[name] = defs.resolve_sensor_def(name).description
    for key, resource in (defs.resources or {}).items():
        # a partial resource (configured at launch) shows its resource class's description
        texts[f"resource {key}"] = getattr(resource, "resource_cls", type(resource)).__doc__
    for key, text in texts.items():
        assert text and text.strip(), f"{key} has no description"
        for banned in ("DESIGN", "seed ", "§"):
            assert banned not in text, f"{key}: {text!r}"
    source = Path(reporting.__file__).parent
    for path in sorted(source.rglob("*.py")):
        body = path.read_text()
        for banned in ("DESIGN", "seed 0", "§"):
            assert banned not in body, f"{path.name} mentions {banned!r}"
