"""`make dev`'s terminal: INFO and above by default, DEBUG on request, and nothing for a sensor
tick that launches nothing (docs/quickstart.md, "Starting and stopping")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PROBE = """
import logging, sys
logging.basicConfig(stream=sys.stdout, format="%(name)s %(message)s", level=logging.INFO)
daemon = logging.getLogger("dagster.daemon.SensorDaemon")
daemon.info("Checking for new runs for sensor: token_flow_sensor")
daemon.info("Sensor token_flow_sensor skipped: no new token traded")
daemon.info("No run requests returned for retry_candidates_sensor, skipping")
daemon.info("Launching run for token_flow_sensor")
daemon.warning("Sensor token_flow_sensor failed")
logging.getLogger("dagster.daemon.BackfillDaemon").info("Checking for new runs for sensor: elsewhere")
"""


def _probe(level: str) -> list[str]:
    env = {"PYTHONPATH": str(REPO / "dev"), "SOCIAL_RECORDING_DEV_LOG_LEVEL": level, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60,
                          check=True)
    return done.stdout.splitlines()


def test_a_skipped_tick_prints_nothing_and_everything_else_is_kept() -> None:
    assert _probe("info") == ["dagster.daemon.SensorDaemon Launching run for token_flow_sensor",
                              "dagster.daemon.SensorDaemon Sensor token_flow_sensor failed",
                              "dagster.daemon.BackfillDaemon Checking for new runs for sensor: elsewhere"]
    assert len(_probe("debug")) == 6  # DEV_LOG_LEVEL=debug keeps every line


def test_make_dev_runs_at_info_and_debug_on_request() -> None:
    assert yaml.safe_load((REPO / "dagster.yaml").read_text())["python_logs"] == {"python_log_level": "INFO"}
    for level, expected in (("", "INFO"), ("debug", "DEBUG")):
        args = ["make", "-n", "-o", "install", "dev"] + ([f"DEV_LOG_LEVEL={level}"] if level else [])
        commands = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
        assert f"python_log_level: {expected}/' dagster.yaml" in commands
        assert f"--log-level {level or 'info'}" in commands and f"PYTHONPATH={REPO}/dev" in commands
        assert "-m social_recording record-settings" in commands and "/.social_recording/dagster_home/.env" in commands


def test_make_dev_refuses_a_wrong_setting_before_starting_dagster(tmp_path: Path) -> None:
    import os

    target = tmp_path / "home" / ".env"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SOCIAL_RECORDING_MAX_ATTEMPTS": "0"}
    bad = subprocess.run([sys.executable, "-m", "social_recording", "record-settings", str(target)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "SOCIAL_RECORDING_MAX_ATTEMPTS" in bad.stderr and not target.exists()
    env.update({"SOCIAL_RECORDING_MAX_ATTEMPTS": "7", "SOCIAL_RECORDING_TRACKER_API_KEY": "tracker-S3cret"})
    good = subprocess.run([sys.executable, "-m", "social_recording", "record-settings", str(target)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert good.returncode == 0, good.stderr
    written = target.read_text()
    assert "SOCIAL_RECORDING_MAX_ATTEMPTS=7\n" in written and "S3cret" not in written + good.stdout
    assert oct(target.stat().st_mode & 0o777) == "0o600"
