"""A compose-like stop of the code server: SIGTERM to the container's entry point (deploy/entrypoint.sh
code-server, started in the background by `sh`, which makes it inherit SIGINT ignored) while a run is
mid-call. The server takes no new run, the run finishes and writes its calls in flight, starts no new
token and ends CANCELED, and the server exits once it has: well within compose's 180 s stop grace
period, not at its end. Natively: the code server as the entry point starts it, a run launched on it
over gRPC as the daemon's run queue does (`dagster job launch` with the workspace file), the store
and the instance on SQLite files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus

from social_recording.code_server_stop import TERMINATED_BY_STOP
from social_recording.domain.urls import to_canonical
from social_recording.sandbox.ledger import Ledger
from social_recording.store import open_store
from test_support.redis_server import free_port
from test_support.rehearsal import DEPLOY_DIR, ENTRYPOINT, REPO, process_env
from test_support.sandbox_env import token, write_scenario

pytestmark = [pytest.mark.integration, pytest.mark.heavy(minutes=0.5)]

TOKENS = 12
HOLD_FILE = "telegram-held"
"""While this file (in the test's directory) exists, every token's Telegram URL goes unanswered (the
sandbox's `held_while`) and a run records at most 8 tokens at a time: the run is certainly mid-call,
with tokens not started, when the stop comes after its first call, however slow or fast the machine;
the test removes it once the stop has refused a new run, and the calls in flight are answered then."""
STOP_BOUND_S = 120.0
"""Generous against the calls in flight on a loaded machine; compose's grace period is 180 s."""
GUARD_S = 180.0


def _wait(what: str, probe: object, timeout: float = GUARD_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():  # type: ignore[operator]
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def test_sigterm_to_the_entry_point_cancels_the_runs_and_ends_the_code_server(tmp_path: Path) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    # Runs launched at once (the daemon's run queue would launch them the same way, over gRPC).
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nrun_coordinator:\n"
                                       "  module: dagster._core.run_coordinator\n  class: DefaultRunCoordinator\n")
    day = (datetime.now(UTC) - timedelta(days=2)).date().isoformat()
    tokens = [token(f"StopT{i}token", f"{day}T{8 + i:02d}:00:00Z", telegram=f"https://t.me/stop_t{i}")
              for i in range(TOKENS)]
    urls = {to_canonical(str(t["telegram"])) for t in tokens}
    hold = tmp_path / HOLD_FILE
    hold.touch()
    scenario = write_scenario(tmp_path / "scenario.json", tokens, {u: {"held_while": str(hold)} for u in urls})
    store_url, ledger = f"sqlite:///{tmp_path / 'store.db'}", tmp_path / "ledger.jsonl"
    port = free_port()
    env = process_env({
        "DAGSTER_HOME": str(home), "SOCIAL_RECORDING_LISTEN_HOST": "127.0.0.1",
        "SOCIAL_RECORDING_CODE_SERVER_HOST": "127.0.0.1", "SOCIAL_RECORDING_CODE_SERVER_PORT": str(port),
        "SOCIAL_RECORDING_ENV": "dev", "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_STORE_URL": store_url, "SOCIAL_RECORDING_LOCK_URL": f"sqlite:///{tmp_path / 'locks.db'}",
        "SOCIAL_RECORDING_PARTITION_START": day, "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(ledger), "SOCIAL_RECORDING_ENABLE_PAID": "true",
    })
    pid_file = tmp_path / "entrypoint.pid"
    # As a non-interactive shell starts a background job: SIGINT ignored, inherited by the entry point.
    shell = subprocess.Popen(["sh", "-c", f'sh "{ENTRYPOINT}" code-server & echo $! > "{pid_file}"; wait $!'],
                             env=env, cwd=tmp_path, stdout=(tmp_path / "code_server.log").open("wb"),
                             stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def healthy() -> bool:
            return subprocess.run([str(ENTRYPOINT), "check", "code-server"], env=env, capture_output=True,
                                  timeout=60, check=False).returncode == 0

        _wait("the code server to be healthy", healthy)
        entry_point = int(pid_file.read_text())
        launched = subprocess.run(
            ["dagster", "job", "launch", "-w", str(DEPLOY_DIR / "workspace.yaml"), "-j", "reconcile_job",
             "--tags", json.dumps({"dagster/partition": day})],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=GUARD_S, check=False)
        assert launched.returncode == 0, launched.stderr[-2000:]

        def calls() -> list[str]:
            return [e.subject for e in Ledger(ledger).read() if e.service == "telegram"] if ledger.exists() else []

        _wait("a run's first Telegram call", lambda: calls())
        os.kill(entry_point, signal.SIGTERM)  # what `docker stop` does, through the container's init
        stopped_at = time.monotonic()
        # The server takes no new run from now on.
        again = subprocess.run(
            ["dagster", "job", "launch", "-w", str(DEPLOY_DIR / "workspace.yaml"), "-j", "reconcile_job",
             "--tags", json.dumps({"dagster/partition": day})],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=GUARD_S, check=False)
        hold.unlink()  # the calls in flight are answered now
        exit_code = shell.wait(timeout=GUARD_S)
        took = time.monotonic() - stopped_at
    finally:
        hold.unlink(missing_ok=True)
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait(30)
    log = (tmp_path / "code_server.log").read_text(errors="replace")
    assert exit_code == 0, log[-3000:]
    assert took < STOP_BOUND_S, log[-3000:]

    with DagsterInstance.from_config(str(home)) as instance:
        records = sorted(instance.get_run_records(), key=lambda r: r.create_timestamp)
        run = records[0].dagster_run
        assert run.status is DagsterRunStatus.CANCELED, log[-3000:]
        messages = [e.message or "" for e in instance.all_logs(run.run_id)]
        assert any(TERMINATED_BY_STOP in m for m in messages), messages
        # The run launched after the stop was refused: it never started.
        assert again.returncode != 0 and "shut down" in again.stderr, again.stderr[-2000:]
        assert [r.dagster_run.status for r in records[1:]] in ([], [DagsterRunStatus.FAILURE])

    # Every call that was in flight finished and was written; no token was started after the stop.
    called = calls()
    assert 0 < len(called) < TOKENS
    store = open_store(store_url)
    try:
        statuses = sorted(el.status.value for t in tokens if (doc := store.find_token(str(t["address"])))
                          for el in doc.social_urls)
    finally:
        store.close()
    assert statuses.count("ok") == len(called), statuses
    print(f"code server stopped {took:.1f} s after SIGTERM; {len(called)} token(s) in flight written, "
          f"{TOKENS - len(called)} not started")
