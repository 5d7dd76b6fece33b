"""The deployment rehearsal: docker-compose.yml's Dagster services run natively on this machine.

No Docker engine is needed: the three Dagster services run `deploy/entrypoint.sh` — the script the
compose services run — with the environment compose gives them, except for addresses (loopback and
free ports) and the upstream (the sandbox, the compose file's dry-run switch, with paid calls on).
Dagster's instance is the production `deploy/dagster.yaml` on a real PostgreSQL database created for
the rehearsal and dropped after it; the locks are on a redis-server started for it as compose runs
its own (deploy/redis.conf: append-only file, a password in its config file); the store is the Mongo
store, on a FerretDB (a MongoDB wire-protocol server, see ferretdb_server.py) started for it on a
PostgreSQL database of its own. `SERVICES` and `service_env` are what both the rehearsal and the
compose-file test read, so the two cannot drift apart. After the ordinary operations,
`rehearsal_faults.py` kills and restarts parts of the deployment mid-run and checks what they leave.

`run_rehearsal` drives the deployment through the webserver's GraphQL API the way an operator's UI
does and returns what it observed (runs, their events, timings); the tests assert on it and
`bench/deploy_rehearsal.py` prints its timings.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import pytest
from psycopg2 import sql

from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import to_canonical
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.ledger import Ledger
from social_recording.store import open_store
from test_support.ferretdb_server import running_ferretdb
from test_support.mongo_server import mongo_url_with_db
from test_support.postgres_server import (
    PostgresUnavailable,
    admin_connection,
    admin_params,
    database_exists,
    drop_database,
)
from test_support.redis_server import RedisProcess, free_port, restartable_redis
from test_support.sandbox_env import token, write_scenario

if TYPE_CHECKING:
    from test_support.rehearsal_faults import FaultReport, FaultScenario

REPO = Path(__file__).resolve().parents[1]
DEPLOY_DIR = REPO / "deploy"
ENTRYPOINT = DEPLOY_DIR / "entrypoint.sh"
INSTANCE_CONFIG = DEPLOY_DIR / "dagster.yaml"
COMPOSE_FILE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
ENV_EXAMPLE = REPO / ".env.example"

SERVICES: dict[str, list[str]] = {
    "migrate": ["migrate"],
    "user_code": ["code-server"],
    "daemon": ["daemon"],
    "webserver": ["webserver"],
    "webserver_readonly": ["webserver-readonly"],
}
"""Compose service -> the arguments it passes to deploy/entrypoint.sh (its `command`)."""

START_ORDER = ("user_code", "daemon", "webserver")
"""As compose's depends_on: the daemon and the webserver wait for a healthy code server. The
rehearsal's database is created by the compose postgres service's init script (postgres_database);
the viewers' webserver and the proxy are exercised by test_proxy.py."""

HEARTBEAT_TOLERANCE_S = 120
"""DAGSTER_DAEMON_HEARTBEAT_TOLERANCE as docker-compose.yml and the Helm values set it (a test
checks both); the hung-daemon test passes a shorter one."""

LOCATION = "social_recording"
REPOSITORY = "__repository__"
BACKFILL_JOB = "reconcile_job"
RETRY_SCHEDULE = "retry_schedule"
TOKEN_FLOW_SENSOR = "token_flow_sensor"

STORE_DB = "social_recording"
"""The store's database, named as docker-compose.yml names it."""

REDIS_PASSWORD = "rehearsal-redis-pw"
"""The lock server's password, in its config file as compose writes it (never on a command line)."""

STARTUP_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 120.0
"""Guards only: the backfill daemon looks for new backfills every 30 s, the run queue every 5 s."""
STOP_GRACE_S = 5.0
TERMINAL = frozenset({"SUCCESS", "FAILURE", "CANCELED"})

_OUR_PREFIXES = ("SOCIAL_RECORDING_", "DAGSTER_")
_PROVIDER_KEYS = CATALOGUE.key_variables()


CHECK_TIMEOUT_S = 60.0
"""How long one run of a service's health check may take before it counts as failed."""

REHEARSAL_TIMINGS = pytest.StashKey[list[str]]()
"""Where the rehearsal test leaves its timing lines for the session's terminal summary."""
RECOVERY_TIMINGS = pytest.StashKey[list[str]]()
"""The same for the daemon crash test (test_daemon_recovery.py)."""


class RehearsalError(RuntimeError):
    """A service did not come up or a run did not finish in time; carries the services' log tails."""


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class RehearsalConfig:
    """Where everything of one rehearsal lives."""

    dagster_home: Path
    postgres: Mapping[str, str]
    """DAGSTER_POSTGRES_* for deploy/dagster.yaml."""
    store_url: str
    lock_url: str
    scenario: Path
    ledger: Path
    partition_start: date
    code_server_port: int
    webserver_port: int
    secrets_dir: Path = Path("/run/secrets")
    """Where the store and lock URLs are, one file each, as compose's `secrets:` mount them."""
    heartbeat_tolerance_s: int = HEARTBEAT_TOLERANCE_S

    def write_secrets(self) -> None:
        """The URL files the code server reads (SOCIAL_RECORDING_*_URL_FILE), readable by their owner only."""
        self.secrets_dir.mkdir(parents=True, exist_ok=True)
        for name, value in (("store_url", self.store_url), ("lock_url", self.lock_url)):
            path = self.secrets_dir / name
            path.write_text(value + "\n")
            path.chmod(0o600)


def service_env(service: str, cfg: RehearsalConfig) -> dict[str, str]:
    """The variables the rehearsal gives one service, named exactly as docker-compose.yml names them
    (the compose test checks the names; differences are listed there with their reasons)."""
    common = {"DAGSTER_HOME": str(cfg.dagster_home), **cfg.postgres}
    code_server = {
        "SOCIAL_RECORDING_CODE_SERVER_HOST": "127.0.0.1",
        "SOCIAL_RECORDING_CODE_SERVER_PORT": str(cfg.code_server_port),
    }
    if service == "user_code":
        return {
            **common,
            "SOCIAL_RECORDING_LISTEN_HOST": "127.0.0.1",
            "SOCIAL_RECORDING_CODE_SERVER_PORT": str(cfg.code_server_port),
            "SOCIAL_RECORDING_ENV": "prod",
            "SOCIAL_RECORDING_UPSTREAM": "sandbox",
            "SOCIAL_RECORDING_STORE_URL_FILE": str(cfg.secrets_dir / "store_url"),
            "SOCIAL_RECORDING_LOCK_URL_FILE": str(cfg.secrets_dir / "lock_url"),
            "SOCIAL_RECORDING_PARTITION_START": cfg.partition_start.isoformat(),
            "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(cfg.scenario),
            "SOCIAL_RECORDING_SANDBOX_LEDGER": str(cfg.ledger),
            "SOCIAL_RECORDING_ENABLE_PAID": "true",
        }
    if service == "migrate":
        return {
            **common,
            "SOCIAL_RECORDING_STORE_URL_FILE": str(cfg.secrets_dir / "store_url"),
            "SOCIAL_RECORDING_LOCK_URL_FILE": str(cfg.secrets_dir / "lock_url"),
        }
    if service == "daemon":
        return {**common, **code_server, "DAGSTER_DAEMON_HEARTBEAT_TOLERANCE": str(cfg.heartbeat_tolerance_s)}
    if service in ("webserver", "webserver_readonly"):
        return {
            **common,
            **code_server,
            "SOCIAL_RECORDING_LISTEN_HOST": "127.0.0.1",
            "SOCIAL_RECORDING_WEBSERVER_PORT": str(cfg.webserver_port),
        }
    raise ValueError(f"unknown service {service!r}; expected one of {sorted(SERVICES)}")


def process_env(extra: Mapping[str, str]) -> dict[str, str]:
    """This machine's environment without any of our settings (a developer's shell may set some),
    the test's Python first on PATH (entrypoint.sh calls `dagster`), plus `extra`."""
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(_OUR_PREFIXES) and k not in _PROVIDER_KEYS
    }
    base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
    return {**base, **extra}


# --------------------------------------------------------------------------- PostgreSQL


POSTGRES_INIT = DEPLOY_DIR / "postgres-init" / "10-dagster-role.sh"
"""The compose postgres service's init script: Dagster's own role, owning only its database."""


def drop_role(name: str) -> None:
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))
    finally:
        conn.close()


@contextlib.contextmanager
def postgres_database(secrets_dir: Path | None = None) -> Iterator[dict[str, str]]:
    """A fresh database and a role of its own on the local PostgreSQL (or SOCIAL_RECORDING_TEST_POSTGRES_URL's
    server), both created by the compose postgres service's init script and dropped afterwards; yields
    the DAGSTER_POSTGRES_* variables that reach it, the password in a file (as compose's secret)."""
    admin = admin_params()
    name = f"sr_rehearsal_{uuid.uuid4().hex[:12]}"
    own_dir = secrets_dir is None
    directory = Path(tempfile.mkdtemp(prefix="sr-pg-secret-")) if secrets_dir is None else secrets_dir
    directory.mkdir(parents=True, exist_ok=True)
    password_file = directory / "dagster_postgres_password"
    password_file.write_text(uuid.uuid4().hex + "\n")
    password_file.chmod(0o600)
    env = process_env({
        "POSTGRES_USER": str(admin["user"]), "POSTGRES_DB": str(admin["dbname"]),
        "PGHOST": str(admin["host"]), "PGPORT": str(admin["port"]), "PGPASSWORD": str(admin["password"]),
        "DAGSTER_POSTGRES_USER": name, "DAGSTER_POSTGRES_DB": name,
        "DAGSTER_POSTGRES_PASSWORD_FILE": str(password_file),
    })
    try:
        try:
            done = subprocess.run(["sh", str(POSTGRES_INIT)], env=env, capture_output=True, text=True, timeout=60,
                                  check=False)
        except FileNotFoundError as exc:
            raise RehearsalError(f"cannot run {POSTGRES_INIT.name}: {exc}") from None
        if done.returncode != 0:
            raise RehearsalError(f"{POSTGRES_INIT.name} failed (is PostgreSQL up? `.ci/run` starts it):\n{done.stderr}")
        yield {
            "DAGSTER_POSTGRES_HOST": str(admin["host"]),
            "DAGSTER_POSTGRES_PORT": str(admin["port"]),
            "DAGSTER_POSTGRES_USER": name,
            "DAGSTER_POSTGRES_PASSWORD_FILE": str(password_file),
            "DAGSTER_POSTGRES_DB": name,
        }
    finally:
        with contextlib.suppress(PostgresUnavailable):
            drop_database(name)
            drop_role(name)
        if own_dir:
            shutil.rmtree(directory, ignore_errors=True)


def postgres_password(pg_env: Mapping[str, str]) -> str:
    """The password of the rehearsal's Dagster role (from its file, as the services read it)."""
    return Path(pg_env["DAGSTER_POSTGRES_PASSWORD_FILE"]).read_text().strip()


# --------------------------------------------------------------------------- processes


@dataclass
class Service:
    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            # A session of its own: stop() ends the service and every run process it started.
            self.proc = subprocess.Popen(
                [str(ENTRYPOINT), *self.argv], env=process_env(self.env), cwd=self.log.parent,
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )

    def healthy(self) -> bool:
        """The compose healthcheck of this service: `entrypoint.sh check <service>`. A check that has
        not answered within CHECK_TIMEOUT_S counts as failed, as compose counts it (ended with what it
        started): a loaded machine can make the daemon's check, a Python CLI, take that long, and the
        caller's own deadline decides when unhealthy is too long."""
        check = subprocess.Popen(
            [str(ENTRYPOINT), "check", *self.argv], env=process_env(self.env),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            return check.wait(timeout=CHECK_TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(check.pid, signal.SIGKILL)
            check.wait()
            return False

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """As `docker stop`: SIGTERM to the service's main process, then, past the grace period, SIGKILL
        to everything it started."""
        if self.proc is None:
            return
        for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            with contextlib.suppress(ProcessLookupError):
                if sig == signal.SIGTERM:
                    os.kill(self.proc.pid, sig)
                else:
                    os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(text[-lines:])


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def processes_marked(marker: str) -> list[int]:
    """Pids of live processes whose environment contains `marker` (the rehearsal's own DAGSTER_HOME):
    anything a service started that left its process group."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@dataclass(frozen=True)
class Restart:
    exited_at: float
    """time.monotonic() when the supervisor found the process gone."""
    restarted_at: float


class Supervisor:
    """What compose does for a service with `restart: unless-stopped` and a healthcheck: every
    `interval_s` it runs the service's health check (the daemon's ends a hung daemon, see
    deploy/entrypoint.sh), and a service whose process has exited is started again at once."""

    def __init__(self, service: Service, interval_s: float) -> None:
        self.service = service
        self.interval_s = interval_s
        self.restarts: list[Restart] = []
        self.checks_failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"supervise-{service.name}", daemon=True)
        self._thread.start()

    def _restart_if_exited(self) -> None:
        if not self.service.alive():
            exited = time.monotonic()
            self.service.start()
            self.restarts.append(Restart(exited, time.monotonic()))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._restart_if_exited()
            if not self.service.healthy():
                self.checks_failed += 1
            self._restart_if_exited()
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=120)


@dataclass
class Deployment:
    cfg: RehearsalConfig
    services: dict[str, Service]
    store_database: str = ""
    """The PostgreSQL database behind the store's FerretDB (dropped with it)."""
    redis: RedisProcess | None = None
    """The lock server (restartable: a fault of the rehearsal)."""

    def wait_healthy(self, name: str, timeout: float = STARTUP_TIMEOUT_S) -> float:
        """Seconds until the service's health check passed."""
        service = self.services[name]
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if not service.alive():
                raise RehearsalError(f"{name} exited with {service.proc and service.proc.returncode}:\n"
                                     f"{service.tail()}")
            if service.healthy():
                return time.monotonic() - started
            time.sleep(0.5)
        raise RehearsalError(f"{name} not healthy after {timeout:g}s:\n{service.tail()}")

    def kill_and_restart(self, name: str) -> float:
        """SIGKILL a service with every process of its session, start it again as compose's `restart:
        unless-stopped` would; seconds from the kill until its health check passes."""
        service = self.services[name]
        assert service.proc is not None
        os.killpg(service.proc.pid, signal.SIGKILL)
        service.proc.wait(timeout=30)
        killed = time.monotonic()
        service.start()
        self.wait_healthy(name)
        return time.monotonic() - killed

    def supervise(self, name: str, interval_s: float) -> Supervisor:
        """Restart `name` when it exits and run its health check every `interval_s` (stop() it)."""
        return Supervisor(self.services[name], interval_s)

    def logs(self) -> str:
        return "\n".join(f"--- {n} ---\n{s.tail()}" for n, s in self.services.items())

    def stop(self) -> None:
        for name in reversed(START_ORDER):
            self.services[name].stop()
        marker = f"DAGSTER_HOME={self.cfg.dagster_home}\0"
        for pid in processes_marked(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def deployment(workdir: Path, scenario_tokens: list[dict[str, Any]], partition_start: date,
               targets: Mapping[str, dict[str, Any]] | None = None, *, instance_config: Path = INSTANCE_CONFIG,
               code_env: Mapping[str, str] | None = None,
               heartbeat_tolerance_s: int = HEARTBEAT_TOLERANCE_S) -> Iterator[Deployment]:
    """PostgreSQL database, redis-server, FerretDB, code server, daemon and webserver; all stopped
    afterwards. `instance_config` and `code_env` (more variables for the code server) let a benchmark
    compare settings; `heartbeat_tolerance_s` is the daemon's (a test of a hung daemon shortens it)."""
    home = workdir / "dagster_home"
    home.mkdir(parents=True)
    shutil.copy(instance_config, home / "dagster.yaml")  # as the Dockerfile does
    scenario = write_scenario(workdir / "scenario.json", scenario_tokens, targets)
    with postgres_database(workdir / "secrets") as pg_env, running_ferretdb() as ferret, \
            restartable_redis(workdir / "redis", password=REDIS_PASSWORD, include=DEPLOY_DIR / "redis.conf") as redis:
        cfg = RehearsalConfig(
            dagster_home=home,
            postgres=pg_env,
            store_url=mongo_url_with_db(ferret.url, STORE_DB),
            lock_url=redis.url,
            scenario=scenario,
            ledger=workdir / "ledger.jsonl",
            partition_start=partition_start,
            code_server_port=free_port(),
            webserver_port=free_port(),
            secrets_dir=workdir / "secrets",
            heartbeat_tolerance_s=heartbeat_tolerance_s,
        )
        cfg.write_secrets()
        services = {
            name: Service(name, SERVICES[name], service_env(name, cfg), workdir / f"{name}.log")
            for name in START_ORDER
        }
        services["user_code"].env.update(code_env or {})
        dep = Deployment(cfg, services, ferret.pg_database, redis)
        try:
            services["user_code"].start()
            dep.wait_healthy("user_code")
            services["daemon"].start()
            services["webserver"].start()
            dep.wait_healthy("webserver")
            dep.wait_healthy("daemon")
            yield dep
        finally:
            dep.stop()


# --------------------------------------------------------------------------- GraphQL


class GraphQL:
    """The webserver's GraphQL API (what the Dagster UI calls)."""

    def __init__(self, port: int) -> None:
        self._client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0)

    def close(self) -> None:
        self._client.close()

    def __call__(self, query: str, **variables: Any) -> dict[str, Any]:
        # A webserver restarting (a fault of the rehearsal) is waited for, as the UI would: a refused
        # connection never reached it; any other broken request is asked again only when it is a query.
        mutation = query.lstrip().startswith("mutation")
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                response = self._client.post("/graphql", json={"query": query, "variables": variables})
                break
            except httpx.TransportError as exc:
                if time.monotonic() > deadline or (mutation and not isinstance(exc, httpx.ConnectError)):
                    raise
                time.sleep(0.5)
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise RehearsalError(f"GraphQL errors: {json.dumps(body['errors'])[:2000]}")
        data: dict[str, Any] = body["data"]
        return data


REPO_SELECTOR = {"repositoryLocationName": LOCATION, "repositoryName": REPOSITORY}

Q_LOCATIONS = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""

M_BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
  ... on InvalidSubsetError { message } ... on PartitionSetNotFoundError { message } } }"""

Q_RUNS = """query($filter: RunsFilter) { runsOrError(filter: $filter) { __typename ... on Runs { results {
  runId jobName status creationTime startTime endTime tags { key value }
  stepStats { stepKey status startTime endTime } } } } }"""

Q_RUN_EVENTS = """query($runId: ID!, $cursor: String) { logsForRun(runId: $runId, afterCursor: $cursor) {
  __typename ... on EventConnection { cursor hasMore events { __typename
    ... on MessageEvent { message timestamp } } } } }"""

Q_BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status } ... on PythonError { message } ... on BackfillNotFoundError { message } } }"""
BACKFILL_RUNNING = frozenset({"REQUESTED", "CANCELING", "FAILING"})

Q_PARTITION_STATUSES = """query($repo: RepositorySelector!, $name: String!) {
  partitionSetOrError(repositorySelector: $repo, partitionSetName: $name) { __typename ... on PartitionSet { partitionStatusesOrError { __typename
    ... on PartitionStatuses { results { partitionName runId runStatus } } ... on PythonError { message } } }
  ... on PythonError { message } ... on PartitionSetNotFoundError { message } } }"""

Q_PARTITION_TAGS = """query($repo: RepositorySelector!, $name: String!, $partition: String!) {
  partitionSetOrError(repositorySelector: $repo, partitionSetName: $name) { __typename
    ... on PartitionSet { partition(partitionName: $partition) { tagsOrError { __typename
      ... on PartitionTags { results { key value } } ... on PythonError { message } } } }
    ... on PythonError { message } ... on PartitionSetNotFoundError { message } } }"""

M_SCHEDULE_DRY_RUN = """mutation($selector: ScheduleSelector!, $timestamp: Float) {
  scheduleDryRun(selectorData: $selector, timestamp: $timestamp) { __typename
    ... on DryRunInstigationTick { evaluationResult { skipReason error { message }
      runRequests { runKey runConfigYaml tags { key value } } } }
    ... on PythonError { message } ... on ScheduleNotFoundError { message } } }"""

M_LAUNCH_RUN = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } ... on InvalidSubsetError { message } } }"""

Q_SENSOR = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { sensorState { status ticks(limit: 10) { status runIds skipReason error { message } } } } } }"""

M_TERMINATE_RUN = """mutation($runId: String!) { terminateRun(runId: $runId) { __typename
  ... on TerminateRunFailure { message } ... on PythonError { message } ... on RunNotFoundError { message } } }"""

M_START_SENSOR = """mutation($selector: SensorSelector!) { startSensor(sensorSelector: $selector) { __typename
  ... on Sensor { sensorState { status } } ... on PythonError { message } } }"""


@dataclass
class RunRecord:
    run_id: str
    job: str
    status: str
    created: float
    started: float | None
    ended: float | None
    tags: dict[str, str]
    steps: list[dict[str, Any]]
    event_types: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def queued_to_started_s(self) -> float | None:
        """Launch overhead under the daemon: from the run's creation (queued) to RUN_START."""
        return None if self.started is None else self.started - self.created

    @property
    def step_s(self) -> float:
        """The run's own work: the sum of its steps' durations."""
        return sum((s["endTime"] or 0) - (s["startTime"] or 0) for s in self.steps if s.get("startTime"))

    @property
    def url_lines(self) -> list[str]:
        return [m for m in self.messages if m.startswith("url_outcome ")]


def _run_record(raw: Mapping[str, Any]) -> RunRecord:
    return RunRecord(
        run_id=raw["runId"], job=raw["jobName"], status=raw["status"], created=raw["creationTime"],
        started=raw["startTime"], ended=raw["endTime"],
        tags={t["key"]: t["value"] for t in raw["tags"]}, steps=list(raw["stepStats"]),
    )


def wait_until(what: str, probe: Callable[[], Any], dep: Deployment, timeout: float, every: float = 0.5) -> Any:
    """`probe()`'s first truthy value, asked every `every` seconds; past `timeout` (a guard) fails
    naming `what`, with the services' log tails."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise RehearsalError(f"timed out after {timeout:g}s waiting for {what}\n{dep.logs()}")


def runs(gql: GraphQL, run_filter: Mapping[str, Any]) -> list[RunRecord]:
    data = gql(Q_RUNS, filter=dict(run_filter))["runsOrError"]
    if data["__typename"] != "Runs":
        raise RehearsalError(f"runsOrError: {data}")
    return [_run_record(r) for r in data["results"]]


def with_events(gql: GraphQL, run: RunRecord) -> RunRecord:
    cursor: str | None = None
    while True:
        conn = gql(Q_RUN_EVENTS, runId=run.run_id, cursor=cursor)["logsForRun"]
        if conn["__typename"] != "EventConnection":
            raise RehearsalError(f"logsForRun({run.run_id}): {conn}")
        for event in conn["events"]:
            run.event_types.append(event["__typename"])
            if event.get("message"):
                run.messages.append(event["message"])
        cursor = conn["cursor"]
        if not conn["hasMore"]:
            return run


def backfill_status(gql: GraphQL, backfill_id: str) -> str:
    data = gql(Q_BACKFILL, id=backfill_id)["partitionBackfillOrError"]
    if data["__typename"] != "PartitionBackfill":
        raise RehearsalError(f"partitionBackfillOrError: {data}")
    status: str = data["status"]
    return status


def partition_statuses(gql: GraphQL) -> dict[str, str | None]:
    """reconcile_job's partitions as the UI shows them: partition -> the status of its last run."""
    data = gql(Q_PARTITION_STATUSES, repo=REPO_SELECTOR, name=f"{BACKFILL_JOB}_partition_set")["partitionSetOrError"]
    if data["__typename"] != "PartitionSet" or data["partitionStatusesOrError"]["__typename"] != "PartitionStatuses":
        raise RehearsalError(f"partitionSetOrError: {data}")
    return {r["partitionName"]: r["runStatus"] for r in data["partitionStatusesOrError"]["results"]}


def wait_finished(gql: GraphQL, dep: Deployment, run_filter: Mapping[str, Any], count: int) -> list[RunRecord]:
    def probe() -> list[RunRecord] | None:
        found = runs(gql, run_filter)
        return found if len(found) >= count and all(r.status in TERMINAL for r in found) else None

    finished: list[RunRecord] = wait_until(f"{count} finished run(s) matching {run_filter}", probe, dep, RUN_TIMEOUT_S)
    return [with_events(gql, r) for r in finished]


def wait_location_loaded(gql: GraphQL, dep: Deployment) -> None:
    def probe() -> bool:
        data = gql(Q_LOCATIONS)["workspaceOrError"]
        entries = data.get("locationEntries") or []
        for entry in entries:
            if entry["name"] == LOCATION and entry["loadStatus"] == "LOADED":
                loaded = entry["locationOrLoadError"] or {}
                if loaded.get("__typename") == "PythonError":
                    raise RehearsalError(f"code location failed to load: {loaded.get('message')}")
                return loaded.get("__typename") == "RepositoryLocation"
        return False

    wait_until("the code location in the webserver", probe, dep, STARTUP_TIMEOUT_S)


# --------------------------------------------------------------------------- the rehearsal


SLOW_TOKENS = 6
SLOW_LATENCY_MS = 2500
SLOW_WORKERS = 2
"""The terminated run: 6 tokens of one slow URL each, 2 at a time, so a run takes several seconds and
a termination half a second into its recording stage finds two tokens in flight and four not started."""


PLATFORM_OUTCOMES: dict[int, dict[str, tuple[str, str]]] = {
    0: {"https://bsky.app/profile/rehearsal-missing.bsky.social": ("not_found", "not_found"),
        "https://bsky.app/profile/rehearsal-takendown.bsky.social": ("blocked", "blocked"),
        "https://farcaster.xyz/rehearsal/0xdeadbeef": ("not_found", "not_found"),
        "https://farcaster.xyz/~/channel/rehearsal-busy": ("rate_limited", "error")},
    1: {"https://bsky.app/profile/rehearsal-busy.bsky.social/post/3lrehearsal22": ("rate_limited", "error"),
        "https://farcaster.xyz/rehearsal-spent/0x5e470000": ("credit_exhausted", "error")},
}
"""Bluesky's and Farcaster's outcomes other than ok (their ok: the tokens above and the fault phase's
casts), per ordinary partition (0: three days back, 1: two): URL -> (scripted outcome, status after
the backfill). Neynar's credit answer (402) stops its run's further Neynar calls, so it is the only
Neynar URL of its partition. The failures are not retried within the rehearsal (the 60-minute back-off),
so none is paid twice."""


@dataclass
class Scenario:
    """Two past partitions with tokens in each, one token traded minutes ago (the live sensor's), and a
    partition of slow tokens whose run is terminated mid-way."""

    partition_start: date
    partitions: list[str]
    tokens: list[dict[str, Any]]
    urls_by_partition: dict[str, set[str]]
    fresh_urls: set[str]
    slow_partition: str
    slow_addresses: list[str]
    slow_urls: set[str]
    targets: dict[str, dict[str, Any]]
    faults: FaultScenario
    platform_statuses: dict[str, str] = field(default_factory=dict)
    """PLATFORM_OUTCOMES' URL -> the status expected after the backfill."""


def rehearsal_scenario(now: datetime) -> Scenario:
    """Partitions three and two days back (complete UTC days that a token traded within the last
    hour can never fall into) and four days back (the slow one), on free platforms; then the fault
    phase's partitions, five to eight days back, whose tokens pay (rehearsal_faults.py)."""
    today = now.astimezone(UTC).date()
    days = [today - timedelta(days=3), today - timedelta(days=2)]
    slow_day = today - timedelta(days=4)
    slow = [token(f"RhS{i}token", f"{slow_day}T{10 + i:02d}:00:00Z", website=f"https://github.com/rehearsal/slow{i}")
            for i in range(SLOW_TOKENS)]
    tokens = [
        token("RhA1token", f"{days[0]}T08:00:00Z", website="https://github.com/rehearsal/alpha",
              telegram="https://t.me/rehearsal_alpha"),
        token("RhA2token", f"{days[0]}T17:30:00Z", website="https://youtube.com/watch?v=RhA2video01"),
        token("RhB1token", f"{days[1]}T03:15:00Z", website="https://github.com/rehearsal/beta"),
        token("RhB2token", f"{days[1]}T22:45:00Z", telegram="https://t.me/rehearsal_beta",
              twitter="https://bsky.app/profile/Rehearsal-Beta.bsky.social"),  # Bluesky: free, keyed by DID
    ]
    for d, outcomes in PLATFORM_OUTCOMES.items():
        tokens += [token(f"RhP{d}{i}token", f"{days[d]}T{12 + i:02d}:00:00Z", website=url)
                   for i, url in enumerate(outcomes)]
    tokens.append(token("RhF1token", (now - timedelta(minutes=5)).astimezone(UTC).isoformat(),
                        website="https://github.com/rehearsal/fresh"))

    def urls(t: dict[str, Any]) -> set[str]:
        return {to_canonical(v) for k in ("website", "twitter", "telegram") if (v := t.get(k))}

    by_day = {d.isoformat(): set().union(*(urls(t) for t in tokens if t["last_transfer_at"].startswith(d.isoformat())))
              for d in days}
    slow_urls = set().union(*(urls(t) for t in slow))
    from test_support.rehearsal_faults import fault_scenario  # it builds on this module

    faults = fault_scenario(today)
    targets = {u: {"latency_ms": SLOW_LATENCY_MS} for u in slow_urls} | faults.targets
    outcomes = {to_canonical(u): kinds for by_url in PLATFORM_OUTCOMES.values() for u, kinds in by_url.items()}
    targets |= {u: {"outcome": outcome} for u, (outcome, _) in outcomes.items()}
    return Scenario(faults.first_day, [d.isoformat() for d in days], tokens + slow + faults.tokens, by_day,
                    urls(tokens[-1]), slow_day.isoformat(), [t["address"] for t in slow], slow_urls, targets, faults,
                    {u: status for u, (_, status) in outcomes.items()})


@dataclass
class RehearsalReport:
    scenario: Scenario
    startup_s: dict[str, float]
    sensor_status: str
    sensor_runs: list[RunRecord]
    backfill_id: str
    backfill_runs: list[RunRecord]
    backfill_launched_at: float
    schedule_runs: list[RunRecord]
    terminated_run: RunRecord
    rerun: RunRecord
    slow_statuses: dict[str, str]
    """url -> status of every slow element after the re-run."""
    slow_requests: dict[str, int]
    """slow URL -> requests the sandbox received for it over both runs."""
    platform_statuses: dict[str, str]
    """Scenario.platform_statuses' URL -> its status after the backfill and the retry schedule's run."""
    faults: FaultReport
    leftover_pids: list[int] = field(default_factory=list)
    database_left: bool = False
    redis_left: bool = False
    store_left: bool = False
    """The store's server still answering, or its PostgreSQL database still there."""

    @property
    def backfill_to_succeeded_s(self) -> float:
        return max(r.ended or 0.0 for r in self.backfill_runs) - self.backfill_launched_at

    @property
    def backfill_to_first_run_s(self) -> float:
        """How long the backfill daemon took to turn the backfill into queued runs."""
        return min(r.created for r in self.backfill_runs) - self.backfill_launched_at

    def timing_lines(self) -> list[str]:
        lines = [
            f"launchPartitionBackfill -> both runs succeeded: {self.backfill_to_succeeded_s:.1f} s "
            f"(of which backfill daemon -> runs queued: {self.backfill_to_first_run_s:.1f} s)",
        ]
        backfill = sorted(self.backfill_runs, key=lambda r: r.tags.get("dagster/partition", ""))
        for r in backfill + self.sensor_runs + self.schedule_runs + [self.terminated_run, self.rerun]:
            label = r.tags.get("dagster/partition") or r.tags.get("dagster/sensor_name") or \
                r.tags.get("dagster/schedule_name") or ""
            if r.queued_to_started_s is None or r.ended is None or r.started is None:
                lines.append(f"{r.job}[{label}]: {r.status}, never started")
                continue
            lines.append(
                f"{r.job}[{label}]: queued -> started {r.queued_to_started_s:.1f} s, "
                f"step time {r.step_s:.2f} s, RUN_START -> end {r.ended - r.started:.1f} s"
            )
        said = [m for m in self.terminated_run.messages if m.startswith("run interrupted")]
        lines.append(f"terminated {self.terminated_run.job}[{self.terminated_run.tags.get('dagster/partition')}]: "
                     f"{self.terminated_run.status}; it said: {said[0] if said else '(nothing)'}")
        return lines + self.faults.timing_lines()


def _sensor_selector() -> dict[str, str]:
    return {**REPO_SELECTOR, "sensorName": TOKEN_FLOW_SENSOR}


def run_rehearsal(workdir: Path | None = None) -> RehearsalReport:
    """Start the deployment, drive it through GraphQL, stop it; return what was observed."""
    own_dir = workdir is None
    root = Path(tempfile.mkdtemp(prefix="sr-rehearsal-")) if workdir is None else workdir
    try:
        scenario = rehearsal_scenario(datetime.now(UTC))
        startup: dict[str, float] = {}
        t0 = time.monotonic()
        with deployment(root, scenario.tokens, scenario.partition_start, scenario.targets) as dep:
            startup["all services healthy"] = time.monotonic() - t0
            gql = GraphQL(dep.cfg.webserver_port)
            try:
                wait_location_loaded(gql, dep)
                report = _drive(gql, dep, scenario, startup)
            finally:
                gql.close()
            marker = f"DAGSTER_HOME={dep.cfg.dagster_home}\0"
            database = dep.cfg.postgres["DAGSTER_POSTGRES_DB"]
            redis_port = int(dep.cfg.lock_url.rsplit(":", 1)[1].split("/", 1)[0])
            store_port = int(urlsplit(dep.cfg.store_url).port or 0)
            store_database = dep.store_database
        # After the deployment context: every service stopped; nothing of ours may be left.
        report.leftover_pids = processes_marked(marker)
        report.database_left = database_exists(database)
        report.redis_left = port_open(redis_port)
        report.store_left = port_open(store_port) or database_exists(store_database)
        return report
    finally:
        if own_dir:
            shutil.rmtree(root, ignore_errors=True)


def _drive(gql: GraphQL, dep: Deployment, scenario: Scenario, startup: dict[str, float]) -> RehearsalReport:
    # 1. The live sensor: SOCIAL_RECORDING_ENV=prod starts it, so the daemon ticks it as soon as it
    #    runs; start it explicitly only if it is not (the test then fails on the reported status).
    sensor = gql(Q_SENSOR, selector=_sensor_selector())["sensorOrError"]
    if sensor["__typename"] != "Sensor":
        raise RehearsalError(f"sensorOrError: {sensor}")
    sensor_status = sensor["sensorState"]["status"]
    if sensor_status != "RUNNING":
        gql(M_START_SENSOR, selector=_sensor_selector())

    def sensor_run_ids() -> list[str] | None:
        state = gql(Q_SENSOR, selector=_sensor_selector())["sensorOrError"]["sensorState"]
        ids = [rid for tick in state["ticks"] for rid in tick["runIds"]]
        return ids or None

    wait_until("a token_flow_sensor tick that launched runs", sensor_run_ids, dep, RUN_TIMEOUT_S)
    sensor_runs = wait_finished(gql, dep, {"tags": [{"key": "dagster/sensor_name", "value": TOKEN_FLOW_SENSOR}]}, 1)

    # 2. A backfill of two reconcile partitions, as the UI's "Launch backfill".
    launched_at = time.time()
    result = gql(M_BACKFILL, params={
        "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
        "partitionNames": scenario.partitions,
    })["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RehearsalError(f"launchPartitionBackfill: {result}")
    backfill_id = result["backfillId"]
    backfill_runs = wait_finished(gql, dep, {"tags": [{"key": "dagster/backfill", "value": backfill_id}]},
                                  len(scenario.partitions))

    # 3. The retry schedule, as the UI's "Test schedule" + "Launch run".
    schedule_run_ids = launch_retry_schedule(gql)
    schedule_runs = wait_finished(gql, dep, {"runIds": schedule_run_ids}, len(schedule_run_ids)) \
        if schedule_run_ids else []

    platform_statuses = _statuses(dep, set(scenario.platform_statuses))

    # 4. The UI's "Terminate" on a reconcile run with tokens in flight, then the same partition again.
    terminated, rerun = _terminate_and_rerun(gql, dep, scenario.slow_partition)
    slow_statuses, slow_requests = _slow_outcomes(dep, scenario.slow_addresses, scenario.slow_urls)

    # 5. The faults of an operator's first month, in the middle of runs.
    from test_support.rehearsal_faults import run_faults  # it builds on this module

    faults = run_faults(gql, dep, scenario.faults, scenario.tokens)
    return RehearsalReport(
        scenario=scenario, startup_s=startup, sensor_status=sensor_status, sensor_runs=sensor_runs,
        backfill_id=backfill_id, backfill_runs=backfill_runs, backfill_launched_at=launched_at,
        schedule_runs=schedule_runs, terminated_run=terminated, rerun=rerun, slow_statuses=slow_statuses,
        slow_requests=slow_requests, platform_statuses=platform_statuses, faults=faults,
    )


Q_SENSOR_ID = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { id } } }"""
Q_SENSOR_TICK = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { sensorState { ticks(limit: 1) { id status } } } } }"""
M_STOP_SENSOR = """mutation($id: String!) { stopSensor(id: $id) { __typename
  ... on StopSensorMutationResult { instigationState { status } } ... on PythonError { message } } }"""


def stop_backfill_start_sensor(gql: GraphQL) -> None:
    """For a test of the backfill daemon's own submission: backfill_start_sensor, which would create a
    new backfill's runs first, is stopped. (A daemon killed in the middle of that sensor's tick is a
    case of its own: deploy/test_backfill_start_crash.py.)"""
    name, deadline = "backfill_start_sensor", time.monotonic() + 240.0

    def stopped() -> bool:
        state = gql(Q_SENSOR, selector={**REPO_SELECTOR, "sensorName": name})["sensorOrError"]["sensorState"]
        return bool(state["status"] == "STOPPED")

    # Stopped means: its latest tick ended and no new one began for a loop of the sensor daemon (an
    # evaluation begun before the stop may run past it and request the next backfill's runs), and it is
    # still stopped then (a tick in flight at the stop writes the state back as running when it ends, as
    # drain meets it: operations/instigator_stop.py), else it is stopped again.
    while time.monotonic() < deadline:
        if not stopped():
            sensor = gql(Q_SENSOR_ID, selector={**REPO_SELECTOR, "sensorName": name})["sensorOrError"]
            answer = gql(M_STOP_SENSOR, id=sensor["id"])["stopSensor"]
            if answer["__typename"] != "StopSensorMutationResult":
                raise RehearsalError(f"stopSensor: {answer}")
        before = _latest_tick(gql, name)
        if before is not None and before[1] == "STARTED":
            time.sleep(0.5)
            continue
        time.sleep(6.0)
        if _latest_tick(gql, name) == before and stopped():
            return
    raise RehearsalError(f"{name} still ticking or running again 240 s after it was stopped")


def _latest_tick(gql: GraphQL, sensor_name: str) -> tuple[str, str] | None:
    """(id, status) of the sensor's latest tick, or None before its first."""
    data = gql(Q_SENSOR_TICK, selector={**REPO_SELECTOR, "sensorName": sensor_name})["sensorOrError"]
    ticks = data["sensorState"]["ticks"]
    return (ticks[0]["id"], ticks[0]["status"]) if ticks else None


def launch_retry_schedule(gql: GraphQL) -> list[str]:
    """Evaluate retry_schedule now on the code server and launch what it requests, as the UI's "Test
    schedule" + "Launch run" (the hourly cron tick cannot be waited for in a test); the run ids."""
    dry = gql(M_SCHEDULE_DRY_RUN, selector={**REPO_SELECTOR, "scheduleName": RETRY_SCHEDULE},
              timestamp=time.time())["scheduleDryRun"]
    if dry["__typename"] != "DryRunInstigationTick" or dry["evaluationResult"]["error"]:
        raise RehearsalError(f"scheduleDryRun: {dry}")
    run_ids = []
    for request in dry["evaluationResult"]["runRequests"] or []:
        tags = {t["key"]: t["value"] for t in request["tags"]}
        tags.setdefault("dagster/schedule_name", RETRY_SCHEDULE)
        launched = gql(M_LAUNCH_RUN, params={
            "selector": {**REPO_SELECTOR, "jobName": "retry_job"},
            "runConfigData": request["runConfigYaml"],
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        })["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise RehearsalError(f"launchRun: {launched}")
        run_ids.append(launched["run"]["runId"])
    return run_ids


def launch_partition(gql: GraphQL, partition: str, run_config: Mapping[str, Any]) -> str:
    """Launch one reconcile_job partition as the UI's launchpad does: with the partition's tags as
    Dagster gives them (its key and its partition set, which Dagster's partition status reads)."""
    data = gql(Q_PARTITION_TAGS, repo=REPO_SELECTOR, name=f"{BACKFILL_JOB}_partition_set",
               partition=partition)["partitionSetOrError"]
    tags = (data.get("partition") or {}).get("tagsOrError") or {}
    if tags.get("__typename") != "PartitionTags":
        raise RehearsalError(f"partition {partition}'s tags: {data}")
    launched = gql(M_LAUNCH_RUN, params={
        "selector": {**REPO_SELECTOR, "jobName": BACKFILL_JOB},
        "runConfigData": dict(run_config),
        "executionMetadata": {"tags": tags["results"]},
    })["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise RehearsalError(f"launchRun: {launched}")
    run_id: str = launched["run"]["runId"]
    return run_id


def _terminate_and_rerun(gql: GraphQL, dep: Deployment, partition: str) -> tuple[RunRecord, RunRecord]:
    """Launch the slow partition two tokens at a time, terminate it half a second after its recording
    stage began (two tokens in flight), then launch the partition again with its defaults."""
    run_id = launch_partition(gql, partition, {"ops": {"reconcile_window": {"config": {"max_workers": SLOW_WORKERS}}}})

    def recording() -> bool:
        (run,) = runs(gql, {"runIds": [run_id]})
        if run.status in TERMINAL:
            raise RehearsalError(f"the slow run ended ({run.status}) before it could be terminated\n{dep.logs()}")
        return run.status == "STARTED" and any(m.startswith("record_window ") for m in with_events(gql, run).messages)

    # Its recording stage has begun (the first tokens' 2.5 s calls are in flight), whatever the
    # machine's speed before that.
    wait_until("the slow reconcile run to start recording", recording, dep, RUN_TIMEOUT_S)
    time.sleep(0.5)
    result = gql(M_TERMINATE_RUN, runId=run_id)["terminateRun"]
    if result["__typename"] != "TerminateRunSuccess":
        raise RehearsalError(f"terminateRun: {result}")
    (terminated,) = wait_finished(gql, dep, {"runIds": [run_id]}, 1)
    rerun_id = launch_partition(gql, partition, {})
    (rerun,) = wait_finished(gql, dep, {"runIds": [rerun_id]}, 1)
    return terminated, rerun


def _statuses(dep: Deployment, urls: set[str]) -> dict[str, str]:
    """url -> status of every token element among `urls` (one token each)."""
    store = open_store(dep.cfg.store_url)
    try:
        return {el.url: el.status.value for el in store.oldest_elements(list(FetchStatus), 100_000) if el.url in urls}
    finally:
        store.close()


def _slow_outcomes(dep: Deployment, addresses: list[str], slow_urls: set[str]
                   ) -> tuple[dict[str, str], dict[str, int]]:
    store = open_store(dep.cfg.store_url)
    try:
        statuses = {
            el.url: el.status.value
            for address in store.find_existing_addresses(addresses)
            if (doc := store.find_token(address)) is not None
            for el in doc.social_urls
        }
    finally:
        store.close()
    paths = {url: urlsplit(url).path.lower() for url in slow_urls}
    requests = dict.fromkeys(slow_urls, 0)
    for entry in Ledger(dep.cfg.ledger).read():
        for url, path in paths.items():
            if f"/repos{path}" in urlsplit(entry.url).path.lower():
                requests[url] += 1
    return statuses, requests
