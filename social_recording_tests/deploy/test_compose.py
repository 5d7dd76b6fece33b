"""docker-compose.yml, .env.example, the Dockerfile and deploy/dagster.yaml, checked without a Docker
engine: Debian's `docker-compose config` validates and interpolates the file (`.ci/run` installs
it), and the resolved services are compared with what the deployment rehearsal runs."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml
from dagster import DefaultScheduleStatus, DefaultSensorStatus

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import SECRET_FIELDS, Settings, env_var_name, load_settings
from social_recording_tests.dagster_defs.sandbox_env import apply_env
from social_recording_tests.deploy.rehearsal import (
    COMPOSE_FILE,
    DOCKERFILE,
    ENV_EXAMPLE,
    INSTANCE_CONFIG,
    REPO,
    SERVICES,
    RehearsalConfig,
    process_env,
    service_env,
)

DAGSTER_SERVICES = tuple(SERVICES)
DATA_SERVICES = ("postgres", "mongodb", "redis")
IMAGE_ENTRYPOINT = "/opt/social_recording/deploy/entrypoint.sh"
PASSWORDS = ("DAGSTER_POSTGRES_PASSWORD", "MONGO_ROOT_PASSWORD", "REDIS_PASSWORD")
FILLED = {name: f"pw-{i}" for i, name in enumerate(PASSWORDS)}

LIVE_ONLY = {
    env_var_name(f) for f in ("tracker_url", "tracker_api_key", "af_group_ids", "af_investor_threshold",
                              "enable_paid", "max_attempts", "max_exhausted_per_hour", "rate_limits",
                              "twitterapi_io_key", "apify_token",
                              "youtube_api_key", "github_token", "urlscan_api_key")
}
"""Passed by compose, not by the rehearsal: the real tracker and providers (the rehearsal runs the
sandbox) and policy values the rehearsal leaves at the code's defaults, as compose's empty values do."""
SANDBOX_ONLY = {env_var_name("sandbox_scenario"), env_var_name("sandbox_ledger")}
"""Passed by the rehearsal, not by compose: its own scenario (tokens on days relative to today) and
ledger file; the compose dry run uses the bundled demo and the ledger in its volume."""
BUILT_BY_COMPOSE = {env_var_name("store_url"), env_var_name("lock_url")}
"""Not in .env: compose builds them from the MongoDB and Redis services' names and passwords."""


class Compose:
    """Debian's `docker-compose` on the project's file, with an env file written per call."""

    def __init__(self, tmp: Path) -> None:
        binary = shutil.which("docker-compose")
        if binary is None:
            raise RuntimeError("docker-compose not found; install Debian's `docker-compose` package (.ci/run does)")
        self.binary = binary
        self.env_file = tmp / "compose.env"

    def run(self, env_file: Mapping[str, str], *args: str, shell_env: Mapping[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in env_file.items()))
        return subprocess.run(
            [self.binary, "--project-directory", str(REPO), "-f", str(COMPOSE_FILE),
             "--env-file", str(self.env_file), *args],
            env=process_env(dict(shell_env or {})), capture_output=True, text=True, timeout=120, check=False,
        )

    def resolved(self, shell_env: Mapping[str, str] | None = None, **overrides: str) -> dict[str, Any]:
        """`docker-compose config` with .env.example plus the passwords (and `overrides`) filled in."""
        done = self.run({**example(), **FILLED, **overrides}, "config", shell_env=shell_env)
        assert done.returncode == 0, done.stderr
        config: dict[str, Any] = yaml.safe_load(done.stdout)
        return config


@pytest.fixture()
def compose(tmp_path: Path) -> Compose:
    return Compose(tmp_path)


def example() -> dict[str, str]:
    """.env.example as a mapping."""
    out = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example line without '=': {line!r}"
            out[key.strip()] = value.strip()
    return out


def _env(config: Mapping[str, Any], service: str) -> dict[str, str]:
    return {k: "" if v is None else str(v) for k, v in (config["services"][service].get("environment") or {}).items()}


def _rehearsal_cfg() -> RehearsalConfig:
    """Placeholder values: only the names service_env gives each service matter here."""
    return RehearsalConfig(
        dagster_home=Path("/tmp/home"), postgres={k: "x" for k in (
            "DAGSTER_POSTGRES_HOST", "DAGSTER_POSTGRES_PORT", "DAGSTER_POSTGRES_USER",
            "DAGSTER_POSTGRES_PASSWORD", "DAGSTER_POSTGRES_DB")},
        store_url="sqlite:////tmp/store.db", lock_url="redis://127.0.0.1:1/0", scenario=Path("/tmp/s.json"),
        ledger=Path("/tmp/l.jsonl"), partition_start=date(2026, 11, 1), code_server_port=1, webserver_port=2,
    )


def _dockerfile_env_names() -> set[str]:
    names: set[str] = set()
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("ENV "):
            names |= {part.split("=", 1)[0] for part in shlex.split(line[4:]) if "=" in part}
    return names


def _app_names(env: Mapping[str, str] | set[str]) -> set[str]:
    """The names the application or the deployment config reads (not PATH, PYTHON*, PIP*)."""
    return {n for n in env if n.startswith(("SOCIAL_RECORDING_", "DAGSTER_")) or n in LIVE_ONLY}


# --------------------------------------------------------------------------- the file itself


def test_config_is_valid_with_the_example_env_and_passwords(compose: Compose) -> None:
    done = compose.run({**example(), **FILLED}, "config", "-q")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("missing", PASSWORDS)
def test_each_password_is_required_and_named(compose: Compose, missing: str) -> None:
    done = compose.run({**example(), **{k: v for k, v in FILLED.items() if k != missing}}, "config", "-q")
    assert done.returncode != 0
    assert f"set {missing} in .env" in done.stderr


def test_services_volumes_and_healthy_dependencies(compose: Compose) -> None:
    config = compose.resolved()
    services = config["services"]
    assert set(services) == {*DATA_SERVICES, *DAGSTER_SERVICES}
    assert set(config["volumes"]) == {"postgres_data", "mongodb_data", "redis_data", "dagster_storage",
                                      "social_recording_data"}
    mounts = {name: {v.split(":")[0]: v.split(":")[1] for v in s.get("volumes", [])} for name, s in services.items()}
    assert mounts["postgres"] == {"postgres_data": "/var/lib/postgresql/data"}
    assert mounts["mongodb"] == {"mongodb_data": "/data/db"}
    assert mounts["redis"] == {"redis_data": "/data"}
    for name in DAGSTER_SERVICES:
        assert mounts[name]["dagster_storage"] == "/opt/dagster/home/storage"
        deps = services[name]["depends_on"]
        assert {"postgres", "user_code"} - {name} <= set(deps)
        assert all(d["condition"] == "service_healthy" for d in deps.values())
    assert set(services["user_code"]["depends_on"]) == set(DATA_SERVICES)


def test_healthchecks_are_real_commands(compose: Compose) -> None:
    services = compose.resolved()["services"]
    checks = {name: " ".join(s["healthcheck"]["test"]) for name, s in services.items()}
    assert "pg_isready" in checks["postgres"]
    assert "mongosh" in checks["mongodb"] and 'db.adminCommand' in checks["mongodb"] and "ping" in checks["mongodb"]
    assert "redis-cli ping" in checks["redis"]
    for name in DAGSTER_SERVICES:
        # The same check the rehearsal waits for before it goes on.
        assert services[name]["healthcheck"]["test"] == ["CMD", IMAGE_ENTRYPOINT, "check", *SERVICES[name]]


def test_redis_keeps_an_append_only_file(compose: Compose) -> None:
    command = compose.resolved()["services"]["redis"]["command"]
    joined = " ".join(str(c) for c in command)
    assert "--appendonly yes" in joined and "--appendfsync everysec" in joined


# --------------------------------------------------------------------------- compose = rehearsal


def test_the_dagster_services_run_the_rehearsals_commands_in_one_image(compose: Compose) -> None:
    services = compose.resolved()["services"]
    dockerfile = DOCKERFILE.read_text()
    assert f'ENTRYPOINT ["{IMAGE_ENTRYPOINT}"]' in dockerfile
    assert "WORKDIR /opt/social_recording" in dockerfile and "COPY deploy ./deploy" in dockerfile
    assert 'cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml"' in dockerfile  # the rehearsal copies it too
    assert 'pip install ".[deploy]"' in dockerfile
    images = {services[name]["image"] for name in DAGSTER_SERVICES}
    assert len(images) == 1
    for name in DAGSTER_SERVICES:
        assert "entrypoint" not in services[name]
        assert services[name]["command"] == SERVICES[name]


@pytest.mark.parametrize("service", DAGSTER_SERVICES)
def test_environment_names_match_the_rehearsal(compose: Compose, service: str) -> None:
    in_compose = _app_names(_env(compose.resolved(), service)) | _app_names(_dockerfile_env_names())
    rehearsal = _app_names(service_env(service, _rehearsal_cfg()))
    if service == "user_code":
        assert in_compose - rehearsal == LIVE_ONLY
        assert rehearsal - in_compose == SANDBOX_ONLY
    else:
        assert in_compose == rehearsal


def test_only_the_code_server_gets_application_settings(compose: Compose) -> None:
    settings_names = {env_var_name(f) for f in Settings.model_fields}
    config = compose.resolved()
    for name in ("daemon", "webserver"):
        assert not set(_env(config, name)) & settings_names, name


# --------------------------------------------------------------------------- the code location under compose


def _load_with(monkeypatch: pytest.MonkeyPatch, env: Mapping[str, str]) -> Settings:
    apply_env(monkeypatch, {k: v for k, v in env.items() if k.startswith("SOCIAL_RECORDING_") or k in LIVE_ONLY})
    return load_settings()


def test_compose_defaults_are_prod_and_live_and_load(compose: Compose, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(compose.resolved(SOCIAL_RECORDING_TRACKER_URL="https://tracker.example.com",
                        SOCIAL_RECORDING_AF_GROUP_IDS="g1,g2"), "user_code")
    settings = _load_with(monkeypatch, env)
    assert (settings.env, settings.upstream) == ("prod", "live")
    assert settings.store_url.startswith("mongodb://") and "@mongodb:27017/social_recording" in settings.store_url
    assert settings.effective_lock_url.startswith("redis://") and "@redis:6379/0" in settings.effective_lock_url
    defs = build_definitions(settings)
    assert defs.resolve_sensor_def("token_flow_sensor").default_status is DefaultSensorStatus.RUNNING
    assert defs.resolve_schedule_def("retry_schedule").default_status is DefaultScheduleStatus.RUNNING


def test_live_without_a_tracker_fails_at_load_naming_the_variables(compose: Compose, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _env(compose.resolved(), "user_code")
    with pytest.raises(ValueError, match="SOCIAL_RECORDING_TRACKER_URL.*SOCIAL_RECORDING_AF_GROUP_IDS"):
        _load_with(monkeypatch, env)


def test_the_dry_run_line_switches_to_the_sandbox_and_a_database_of_its_own(
    compose: Compose, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = [ln for ln in (REPO / "README.md").read_text().splitlines()
               if ln.startswith("SOCIAL_RECORDING_UPSTREAM=sandbox ") and "docker compose up" in ln]
    shell = dict(word.split("=", 1) for word in line.split(" docker compose", 1)[0].split())
    env = _env(compose.resolved(shell_env=shell), "user_code")
    settings = _load_with(monkeypatch, env)
    assert (settings.env, settings.upstream) == ("prod", "sandbox")
    assert "@mongodb:27017/social_recording_dryrun?" in settings.store_url
    build_definitions(settings)


# --------------------------------------------------------------------------- .env.example, dagster.yaml


def test_env_example_lists_every_variable_with_no_secret_value() -> None:
    values = example()
    referenced = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE_FILE.read_text()))
    assert set(values) == referenced
    settings_names = {env_var_name(f) for f in Settings.model_fields}
    assert settings_names - set(values) == SANDBOX_ONLY | BUILT_BY_COMPOSE
    secrets = {env_var_name(f) for f in SECRET_FIELDS} | set(PASSWORDS)
    assert {k: v for k, v in values.items() if k in secrets and v} == {}
    assert values["SOCIAL_RECORDING_ENV"] == "prod" and values["SOCIAL_RECORDING_UPSTREAM"] == "live"


def test_production_instance_config() -> None:
    prod = yaml.safe_load(INSTANCE_CONFIG.read_text())
    dev = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert prod["concurrency"] == dev["concurrency"]
    assert prod["run_coordinator"]["class"] == "QueuedRunCoordinator"
    assert prod["run_launcher"] == {"module": "dagster", "class": "DefaultRunLauncher"}
    db = prod["storage"]["postgres"]["postgres_db"]
    for key in ("hostname", "port", "username", "password", "db_name"):
        assert set(db[key]) == {"env"} and db[key]["env"].startswith("DAGSTER_POSTGRES_")
    workspace = yaml.safe_load((INSTANCE_CONFIG.parent / "workspace.yaml").read_text())
    (location,) = workspace["load_from"]
    assert location["grpc_server"]["location_name"] == "social_recording"
