"""Redis lock backend (production): SET NX PX with a fencing token, Lua compare-and-extend / -delete.

redis-py's own `Lock` is not used because it gives neither a fencing token nor a lost signal from
its renewal; both are what keep a paused or cut-off holder from overwriting a newer result.

Fencing tokens come from one counter key (`FENCE_KEY`) incremented inside the acquire script, so a
token and the key it guards are taken atomically. The counter is floored at the server's clock in
microseconds: if Redis restarts without persistence and the counter is gone, the next token is still
larger than every token handed out before (as long as the server clock does not go back and fewer
than a million locks per second are taken), so the store never mistakes a new holder for a stale one.

One connection pool per manager and per process, one connection per thread on it
(locks/redis_client.py): made on first use, not at construction (Dagster loads definitions where
Redis may be unreachable), and made again when the manager is used in another process (fork) —
sockets are never shared across processes. Keys are used exactly as given
(`social-record:<address>`, `social-url:<url>`, ...).
"""

from __future__ import annotations

from typing import Any

import redis

from social_recording.domain.bounds import at_least
from social_recording.locks._urls import mask_url, scrub
from social_recording.locks.extender import LeasingLockManager
from social_recording.locks.outage import OUTAGE_S, is_redis_outage
from social_recording.locks.redis_client import ThreadRedis

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

def _ttl_ms(ttl: float) -> int:
    return max(1, int(round(ttl * 1000)))


class RedisLockManager(LeasingLockManager):
    """`LockManager` on Redis; `url_or_client` is a `redis://`, `rediss://` or `unix://` URL or a client.

    A URL is parsed (not connected) here, so a malformed one fails at start-up; a given client is
    used as is in this process and cloned from its pool settings in another process.
    """

    def __init__(self, url_or_client: str | redis.Redis, *, outage_s: float = OUTAGE_S) -> None:
        self.outage_s = float(at_least("outage_s", outage_s, 0, "seconds"))
        self._url: str | None = None
        self._given: redis.Redis | None = None
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
        self._redis = ThreadRedis(url_or_client, {"acquire": _ACQUIRE_LUA, "extend": _EXTEND_LUA,
                                                  "release": _RELEASE_LUA})

    def __repr__(self) -> str:
        where = mask_url(self._url) if self._url is not None else "<client>"
        return f"RedisLockManager({where})"

    # ---- primitives ---------------------------------------------------------------------------
    def acquire(self, key: str, owner: str, ttl: float) -> int:
        return int(self._redis.run("acquire", [key, FENCE_KEY], [owner, _ttl_ms(ttl)]))

    def holds(self, key: str, owner: str) -> bool:
        raw = self._redis.command("GET", key)
        if raw is None:
            return False
        return (raw.decode() if isinstance(raw, bytes) else str(raw)) == owner

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        return bool(self._redis.run("extend", [key], [owner, _ttl_ms(ttl)]))

    def release(self, key: str, owner: str) -> bool:
        return bool(self._redis.run("release", [key], [owner]))

    def describe_error(self, exc: BaseException) -> str:
        return scrub(str(exc), self._url) if self._url is not None else str(exc)

    def is_outage(self, exc: BaseException) -> bool:
        return is_redis_outage(exc)

    def backend_name(self) -> str:
        return mask_url(self._url) if self._url is not None else "Redis (a client passed in)"

    def close(self) -> None:
        """Give back this process's connections; close the pool if we made it (a client passed in
        belongs to the caller)."""
        self._redis.close()

    # A manager built from a URL can be handed to a spawned process (pickled without its client).
    def __getstate__(self) -> dict[str, Any]:
        if self._url is None:
            raise TypeError("a RedisLockManager built from a client cannot be pickled; build it from a URL")
        return {"url": self._url, "outage_s": self.outage_s}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], outage_s=state.get("outage_s", OUTAGE_S))  # type: ignore[misc]
