"""Redis lock backend (production): SET NX PX with a fencing token, Lua compare-and-extend / -delete.

redis-py's own `Lock` is not used because it gives neither a fencing token nor a lost signal from
its renewal; both are what keep a paused or cut-off holder from overwriting a newer result.

Fencing tokens come from one counter key (`FENCE_KEY`) incremented inside the acquire script, so a
token and the key it guards are taken atomically. The counter is floored at the server's clock in
microseconds: if Redis restarts without persistence and the counter is gone, the next token is still
larger than every token handed out before (as long as the server clock does not go back and fewer
than a million locks per second are taken), so the store never mistakes a new holder for a stale one.

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
from social_recording.locks.outage import OUTAGE_S, is_redis_outage

FENCE_KEY = "social-recording:fence"
"""The fencing token counter shared by every lock key (one key: nothing to expire or clean up)."""

# KEYS[1] = key, KEYS[2] = fence counter, ARGV[1] = owner, ARGV[2] = ttl in ms.
# Returns the new fencing token, or 0 when the key is held. Atomic on the server.
_ACQUIRE_LUA = """
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
local fence = redis.call('incr', KEYS[2])
local now = redis.call('time')
local floor = tonumber(now[1]) * 1000000 + tonumber(now[2])
if fence < floor then
  redis.call('set', KEYS[2], string.format('%d', floor))
  fence = floor
end
return fence
"""

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
        self.acquire = client.register_script(_ACQUIRE_LUA)
        self.extend = client.register_script(_EXTEND_LUA)
        self.release = client.register_script(_RELEASE_LUA)


class RedisLockManager(LeasingLockManager):
    """`LockManager` on Redis; `url_or_client` is a `redis://`, `rediss://` or `unix://` URL or a client.

    A URL is parsed (not connected) here, so a malformed one fails at start-up; a given client is
    used as is in this process and cloned from its pool settings in another process.
    """

    def __init__(self, url_or_client: str | redis.Redis, *, outage_s: float = OUTAGE_S) -> None:
        if not outage_s >= 0:
            raise ValueError(f"outage_s must be >= 0 seconds, got {outage_s!r}")
        self.outage_s = float(outage_s)
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
    def acquire(self, key: str, owner: str, ttl: float) -> int:
        c = self._client()
        return int(c.acquire(keys=[key, FENCE_KEY], args=[owner, _ttl_ms(ttl)], client=c.client))

    def holds(self, key: str, owner: str) -> bool:
        raw = self._client().client.get(key)
        if raw is None:
            return False
        return (raw.decode() if isinstance(raw, bytes) else str(raw)) == owner

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        c = self._client()
        return bool(c.extend(keys=[key], args=[owner, _ttl_ms(ttl)], client=c.client))

    def release(self, key: str, owner: str) -> bool:
        c = self._client()
        return bool(c.release(keys=[key], args=[owner], client=c.client))

    def describe_error(self, exc: BaseException) -> str:
        return scrub(str(exc), self._url) if self._url is not None else str(exc)

    def is_outage(self, exc: BaseException) -> bool:
        return is_redis_outage(exc)

    def backend_name(self) -> str:
        return mask_url(self._url) if self._url is not None else "Redis (a client passed in)"

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
        return {"url": self._url, "outage_s": self.outage_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], outage_s=state.get("outage_s", OUTAGE_S))  # type: ignore[misc]
