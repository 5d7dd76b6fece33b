"""docker-compose.yml, docker-compose.test.yml, .env.example, the Dockerfile and deploy/dagster.yaml,
checked without a Docker engine.

Two validators: Debian's `docker-compose config` (v1, which `.ci/run` installs) interpolates the files
and checks the variables, on a copy without `start_interval` (a key of the current Compose
Specification that v1's older schema refuses; the copy differs by that key only, a test checks);
then the interpolated result with `start_interval` put back is parsed by `compose-spec`, a strict
parser of the current specification (unknown keys, bad durations, image references, ports). The
resolved services are compared with what the deployment rehearsal runs."""

from __future__ import annotations

import copy
import json
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from compose_spec import PyCompose
from dagster import DefaultScheduleStatus, DefaultSensorStatus

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.platforms.apify.client import ACTOR_TIMEOUT_S, CONNECT_TIMEOUT_S
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.store_retry import WRITE_RETRY_S
from social_recording.settings import Settings, env_var_name, load_settings, secret_variables
from test_support.redis_server import free_port
from test_support.rehearsal import (
    COMPOSE_FILE,
    DEPLOY_DIR,
    DOCKERFILE,
    ENV_EXAMPLE,
    HEARTBEAT_TOLERANCE_S,
    INSTANCE_CONFIG,
    REPO,
    SERVICES,
    RehearsalConfig,
    port_open,
    process_env,
    service_env,
)
from test_support.sandbox_env import apply_env

DAGSTER_SERVICES = tuple(SERVICES)
LONG_RUNNING = tuple(name for name in SERVICES if name != "migrate")
"""The Dagster services that serve (migrate runs once and exits)."""
DATA_SERVICES = ("postgres", "mongodb", "redis")
ALL_SERVICES = {*DATA_SERVICES, *DAGSTER_SERVICES, "proxy"}
IMAGE_ENTRYPOINT = "/opt/social_recording/deploy/entrypoint.sh"
MAKE_SECRETS = DEPLOY_DIR / "make-secrets.sh"
PROXY_CONF = DEPLOY_DIR / "proxy" / "nginx.conf"
SECRETS_MOUNT = "/run/secrets/"
TEST_OVERRIDE = REPO / "docker-compose.test.yml"
V2_ONLY_HEALTHCHECK_KEYS = ("start_interval",)
"""Healthcheck keys of the current Compose Specification that Debian's docker-compose v1 refuses."""
NOT_SECRET_NAMES = {"SOCIAL_RECORDING_TRACKER_URL", "MONGO_ROOT_USER", "DAGSTER_POSTGRES_USER"}
"""Variables whose names look like a secret's (a URL, a user) but hold none."""

LIVE_ONLY = {
    env_var_name(f) for f in ("tracker_url", "af_group_ids", "af_investor_threshold",
                              "max_attempts", "backoff_growth", "backoff_max_minutes", "max_exhausted_per_hour",
                              "rate_limits", "live_poll_seconds",
                              "spend_budgets", "retention_days", "spool_dir")
} | {f"{name}_FILE" for name in (env_var_name("tracker_api_key"), *CATALOGUE.key_variables())}
"""Passed by compose, not by the rehearsal: the real tracker and providers (the rehearsal runs the
sandbox; their keys as files) and policy values the rehearsal leaves at the code's defaults, as
compose's empty values do. The paid switch is passed by both: the rehearsal turns paid calls on in
the sandbox."""
SANDBOX_ONLY = {env_var_name("sandbox_scenario"), env_var_name("sandbox_ledger")}
"""Passed by the rehearsal, not by compose: its own scenario (tokens on days relative to today) and
ledger file; the compose dry run uses the bundled demo and the ledger in its volume."""
FROM_SECRET_FILES = set(secret_variables()) - {env_var_name("tracker_url")}
"""Not in .env: secrets, files of secrets/ given as NAME_FILE (the store and lock URLs, the keys). The
tracker's URL may come from a file too, but it carries no credential (refused): it is in .env."""


def without_v2_only_keys(config: Any) -> Any:
    """The parsed compose file without the healthcheck keys v1 does not know (a copy)."""
    out = copy.deepcopy(config)
    for service in (out.get("services") or {}).values():
        for key in V2_ONLY_HEALTHCHECK_KEYS:
            (service.get("healthcheck") or {}).pop(key, None)
    return out


class Compose:
    """Debian's `docker-compose` on the project's files (made v1-readable), with an env file written per call."""

    def __init__(self, tmp: Path) -> None:
        binary = shutil.which("docker-compose")
        if binary is None:
            raise RuntimeError("docker-compose not found; install Debian's `docker-compose` package (.ci/run does)")
        self.binary = binary
        self.tmp = tmp
        self.env_file = tmp / "compose.env"

    def _v1_copy(self, path: Path) -> Path:
        target = self.tmp / f"v1-{path.name}"
        target.write_text(yaml.safe_dump(without_v2_only_keys(yaml.safe_load(path.read_text())), sort_keys=False))
        return target

    def run(self, env_file: Mapping[str, str], *args: str, shell_env: Mapping[str, str] | None = None,
            files: tuple[Path, ...] = (COMPOSE_FILE,)) -> subprocess.CompletedProcess[str]:
        self.env_file.write_text("".join(f"{k}={v}\n" for k, v in env_file.items()))
        file_args = [arg for path in files for arg in ("-f", str(self._v1_copy(path)))]
        # The shell's values win over the env file in compose: drop what the launching shell exported
        # for the same names (`make test` exports IMAGE_TAG), so the test's file decides.
        env = {k: v for k, v in process_env({}).items() if k not in env_file}
        return subprocess.run(
            [self.binary, "--project-directory", str(REPO), *file_args, "--env-file", str(self.env_file), *args],
            env={**env, **(shell_env or {})}, capture_output=True, text=True, timeout=120, check=False,
        )

    def resolved(self, shell_env: Mapping[str, str] | None = None, files: tuple[Path, ...] = (COMPOSE_FILE,),
                 **overrides: str) -> dict[str, Any]:
        """`docker-compose config` with .env.example (and `overrides`) filled in."""
        done = self.run({**example(), **overrides}, "config", shell_env=shell_env, files=files)
        assert done.returncode == 0, done.stderr
        config: dict[str, Any] = yaml.safe_load(done.stdout)
        return config


@pytest.fixture()
def compose(tmp_path: Path) -> Compose:
    return Compose(tmp_path)


@pytest.fixture()
def secrets_dir(tmp_path: Path) -> Path:
    """The secret files `make secrets` creates, in a directory of the test's own."""
    directory = tmp_path / "secrets"
    done = subprocess.run(["sh", str(MAKE_SECRETS), str(directory)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return directory


def mounted_env(config: Mapping[str, Any], service: str) -> dict[str, str]:
    """A service's environment with each /run/secrets/NAME replaced by the host file compose mounts there."""
    files = {name: spec["file"] for name, spec in (config.get("secrets") or {}).items()}
    env = _env(config, service)
    return {k: files[v[len(SECRETS_MOUNT):]] if v.startswith(SECRETS_MOUNT) else v for k, v in env.items()}


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
            "DAGSTER_POSTGRES_PASSWORD_FILE", "DAGSTER_POSTGRES_DB")},
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


def test_config_is_valid_with_the_example_env(compose: Compose) -> None:
    done = compose.run(example(), "config", "-q")
    assert done.returncode == 0, done.stderr


def test_services_volumes_and_healthy_dependencies(compose: Compose) -> None:
    config = compose.resolved()
    services = config["services"]
    assert set(services) == ALL_SERVICES
    assert set(config["volumes"]) == {"postgres_data", "mongodb_data", "mongodb_config", "redis_data",
                                      "dagster_storage", "social_recording_data"}
    mounts = {name: {v.split(":")[0]: v.split(":")[1] for v in s.get("volumes", [])} for name, s in services.items()}
    assert mounts["postgres"] == {"postgres_data": "/var/lib/postgresql/data",
                                  str(DEPLOY_DIR / "postgres-init"): "/docker-entrypoint-initdb.d"}
    assert mounts["mongodb"] == {"mongodb_data": "/data/db", "mongodb_config": "/data/configdb"}
    assert mounts["redis"] == {"redis_data": "/data", str(DEPLOY_DIR / "redis.conf"): "/usr/local/etc/redis/redis.conf"}
    for name in LONG_RUNNING:
        assert mounts[name]["dagster_storage"] == "/opt/dagster/home/storage"
        deps = services[name]["depends_on"]
        assert {"postgres", "user_code"} - {name} <= set(deps)
        assert {k: d["condition"] for k, d in deps.items() if k != "migrate"} == dict.fromkeys(
            set(deps) - {"migrate"}, "service_healthy")
    assert set(services["user_code"]["depends_on"]) == {*DATA_SERVICES, "migrate"}
    assert set(services["proxy"]["depends_on"]) == {"webserver", "webserver_readonly"}


def test_healthchecks_are_real_commands(compose: Compose) -> None:
    services = compose.resolved()["services"]
    checks = {name: " ".join(s["healthcheck"]["test"]) for name, s in services.items() if name != "migrate"}
    assert "pg_isready" in checks["postgres"]
    assert "mongosh" in checks["mongodb"] and 'db.adminCommand' in checks["mongodb"] and "ping" in checks["mongodb"]
    assert "redis-cli ping" in checks["redis"]
    assert "/dev/tcp/127.0.0.1/8080" in checks["proxy"]
    for name in LONG_RUNNING:
        # The same check the rehearsal waits for before it goes on.
        assert services[name]["healthcheck"]["test"] == ["CMD", IMAGE_ENTRYPOINT, "check", *SERVICES[name]]
    assert "healthcheck" not in services["migrate"]


def test_redis_keeps_an_append_only_file(compose: Compose) -> None:
    conf = (REPO / "deploy" / "redis.conf").read_text().splitlines()
    assert "appendonly yes" in conf and "appendfsync everysec" in conf
    assert "maxmemory-policy noeviction" in conf  # a lock is never evicted to make room
    script = compose.resolved()["services"]["redis"]["command"][-1]
    assert "include /usr/local/etc/redis/redis.conf" in script and "redis-server /tmp/redis.conf" in script


# --------------------------------------------------------------------------- compose = rehearsal


def test_the_dagster_services_run_the_rehearsals_commands_in_one_image(compose: Compose) -> None:
    services = compose.resolved()["services"]
    dockerfile = DOCKERFILE.read_text()
    assert f'ENTRYPOINT ["{IMAGE_ENTRYPOINT}"]' in dockerfile
    assert "WORKDIR /opt/social_recording" in dockerfile and "COPY deploy ./deploy" in dockerfile
    assert 'cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml"' in dockerfile  # the rehearsal copies it too
    assert "pip install --require-hashes --no-deps -r deploy/requirements.lock" in dockerfile
    assert "pip install --no-deps --no-build-isolation . && pip check" in dockerfile
    images = {services[name]["image"] for name in DAGSTER_SERVICES}
    assert len(images) == 1 and services["migrate"]["restart"] == "no"
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


def test_only_the_code_server_and_migrate_get_application_settings(compose: Compose) -> None:
    settings_names = {n for f in Settings.model_fields for n in env_var_name(f).split(", ")}
    settings_names |= {f"{n}_FILE" for n in settings_names}
    config = compose.resolved()
    for name in ALL_SERVICES - {"user_code", "migrate"}:
        assert not set(_env(config, name)) & settings_names, name


# --------------------------------------------------------------------------- the code location under compose


def _load_with(monkeypatch: pytest.MonkeyPatch, env: Mapping[str, str]) -> Settings:
    apply_env(monkeypatch, {k: v for k, v in env.items() if k.startswith("SOCIAL_RECORDING_") or k in LIVE_ONLY})
    return load_settings()


def test_compose_defaults_are_prod_and_live_and_load(compose: Compose, secrets_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    config = compose.resolved(SOCIAL_RECORDING_TRACKER_URL="https://tracker.example.com",
                              SOCIAL_RECORDING_AF_GROUP_IDS="g1,g2", SECRETS_DIR=str(secrets_dir),
                              STORE_URL_SECRET=str(secrets_dir / "store_url"))
    settings = _load_with(monkeypatch, mounted_env(config, "user_code"))
    assert (settings.env, settings.upstream) == ("prod", "live")
    assert settings.store_url.startswith("mongodb://") and "@mongodb:27017/social_recording" in settings.store_url
    assert settings.effective_lock_url.startswith("redis://") and "@redis:6379/0" in settings.effective_lock_url
    defs = build_definitions(settings)
    assert defs.resolve_sensor_def("token_flow_sensor").default_status is DefaultSensorStatus.RUNNING
    assert defs.resolve_schedule_def("retry_schedule").default_status is DefaultScheduleStatus.RUNNING


def test_live_without_a_tracker_fails_at_load_naming_the_variables(
    compose: Compose, secrets_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = compose.resolved(SECRETS_DIR=str(secrets_dir), STORE_URL_SECRET=str(secrets_dir / "store_url"))
    env = mounted_env(config, "user_code")
    with pytest.raises(ValueError, match="SOCIAL_RECORDING_TRACKER_URL.*SOCIAL_RECORDING_AF_GROUP_IDS"):
        _load_with(monkeypatch, env)


def test_the_dry_run_line_switches_to_the_sandbox_and_a_database_of_its_own(
    compose: Compose, secrets_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (line,) = [ln for ln in (REPO / "docs" / "operations.md").read_text().splitlines()
               if ln.startswith("SOCIAL_RECORDING_UPSTREAM=sandbox ") and ln.endswith(" make up")]
    shell = dict(word.split("=", 1) for word in line.removesuffix(" make up").split())
    # The line's ./secrets/ is the test's secrets directory.
    shell = {k: v.replace("./secrets/", f"{secrets_dir}/") for k, v in shell.items()}
    config = compose.resolved(shell_env=shell, SECRETS_DIR=str(secrets_dir))
    settings = _load_with(monkeypatch, mounted_env(config, "user_code"))
    assert (settings.env, settings.upstream) == ("prod", "sandbox")
    assert "@mongodb:27017/social_recording_dryrun?" in settings.store_url
    build_definitions(settings)


# --------------------------------------------------------------------------- .env.example, dagster.yaml


def test_env_example_lists_every_variable_and_no_secret() -> None:
    values = example()
    referenced = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE_FILE.read_text() + TEST_OVERRIDE.read_text()))
    assert set(values) == referenced
    settings_names = {n for f in Settings.model_fields for n in env_var_name(f).split(", ")}
    assert settings_names - set(values) == SANDBOX_ONLY | FROM_SECRET_FILES
    assert not [k for k in values if re.search(r"PASSWORD|TOKEN|_KEY$", k)]
    assert values["SOCIAL_RECORDING_ENV"] == "prod" and values["SOCIAL_RECORDING_UPSTREAM"] == "live"


def test_production_instance_config() -> None:
    prod = yaml.safe_load(INSTANCE_CONFIG.read_text())
    dev = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert prod["concurrency"] == dev["concurrency"]
    assert prod["run_coordinator"]["class"] == "QueuedRunCoordinator"
    # Freshness: the same run queue, sensor threads and tick retention in development and production.
    for block in ("run_coordinator", "sensors", "retention", "python_logs"):
        assert prod[block] == dev[block], block
    assert prod["run_coordinator"]["config"]["dequeue_interval_seconds"] == 1
    assert prod["sensors"]["use_threads"] is True
    assert prod["run_launcher"] == {"module": "dagster", "class": "DefaultRunLauncher"}
    db = prod["storage"]["postgres"]["postgres_db"]
    for key in ("hostname", "port", "username", "password", "db_name"):
        assert set(db[key]) == {"env"} and db[key]["env"].startswith("DAGSTER_POSTGRES_")
    workspace = yaml.safe_load((INSTANCE_CONFIG.parent / "workspace.yaml").read_text())
    (location,) = workspace["load_from"]
    assert location["grpc_server"]["location_name"] == "social_recording"


# --------------------------------------------------------------------------- hardening


def _as_v2_resolves(compose: Compose, files: tuple[Path, ...]) -> dict[str, Any]:
    """v1's interpolated config with the v2-only healthcheck keys of the files put back."""
    config = compose.resolved(files=files)
    for path in files:
        for name, service in (yaml.safe_load(path.read_text()).get("services") or {}).items():
            for key in V2_ONLY_HEALTHCHECK_KEYS:
                if key in (service.get("healthcheck") or {}):
                    config["services"][name]["healthcheck"][key] = service["healthcheck"][key]
    return config


@pytest.mark.parametrize("files", [(COMPOSE_FILE,), (COMPOSE_FILE, TEST_OVERRIDE)], ids=["prod", "with-test-override"])
def test_the_files_follow_the_current_compose_specification(compose: Compose, files: tuple[Path, ...]) -> None:
    parsed = PyCompose.from_yaml(yaml.safe_dump(_as_v2_resolves(compose, files)))
    assert set(parsed.service_names()) == ALL_SERVICES


@pytest.mark.parametrize(("service", "key", "value"), [
    ("redis", "start_intervall", "1s"),   # a misspelt key
    ("redis", "start_interval", "soon"),  # not a duration
])
def test_the_specification_parser_refuses_what_compose_refuses(
    compose: Compose, service: str, key: str, value: str
) -> None:
    config = _as_v2_resolves(compose, (COMPOSE_FILE,))
    config["services"][service]["healthcheck"][key] = value
    with pytest.raises(ValueError):
        PyCompose.from_yaml(yaml.safe_dump(config))


def test_v1_reads_the_file_without_only_the_v2_healthcheck_keys() -> None:
    raw = yaml.safe_load(COMPOSE_FILE.read_text())
    stripped = without_v2_only_keys(raw)
    assert stripped != raw  # the key is in use ...
    for name, service in raw["services"].items():  # ... and it is the only difference
        if "healthcheck" not in service:
            assert service == stripped["services"][name]
            continue
        check = dict(service["healthcheck"])
        assert set(check) - set(stripped["services"][name]["healthcheck"]) <= set(V2_ONLY_HEALTHCHECK_KEYS)
        assert {**service, "healthcheck": {k: v for k, v in check.items() if k not in V2_ONLY_HEALTHCHECK_KEYS}} \
            == stripped["services"][name]


def test_no_data_service_is_reachable_from_outside_by_default(compose: Compose) -> None:
    config = compose.resolved()
    services = config["services"]
    for name in DATA_SERVICES:
        assert "ports" not in services[name], name
        assert set(services[name]["networks"]) == {"data"}, name
    assert config["networks"]["data"].get("internal") is True
    published = {name for name, s in services.items() if s.get("ports")}
    assert published == {"proxy"}
    for port in services["proxy"]["ports"]:
        assert str(port).startswith("127.0.0.1:") or port.get("host_ip") == "127.0.0.1"


def test_the_test_override_publishes_mongodb_on_loopback_only(compose: Compose) -> None:
    services = compose.resolved(files=(COMPOSE_FILE, TEST_OVERRIDE))["services"]
    (port,) = services["mongodb"]["ports"]
    assert str(port).startswith("127.0.0.1:27017:27017")
    assert {"data", "default"} <= set(services["mongodb"]["networks"])
    assert {n for n, s in services.items() if s.get("ports")} == {"mongodb", "proxy"}


def test_every_service_has_limits_and_rotated_logs(compose: Compose) -> None:
    for name, service in compose.resolved()["services"].items():
        assert service.get("mem_limit") and float(service.get("cpus", 0)) > 0, name
        logging = service.get("logging") or {}
        assert logging.get("driver") == "json-file", name
        assert logging["options"]["max-size"] and int(logging["options"]["max-file"]) >= 1, name


def test_healthchecks_start_fast() -> None:
    """`start_interval` probes often while a service starts, `interval` rarely afterwards: the code
    server's check (a Dagster CLI, ~1 s of CPU) no longer holds the daemon and the webserver back
    for a 30 s interval."""
    for name, service in yaml.safe_load(COMPOSE_FILE.read_text())["services"].items():
        if name == "migrate":  # one shot: no health, its completion is what others wait for
            continue
        check = service["healthcheck"]
        assert check.get("start_period"), name
        assert _seconds(check["start_interval"]) <= 2 < _seconds(check["interval"]), name


def _seconds(duration: str) -> float:
    match = re.fullmatch(r"(\d+)(ms|s|m)", duration)
    assert match, duration
    value, unit = int(match.group(1)), match.group(2)
    return value / 1000 if unit == "ms" else value * (60 if unit == "m" else 1)


def test_images_are_pinned_to_exact_versions(compose: Compose) -> None:
    services = compose.resolved()["services"]
    for name in DATA_SERVICES:
        # PostgreSQL's releases are major.minor; MongoDB's and Redis's major.minor.patch.
        assert re.fullmatch(r"[a-z]+:\d+\.\d+(\.\d+)?(-[a-z0-9]+)?(@sha256:[0-9a-f]{64})?", services[name]["image"]), name
    assert re.fullmatch(r"nginx:\d+\.\d+\.\d+-[a-z]+", services["proxy"]["image"])
    (base,) = re.findall(r"^FROM (\S+)", DOCKERFILE.read_text(), flags=re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base)


def _secret_names(service: Mapping[str, Any]) -> set[str]:
    """The secrets a service mounts (v1 prints the long form, the file the short one)."""
    return {s if isinstance(s, str) else s["source"] for s in service.get("secrets") or []}


def test_no_secret_is_in_a_containers_configuration(compose: Compose, secrets_dir: Path) -> None:
    """Every secret is a file mounted under /run/secrets: no value of one appears anywhere in the
    resolved services (environment, command, labels: what `docker inspect` shows), and every variable
    that names a secret is a NAME_FILE pointing at a secret its service mounts."""
    config = compose.resolved(SECRETS_DIR=str(secrets_dir), STORE_URL_SECRET=str(secrets_dir / "store_url"))
    values = [p.read_text() for p in secrets_dir.iterdir() if p.read_text().strip()]
    assert len(values) == 6  # the generated passwords and URLs
    declared = config["secrets"]
    for name, spec in declared.items():
        assert Path(spec["file"]).parent == secrets_dir, name
    for name, service in config["services"].items():
        text = json.dumps(service)
        assert not [v for v in values if v in text], name
        mounted = _secret_names(service)
        assert mounted <= set(declared), name
        for key, value in _env(config, name).items():
            if key.endswith("_FILE"):
                assert value.startswith(SECRETS_MOUNT) and value[len(SECRETS_MOUNT):] in mounted, (name, key)
            elif key not in NOT_SECRET_NAMES:
                assert not re.search(r"PASSWORD|TOKEN|_KEY$|_URL$|AUTH", key), (name, key)


def test_each_service_gets_only_the_secrets_it_uses(compose: Compose) -> None:
    services = compose.resolved()["services"]
    got = {name: _secret_names(s) for name, s in services.items()}
    keys = {"tracker_api_key", *(key.lower() for key in CATALOGUE.key_variables())}
    assert got["user_code"] == {"dagster_postgres_password", "store_url", "lock_url"} | keys
    assert got["migrate"] == {"dagster_postgres_password", "store_url", "lock_url", "mongo_root_password"}
    for name in ("daemon", "webserver", "webserver_readonly"):
        assert got[name] == {"dagster_postgres_password"}, name
    assert got["postgres"] == {"postgres_superuser_password", "dagster_postgres_password"}
    assert got["mongodb"] == {"mongo_root_password"}
    assert got["redis"] == {"lock_url"}
    assert got["proxy"] == {"proxy_operators_htpasswd", "proxy_viewers_htpasswd"}
    # The administrators' passwords reach no service that serves the application.
    for name in ("user_code", "daemon", "webserver", "webserver_readonly", "proxy"):
        assert not got[name] & {"mongo_root_password", "postgres_superuser_password"}, name


def test_make_secrets_creates_every_file_compose_mounts_and_keeps_existing_ones(
    compose: Compose, secrets_dir: Path
) -> None:
    config = compose.resolved(SECRETS_DIR=str(secrets_dir), STORE_URL_SECRET=str(secrets_dir / "store_url"))
    assert {Path(spec["file"]) for spec in config["secrets"].values()} <= set(secrets_dir.iterdir())
    for name in ("postgres_superuser_password", "dagster_postgres_password", "mongo_root_password"):
        assert re.fullmatch(r"[0-9a-f]{48}", (secrets_dir / name).read_text()), name
    store = (secrets_dir / "store_url").read_text()
    assert re.fullmatch(r"mongodb://social_recording_app:[0-9a-f]{48}@mongodb:27017/social_recording\?authSource=admin",
                        store)
    assert (secrets_dir / "store_url_dryrun").read_text() == store.replace("/social_recording?", "/social_recording_dryrun?")
    assert re.fullmatch(r"redis://:[0-9a-f]{48}@redis:6379/0", (secrets_dir / "lock_url").read_text())
    assert (secrets_dir / "apify_token").read_text() == ""
    assert secrets_dir.stat().st_mode & 0o777 == 0o700
    before = {p.name: p.read_text() for p in secrets_dir.iterdir()}
    subprocess.run(["sh", str(MAKE_SECRETS), str(secrets_dir)], check=True, capture_output=True, timeout=60)
    assert {p.name: p.read_text() for p in secrets_dir.iterdir()} == before


@pytest.mark.integration
def test_the_redis_services_script_starts_redis_with_the_lock_urls_password_off_the_command_line(
    compose: Compose, secrets_dir: Path, tmp_path: Path
) -> None:
    """The redis service's own start script, as compose resolves it, run here with the container's
    paths mapped to local ones: the password is the lock URL secret's, stays out of the process's
    arguments and sits in files only their owner can read; the persistence of deploy/redis.conf is in
    force, and the service's health check authenticates."""
    service = compose.resolved()["services"]["redis"]
    # `config` prints a compose file, `$$` still escaped; the container gets `$`.
    script = service["command"][-1].replace("$$", "$")
    conf, password_file = tmp_path / "redis.conf", tmp_path / "redis-password"
    port = free_port()
    local = (script.replace("/usr/local/etc/redis/redis.conf", str(DEPLOY_DIR / "redis.conf"))
             .replace("/run/secrets/lock_url", str(secrets_dir / "lock_url"))
             .replace("/tmp/redis.conf", str(conf)).replace("/tmp/redis-password", str(password_file))
             .replace("exec docker-entrypoint.sh redis-server", "exec redis-server"))
    local = local.replace(f"redis-server {conf}", f"redis-server {conf} --port {port} --bind 127.0.0.1 --dir {tmp_path}")
    password = (secrets_dir / "lock_url").read_text().split(":")[2].split("@")[0]
    proc = subprocess.Popen(["sh", "-c", local], env=process_env({}), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while not port_open(port):
            assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)
        assert password.encode() not in Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        client = redis.Redis(port=port, password=password, decode_responses=True)
        assert client.ping()
        settings = {k: v for key in ("appendonly", "appendfsync", "maxmemory-policy")
                    for k, v in client.config_get(key).items()}
        assert settings == {"appendonly": "yes", "appendfsync": "everysec", "maxmemory-policy": "noeviction"}
        client.close()
        assert conf.stat().st_mode & 0o777 == 0o600 and password_file.stat().st_mode & 0o777 == 0o600
        (check,) = [part for part in service["healthcheck"]["test"][1:] if "redis-cli" in part]
        check = check.replace("$$", "$").replace("/tmp/redis-password", str(password_file))
        done = subprocess.run(["sh", "-c", check.replace("redis-cli ping", f"redis-cli -p {port} ping")],
                              capture_output=True, timeout=30, check=False)
        assert done.returncode == 0
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_lock_url_without_a_password_stops_redis_naming_the_secret(compose: Compose, tmp_path: Path) -> None:
    script = compose.resolved()["services"]["redis"]["command"][-1].replace("$$", "$")
    lock_url = tmp_path / "lock_url"
    lock_url.write_text("redis://redis:6379/0")
    done = subprocess.run(["sh", "-c", script.replace("/run/secrets/lock_url", str(lock_url))],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 64 and "lock_url secret names no password" in done.stderr


# --------------------------------------------------------------------------- upgrades, self-healing


def _seconds_of(value: Any) -> float:
    """A compose duration as v1 prints it (`180s`, `1m30s`)."""
    total = 0.0
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", str(value)):
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def test_migrate_runs_to_completion_before_the_dagster_services_start(compose: Compose) -> None:
    services = compose.resolved()["services"]
    migrate = services["migrate"]
    assert migrate["command"] == ["migrate"] and migrate["restart"] == "no"
    assert {k: v["condition"] for k, v in migrate["depends_on"].items()} == {
        "postgres": "service_healthy", "mongodb": "service_healthy"}
    for name in LONG_RUNNING:
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}, name
    env = _env(compose.resolved(), "migrate")
    assert env["MONGO_ROOT_PASSWORD_FILE"] == "/run/secrets/mongo_root_password" and env["MONGO_ROOT_USER"]
    # What it runs, in this order: Dagster's schema, the application's MongoDB user, the store's migrations.
    text = (DEPLOY_DIR / "entrypoint.sh").read_text()
    block = text[text.index("    migrate)"):text.index("    code-server)")]
    steps = ["dagster instance migrate", "start migrate-store", "python -m social_recording.store.mongo_app_user",
             "exec python -m social_recording migrate"]
    assert [block.index(step) for step in steps] == sorted(block.index(step) for step in steps)


def test_stop_grace_periods_let_tokens_in_flight_finish(compose: Compose) -> None:
    services = compose.resolved()["services"]
    # The longest token in flight: an Apify actor run (connect, then its timeout), then its write
    # retried while the store is unreachable.
    longest_token_s = CONNECT_TIMEOUT_S + ACTOR_TIMEOUT_S + WRITE_RETRY_S
    assert _seconds_of(services["user_code"]["stop_grace_period"]) >= longest_token_s
    assert _seconds_of(services["daemon"]["stop_grace_period"]) >= 30
    for name in ("postgres", "mongodb"):
        assert _seconds_of(services[name]["stop_grace_period"]) >= 30, name
    # The stop reaches the service itself, with SIGINT and SIGTERM at their defaults whatever started
    # the entry point: every service is exec'd through `serve` (the code server then terminates its
    # runs and waits for them: test_code_server_stop.py).
    text = (DEPLOY_DIR / "entrypoint.sh").read_text()
    assert 'exec env --default-signal=INT,TERM "$@"' in text
    starts = text[text.index("start() {"):text.index("check() {")]
    assert starts.count("\n      serve ") == 3 and " &\n" not in starts


def test_a_hung_daemon_is_ended_within_the_same_tolerance_as_in_kubernetes(compose: Compose) -> None:
    daemon = compose.resolved()["services"]["daemon"]
    tolerance = int(daemon["environment"]["DAGSTER_DAEMON_HEARTBEAT_TOLERANCE"])
    helm = yaml.safe_load((DEPLOY_DIR / "helm" / "values.yaml").read_text())
    assert tolerance == helm["dagsterDaemon"]["heartbeatTolerance"] == HEARTBEAT_TOLERANCE_S
    assert daemon["restart"] == "unless-stopped"
    assert daemon["healthcheck"]["test"][-2:] == ["check", "daemon"]
    assert "kill -KILL" in (DEPLOY_DIR / "entrypoint.sh").read_text()


def test_runs_whose_worker_died_cannot_stay_started_forever() -> None:
    monitoring = yaml.safe_load(INSTANCE_CONFIG.read_text())["run_monitoring"]
    assert monitoring["enabled"] is True and 0 < monitoring["max_runtime_seconds"] <= 24 * 3600
    helm = yaml.safe_load((DEPLOY_DIR / "helm" / "values.yaml").read_text())
    assert helm["dagsterDaemon"]["runMonitoring"]["maxRuntimeSeconds"] == monitoring["max_runtime_seconds"]


# --------------------------------------------------------------------------- least privilege


def test_every_container_runs_with_least_privilege(compose: Compose) -> None:
    services = compose.resolved()["services"]
    for name, service in services.items():
        assert service.get("cap_drop") == ["ALL"] and "cap_add" not in service, name
        assert "no-new-privileges:true" in service.get("security_opt", []), name
        assert service.get("read_only") is True, name
        assert service.get("init") is True, name
        assert int(service.get("pids_limit", 0)) > 0, name
        assert "privileged" not in service and "network_mode" not in service, name
        assert "/tmp" in [t.split(":")[0] for t in service.get("tmpfs", [])], name
        user = service.get("user")
        assert user is None or not user.startswith(("0:", "root")), name
    dockerfile = DOCKERFILE.read_text()
    assert "USER dagster" in dockerfile  # the Dagster services' user comes from the image
    # The writable directories under DAGSTER_HOME (the daemon's pid file among them) are tmpfs
    # mounts on directories the image creates for its user.
    for name in DAGSTER_SERVICES:
        mounts = [t.split(":")[0] for t in services[name]["tmpfs"]]
        assert "/opt/dagster/home/run" in mounts, name
        for mount in mounts:
            if mount.startswith("/opt/dagster/home/"):
                assert f'"$DAGSTER_HOME/{mount.removeprefix("/opt/dagster/home/")}"' in dockerfile, mount
    for name in DATA_SERVICES + ("proxy",):
        assert services[name]["user"] not in (None, "0", "root"), name


def test_dagster_connects_as_its_own_role_not_the_superuser(compose: Compose) -> None:
    services = compose.resolved()["services"]
    postgres = services["postgres"]["environment"]
    dagster_user = _env(compose.resolved(), "daemon")["DAGSTER_POSTGRES_USER"]
    assert postgres["POSTGRES_USER"] != dagster_user
    assert postgres["DAGSTER_POSTGRES_USER"] == dagster_user
    script = (DEPLOY_DIR / "postgres-init" / "10-dagster-role.sh").read_text()
    assert "NOSUPERUSER NOCREATEDB NOCREATEROLE" in script and 'OWNER :"role"' in script


# --------------------------------------------------------------------------- the login in front


def test_only_the_proxy_is_published_and_the_webservers_sit_behind_it(compose: Compose) -> None:
    config = compose.resolved()
    services = config["services"]
    for name in ("webserver", "webserver_readonly"):
        assert "ports" not in services[name], name
        assert set(services[name]["networks"]) == {"data", "front"}, name
    assert config["networks"]["front"].get("internal") is True
    proxy = services["proxy"]
    targets = sorted(str(p).rsplit(":", 1)[-1].removesuffix("/tcp") if isinstance(p, str) else str(p["target"])
                     for p in proxy["ports"])
    assert targets == ["8080", "8081"]
    assert proxy["entrypoint"][:3] == ["nginx", "-c", "/etc/nginx/proxy/nginx.conf"]
    assert {v.split(":")[0]: v.split(":")[1] for v in proxy["volumes"]} == {
        str(DEPLOY_DIR / "proxy"): "/etc/nginx/proxy"}
    assert services["webserver_readonly"]["command"] == ["webserver-readonly"]
    assert "--read-only" in (DEPLOY_DIR / "entrypoint.sh").read_text()


def test_the_proxy_asks_a_login_before_each_webserver() -> None:
    text = PROXY_CONF.read_text()
    servers = text.split("server {")[1:]
    assert len(servers) == 2
    for server, port, upstream, logins in ((servers[0], 8080, "webserver", "proxy_operators_htpasswd"),
                                          (servers[1], 8081, "webserver_readonly", "proxy_viewers_htpasswd")):
        assert f"listen {port};" in server
        assert f"auth_basic_user_file /run/secrets/{logins};" in server
        assert f"proxy_pass http://{upstream}:3000;" in server
        assert 'proxy_set_header Authorization "";' in server


# --------------------------------------------------------------------------- image identity


def test_the_image_is_tagged_with_the_build(compose: Compose) -> None:
    services = compose.resolved(IMAGE_TAG="abc1234")["services"]
    assert {services[n]["image"] for n in DAGSTER_SERVICES} == {"social-recording:abc1234"}
    assert {services[n]["build"]["args"]["REVISION"] for n in DAGSTER_SERVICES} == {"abc1234"}
    makefile = (REPO / "Makefile").read_text()
    assert "IMAGE_TAG ?= $(shell git rev-parse --short HEAD" in makefile and "export IMAGE_TAG" in makefile
    assert "org.opencontainers.image.revision=$REVISION" in DOCKERFILE.read_text()
