"""The Redis connection of the lock manager and the rate limiter: one pool per process, and on it
one client per thread that keeps its own connection.

Why per thread: redis-py's pooled client takes a connection from the pool and gives it back around
every command, and in recent redis-py that (the pool's lock, its liveness probe, its metrics hooks)
costs about as much CPU as the command itself — the lock and limiter scripts are sent four times per
URL (docs/architecture.md, "Per-URL bookkeeping"). A thread that keeps one connection pays for the
command alone. The connections are bounded by the threads that talk to Redis (a run's token workers,
the lock renewer's few workers); a thread's connection goes back to the pool when the thread ends.
For the same reason a script is sent on the thread's connection itself (`run`), past the client's
command layers (its lock, its metrics, its script object): a third of each call's CPU. What those
layers do that matters is kept: the pool's retry of a dropped connection, and loading a script the
server lost (a restart, `SCRIPT FLUSH`). The command itself is written by `packed` (our scripts'
arguments are only text and numbers), not by redis-py's general packer: a quarter of what is left; and
sent and its reply read by `resp.round_trip`, past redis-py's reader layers: 40 % of what is left.

Nothing connects at construction (Dagster loads definitions where Redis may be unreachable): the
pool is made on first use, and made again in a forked child, whose sockets must not be the parent's.
A client that cannot connect is not kept, so the caller's outage handling simply asks again.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.exceptions import NoScriptError
from redis.retry import Retry

from social_recording.locks import resp
from social_recording.locks._urls import mask_url, scrub

POOL_OPTIONS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}
"""Socket timeouts of a pool made from a URL (its query arguments override them): a renewal stuck on
a dead server must fail, and the lease be given up, long before a 180 s TTL runs out."""


def packed(parts: Sequence[str | int | float]) -> bytes:
    """`parts` as one RESP command (an array of bulk strings), as redis-py's packer writes them: text
    in UTF-8, an int in decimal, a float as its `repr`. Anything else (bytes, a bool, None) is a
    caller's bug, refused with its type named rather than sent in some form."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        if isinstance(part, str):
            data = part.encode()
        elif isinstance(part, int) and not isinstance(part, bool):
            data = b"%d" % part
        elif isinstance(part, float):
            data = repr(part).encode()
        else:
            raise TypeError(f"a Redis script argument must be str, int or float, got {type(part).__name__}: {part!r}")
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _retry() -> Retry:
    """redis-py's own short retry of a command whose connection failed (a fresh one per pool)."""
    return Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries=2)


class _ProcessState:
    """What one process holds: the pool, the scripts registered on it, each thread's client."""

    def __init__(self, pool: redis.ConnectionPool, scripts: Mapping[str, str], owns_pool: bool) -> None:
        self.pid = os.getpid()
        self.pool = pool
        self.owns_pool = owns_pool
        registrar = redis.Redis(connection_pool=pool)  # only hashes the sources; sends nothing
        # name -> (sha1 the server knows it by, source to load when it does not)
        self.scripts: dict[str, tuple[str, str]] = {
            name: (registrar.register_script(src).sha, src) for name, src in scripts.items()}
        self.local = threading.local()
        self.clients: weakref.WeakSet[redis.Redis] = weakref.WeakSet()


class ThreadRedis:
    """Per-thread redis-py clients on one pool per process, with named Lua scripts.

    `source` is a `redis://`, `rediss://` or `unix://` URL (a pool is made from it in each process and
    closed by `close`), or a caller's client, whose pool is lent in the process that passed it (never
    closed here) and copied in any other."""

    def __init__(self, source: str | redis.Redis, scripts: Mapping[str, str] | None = None) -> None:
        self._source = source
        self._sources = dict(scripts or {})
        self._born_in = os.getpid()
        self._lock = threading.Lock()
        self._state: _ProcessState | None = None

    def _new_pool(self) -> tuple[redis.ConnectionPool, bool]:
        """This process's pool, and whether it is ours to close."""
        if isinstance(self._source, str):
            return redis.ConnectionPool.from_url(self._source, **{"retry": _retry(), **POOL_OPTIONS}), True
        pool = self._source.connection_pool
        if os.getpid() == self._born_in:
            return pool, False
        return type(pool)(connection_class=pool.connection_class, max_connections=pool.max_connections,
                          **pool.connection_kwargs), True

    def _process(self) -> _ProcessState:
        state = self._state
        if state is not None and state.pid == os.getpid():
            return state
        with self._lock:
            state = self._state
            if state is None or state.pid != os.getpid():
                # An inherited state (fork) is dropped without closing: its sockets are the parent's.
                pool, owns = self._new_pool()
                state = _ProcessState(pool, self._sources, owns)
                self._state = state
            return state

    def client(self) -> redis.Redis:
        """This thread's client (connects on a thread's first command; raises if Redis is down)."""
        return self._thread_client(self._process())

    @staticmethod
    def _thread_client(state: _ProcessState) -> redis.Redis:
        client: redis.Redis | None = getattr(state.local, "client", None)
        if client is None:
            client = redis.Redis(connection_pool=state.pool, single_connection_client=True)
            state.local.client = client
            state.clients.add(client)
        return client

    def run(self, script: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a registered script on this thread's connection (loaded on the server when missing).
        A connection that failed is made again and the call sent again, up to the pool's retries, as
        the client would; then the error is raised (the callers ride out an outage)."""
        state = self._process()
        sha, source = state.scripts[script]
        return self._send(state, packed(("EVALSHA", sha, len(keys), *keys, *args)), source)

    def command(self, *parts: str | int | float) -> Any:
        """One plain command (`GET`, `MGET` ...) on this thread's connection, retried as `run`."""
        return self._send(self._process(), packed(parts), None)

    def _send(self, state: _ProcessState, command: bytes, script_source: str | None) -> Any:
        conn = self._thread_client(state).connection
        assert conn is not None  # a single-connection client holds its connection from construction

        def call() -> Any:
            try:
                return resp.round_trip(conn, command)
            except NoScriptError:  # the server lost its scripts (restarted, flushed): load it, ask again
                if script_source is None:
                    raise
                conn.send_command("SCRIPT", "LOAD", script_source)
                conn.read_response()
                return resp.round_trip(conn, command)

        return conn.retry.call_with_retry(call, lambda _error: conn.disconnect())

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


def scripts_at(url: str, scripts: Mapping[str, str], *, purpose: str) -> ThreadRedis:
    """The per-thread clients of a Redis URL with `scripts`, for the rate limiter's windows and the
    spend budget's counters alike. The URL is parsed here, not connected, so a malformed one fails at
    start-up naming `purpose` with its password masked."""
    try:
        redis.connection.parse_url(url)
    except ValueError as exc:
        raise ValueError(f"invalid Redis URL {mask_url(url)} for {purpose}: {scrub(str(exc), url)}") from None
    return ThreadRedis(url, scripts)
