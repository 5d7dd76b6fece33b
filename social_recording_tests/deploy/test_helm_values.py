"""deploy/helm/values.yaml, the values for Dagster's official Helm chart, says what the compose
deployment says: the chart version of the locked Dagster, this image (by its build's tag) and code
location as the user-code deployment, the Kubernetes run launcher with the application's Secret,
external stores, the instance settings of deploy/dagster.yaml (run queue limits, run monitoring, run
retries), the migrate job, kept compute logs, security contexts and a login in front. It is checked
against the chart's own values.schema.json, kept unmodified as test data in data/dagster-chart/ (its
source, commit, licence, digest and how to refresh it in the README.md there)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from social_recording_tests.deploy.helm_schema import override_errors
from test_support.rehearsal import DEPLOY_DIR, INSTANCE_CONFIG, REPO

VALUES_FILE = DEPLOY_DIR / "helm" / "values.yaml"
SECRET = "social-recording-env"
CHART_SCHEMA_ENV = "SOCIAL_RECORDING_HELM_SCHEMA"
CHART_DATA = Path(__file__).resolve().parent / "data" / "dagster-chart"
CHART_SCHEMA = Path(os.environ.get(CHART_SCHEMA_ENV) or CHART_DATA / "values.schema.json")
"""The chart's own schema: the copy in data/dagster-chart/, or the file SOCIAL_RECORDING_HELM_SCHEMA
names (`helm pull dagster/dagster --version 1.13.27 --untar` unpacks one)."""
TAG_PLACEHOLDER = "set-at-install-to-the-commit"


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
    # A drained node lets a run's tokens in flight finish, as compose's stop grace period does.
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    grace = int(compose["services"]["user_code"]["stop_grace_period"].removesuffix("s"))
    assert config["runK8sConfig"]["podSpecConfig"]["terminationGracePeriodSeconds"] == grace


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


def test_images_are_pulled_by_the_builds_tag() -> None:
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["image"]["tag"] == TAG_PLACEHOLDER and deployment["image"]["pullPolicy"] == "Always"
    (init,) = deployment["initContainers"]
    assert init["image"] == f"{deployment['image']['repository']}:{TAG_PLACEHOLDER}"
    assert init["imagePullPolicy"] == "Always"
    assert values["runLauncher"]["config"]["k8sRunLauncher"]["imagePullPolicy"] == "Always"
    # `make helm-values` puts the build's tag in every place of a copy of the file.
    makefile = (REPO / "Makefile").read_text()
    assert f"sed 's/{TAG_PLACEHOLDER}/$(IMAGE_TAG)/g' deploy/helm/values.yaml > build/helm-values.yaml" in makefile


def test_upgrades_migrate_the_instance_and_the_store_first() -> None:
    values = _values()
    assert values["migrate"] == {"enabled": True}
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    (init,) = deployment["initContainers"]
    assert init["args"] == ["migrate-store"]
    # The MongoDB administrator's Secret reaches the init container only, never the code server or a run.
    assert {"secretRef": {"name": "social-recording-mongo-admin"}} in init["envFrom"]
    assert deployment["envSecrets"] == [{"name": SECRET}]
    assert values["runLauncher"]["config"]["k8sRunLauncher"]["envSecrets"] == [{"name": SECRET}]
    assert "migrate-store)" in (DEPLOY_DIR / "entrypoint.sh").read_text()


def test_run_output_is_kept_on_a_shared_volume() -> None:
    values = _values()
    manager = values["computeLogManager"]
    assert manager["type"] == "CustomComputeLogManager"
    custom = manager["config"]["customComputeLogManager"]
    assert custom["class"] == "LocalComputeLogManager"
    base = custom["config"]["base_dir"]
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    claim = yaml.safe_load((DEPLOY_DIR / "helm" / "compute-logs-pvc.yaml").read_text())
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    for holder in (launcher, values["dagsterWebserver"]):
        (volume,) = holder["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
        assert [m["mountPath"] for m in holder["volumeMounts"]] == [base]


def test_every_pod_runs_unprivileged() -> None:
    values = _values()
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    pods = [values["dagsterWebserver"]["podSecurityContext"], values["dagsterDaemon"]["podSecurityContext"],
            deployment["podSecurityContext"],
            values["runLauncher"]["config"]["k8sRunLauncher"]["runK8sConfig"]["podSpecConfig"]["securityContext"]]
    for pod in pods:
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 1000  # the image's `dagster` user
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    containers = [values["dagsterWebserver"]["securityContext"], values["dagsterDaemon"]["securityContext"],
                  deployment["securityContext"], deployment["initContainers"][0]["securityContext"],
                  values["runLauncher"]["config"]["k8sRunLauncher"]["securityContext"]]
    for container in containers:
        assert container["allowPrivilegeEscalation"] is False and container["capabilities"] == {"drop": ["ALL"]}
    assert "useradd --create-home --uid 1000 dagster" in (REPO / "Dockerfile").read_text()


def test_the_webservers_are_behind_a_login_and_a_read_only_one_is_there_for_viewers() -> None:
    values = _values()
    ingress = values["ingress"]
    assert ingress["enabled"] is True
    annotations = ingress["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/auth-type"] == "basic"
    assert annotations["nginx.ingress.kubernetes.io/auth-secret"]
    assert values["dagsterWebserver"]["enableReadOnly"] is True
    for host in ("dagsterWebserver", "readOnlyDagsterWebserver"):
        assert ingress[host]["tls"]["enabled"] is True, host


def test_a_network_policy_shuts_the_namespace_to_the_outside() -> None:
    policies = list(yaml.safe_load_all((DEPLOY_DIR / "helm" / "networkpolicy.yaml").read_text()))
    assert all(p["kind"] == "NetworkPolicy" for p in policies)
    default, webservers = policies
    assert default["spec"]["podSelector"] == {} and default["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert webservers["spec"]["ingress"][0]["from"][0]["namespaceSelector"]


def test_the_values_are_valid_against_the_charts_own_schema() -> None:
    assert CHART_SCHEMA.is_file(), (
        f"the Dagster chart's values.schema.json is not at {CHART_SCHEMA}; {CHART_SCHEMA_ENV} names another "
        f"copy (the file `helm pull dagster/dagster --version {_locked_dagster()} --untar` unpacks)")
    if CHART_SCHEMA.parent == CHART_DATA:  # the repository's copy is the published file, unmodified
        (digest,) = re.findall(r"sha256\s+`([0-9a-f]{64})`", (CHART_DATA / "README.md").read_text())
        assert hashlib.sha256(CHART_SCHEMA.read_bytes()).hexdigest() == digest
    errors = list(override_errors(_values(), json.loads(CHART_SCHEMA.read_text())))
    assert errors == []


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


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_the_cutover_stops_compose_before_the_charts_daemon_starts() -> None:
    """docs/operations.md's move from compose: drain, stop compose's Dagster services and copy the
    stores before any chart install, install with the daemon off, and only then start it."""
    steps = _section((REPO / "docs" / "operations.md").read_text(), "Moving from Docker Compose to Kubernetes")
    at = {what: steps.index(what) for what in (
        "python -m social_recording drain",
        "docker compose stop proxy webserver webserver_readonly daemon user_code",
        "python -m social_recording backup",
        "--set dagsterDaemon.enabled=false",
    )}
    assert list(at) == sorted(at, key=at.__getitem__), at
    installs = [i for i in range(len(steps)) if steps.startswith("helm upgrade --install", i)]
    assert len(installs) == 2 and installs[0] > at["python -m social_recording backup"]
    first_install = steps[installs[0]:installs[1]]
    assert "--set dagsterDaemon.enabled=false" in first_install
    assert "dagsterDaemon.enabled=false" not in steps[installs[1]:]
    # Nothing of the chart (a second daemon) is installed before compose's daemon is stopped.
    assert "helm upgrade" not in steps[:at["docker compose stop proxy webserver webserver_readonly daemon user_code"]]
    # The compose stop names every service that runs Dagster code.
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    stopped = {"proxy", "webserver", "webserver_readonly", "daemon", "user_code"}
    assert {n for n, svc in compose.items() if svc.get("command") and n != "migrate" and n not in
            ("postgres", "mongodb", "redis")} <= stopped
