"""Redis lock backend (production; DESIGN §8): SET NX PX + Lua compare-and-extend / compare-and-delete.

One redis-py client (thread-safe connection pool) per manager and per process: the client is made
on first use, not at construction (Dagster loads definitions where Redis may be unreachable), and
made again when the manager is used in another process (fork) — sockets are never shared across
processes. Keys are used exactly as given (`social-record:<address>`, `social-url:<url>`, ...).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from social_recording.locks._urls import mask_url, scrub
from social_recording.locks.extender import LeasingLockManager

# KEYS[1] = key, ARGV[1] = owner, ARGV[2] = ttl in ms. Atomic on the server: no check-then-act gap.
_EXTEND_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE_LUA = """
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
"""

#: Socket timeouts and a short retry for clients built from a URL: an extension stuck on a dead
#: server must fail (-> lease lost) long before a 180 s TTL runs out. URL query args override them.
_URL_CLIENT_DEFAULTS: dict[str, Any] = {
    "socket_timeout": 5.0,
    "socket_connect_timeout": 5.0,
}


def _ttl_ms(ttl: float) -> int:
    return max(1, int(round(ttl * 1000)))


class _ProcessClient:
    """The client of one process, with its registered Lua scripts."""

    def __init__(self, client: redis.Redis) -> None:
        self.pid = os.getpid()
        self.client = client
        self.extend = client.register_script(_EXTEND_LUA)
        self.release = client.register_script(_RELEASE_LUA)


class RedisLockManager(LeasingLockManager):
    """`LockManager` on Redis; `url_or_client` is a `redis://`, `rediss://` or `unix://` URL or a client.

    A URL is parsed (not connected) here, so a malformed one fails at start-up; a given client is
    used as is in this process and cloned from its pool settings in another process.
    """

    def __init__(self, url_or_client: str | redis.Redis) -> None:
        self._url: str | None = None
        self._given: redis.Redis | None = None
        self._given_pid = os.getpid()
        if isinstance(url_or_client, str):
            # Validates scheme, port and query args without connecting; never echo a password.
            try:
                redis.connection.parse_url(url_or_client)
            except ValueError as exc:
                raise ValueError(
                    f"invalid Redis URL {mask_url(url_or_client)}: {scrub(str(exc), url_or_client)}"
                ) from None
            self._url = url_or_client
        elif isinstance(url_or_client, redis.Redis):
            self._given = url_or_client
        else:
            raise TypeError(f"RedisLockManager needs a Redis URL or a redis.Redis, got {type(url_or_client).__name__}")
        self._lock = threading.Lock()
        self._current: _ProcessClient | None = None

    def __repr__(self) -> str:
        where = mask_url(self._url) if self._url is not None else "<client>"
        return f"RedisLockManager({where})"

    # ---- one client per process ---------------------------------------------------------------
    def _new_client(self) -> redis.Redis:
        if self._url is not None:
            pool = redis.ConnectionPool.from_url(
                self._url,
                **{
                    "retry": Retry(ExponentialWithJitterBackoff(base=0.05, cap=0.5), retries=2),
                    **_URL_CLIENT_DEFAULTS,
                },
            )
            return redis.Redis(connection_pool=pool)
        assert self._given is not None
        if os.getpid() == self._given_pid:
            return self._given
        pool = self._given.connection_pool
        clone = type(pool)(
            connection_class=pool.connection_class,
            max_connections=pool.max_connections,
            **pool.connection_kwargs,
        )
        return redis.Redis(connection_pool=clone)

    def _client(self) -> _ProcessClient:
        current = self._current
        if current is not None and current.pid == os.getpid():
            return current
        with self._lock:
            current = self._current
            if current is None or current.pid != os.getpid():
                # An inherited client (fork) is dropped without closing: its sockets are the parent's.
                current = _ProcessClient(self._new_client())
                self._current = current
            return current

    # ---- primitives ---------------------------------------------------------------------------
    def acquire(self, key: str, owner: str, ttl: float) -> bool:
        return bool(self._client().client.set(key, owner, nx=True, px=_ttl_ms(ttl)))

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        c = self._client()
        return bool(c.extend(keys=[key], args=[owner, _ttl_ms(ttl)], client=c.client))

    def release(self, key: str, owner: str) -> bool:
        c = self._client()
        return bool(c.release(keys=[key], args=[owner], client=c.client))

    def describe_error(self, exc: BaseException) -> str:
        return scrub(str(exc), self._url) if self._url is not None else str(exc)

    def close(self) -> None:
        """Close this process's client if we made it (a client passed in belongs to the caller)."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None and current.pid == os.getpid() and current.client is not self._given:
            current.client.close()

    # A manager built from a URL can be handed to a spawned process (pickled without its client).
    def __getstate__(self) -> dict[str, Any]:
        if self._url is None:
            raise TypeError("a RedisLockManager built from a client cannot be pickled; build it from a URL")
        return {"url": self._url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])  # type: ignore[misc]
