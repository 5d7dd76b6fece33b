"""Shared by the multi-process tests: worker processes on one SQLite store file and one lock backend."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from social_recording.domain.models import SocialUrl
from social_recording.store.sqlite import SqliteStore

REPO = Path(__file__).resolve().parents[2]
GUARD = 60.0


@dataclass
class Env:
    redis_url: str
    lock_url: str
    store_path: Path

    def config(self, name: str, **extra: Any) -> str:
        return json.dumps({
            "name": name,
            "redis_url": self.redis_url,
            "lock_url": self.lock_url,
            "store_path": str(self.store_path),
            **extra,
        })

    def spawn(self, name: str, **extra: Any) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.Popen(
            [sys.executable, "-m", "social_recording_tests.recording.engine_worker", self.config(name, **extra)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )


@pytest.fixture(params=["redis", "sqlite"])
def env(request: pytest.FixtureRequest, redis_url: str, tmp_path: Path) -> Iterator[Env]:
    lock_url = redis_url if request.param == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    store_path = tmp_path / "store.db"
    SqliteStore(store_path).close()  # create the schema once, before the workers race for it
    yield Env(redis_url, lock_url, store_path)


def finish(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    out, err = proc.communicate(timeout=GUARD)
    assert proc.returncode == 0, err[-3000:]
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def wait_until(cond: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + GUARD
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=GUARD)
    assert proc.returncode == -signal.SIGKILL


def element(store: SqliteStore, address: str, url: str) -> SocialUrl:
    doc = store.find_token(address)
    assert doc is not None
    el = doc.element(url)
    assert el is not None
    return el


