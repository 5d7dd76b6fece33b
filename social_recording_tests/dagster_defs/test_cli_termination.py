"""SIGTERM to `dagster job execute` (a real subprocess) is a termination: the run ends CANCELED, not
FAILURE, after logging what it finished, what it finishes and what it never started; the tokens in
flight are written and the rest are left for the next run of the partition."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus

from test_support.sandbox_env import SandboxEnv, make_env, token

pytestmark = pytest.mark.integration

SLOW_TOKENS = 6
DAY = "2026-11-03"


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    tokens = [token(f"SigT{i}token", f"{DAY}T{10 + i:02d}:00:00Z", website=f"https://github.com/sig/slow{i}")
              for i in range(SLOW_TOKENS)]
    targets = {f"https://github.com/sig/slow{i}": {"latency_ms": 2500} for i in range(SLOW_TOKENS)}
    return make_env(tmp_path, monkeypatch, tokens, targets)  # type: ignore[arg-type]


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(f"the run ended before {text!r}:\n{path.read_text()[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} within {timeout:g}s:\n{path.read_text()[-3000:]}")


def test_sigterm_to_the_cli_ends_the_run_canceled_saying_what_it_left(env: SandboxEnv, tmp_path: Path) -> None:
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"ops": {"reconcile_window": {"config": {"max_workers": 2}}}}))
    out = tmp_path / "cli.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dagster", "job", "execute", "-m", "social_recording.definitions",
             "-j", "reconcile_job", "--tags", json.dumps({"dagster/partition": DAY}), "-c", str(config)],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=tmp_path,
        )
        try:
            # The recording stage has begun: two 2.5 s tokens in flight, four waiting.
            _wait_for(out, "record_window", proc)
            time.sleep(0.5)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = out.read_text(errors="replace")
    assert "RUN_CANCELED" in log and "RUN_FAILURE" not in log, log[-3000:]

    with DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        assert run.status == DagsterRunStatus.CANCELED
        events = instance.all_logs(run.run_id)
        messages = [e.user_message for e in events]
        canceling = [e.dagster_event.message for e in events
                     if e.dagster_event is not None and e.dagster_event.event_type_value == "PIPELINE_CANCELING"]
    said = [m for m in messages if m.startswith("run interrupted")]
    assert len(said) == 1, messages[-20:]
    assert "2 in flight finish and are written" in said[0] and "not started" in said[0], said[0]
    assert len(canceling) == 1 and (canceling[0] or "").startswith("SIGTERM received"), canceling

    # The tokens in flight were written; the others were never started (no request, no document).
    statuses = env.statuses()
    assert 0 < len(statuses) < SLOW_TOKENS
    assert all(s == {u: "ok" for u in s} for s in statuses.values())
