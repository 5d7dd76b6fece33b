"""The lock contract suite runs every test against both backends: real Redis and a real SQLite file."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

import pytest
import redis

from social_recording.locks import LockManager, open_lock_manager

SPAWN = mp.get_context("spawn")


@dataclass
class Backend:
    """A backend under test plus direct access to its storage (to play the thief or the admin)."""

    name: str
    url: str
    sqlite_path: str | None = None

    def manager(self) -> LockManager:
        return open_lock_manager(self.url)

    def owner_of(self, key: str) -> str | None:
        if self.sqlite_path is None:
            client = redis.Redis.from_url(self.url)
            try:
                raw = client.get(key)
            finally:
                client.close()
            if raw is None:
                return None
            return raw.decode() if isinstance(raw, bytes) else str(raw)
        with closing(sqlite3.connect(self.sqlite_path, isolation_level=None)) as conn:
            row = conn.execute(
                "SELECT owner FROM locks WHERE key = ? AND expires_at > ?", (key, time.time())
            ).fetchone()
        return None if row is None else str(row[0])

    def delete(self, key: str) -> None:
        if self.sqlite_path is None:
            client = redis.Redis.from_url(self.url)
            try:
                client.delete(key)
            finally:
                client.close()
            return
        with closing(sqlite3.connect(self.sqlite_path, isolation_level=None)) as conn:
            conn.execute("DELETE FROM locks WHERE key = ?", (key,))

    def steal(self, key: str, thief: str, ttl: float = 30.0) -> None:
        """Overwrite the key as another owner would after an expiry (bypassing the manager)."""
        if self.sqlite_path is None:
            client = redis.Redis.from_url(self.url)
            try:
                client.set(key, thief, px=int(ttl * 1000))
            finally:
                client.close()
            return
        with closing(sqlite3.connect(self.sqlite_path, isolation_level=None)) as conn:
            conn.execute(
                "UPDATE locks SET owner = ?, expires_at = ? WHERE key = ?", (thief, time.time() + ttl, key)
            )


@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Backend:
    if request.param == "redis":
        return Backend("redis", request.getfixturevalue("redis_url"))
    path = str(tmp_path / "state" / "social.db")  # parent dir does not exist yet: the manager makes it
    return Backend("sqlite", f"sqlite:///{path}", sqlite_path=path)


@pytest.fixture()
def lm(backend: Backend) -> Iterator[LockManager]:
    manager = backend.manager()
    yield manager
    manager.close()


@pytest.fixture()
def spawn() -> Iterator[Callable[..., BaseProcess]]:
    """Start spawned child processes; any still alive at teardown is killed (by its own pid)."""
    started: list[BaseProcess] = []

    def start(target: Callable[..., None], *args: Any) -> BaseProcess:
        proc = SPAWN.Process(target=target, args=args, daemon=True)
        proc.start()
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(timeout=10)
