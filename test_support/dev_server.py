"""`make dev` for a test: `dg dev` (webserver, daemon and code server) on a free port, in a DAGSTER_HOME
of the test's own holding a copy of the repository's dagster.yaml, on a SQLite store and ledger of the
test's own, with the bundled demo scenario. What the quickstart's reader sees in the UI, driven over
the webserver's GraphQL API (the UI's own calls) by the walk-through test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from test_support.redis_server import free_port
from test_support.rehearsal import Q_LOCATIONS, GraphQL

REPO = Path(__file__).resolve().parents[1]
DG = Path(sys.executable).parent / "dg"
STARTUP_TIMEOUT_S = 180.0
"""Guards only (a loaded 2-core machine loads the code location slowly)."""
STOP_GRACE_S = 15.0
LOCATION = "social_recording"


class DevServerError(RuntimeError):
    """`dg dev` did not come up, or something it ran did not finish in time; carries its log's tail."""


@dataclass
class DevServer:
    home: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes]
    gql: GraphQL

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(text[-lines:])

    def wait_until(self, what: str, probe: Callable[[], Any], timeout: float, every: float = 1.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DevServerError(f"dg dev exited with {self.proc.returncode} waiting for {what}:\n{self.tail()}")
            found = probe()
            if found:
                return found
            time.sleep(every)
        raise DevServerError(f"timed out after {timeout:g}s waiting for {what}:\n{self.tail()}")


def _loaded(gql: GraphQL) -> bool:
    try:
        entries = gql(Q_LOCATIONS)["workspaceOrError"].get("locationEntries") or []
    except Exception:  # the webserver is not answering yet
        return False
    for entry in entries:
        loaded = entry["locationOrLoadError"] or {}
        if entry["name"] == LOCATION and loaded.get("__typename") == "PythonError":
            raise DevServerError(f"code location failed to load: {loaded.get('message')}")
        if entry["name"] == LOCATION and entry["loadStatus"] == "LOADED":
            return loaded.get("__typename") == "RepositoryLocation"
    return False


@contextlib.contextmanager
def dev_server(workdir: Path, env: Mapping[str, str], *,
               instance: Callable[[str], str] = lambda text: text) -> Iterator[DevServer]:
    """`dg dev` as `make dev` starts it, with `env` (SOCIAL_RECORDING_* settings) on top of a clean
    environment; `instance` may rewrite dagster.yaml's text (a test's run concurrency). Stopped as one
    Ctrl-C would, then killed with its whole session."""
    home = workdir / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(instance((REPO / "dagster.yaml").read_text()))
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIAL_RECORDING_", "DAGSTER_"))}
    full_env = {**keep, **env, "DAGSTER_HOME": str(home), "PYTHONPATH": f"{REPO / 'dev'}:{REPO}"}
    port = free_port()
    log = workdir / "dg-dev.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(DG), "dev", "-w", str(REPO / "workspace.yaml"), "-p", str(port), "-h", "127.0.0.1",
             "--log-level", "info"],
            cwd=home, env=full_env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = DevServer(home, port, log, proc, GraphQL(port))
    try:
        server.wait_until("the code location to load", lambda: _loaded(server.gql), STARTUP_TIMEOUT_S)
        yield server
    finally:
        server.gql.close()
        for sig in (signal.SIGINT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=STOP_GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # run processes left behind by the session
