"""A real Mongo-protocol server for the tests: FerretDB on a PostgreSQL database of its own.

FerretDB (Apache-2.0) speaks MongoDB's wire protocol; the store's Mongo tests run against it on every
change (`make test` builds the pinned release when it is missing, see the Makefile's `ferretdb`
target). Each server gets a fresh database on the local PostgreSQL (`.ci/run` starts it; the
deployment rehearsal uses the same one, see postgres_server.py), dropped when the server stops, and listens on a free
loopback port. PostgreSQL rather than FerretDB's SQLite backend: it is FerretDB's primary backend,
its unique indexes are PostgreSQL's own, and writers on several connections really interleave (the
SQLite backend serialises every write on one file lock, which would hide the races the store must
survive).

`FerretDB.stop()` / `start()` end and restart the process on the same port and backend (the data
stays): the fault tests use that for "the store is unavailable for a few seconds".

Where FerretDB and MongoDB differ, docs/architecture.md ("Mongo-protocol servers") lists it;
`ferretdb_differences.py` holds the differences the tests mark.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pymongo import MongoClient
from pymongo.errors import PyMongoError

from test_support.postgres_server import (
    PostgresUnavailable,
    admin_params,
    create_database,
    drop_database,
)
from test_support.redis_server import free_port

FERRETDB_VERSION = "v1.24.2"
"""The pinned release (the Makefile's FERRETDB_VERSION builds the same)."""

BINARY_ENV = "SOCIAL_RECORDING_TEST_FERRETDB"
"""Path of the FerretDB binary; `make test` sets it to the one it built (then it must work)."""

START_TIMEOUT_S = 30.0

POOL_MAX_CONNS = 8
"""PostgreSQL connections one FerretDB may open (its own default is 50): the parallel workers of
`make test` each run one for the session, beside the rehearsal's and the fault tests' own, on one
server whose max_connections is 100 by default."""

START_TRIES = 3
"""Ports tried by `create`: a free port may be taken by another worker before FerretDB binds it."""


class FerretDBError(RuntimeError):
    """FerretDB could not be found, or did not start; the message says what to do."""


def default_binary() -> Path:
    """Where the Makefile builds the pinned release (outside the worktree, shared by checkouts)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "social_recording" / f"ferretdb-{FERRETDB_VERSION}" / "ferretdb"


def find_binary() -> Path | None:
    """The binary named by SOCIAL_RECORDING_TEST_FERRETDB (an error when it is not executable: whoever
    set it expects the Mongo tests to run), else the Makefile's build when present, else None."""
    named = os.environ.get(BINARY_ENV)
    if named:
        path = Path(named)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise FerretDBError(f"{BINARY_ENV}={named!r} is not an executable file; build it with `make ferretdb`")
        return path
    built = default_binary()
    return built if built.is_file() and os.access(built, os.X_OK) else None


class FerretDB:
    """One FerretDB process on its own PostgreSQL database; `url` is `mongodb://127.0.0.1:<port>/`."""

    def __init__(self, binary: Path, admin: tuple[str, str] | None = None) -> None:
        self.binary = binary
        self.admin = admin
        """(user, password): FerretDB's SCRAM authentication on, with this administrator (the users
        test); None: no authentication, as every other test runs it."""
        self.port = free_port()
        self.url = f"mongodb://127.0.0.1:{self.port}/"
        self.pg_database = f"sr_ferretdb_{uuid.uuid4().hex[:12]}"
        self.workdir = Path(tempfile.mkdtemp(prefix="sr-ferretdb-"))
        self.log = self.workdir / "ferretdb.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._created = False

    def _postgresql_url(self) -> str:
        p = admin_params()
        auth = p["user"] + (f":{p['password']}" if p["password"] else "")
        return f"postgres://{auth}@{p['host']}:{p['port']}/{self.pg_database}?pool_max_conns={POOL_MAX_CONNS}"

    def create(self) -> None:
        create_database(self.pg_database)
        self._created = True
        for attempt in range(START_TRIES):
            try:
                self.start()
                return
            except FerretDBError:
                if self.proc is None or self.proc.poll() is None or attempt == START_TRIES - 1:
                    raise
                self.port = free_port()  # exited at start: its port was taken meanwhile
                self.url = f"mongodb://127.0.0.1:{self.port}/"

    def start(self) -> None:
        """Start (or restart, after stop()) the process on this server's port and database."""
        auth: list[str] = []
        env = dict(os.environ)
        if self.admin is not None:
            # The password through the environment, never on the command line.
            auth = ["--test-enable-new-auth", f"--setup-username={self.admin[0]}", "--setup-database=admin"]
            env["FERRETDB_SETUP_PASSWORD"] = self.admin[1]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [str(self.binary), f"--listen-addr=127.0.0.1:{self.port}", "--debug-addr=-",
                 f"--postgresql-url={self._postgresql_url()}", "--handler=postgresql",
                 f"--state-dir={self.workdir}", "--telemetry=disable", "--log-level=error", *auth],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env,
            )
        credentials = {} if self.admin is None else {"username": self.admin[0], "password": self.admin[1]}
        client: MongoClient[dict[str, Any]] = MongoClient(self.url, serverSelectionTimeoutMS=500, **credentials)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                if self.proc.poll() is not None:
                    raise FerretDBError(f"FerretDB exited with {self.proc.returncode}:\n{self.tail()}")
                try:
                    client.admin.command("ping")
                    return
                except PyMongoError:
                    if time.monotonic() > deadline:
                        raise FerretDBError(f"FerretDB not answering after {START_TIMEOUT_S:g}s:\n{self.tail()}") from None
                    time.sleep(0.1)
        finally:
            client.close()

    def stop(self, sig: int = signal.SIGKILL) -> None:
        """End the process (SIGKILL by default: the store's clients see a server that vanished)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def destroy(self) -> None:
        self.stop(signal.SIGTERM)
        if self._created:
            with contextlib.suppress(PostgresUnavailable):
                drop_database(self.pg_database)
        shutil.rmtree(self.workdir, ignore_errors=True)


@contextlib.contextmanager
def running_ferretdb(binary: Path | None = None, admin: tuple[str, str] | None = None) -> Iterator[FerretDB]:
    """A started FerretDB on a fresh PostgreSQL database; stopped and dropped afterwards. Fails (never
    skips) when there is no binary: `make ferretdb` builds it. `admin`: see FerretDB.admin."""
    found = binary or find_binary()
    if found is None:
        raise FerretDBError(f"no FerretDB binary: run `make ferretdb` (needs Go) or set {BINARY_ENV}")
    server = FerretDB(found, admin)
    try:
        server.create()
        yield server
    finally:
        server.destroy()


def is_ferretdb(client: Any) -> bool:
    """Whether the server behind a pymongo client is FerretDB (its buildInfo says so)."""
    return "ferretdbVersion" in client.admin.command("buildInfo")
