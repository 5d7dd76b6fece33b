"""deploy/helm/values.yaml, the values for Dagster's official Helm chart, says what the compose
deployment says: the chart version of the locked Dagster, this image and code location as the
user-code deployment, the Kubernetes run launcher with the application's Secret, external stores,
and the instance settings of deploy/dagster.yaml (run queue limits, run monitoring, run retries)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

from social_recording_tests.deploy.helm_schema import override_errors
from social_recording_tests.deploy.rehearsal import DEPLOY_DIR, INSTANCE_CONFIG, REPO

VALUES_FILE = DEPLOY_DIR / "helm" / "values.yaml"
SECRET = "social-recording-env"


def _values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(VALUES_FILE.read_text())
    return values


def _locked_dagster() -> str:
    (version,) = re.findall(r"^dagster==(\S+) ", (DEPLOY_DIR / "requirements.lock").read_text(), flags=re.M)
    return version


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def test_the_chart_version_is_the_locked_dagster() -> None:
    text = VALUES_FILE.read_text()
    version = _locked_dagster()
    assert f"chart version {version}" in text and f"--version {version}" in text


def test_the_user_code_deployment_is_this_image_and_code_location() -> None:
    (deployment,) = _values()["dagster-user-deployments"]["deployments"]
    project_version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert deployment["image"]["tag"] == project_version  # the tag compose builds
    args = deployment["dagsterApiGrpcArgs"]
    entrypoint = (DEPLOY_DIR / "entrypoint.sh").read_text()
    # The same code location as the compose code server.
    assert args == ["--module-name", "social_recording.definitions", "--location-name", "social_recording"]
    assert "--module-name social_recording.definitions --location-name social_recording" in entrypoint
    assert deployment["envSecrets"] == [{"name": SECRET}]
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": True}
    assert deployment["env"] == {"SOCIAL_RECORDING_ENV": "prod", "SOCIAL_RECORDING_UPSTREAM": "live"}
    assert deployment["resources"]["limits"]


def test_runs_are_kubernetes_jobs_with_the_applications_secret() -> None:
    launcher = _values()["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    config = launcher["config"]["k8sRunLauncher"]
    assert config["envSecrets"] == [{"name": SECRET}]
    assert config["runK8sConfig"]["containerConfig"]["resources"]["limits"]


def test_the_stores_are_external_and_no_secret_is_written_here() -> None:
    values = _values()
    assert values["postgresql"]["enabled"] is False and values["postgresql"]["postgresqlPassword"] == ""
    assert values["generatePostgresqlPasswordSecret"] is False
    assert values["global"]["postgresqlSecretName"]
    assert values["redis"]["enabled"] is False and values["rabbitmq"]["enabled"] is False

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if re.search(r"(password|token|apikey)$", key, re.I) and isinstance(value, str):
                    assert value == "", f"{path}.{key}"
                walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")

    walk(values, "")


def test_the_instance_settings_are_deploy_dagster_yamls() -> None:
    daemon = _values()["dagsterDaemon"]
    instance = yaml.safe_load(INSTANCE_CONFIG.read_text())
    assert daemon["runRetries"] == {_camel(k): v for k, v in instance["run_retries"].items()}
    monitoring = {_camel(k): v for k, v in instance["run_monitoring"].items()}
    # The one difference: the Kubernetes launcher can resume a run whose pod died; the default one cannot.
    assert monitoring.pop("maxResumeRunAttempts") == 0 and daemon["runMonitoring"].pop("maxResumeRunAttempts") > 0
    assert daemon["runMonitoring"] == monitoring
    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    runs = instance["concurrency"]["runs"]
    assert daemon["runCoordinator"]["type"] == "QueuedRunCoordinator"
    assert queued["maxConcurrentRuns"] == runs["max_concurrent_runs"]
    assert queued["tagConcurrencyLimits"] == runs["tag_concurrency_limits"]


def test_a_dead_or_hung_daemon_is_restarted() -> None:
    daemon = _values()["dagsterDaemon"]
    assert daemon["heartbeatTolerance"] <= 300
    assert daemon["livenessProbe"]["exec"]["command"] == ["dagster-daemon", "liveness-check"]


# --------------------------------------------------------------------------- the schema check


_CHART_LIKE = {
    "type": "object",
    "properties": {
        "postgresql": {"$ref": "#/definitions/PostgreSQL"},
        "dagsterDaemon": {"type": "object", "properties": {
            "resources": {"$ref": "https://kubernetesjsonschema.dev/v1.18.0/_definitions.json#/definitions/x"},
            "heartbeatTolerance": {"type": "integer"}}, "additionalProperties": False},
    },
    "required": ["postgresql", "dagsterDaemon", "ingress"],
    "definitions": {"PostgreSQL": {"type": "object", "properties": {
        "enabled": {"type": "boolean"}, "postgresqlHost": {"type": "string"}},
        "required": ["enabled", "postgresqlHost", "service"], "additionalProperties": False}},
}
"""A schema shaped like the chart's: local and remote refs, `required`, closed objects."""


def test_the_schema_check_skips_required_and_remote_refs_but_nothing_else() -> None:
    good = {"postgresql": {"enabled": False}, "dagsterDaemon": {"heartbeatTolerance": 120, "resources": {"x": 1}}}
    assert list(override_errors(good, _CHART_LIKE)) == []
    bad = {"postgresql": {"enabled": "no", "postgresqlHots": "h"}, "dagsterDaemon": {"heartbeatTolerance": "2m"}}
    errors = list(override_errors(bad, _CHART_LIKE))
    assert len(errors) == 3, errors
    assert any(e.startswith("postgresql/enabled:") for e in errors)
    assert any("postgresqlHots" in e for e in errors)
    assert any(e.startswith("dagsterDaemon/heartbeatTolerance:") for e in errors)


def test_the_values_pass_the_check_against_a_schema_of_their_own_shape(tmp_path: Path) -> None:
    """The command line end to end (what an operator runs against the chart's own schema)."""
    schema = tmp_path / "values.schema.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"telemetry": {
        "type": "object", "properties": {"enabled": {"type": "boolean"}}, "additionalProperties": False}}}))
    done = subprocess.run([sys.executable, "-m", "social_recording_tests.deploy.helm_schema", str(schema)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "valid against" in done.stdout, done.stdout + done.stderr
    schema.write_text(json.dumps({"type": "object", "properties": {"telemetry": {"type": "string"}}}))
    done = subprocess.run([sys.executable, "-m", "social_recording_tests.deploy.helm_schema", str(schema)],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1 and "telemetry:" in done.stdout
