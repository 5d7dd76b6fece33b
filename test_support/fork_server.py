"""A fork server for the mutant runs (social_recording_tests/recording/test_mutants.py): one process
that has imported pytest and the heavy third-party libraries once, and none of the project's code;
each run is a child forked from it, which puts the mutant's copy of the package first on its path,
imports the project from there (the run checks which file it loaded) and runs the model test with
pytest in process. A run then costs a fork instead of an interpreter's start, those imports and
pytest's own start (tests README, "Running in parallel").
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRELOAD = (
    "pytest", "_pytest.python", "_pytest.unittest", "xdist.plugin", "_hypothesis_pytestplugin", "anyio.pytest_plugin",
    "hypothesis", "hypothesis.stateful", "hypothesis.strategies", "pydantic", "httpx", "redis", "pymongo",
    "mongomock", "psycopg2", "tenacity", "ijson", "cryptography.fernet", "sqlite3", "unittest",
)
"""Third-party modules only: the project's own come from each run's copy of the package."""
PROJECT = ("social_recording", "social_recording_tests", "test_support")

_SERVER = r"""
import importlib, json, os, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
project = tuple(json.loads(sys.argv[2]))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in project)
if loaded:
    sys.exit(f"fork server: the preload imported the project's own modules {loaded}")
base_path = list(sys.path)
for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            fd = os.open(job["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.chdir(job["cwd"])
            os.environ.clear()
            os.environ.update(job["env"])
            sys.path[:] = [*job["path"], *base_path]
            importlib.invalidate_caches()
            module = importlib.import_module(job["module"])
            with open(job["loaded"], "w") as f:
                f.write(str(module.__file__))
            if module.__file__ != job["expect"]:
                code = 3
            else:
                import pytest
                code = int(pytest.main(job["args"]))
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"exit": os.waitstatus_to_exitcode(status)}), flush=True)
"""


@dataclass(frozen=True)
class ForkedRun:
    returncode: int
    output: str
    loaded: str
    """The file the run imported `module` from."""

    @property
    def stdout(self) -> str:
        """As a finished subprocess's (the run's stdout and stderr went to one file)."""
        return self.output

    @property
    def stderr(self) -> str:
        return ""


class ForkServer:
    """Started by `running_fork_server()`; `run` one job at a time."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc
        self._pending = b""

    def _reply(self, deadline: float | None) -> dict[str, Any] | None:
        """The server's next line (JSON), or None when `deadline` (monotonic) passes first."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], wait)[0]:
                return None
            data = os.read(fd, 65536)
            if not data:
                raise RuntimeError(f"the fork server ended (exit {self._proc.wait()})")
            self._pending += data
        line, self._pending = self._pending.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, module: str, expect: Path, args: Sequence[str], *, cwd: Path, path: Sequence[Path],
            env: Mapping[str, str], timeout: float) -> ForkedRun:
        """In a forked child: `path` first on sys.path, `env` as its environment, import `module`; when it
        is `expect`, `pytest.main(args)` in `cwd`. Past `timeout` the child is killed."""
        output, loaded = cwd / "fork-run.out", cwd / "fork-run.loaded"
        job = {"output": str(output), "loaded": str(loaded), "cwd": str(cwd), "env": dict(env),
               "path": [str(p) for p in path], "module": module, "expect": str(expect), "args": list(args)}
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(job).encode() + b"\n")
        self._proc.stdin.flush()
        started = self._reply(None)
        assert started is not None and "pid" in started, started
        done = self._reply(time.monotonic() + timeout)
        if done is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(started["pid"], signal.SIGKILL)
            done = self._reply(None)
        assert done is not None
        return ForkedRun(done["exit"], output.read_text(errors="replace"),
                         loaded.read_text() if loaded.exists() else "")

    def close(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


@contextlib.contextmanager
def running_fork_server(workdir: Path) -> Iterator[ForkServer]:
    """A fork server started in `workdir` (empty: nothing there is importable), without PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen([sys.executable, "-c", _SERVER, json.dumps(PRELOAD), json.dumps(PROJECT)],
                            cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    server = ForkServer(proc)
    try:
        yield server
    finally:
        server.close()
