"""Runs tell the truth about work left behind: a run that could not do its work because another holder
(a crashed one included) held its lock, or because the lock server stayed away, never ends SUCCESS
with its partition marked done. A re-execution right after a killed run waits for the dead run's
locks and completes the window."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from dagster import DagsterInstance

from social_recording.dagster_defs.jobs.reconcile import REMAINING_TAG
from social_recording.dagster_defs.reporting import left_behind
from social_recording.dagster_defs.run_log import RunLog, UrlLog
from social_recording.locks import open_lock_manager
from social_recording.recording.engine import Timings
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.reconcile import reconcile_lock_key
from social_recording.recording.run_state import RunState, RunSummary
from social_recording_tests.dagster_defs.short_timings import SHORT, use_timings
from test_support.sandbox_env import SandboxEnv, make_env, step_metadata, token

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DAY = "2026-11-04"
TOKENS = 8


def _kill_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SandboxEnv, list[str]]:
    urls = [f"https://github.com/killed/t{i}" for i in range(TOKENS)]
    tokens = [token(f"Kil{i}token", f"{DAY}T{10 + i:02d}:00:00Z", website=url) for i, url in enumerate(urls)]
    env = make_env(tmp_path, monkeypatch, tokens, {url: {"latency_ms": 1500} for url in urls})  # type: ignore[arg-type]
    return env, urls


def _lock_expires_in(env: SandboxEnv, key: str) -> float:
    """Seconds until `key` expires in the SQLite lock table (the store's file), <= 0 when free."""
    with closing(sqlite3.connect(env.store_url[len("sqlite:///"):])) as conn:
        row = conn.execute("SELECT expires_at FROM locks WHERE key = ?", (key,)).fetchone()
    return -1.0 if row is None else float(row[0]) - time.time()


def test_a_reexecution_right_after_a_killed_run_waits_for_its_lock_and_records_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The finding: a run process SIGKILLed mid-window, then the partition executed again at once.
    Before, the second run found the dead run's window lock, logged "skipped: already running",
    reported remaining=N and ended SUCCESS with N tokens never stored. Now it waits for the lock to
    expire and records the rest; the retry job completes the URLs the dead run left pending."""
    env, urls = _kill_env(tmp_path, monkeypatch)
    worker = subprocess.Popen(
        [sys.executable, "-m", "social_recording_tests.dagster_defs.reconcile_worker", DAY, "2"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while len(env.tokens()) < 3:  # two tokens done, two more in flight
            assert worker.poll() is None, worker.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the first run never got going"
            time.sleep(0.05)
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.communicate(timeout=60)
    # Right after: the dead run's window lock has not expired yet.
    assert _lock_expires_in(env, reconcile_lock_key(DAY)) > 0.5
    stored_by_the_killed_run = set(env.tokens())
    assert len(stored_by_the_killed_run) < TOKENS

    use_timings(SHORT, monkeypatch)
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key=DAY, instance=instance, raise_on_error=False)
    assert result.success
    counters = result.output_for_node("reconcile_window")
    assert counters["skipped"] == "" and counters["remaining"] == 0
    assert counters["already_seen"] == len(stored_by_the_killed_run)
    assert len(env.tokens()) == TOKENS
    assert step_metadata(result, "reconcile_window.report")["remaining"] == 0
    run = instance.get_run_by_id(result.run_id)
    assert run is not None and run.tags[REMAINING_TAG] == "0"  # what the catch-up sensor reads

    # What the killed run had in flight is pending on stored tokens: the retry job's to finish.
    retry = env.defs().resolve_job_def("retry_job").execute_in_process(
        run_config={"ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}},
        instance=DagsterInstance.ephemeral(), raise_on_error=False)
    assert retry.success
    assert {u: s for statuses in env.statuses().values() for u, s in statuses.items()} == dict.fromkeys(urls, "ok")
    requests = [e for e in env.ledger() if e.service == "github"]
    assert len(requests) <= TOKENS + 2  # at most the two in flight when killed were asked again


def test_a_run_whose_window_another_run_holds_for_the_whole_wait_fails_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = _kill_env(tmp_path, monkeypatch)
    use_timings(Timings(job_lock_wait=1.0, job_lock_ttl=30.0), monkeypatch)
    locks = open_lock_manager(env.store_url)
    try:
        with locks.try_hold(reconcile_lock_key(DAY), 30.0) as held:  # a live run: it keeps renewing
            assert held.held
            result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
                partition_key=DAY, instance=DagsterInstance.ephemeral(), raise_on_error=False)
    finally:
        locks.close()
    assert not result.success
    failure = result.failure_data_for_node("reconcile_window")
    assert failure is not None
    message = failure.error.message
    assert "left work behind" in message and f"reconcile of {DAY} skipped" in message
    assert "held this job's lock for the whole 1 s wait" in message
    assert env.tokens() == {}


def test_a_live_run_whose_token_another_worker_keeps_locked_fails_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = _kill_env(tmp_path, monkeypatch)
    use_timings(Timings(token_lock_wait=0.5), monkeypatch)
    locks = open_lock_manager(env.store_url)
    address = "Kil0token"
    try:
        with locks.try_hold(f"social-record:{address}", 30.0):
            result = env.defs().resolve_job_def("live_tokens_job").execute_in_process(
                run_config={"ops": {"record_tokens": {"config": {"tokens": [
                    {"address": address, "symbol": "K"}, {"address": "Kil1token", "symbol": "K"}]}}}},
                instance=DagsterInstance.ephemeral(), raise_on_error=False)
    finally:
        locks.close()
    assert not result.success
    failure = result.failure_data_for_node("record_tokens")
    assert failure is not None and "left work behind" in failure.error.message
    assert "1 token(s) not recorded" in failure.error.message and address in failure.error.message
    assert set(env.tokens()) == {"Kil1token"}  # the other token was recorded


def test_a_lock_server_gone_past_the_bound_fails_the_run_naming_it_without_its_password(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import social_recording.dagster_defs.resources as resources
    from test_support.redis_server import restartable_redis

    env, _ = _kill_env(tmp_path, monkeypatch)
    monkeypatch.setattr(resources, "open_lock_manager", lambda url: open_lock_manager(url, outage_s=0.5))
    with restartable_redis(tmp_path / "redis", password="gone-pw-9") as server:
        monkeypatch.setenv("SOCIAL_RECORDING_LOCK_URL", server.url)
        server.stop()
        result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
            partition_key=DAY, instance=DagsterInstance.ephemeral(), raise_on_error=False)
    assert not result.success
    failure = result.failure_data_for_node("reconcile_window")
    assert failure is not None
    message = failure.error.message
    assert f"the lock backend redis://:***@127.0.0.1:{server.port}/0 did not answer" in message
    assert "gone-pw-9" not in message


def test_urls_locked_or_deferred_are_reasons_with_their_detail() -> None:
    log = RunLog(UrlLog(_NullLog()))
    run = RunState(listener=log)
    for status, detail in ((EngineOutcome.LOCKED, "url lock wait of 180s exceeded"),
                           (EngineOutcome.DEFERRED, "twitterapi: the shared rate limiter could not be asked: "
                                                    "the lock backend redis://:***@h:6379/0 did not answer")):
        run.note(UrlOutcome("T1", "https://x.com/i/status/1", "x", status, False, False, 0.0, 0.0, detail))
    run.note(UrlOutcome("T1", "https://github.com/o/r", "github", EngineOutcome.LOST, False, False, 0.0, 0.0, ""))
    reasons = left_behind(run.summary(), [TokenOutcome("T2", TokenStatus.LOCKED_OUT)], "", tuple(log.left_examples))
    assert len(reasons) == 2
    assert reasons[0].startswith("1 token(s) not recorded") and "T2" in reasons[0]
    assert reasons[1].startswith("2 URL(s) left as they were (1 locked, 1 deferred)")
    assert "redis://:***@h:6379/0" in reasons[1]
    assert left_behind(RunSummary(), [TokenOutcome("T3", TokenStatus.RECORDED)], "", ()) == ()


class _NullLog:
    def info(self, message: str) -> None: ...

    def warning(self, message: str) -> None: ...
