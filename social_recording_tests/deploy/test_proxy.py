"""The login in front of the Dagster UI, natively: Debian's nginx with deploy/proxy/nginx.conf, in front
of the real dagster-webserver (operators) and `dagster-webserver --read-only` (viewers), both started
by deploy/entrypoint.sh as compose starts them, on a code server of the same entry point.

The configuration file is the one compose mounts; only what differs outside a container is rewritten:
the upstreams' addresses and the listen ports (free loopback ports), the secret files' and the
temporary files' directories, and `user root;` when the test runs as root (nginx's workers would
otherwise run as `nobody`, who cannot read the test's private directory). Logins are made as `make
login` makes them (`openssl passwd -6`). The instance is the development dagster.yaml (SQLite in the
test's DAGSTER_HOME, runs queued): no daemon runs, so a launched run stays queued and costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from test_support.redis_server import free_port
from test_support.rehearsal import (
    DEPLOY_DIR,
    REPO,
    REPO_SELECTOR,
    STARTUP_TIMEOUT_S,
    Service,
    port_open,
)

pytestmark = pytest.mark.integration

PROXY_CONF = DEPLOY_DIR / "proxy" / "nginx.conf"
OPERATOR = ("op-alice", "op-Pw-31f")
VIEWER = ("view-bob", "view-Pw-77c")

M_LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
  ... on LaunchRunSuccess { run { runId status } } ... on UnauthorizedError { message }
  ... on PythonError { message } ... on RunConfigValidationInvalid { errors { message } } } }"""
M_TERMINATE = """mutation($runId: String!) { terminateRun(runId: $runId) { __typename
  ... on UnauthorizedError { message } ... on TerminateRunFailure { message } ... on PythonError { message } } }"""
M_STOP_SCHEDULE = """mutation($selector: ScheduleSelector!) { startSchedule(scheduleSelector: $selector) {
  __typename ... on UnauthorizedError { message } ... on PythonError { message } } }"""
Q_RUNS = """{ runsOrError { __typename ... on Runs { results { runId status } } } }"""


def _nginx() -> str:
    found = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
    if found is None:
        raise RuntimeError("nginx not found; install Debian's `nginx-light` package (.ci/run does)")
    return found


def _htpasswd(path: Path, user: str, password: str) -> None:
    """One login line as `make login` writes it."""
    done = subprocess.run(["openssl", "passwd", "-6", "-stdin"], input=password, capture_output=True, text=True,
                          timeout=30, check=True)
    path.write_text(f"{user}:{done.stdout.strip()}\n")


@dataclass
class Front:
    operators_port: int
    viewers_port: int
    services: dict[str, Service]

    def post(self, port: int, query: str, auth: tuple[str, str] | None = None, **variables: Any) -> httpx.Response:
        return httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": query, "variables": variables},
                          auth=auth, timeout=60.0)

    def data(self, port: int, query: str, auth: tuple[str, str], **variables: Any) -> dict[str, Any]:
        response = self.post(port, query, auth, **variables)
        assert response.status_code == 200, response.text[:500]
        body: dict[str, Any] = response.json()
        assert not body.get("errors"), body["errors"]
        return body["data"]

    def runs(self) -> list[dict[str, Any]]:
        runs: list[dict[str, Any]] = self.data(self.operators_port, Q_RUNS, OPERATOR)["runsOrError"]["results"]
        return runs


def _local_conf(tmp: Path, ports: dict[str, int]) -> Path:
    text = PROXY_CONF.read_text()
    for name, port in (("webserver_readonly", ports["webserver_readonly"]), ("webserver", ports["webserver"])):
        text = text.replace(f"http://{name}:3000;", f"http://127.0.0.1:{port};")
    text = text.replace("listen 8080;", f"listen 127.0.0.1:{ports['operators']};")
    text = text.replace("listen 8081;", f"listen 127.0.0.1:{ports['viewers']};")
    text = text.replace(" /tmp/", f" {tmp / 'nginx'}/").replace("/run/secrets/", f"{tmp / 'secrets'}/")
    if os.geteuid() == 0:
        text = "user root;\n" + text
    conf = tmp / "nginx.conf"
    conf.write_text(text)
    return conf


@contextlib.contextmanager
def front(tmp: Path) -> Iterator[Front]:
    home = tmp / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    (tmp / "secrets").mkdir()
    (tmp / "nginx").mkdir()
    _htpasswd(tmp / "secrets" / "proxy_operators_htpasswd", *OPERATOR)
    _htpasswd(tmp / "secrets" / "proxy_viewers_htpasswd", *VIEWER)
    ports = {name: free_port() for name in ("code_server", "webserver", "webserver_readonly", "operators", "viewers")}
    common = {"DAGSTER_HOME": str(home), "SOCIAL_RECORDING_CODE_SERVER_HOST": "127.0.0.1",
              "SOCIAL_RECORDING_CODE_SERVER_PORT": str(ports["code_server"]), "SOCIAL_RECORDING_LISTEN_HOST": "127.0.0.1"}
    services = {
        "user_code": Service("user_code", ["code-server"], {
            **common, "SOCIAL_RECORDING_ENV": "dev", "SOCIAL_RECORDING_UPSTREAM": "sandbox",
            "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{tmp / 'store.db'}",
            "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp / "ledger.jsonl")}, tmp / "user_code.log"),
        "webserver": Service("webserver", ["webserver"], {
            **common, "SOCIAL_RECORDING_WEBSERVER_PORT": str(ports["webserver"])}, tmp / "webserver.log"),
        "webserver_readonly": Service("webserver_readonly", ["webserver-readonly"], {
            **common, "SOCIAL_RECORDING_WEBSERVER_PORT": str(ports["webserver_readonly"])},
            tmp / "webserver_readonly.log"),
    }
    conf = _local_conf(tmp, ports)
    nginx_log = tmp / "nginx.log"
    nginx: subprocess.Popen[bytes] | None = None
    try:
        services["user_code"].start()
        _wait(services["user_code"])
        services["webserver"].start()
        services["webserver_readonly"].start()
        _wait(services["webserver"])
        _wait(services["webserver_readonly"])
        with nginx_log.open("ab") as out:
            nginx = subprocess.Popen([_nginx(), "-e", "stderr", "-p", str(tmp / "nginx"), "-c", str(conf),
                                      "-g", "daemon off;"], stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while not (port_open(ports["operators"]) and port_open(ports["viewers"])):
            assert nginx.poll() is None, nginx_log.read_text()
            assert time.monotonic() < deadline, "nginx did not listen"
            time.sleep(0.2)
        yield Front(ports["operators"], ports["viewers"], services)
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=30)
        for service in reversed(list(services.values())):
            service.stop()


def _wait(service: Service) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not service.healthy():
        assert service.alive(), f"{service.name} exited:\n{service.tail()}"
        assert time.monotonic() < deadline, f"{service.name} not healthy:\n{service.tail()}"
        time.sleep(0.5)


def _launch_params() -> dict[str, Any]:
    return {"selector": {**REPO_SELECTOR, "jobName": "retry_job"}, "runConfigData": {}}


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    with front(Path(tmp_path_factory.mktemp("proxy"))) as running:
        yield running


def test_an_unauthenticated_launch_is_refused_before_it_reaches_dagster(ui: Front) -> None:
    for auth in (None, (OPERATOR[0], "wrong"), VIEWER):  # no login, a wrong password, a viewer
        response = ui.post(ui.operators_port, M_LAUNCH, auth, params=_launch_params())
        assert response.status_code == 401, (auth and auth[0], response.status_code)
        assert "launchRun" not in response.text
    assert ui.runs() == []


def test_an_operator_launches_a_run(ui: Front) -> None:
    launched = ui.data(ui.operators_port, M_LAUNCH, OPERATOR, params=_launch_params())["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    assert launched["run"]["runId"] in {r["runId"] for r in ui.runs()}


def test_the_viewers_webserver_shows_runs_and_refuses_every_mutation(ui: Front) -> None:
    assert ui.post(ui.viewers_port, Q_RUNS).status_code == 401
    assert ui.post(ui.viewers_port, Q_RUNS, (VIEWER[0], "wrong")).status_code == 401
    ui.data(ui.operators_port, M_LAUNCH, OPERATOR, params=_launch_params())  # a run to try to terminate
    before = ui.runs()
    shown = ui.data(ui.viewers_port, Q_RUNS, VIEWER)["runsOrError"]
    assert shown["__typename"] == "Runs" and len(shown["results"]) == len(before)
    launched = ui.data(ui.viewers_port, M_LAUNCH, VIEWER, params=_launch_params())["launchRun"]
    assert launched["__typename"] == "UnauthorizedError", launched
    terminated = ui.data(ui.viewers_port, M_TERMINATE, VIEWER, runId=before[0]["runId"])["terminateRun"]
    assert terminated["__typename"] == "TerminateRunFailure" and "permission" in terminated["message"], terminated
    started = ui.data(ui.viewers_port, M_STOP_SCHEDULE, VIEWER,
                      selector={**REPO_SELECTOR, "scheduleName": "retry_schedule"})["startSchedule"]
    assert started["__typename"] == "UnauthorizedError", started
    assert ui.runs() == before  # nothing launched, nothing terminated
