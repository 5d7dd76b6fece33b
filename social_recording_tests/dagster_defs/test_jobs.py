"""The three jobs with `execute_in_process` against the sandbox and a temporary SQLite store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterInvalidConfigError

from test_support.sandbox_env import (
    SandboxEnv,
    log_lines,
    make_env,
    output_metadata,
    token,
)

A = "TokAlpha1111111111111111111111111111111111"
B = "TokBeta22222222222222222222222222222222222"
C = "TokFew333333333333333333333333333333333333"
D = "TokNextDay4444444444444444444444444444444"

FLAKY_TWEET = "https://x.com/i/status/1000000000000000001"
ERROR_VIDEO = "https://youtube.com/watch?v=Err0rVideo1"
OK_TWEET = "https://x.com/i/status/1000000000000000002"

TOKENS = [
    token(A, "2026-11-10T03:00:00Z", twitter="https://twitter.com/AlphaSol/status/1000000000000000001?s=20",
          website="https://youtu.be/Err0rVideo1", telegram="https://t.me/alphachat"),
    token(B, "2026-11-10T15:30:00Z", twitter=OK_TWEET, website="https://github.com/betaorg/beta",
          discord="https://discord.gg/beta"),
    token(C, "2026-11-10T20:00:00Z", investors=2, website="https://github.com/fewtoken/few"),
    token(D, "2026-11-11T01:00:00Z", website="https://github.com/deltaorg/delta"),
]
TARGETS = {FLAKY_TWEET: "flaky:2", ERROR_VIDEO: "error"}

RETRY_FAST = {"ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    return make_env(tmp_path, monkeypatch, TOKENS, TARGETS)


def _not_tracker_range(entries: list) -> list:
    return [e for e in entries if not (e.service == "tracker" and e.subject.startswith("range:"))]


def test_reconcile_records_exactly_the_window_then_a_rerun_calls_nothing(env: SandboxEnv) -> None:
    defs = env.defs()
    job = defs.resolve_job_def("reconcile_job")
    instance = DagsterInstance.ephemeral()

    first = job.execute_in_process(partition_key="2026-11-10", instance=instance)
    assert first.success
    out = first.output_for_node("reconcile_window")
    assert (out["scanned"], out["filtered"], out["already_seen"], out["targeted"], out["processed"]) == (3, 2, 0, 2, 2)
    assert out["stopped_by"] == "drained"
    statuses = env.statuses()
    assert set(statuses) == {A, B}  # C is below the AF floor, D traded the next day
    assert statuses[A] == {FLAKY_TWEET: "error", ERROR_VIDEO: "error", "https://t.me/alphachat": "ok"}
    assert statuses[B] == {OK_TWEET: "ok", "https://github.com/betaorg/beta": "ok",
                           "https://discord.com/invite/beta": "ok"}

    # One structured run-log line per URL, and the per-URL table + counters on the op's output.
    lines = log_lines(instance, first.run_id, "url_outcome ")
    assert len(lines) == 6
    assert any(f"token={A}" in ln and "status=error" in ln and "platform=x" in ln and "call=made" in ln
               for ln in lines)
    meta = output_metadata(first, "reconcile_window")
    assert meta["processed"] == 2 and meta["urls_ok"] == 4 and meta.get("urls_unsupported", 0) == 0
    table = meta["url_outcomes"]
    assert len(table.records) == 6
    assert {r.data["url"] for r in table.records} == set(statuses[A]) | set(statuses[B])
    assert {c.name for c in table.schema.columns} >= {"token", "url", "platform", "status", "call", "why",
                                                        "waited_ms", "took_ms"}

    before = env.ledger()
    docs_before = env.tokens()
    second = job.execute_in_process(partition_key="2026-11-10", instance=instance)
    assert second.success
    out2 = second.output_for_node("reconcile_window")
    assert (out2["scanned"], out2["already_seen"], out2["targeted"], out2["processed"]) == (3, 2, 0, 0)
    after = env.ledger()
    # The only request of the second run is the tracker range query that decides "already seen".
    new = after[len(before):]
    assert [(e.service, e.subject.split(":")[0]) for e in new] == [("tracker", "range")]
    assert _not_tracker_range(after) == _not_tracker_range(before)
    assert env.tokens() == docs_before
    assert log_lines(instance, second.run_id, "url_outcome ") == []


def test_retry_converges_flaky_and_freezes_error_as_exhausted(env: SandboxEnv) -> None:
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    assert defs.resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance).success
    retry = defs.resolve_job_def("retry_job")

    def run() -> dict:
        result = retry.execute_in_process(run_config=RETRY_FAST, instance=instance)
        assert result.success
        return result.output_for_node("retry_urls")

    first = run()  # flaky tweet: its 2nd call answers 503 again
    assert env.statuses()[A][FLAKY_TWEET] == "error"
    # tweet and video (the discord invite was recorded ok by the reconcile)
    assert first["candidate_urls"] == 2 and first["processed"] == 2
    second = run()  # 3rd call: ok
    assert env.statuses()[A][FLAKY_TWEET] == "ok"
    assert second["converged"] >= 1
    for _ in range(2):  # attempts 4 and 5 of the erroring video: the 5th freezes it
        run()
    doc = env.tokens()[A]
    video = doc.element(ERROR_VIDEO)
    assert video is not None and video.status.value == "exhausted" and video.attempts == 5
    tweet = doc.element(FLAKY_TWEET)
    assert tweet is not None and tweet.status.value == "ok" and tweet.attempts == 3

    calls = Counter(e.subject for e in env.ledger())
    assert calls["tweet:1000000000000000001"] == 3  # 503, 503, ok: never called again once ok
    ledger_before = env.ledger()
    last = run()  # nothing a retry can change is left
    assert last["processed"] == 0 and last["stopped_by"] == "drained"
    assert env.ledger() == ledger_before
    assert env.statuses()[A][ERROR_VIDEO] == "exhausted"


def test_retry_config_rejects_ok_before_any_run(env: SandboxEnv) -> None:
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    with pytest.raises(DagsterInvalidConfigError) as err:
        defs.resolve_job_def("retry_job").execute_in_process(
            run_config={"ops": {"retry_urls": {"config": {"statuses": ["error", "ok"]}}}}, instance=instance
        )
    assert "ok" in str(err.value)
    assert instance.get_runs() == []
    assert env.ledger() == []


def test_live_job_records_its_batch_and_logs_each_url(env: SandboxEnv) -> None:
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    config = {"ops": {"record_tokens": {"config": {"tokens": [{"address": B, "symbol": "BETA"},
                                                              {"address": D, "symbol": "DELT"}]}}}}
    result = defs.resolve_job_def("live_tokens_job").execute_in_process(run_config=config, instance=instance)
    assert result.success
    out = result.output_for_node("record_tokens")
    assert out["tokens"] == 2 and out["tokens_recorded"] == 2 and out["created"] == 2
    assert set(env.statuses()) == {B, D}
    assert len(log_lines(instance, result.run_id, "url_outcome ")) == 4
    # Again: both stored, nothing REALTIME left -> up to date, zero calls.
    before = env.ledger()
    again = defs.resolve_job_def("live_tokens_job").execute_in_process(run_config=config, instance=instance)
    assert again.output_for_node("record_tokens")["tokens_up_to_date"] == 2
    assert env.ledger() == before


def test_unsupported_discord_invites_recorded_before_its_generator_are_retried_by_default(
    env: SandboxEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written while Discord had no generator holds its invites as `unsupported`
    (no_generator); the default retry takes them now that the generator exists, and they end ok."""
    import dataclasses

    from social_recording.domain.platform import Catalogue
    from social_recording.platforms import registry
    from social_recording.platforms.catalogue import CATALOGUE

    invite = "https://discord.com/invite/beta"
    before = Catalogue(tuple(dataclasses.replace(d, has_generator=False) if d.platform.value == "discord" else d
                             for d in CATALOGUE))
    defs = env.defs()
    instance = DagsterInstance.ephemeral()
    with monkeypatch.context() as m:
        m.setattr(registry, "CATALOGUE", before)
        assert defs.resolve_job_def("reconcile_job").execute_in_process(
            partition_key="2026-11-10", instance=instance).success
    element = env.tokens()[B].element(invite)
    assert element is not None and element.status.value == "unsupported" and element.attempts == 0
    assert not [e for e in env.ledger() if e.service == "discord"]

    result = defs.resolve_job_def("retry_job").execute_in_process(run_config=RETRY_FAST, instance=instance)
    assert result.success
    element = env.tokens()[B].element(invite)
    assert element is not None and element.status.value == "ok" and element.attempts == 1
    assert [e.subject for e in env.ledger() if e.service == "discord"] == ["invite:beta"]
