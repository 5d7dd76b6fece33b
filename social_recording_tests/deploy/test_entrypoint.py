"""deploy/entrypoint.sh refuses to start a service with a missing value or an unknown name, and
says which (the rehearsal covers the happy path)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from test_support.rehearsal import ENTRYPOINT, process_env


def _run(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ENTRYPOINT), *args], env=process_env({"DAGSTER_HOME": str(tmp_path), **env}),
                          capture_output=True, text=True, timeout=30, check=False)


@pytest.mark.parametrize(("service", "needed"), [
    ("code-server", "SOCIAL_RECORDING_LISTEN_HOST"),
    ("daemon", "SOCIAL_RECORDING_CODE_SERVER_HOST"),
    ("webserver", "SOCIAL_RECORDING_CODE_SERVER_HOST"),
])
def test_a_missing_variable_is_named(tmp_path: Path, service: str, needed: str) -> None:
    done = _run(tmp_path, service)
    assert done.returncode == 64
    assert f"{needed} must be set" in done.stderr


def test_dagster_home_is_required(tmp_path: Path) -> None:
    done = subprocess.run([str(ENTRYPOINT), "daemon"], env=process_env({}), capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode != 0 and "DAGSTER_HOME" in done.stderr


@pytest.mark.parametrize("args", [(), ("scheduler",), ("check",), ("check", "daemon", "extra"), ("daemon", "x")])
def test_unknown_usage_is_refused(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _run(tmp_path, *args)
    assert done.returncode == 64 and "usage:" in done.stderr


def test_a_dagster_command_runs_as_given(tmp_path: Path) -> None:
    """How the Helm chart and the Kubernetes run launcher use the image: `dagster api grpc …` and
    `dagster api execute_run …` as the container's arguments."""
    done = _run(tmp_path, "dagster", "--version")
    assert done.returncode == 0 and "dagster" in done.stdout.lower(), done.stderr


def test_a_command_gets_dagsters_password_from_its_file_and_a_missing_file_is_named(tmp_path: Path) -> None:
    secret = tmp_path / "dagster_postgres_password"
    secret.write_text("pg-Secret-9")
    done = _run(tmp_path, "python", "-c", "import os; print(os.environ['DAGSTER_POSTGRES_PASSWORD'])",
                DAGSTER_POSTGRES_PASSWORD_FILE=str(secret))
    assert done.returncode == 0 and done.stdout.strip() == "pg-Secret-9", done.stderr
    done = _run(tmp_path, "daemon", SOCIAL_RECORDING_CODE_SERVER_HOST="127.0.0.1", SOCIAL_RECORDING_CODE_SERVER_PORT="1",
                DAGSTER_POSTGRES_PASSWORD_FILE=str(tmp_path / "missing"))
    assert done.returncode == 64 and "DAGSTER_POSTGRES_PASSWORD_FILE: cannot read" in done.stderr
