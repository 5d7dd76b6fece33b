"""The Redis connection of the lock manager and the rate limiter: one pool per process, and on it
one client per thread that keeps its own connection.

Why per thread: redis-py's pooled client takes a connection from the pool and gives it back around
every command, and in recent redis-py that (the pool's lock, its liveness probe, its metrics hooks)
costs about as much CPU as the command itself — the lock and limiter scripts are sent four times per
URL (docs/architecture.md, "Per-URL bookkeeping"). A thread that keeps one connection pays for the
command alone. The connections are bounded by the threads that talk to Redis (a run's token workers,
the lock renewer's few workers); a thread's connection goes back to the pool when the thread ends.

Nothing connects at construction (Dagster loads definitions where Redis may be unreachable): the
pool is made on first use, and made again in a forked child, whose sockets must not be the parent's.
A client that cannot connect is not kept, so the caller's outage handling simply asks again.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from redis.commands.core import Script


class _ProcessState:
    """What one process holds: the pool, the scripts registered on it, each thread's client."""

    def __init__(self, pool: redis.ConnectionPool, scripts: Mapping[str, str], owns_pool: bool) -> None:
        self.pid = os.getpid()
        self.pool = pool
        self.owns_pool = owns_pool
        registrar = redis.Redis(connection_pool=pool)  # only hashes the sources; sends nothing
        self.scripts: dict[str, Script] = {name: registrar.register_script(src) for name, src in scripts.items()}
        self.local = threading.local()
        self.clients: weakref.WeakSet[redis.Redis] = weakref.WeakSet()


class ThreadRedis:
    """Per-thread redis-py clients on one pool per process, with named Lua scripts.

    `make_pool(first)` builds the process's pool; `first` is True in the process that made this
    object (a pool passed in by the caller may be used as is there, and must be cloned elsewhere)."""

    def __init__(self, make_pool: Callable[[bool], tuple[redis.ConnectionPool, bool]],
                 scripts: Mapping[str, str] | None = None) -> None:
        self._make_pool = make_pool
        self._sources = dict(scripts or {})
        self._born_in = os.getpid()
        self._lock = threading.Lock()
        self._state: _ProcessState | None = None

    def _process(self) -> _ProcessState:
        state = self._state
        if state is not None and state.pid == os.getpid():
            return state
        with self._lock:
            state = self._state
            if state is None or state.pid != os.getpid():
                # An inherited state (fork) is dropped without closing: its sockets are the parent's.
                pool, owns = self._make_pool(os.getpid() == self._born_in)
                state = _ProcessState(pool, self._sources, owns)
                self._state = state
            return state

    def client(self) -> redis.Redis:
        """This thread's client (connects on a thread's first command; raises if Redis is down)."""
        state = self._process()
        client: redis.Redis | None = getattr(state.local, "client", None)
        if client is None:
            client = redis.Redis(connection_pool=state.pool, single_connection_client=True)
            state.local.client = client
            state.clients.add(client)
        return client

    def run(self, script: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a registered script on this thread's connection (loaded on the server when missing)."""
        state = self._process()
        return state.scripts[script](keys=list(keys), args=list(args), client=self.client())

    def close(self) -> None:
        """Give every thread's connection back and close the pool if this object made it. A later
        command opens a new pool."""
        with self._lock:
            state, self._state = self._state, None
        if state is None or state.pid != os.getpid():
            return
        for client in list(state.clients):
            client.close()
        if state.owns_pool:
            state.pool.disconnect()
