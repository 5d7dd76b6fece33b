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
import os
import re
import shlex
import shutil
import subprocess
import time
import tomllib
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
from social_recording.platforms.catalogue import CATALOGUE
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
    port_open,
    process_env,
    service_env,
)
from social_recording_tests.redis_server import free_port

DAGSTER_SERVICES = tuple(SERVICES)
DATA_SERVICES = ("postgres", "mongodb", "redis")
IMAGE_ENTRYPOINT = "/opt/social_recording/deploy/entrypoint.sh"
PASSWORDS = ("DAGSTER_POSTGRES_PASSWORD", "MONGO_ROOT_PASSWORD", "MONGO_APP_PASSWORD", "REDIS_PASSWORD")
TEST_OVERRIDE = REPO / "docker-compose.test.yml"
V2_ONLY_HEALTHCHECK_KEYS = ("start_interval",)
"""Healthcheck keys of the current Compose Specification that Debian's docker-compose v1 refuses."""
FILLED = {name: f"pw-{i}" for i, name in enumerate(PASSWORDS)}

LIVE_ONLY = {
    env_var_name(f) for f in ("tracker_url", "tracker_api_key", "af_group_ids", "af_investor_threshold",
                              "max_attempts", "max_exhausted_per_hour", "rate_limits", "live_poll_seconds")
} | set(CATALOGUE.key_variables())
"""Passed by compose, not by the rehearsal: the real tracker and providers (the rehearsal runs the
sandbox) and policy values the rehearsal leaves at the code's defaults, as compose's empty values do.
The paid switch is passed by both: the rehearsal turns paid calls on in the sandbox."""
SANDBOX_ONLY = {env_var_name("sandbox_scenario"), env_var_name("sandbox_ledger")}
"""Passed by the rehearsal, not by compose: its own scenario (tokens on days relative to today) and
ledger file; the compose dry run uses the bundled demo and the ledger in its volume."""
BUILT_BY_COMPOSE = {env_var_name("store_url"), env_var_name("lock_url")}
"""Not in .env: compose builds them from the MongoDB and Redis services' names and passwords."""


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
        return subprocess.run(
            [self.binary, "--project-directory", str(REPO), *file_args, "--env-file", str(self.env_file), *args],
            env=process_env(dict(shell_env or {})), capture_output=True, text=True, timeout=120, check=False,
        )

    def resolved(self, shell_env: Mapping[str, str] | None = None, files: tuple[Path, ...] = (COMPOSE_FILE,),
                 **overrides: str) -> dict[str, Any]:
        """`docker-compose config` with .env.example plus the passwords (and `overrides`) filled in."""
        done = self.run({**example(), **FILLED, **overrides}, "config", shell_env=shell_env, files=files)
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
    assert mounts["mongodb"] == {"mongodb_data": "/data/db",
                                 str(REPO / "deploy" / "mongo-init"): "/docker-entrypoint-initdb.d"}
    assert mounts["redis"] == {"redis_data": "/data", str(REPO / "deploy" / "redis.conf"): "/usr/local/etc/redis/redis.conf"}
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
    settings_names = {n for f in Settings.model_fields for n in env_var_name(f).split(", ")}
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
    referenced = set(re.findall(r"\$\{([A-Z0-9_]+)", COMPOSE_FILE.read_text() + TEST_OVERRIDE.read_text()))
    assert set(values) == referenced
    settings_names = {n for f in Settings.model_fields for n in env_var_name(f).split(", ")}
    assert settings_names - set(values) == SANDBOX_ONLY | BUILT_BY_COMPOSE
    secrets = {n for f in SECRET_FIELDS for n in env_var_name(f).split(", ")} | set(PASSWORDS)
    assert {k: v for k, v in values.items() if k in secrets and v} == {}
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
    assert set(parsed.service_names()) == {*DATA_SERVICES, *DAGSTER_SERVICES}


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
    assert published == {"webserver"}
    (port,) = services["webserver"]["ports"]
    assert str(port).startswith("127.0.0.1:") or port.get("host_ip") == "127.0.0.1"


def test_the_test_override_publishes_mongodb_on_loopback_only(compose: Compose) -> None:
    services = compose.resolved(files=(COMPOSE_FILE, TEST_OVERRIDE))["services"]
    (port,) = services["mongodb"]["ports"]
    assert str(port).startswith("127.0.0.1:27017:27017")
    assert {"data", "default"} <= set(services["mongodb"]["networks"])
    assert {n for n, s in services.items() if s.get("ports")} == {"mongodb", "webserver"}


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
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert {services[n]["image"] for n in DAGSTER_SERVICES} == {f"social-recording:{version}"}
    (base,) = re.findall(r"^FROM (\S+)", DOCKERFILE.read_text(), flags=re.M)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", base)


def test_no_secret_reaches_a_command_line(compose: Compose) -> None:
    """Passwords travel in the environment (readable by the container's own user and root only),
    never in a command's arguments (readable by anyone on the host through `ps`)."""
    for name, service in compose.resolved()["services"].items():
        argv = " ".join(str(a) for a in (service.get("command") or []) + (service.get("entrypoint") or []))
        for password in FILLED.values():
            assert password not in argv, name
        assert "--requirepass" not in argv, name


def test_the_application_connects_to_mongodb_as_its_own_user(compose: Compose) -> None:
    services = compose.resolved(MONGO_APP_USER="app-user", MONGO_ROOT_USER="root-user")["services"]
    store_url = services["user_code"]["environment"]["SOCIAL_RECORDING_STORE_URL"]
    assert store_url.startswith(f"mongodb://app-user:{FILLED['MONGO_APP_PASSWORD']}@mongodb:27017/")
    assert FILLED["MONGO_ROOT_PASSWORD"] not in json.dumps(services["user_code"])
    mongo = services["mongodb"]["environment"]
    assert mongo["MONGO_APP_USER"] == "app-user" and mongo["MONGO_APP_PASSWORD"] == FILLED["MONGO_APP_PASSWORD"]
    assert mongo["MONGO_APP_DATABASES"].split() == ["social_recording", "social_recording_dryrun"]
    script = (REPO / "deploy" / "mongo-init" / "create-app-user.js").read_text()
    for variable in ("MONGO_APP_USER", "MONGO_APP_PASSWORD", "MONGO_APP_DATABASES"):
        assert f"process.env.{variable}" in script
    assert "role: \"readWrite\"" in script


@pytest.mark.integration
def test_the_redis_services_script_starts_redis_with_its_password_off_the_command_line(
    compose: Compose, tmp_path: Path
) -> None:
    """The redis service's own start script, as compose resolves it, run here with the container's
    paths mapped to local ones: the password is required, stays out of the process's arguments and
    sits in a file only its owner can read; the persistence of deploy/redis.conf is in force."""
    # `config` prints a compose file, `$$` still escaped; the container gets `$`.
    script = compose.resolved()["services"]["redis"]["command"][-1].replace("$$", "$")
    conf = tmp_path / "redis.conf"
    port = free_port()
    local = (script.replace("/usr/local/etc/redis/redis.conf", str(REPO / "deploy" / "redis.conf"))
             .replace("/tmp/redis.conf", str(conf))
             .replace("chown redis:redis", "true")
             .replace("exec docker-entrypoint.sh redis-server", "exec redis-server"))
    local = local.replace(f"redis-server {conf}", f"redis-server {conf} --port {port} --bind 127.0.0.1 --dir {tmp_path}")
    password = "pw-redis-S3cret"
    proc = subprocess.Popen(["sh", "-c", local], env={**os.environ, "REDIS_PASSWORD": password},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
        assert conf.stat().st_mode & 0o777 == 0o600
    finally:
        proc.terminate()
        proc.wait(timeout=10)
