"""The shared request limiter: each provider's rate held across every run and process at once.

Why here, with the locks: a provider's rate belongs to its account, which every worker process of
every run shares, so the count must live where all of them meet — the lock backend (Redis in
production, the SQLite lock file in the embedded default). A per-process or per-run limiter would
let N processes send N times the rate.

The counting is a moving window per rate: at most N requests in ANY span of the window's length,
so whatever the provider's own windows are (urlscan and the sandbox reset at the full minute, others
slide) none of them ever sees more than N. Each window keeps the times of its last N admitted
requests; a request is admitted when the oldest of them has left the window.

One round trip per request (docs/architecture.md, "Provider concurrency and rates"): the pause a
provider asked for and every window of the service are checked, and the request counted in all of
them, in ONE atomic step — a Lua script on Redis (timed by the server's clock, which every host
shares), one `BEGIN IMMEDIATE` transaction on SQLite. A request refused by one window therefore
takes no slot in another.

Each rate is aimed 10% under the documented one (`HEADROOM`): a request is counted when it leaves,
the provider counts it when it arrives, and the network (or a busy process) reorders those by a few
milliseconds; at the documented rate itself a burst near a window's edge could land as N + 1.

A provider that asks for a pause (`penalise`: a 429 with `retry-after`, urlscan's reset-after, a
spent GitHub window) holds every process until then, through the same backend. `acquire` waits at
most `max_wait_s`; a longer wait (an hour or day quota spent) raises `RateLimited` instead, so the
URL is recorded as a transient error and retried after its back-off rather than holding a worker.

A storage that does not answer (the lock server restarting) is waited out for up to `outage_s`
(locks/outage.py): the request waits, it is neither sent blind nor refused. Past the bound it is not
sent (`RateLimited(unavailable=True)`, naming the backend) and its URL keeps its state.
"""

from __future__ import annotations

import logging
import math
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from social_recording.domain.bounds import at_least
from social_recording.locks._urls import mask_url
from social_recording.locks.base import LockBackendUnavailable
from social_recording.locks.outage import OUTAGE_S, ride_out
from social_recording.locks.shared_counts import counts_backend
from social_recording.outbound.limits import PROVIDER_SERVICES, Rate, RateLimited
from social_recording.sqlite_file import ThreadConnections, immediate

log = logging.getLogger("social_recording.locks")

HEADROOM = 0.9
"""Each rate is enforced at this fraction of the documented one (at least 1 request)."""
MAX_WAIT_S = 60.0
"""The longest `acquire` holds one request; past it the request is not sent (RateLimited)."""
KEY_PREFIX = "social-recording-rate"
_BUSY_TIMEOUT_S = 5.0
_MIN_POLL_S = 0.005


def effective_requests(rate: Rate) -> int:
    """The requests per window actually allowed: HEADROOM of the documented rate, at least 1."""
    return max(1, math.floor(rate.requests * HEADROOM))


@dataclass(frozen=True)
class Window:
    """One moving window as enforced: at most `requests` in any `seconds`."""

    requests: int
    seconds: float

    @classmethod
    def of(cls, rate: Rate) -> Window:
        return cls(effective_requests(rate), float(rate.per_seconds))

    def key(self, service: str) -> str:
        return f"{KEY_PREFIX}:{{{service}}}:{self.requests}/{self.seconds:g}s"


def pause_key(service: str) -> str:
    """A service's keys share the hash tag `{service}`: one script may touch them all on a cluster too."""
    return f"{KEY_PREFIX}:{{{service}}}:pause"


class RateWindows(Protocol):
    """What the limiter needs of its backend; each method is one atomic step (one round trip)."""

    def admit(self, service: str, windows: Sequence[Window]) -> float:
        """0 after counting one request in every window, when the service is not paused and every
        window has room; otherwise, counting nothing, the seconds until it may be admitted."""
        ...

    def pause(self, service: str, seconds: float) -> None:
        """Hold `service` for `seconds` from now, unless it is already held longer."""
        ...

    def counts(self, service: str, windows: Sequence[Window]) -> list[int]:
        """Requests counted in each window right now."""
        ...

    def close(self) -> None: ...


# ------------------------------------------------------------------------------------------ SQLite

class SqliteRateWindows:
    """The windows in a SQLite file shared by every process on the machine (the lock file).

    A window's admitted requests are rows (key, ts) read through their (key, ts) index; a pause is a
    row with its end. `admit` is one `BEGIN IMMEDIATE` transaction, so check-then-insert never
    interleaves across threads or processes. Timestamps are this machine's clock, which every process
    sharing the file reads alike."""

    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS rate_entries (key TEXT NOT NULL, ts REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS idx_rate_entries_key_ts ON rate_entries (key, ts)",
        "CREATE TABLE IF NOT EXISTS rate_pauses (key TEXT PRIMARY KEY, until REAL NOT NULL)",
    )

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = _BUSY_TIMEOUT_S) -> None:
        self._conns = ThreadConnections(path, busy_timeout, owner="SqliteRateWindows", prepare=self._make_schema)
        self.path = self._conns.path
        self._clock = clock
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SqliteRateWindows({self.path!r})"

    def _make_schema(self, conn: sqlite3.Connection) -> None:
        with self._schema_lock:
            if not self._schema_ready:
                for stmt in self._SCHEMA:
                    conn.execute(stmt)
                self._schema_ready = True

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()

    def admit(self, service: str, windows: Sequence[Window]) -> float:
        with immediate(self._conn()) as conn:
            now = self._clock()
            row = conn.execute("SELECT until FROM rate_pauses WHERE key = ?", (pause_key(service),)).fetchone()
            if row is not None and float(row[0]) > now:
                return float(row[0]) - now
            for w in windows:
                # The oldest of the last `requests` entries: while it is inside the window, it is full.
                oldest = conn.execute("SELECT ts FROM rate_entries WHERE key = ? ORDER BY ts DESC LIMIT 1 OFFSET ?",
                                      (w.key(service), w.requests - 1)).fetchone()
                if oldest is not None and float(oldest[0]) > now - w.seconds:
                    return float(oldest[0]) + w.seconds - now
            for w in windows:
                conn.execute("INSERT INTO rate_entries (key, ts) VALUES (?, ?)", (w.key(service), now))
                conn.execute("DELETE FROM rate_entries WHERE key = ? AND ts <= ?", (w.key(service), now - w.seconds))
        return 0.0

    def pause(self, service: str, seconds: float) -> None:
        with immediate(self._conn()) as conn:
            until = self._clock() + seconds
            conn.execute("INSERT INTO rate_pauses (key, until) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET "
                         "until = max(rate_pauses.until, excluded.until)", (pause_key(service), until))

    def counts(self, service: str, windows: Sequence[Window]) -> list[int]:
        now = self._clock()
        conn = self._conn()
        return [int(conn.execute("SELECT count(*) FROM rate_entries WHERE key = ? AND ts > ?",
                                 (w.key(service), now - w.seconds)).fetchone()[0]) for w in windows]

    def close(self) -> None:
        self._conns.close()


# ------------------------------------------------------------------------------------------ Redis

# KEYS[1] = the pause key, KEYS[2..] = one list per window (newest admitted time first);
# ARGV[2i-1], ARGV[2i] = requests, seconds of window i. Times are the server's, in seconds.
# Returns "0" after counting the request in every window, else the seconds to wait (nothing counted).
_ADMIT_LUA = """
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local paused = tonumber(redis.call('get', KEYS[1]) or '0')
if paused > now then
  return tostring(paused - now)
end
for i = 2, #KEYS do
  local requests = tonumber(ARGV[2 * i - 3])
  local seconds = tonumber(ARGV[2 * i - 2])
  local oldest = redis.call('lindex', KEYS[i], requests - 1)
  if oldest and tonumber(oldest) > now - seconds then
    return tostring(tonumber(oldest) + seconds - now)
  end
end
local stamp = string.format('%.6f', now)
for i = 2, #KEYS do
  local requests = tonumber(ARGV[2 * i - 3])
  local seconds = tonumber(ARGV[2 * i - 2])
  redis.call('lpush', KEYS[i], stamp)
  redis.call('ltrim', KEYS[i], 0, requests - 1)
  redis.call('pexpire', KEYS[i], math.ceil(seconds * 1000))
end
return '0'
"""

# KEYS[1] = the pause key, ARGV[1] = seconds. Keeps the longer of the current and the new pause.
_PAUSE_LUA = """
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local untl = now + tonumber(ARGV[1])
local current = tonumber(redis.call('get', KEYS[1]) or '0')
if current < untl then
  redis.call('set', KEYS[1], string.format('%.6f', untl), 'PX', math.ceil(tonumber(ARGV[1]) * 1000))
end
return 1
"""

# KEYS = one list per window; ARGV[i] = seconds of window i. Admitted requests still in each window.
_COUNTS_LUA = """
local t = redis.call('time')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local out = {}
for i = 1, #KEYS do
  local n = 0
  for _, stamp in ipairs(redis.call('lrange', KEYS[i], 0, -1)) do
    if tonumber(stamp) > now - tonumber(ARGV[i]) then n = n + 1 end
  end
  out[i] = n
end
return out
"""


class RedisRateWindows:
    """The windows on Redis: one script per request, on the process's pool with one connection per
    thread (locks/redis_client.py), made on first use (nothing connects at start-up) and made again
    after a fork. The Redis client is imported here, not at the module's top: a process on SQLite
    never imports it."""

    def __init__(self, url: str) -> None:
        from social_recording.locks.redis_client import scripts_at

        self._url = url
        self._redis = scripts_at(url, {"admit": _ADMIT_LUA, "pause": _PAUSE_LUA, "counts": _COUNTS_LUA},
                                 purpose="the rate limiter")

    def __repr__(self) -> str:
        return f"RedisRateWindows({mask_url(self._url)})"

    def admit(self, service: str, windows: Sequence[Window]) -> float:
        args: list[float] = []
        for w in windows:
            args += [w.requests, w.seconds]
        return float(self._redis.run("admit", [pause_key(service), *(w.key(service) for w in windows)], args))

    def pause(self, service: str, seconds: float) -> None:
        self._redis.run("pause", [pause_key(service)], [seconds])

    def counts(self, service: str, windows: Sequence[Window]) -> list[int]:
        if not windows:
            return []
        return [int(n) for n in self._redis.run("counts", [w.key(service) for w in windows],
                                                 [w.seconds for w in windows])]

    def close(self) -> None:
        self._redis.close()


# ------------------------------------------------------------------------------------------ limiter

class SharedRateLimiter:
    """`outbound.limits.RequestLimiter` on windows shared by every process.

    `rates` maps an outbound service name (e.g. "twitterapi") to the rates it must respect; a service
    without rates is only held by pauses. Thread-safe (the backends are). One round trip per
    request that is admitted at once."""

    def __init__(
        self,
        storage: RateWindows,
        rates: Mapping[str, Sequence[Rate]],
        *,
        max_wait_s: float = MAX_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        describe: Callable[[BaseException], str] = str,
        penalty_scale: float = 1.0,
        outage_s: float = OUTAGE_S,
        is_outage: Callable[[BaseException], bool] = lambda exc: True,
        backend: str = "",
    ) -> None:
        """`penalty_scale` multiplies the pauses providers ask for: the sandbox's answers name waits
        that mean nothing in its compressed time (its own rate windows are real and never scaled).
        `outage_s` bounds how long a storage that does not answer (`is_outage`) is waited out;
        `backend` names it in errors (credentials masked)."""
        self._outage_s = at_least("outage_s", outage_s, 0, "seconds")
        self._is_outage = is_outage
        self._backend = backend or repr(storage)
        if not 0 < penalty_scale <= 1:
            raise ValueError(f"penalty_scale must be in (0, 1], got {penalty_scale!r}")
        self._penalty_scale = penalty_scale
        self.storage = storage
        self.rates = {service: tuple(r) for service, r in rates.items() if r}
        self._windows: dict[str, tuple[Window, ...]] = {
            service: tuple(Window.of(r) for r in rs) for service, rs in self.rates.items()
        }
        self._max_wait_s = at_least("max_wait_s", max_wait_s, 0, "seconds")
        self._sleep = sleep
        self._clock = clock
        self._describe = describe

    def __repr__(self) -> str:
        rates = ", ".join(f"{s}={'+'.join(map(str, r))}" for s, r in sorted(self.rates.items()))
        return f"SharedRateLimiter({self.storage!r}, {rates})"

    def acquire(self, service: str) -> None:
        windows = self._windows.get(service, ())
        deadline = self._clock() + self._max_wait_s
        while True:
            try:
                wait = ride_out(lambda: self.storage.admit(service, windows), is_outage=self._is_outage,
                                bound=self._outage_s, backend=self._backend, what=f"asking the rate of {service}",
                                describe=self._describe, sleep=self._sleep, clock=self._clock)
            except LockBackendUnavailable as exc:  # waited out the bound: do not send blind
                log.warning("rate limiter for %s unavailable (%s); request not sent", service, exc)
                raise RateLimited(service, f"the shared rate limiter could not be asked: {exc}",
                                  unavailable=True) from None
            except Exception as exc:  # an error waiting does not heal: do not send blind either
                log.warning("rate limiter for %s unavailable (%s: %s); request not sent", service,
                            type(exc).__name__, self._describe(exc))
                raise RateLimited(service, f"the shared rate limiter ({self._backend}) could not be asked "
                                           f"({type(exc).__name__})", unavailable=True) from None
            if wait <= 0:
                return
            if self._clock() + wait > deadline:
                raise RateLimited(service, f"its rate would hold this request {wait:.1f} s more "
                                           f"(the limiter waits at most {self._max_wait_s:g} s)")
            # Jitter spreads processes released by the same window edge.
            self._sleep(max(_MIN_POLL_S, wait) * random.uniform(1.0, 1.2))

    def used(self, service: str) -> list[int]:
        """Requests counted in each of `service`'s windows right now (one number per rate)."""
        return self.storage.counts(service, self._windows.get(service, ()))

    def penalise(self, service: str, retry_after_s: float) -> None:
        if not math.isfinite(retry_after_s) or retry_after_s <= 0:
            return
        retry_after_s *= self._penalty_scale
        try:
            self.storage.pause(service, retry_after_s)
        except Exception as exc:
            log.warning("rate limiter for %s: could not record a %.1f s pause (%s: %s)", service, retry_after_s,
                        type(exc).__name__, self._describe(exc))
            return
        log.info("rate limiter: %s asked for a %.1f s pause; every process holds its requests", service, retry_after_s)

    def close(self) -> None:
        self.storage.close()


# ------------------------------------------------------------------------------------------ settings

NO_RATE = "none"


def parse_rates(text: str) -> tuple[Rate, ...]:
    """`limits`' notation ("20/second", "60/minute;500/hour", "5000 per hour"), or "none" (no rate)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a rate must be like '20/second' or '60/minute;500/hour' or 'none', got {text!r}")
    if text.strip().lower() == NO_RATE:
        return ()
    from limits import parse_many  # only where a rate is written down

    try:
        items = parse_many(text)
    except ValueError:
        raise ValueError(f"cannot read the rate {text!r}: expected e.g. '20/second' or '60/minute;500/hour' "
                         "or 'none'") from None
    return tuple(Rate(item.amount, item.get_expiry()) for item in items)


def parse_rate_overrides(raw: Mapping[str, str] | None) -> dict[str, tuple[Rate, ...]]:
    """Per-service rate overrides (service -> `parse_rates` text), service names checked."""
    out: dict[str, tuple[Rate, ...]] = {}
    for service, text in (raw or {}).items():
        if service not in PROVIDER_SERVICES:
            raise ValueError(f"rate for unknown service {service!r}; expected one of {sorted(PROVIDER_SERVICES)}")
        try:
            out[service] = parse_rates(text)
        except ValueError as exc:
            raise ValueError(f"rate for {service!r}: {exc}") from None
    return out


# ------------------------------------------------------------------------------------------ opening


def open_rate_limiter(lock_url: str, rates: Mapping[str, Sequence[Rate]], **kwargs: Any) -> SharedRateLimiter:
    """The shared limiter on the lock backend named by `lock_url` (SOCIAL_RECORDING_LOCK_URL's forms:
    redis://, rediss://, unix:// or sqlite:///path). Connects lazily, on the first request. A `clock`
    given (a test's) times the SQLite windows too, so one clock moves both; Redis's are its server's."""
    backend = counts_backend(lock_url, "the rate limiter")
    clock = kwargs.get("clock", time.time)
    storage: RateWindows = backend.storage(lambda path: SqliteRateWindows(path, clock=clock), RedisRateWindows)
    return SharedRateLimiter(storage, rates, describe=backend.describe, is_outage=backend.is_outage,
                             backend=backend.masked, **kwargs)
