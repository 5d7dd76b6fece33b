"""The shared request limiter: each provider's rate held across every run and process at once.

Why here, with the locks: a provider's rate belongs to its account, which every worker process of
every run shares, so the count must live where all of them meet — the lock backend (Redis in
production, the SQLite lock file in the embedded default). A per-process or per-run limiter would
let N processes send N times the rate.

The counting is the `limits` library's moving window (`MovingWindowRateLimiter`): at most N requests
in ANY span of the window's length, so whatever the provider's own windows are (urlscan and the
sandbox reset at the full minute, others slide) none of them ever sees more than N. On Redis it is
`limits`' own storage (one Lua script per request); for SQLite, `limits` takes a custom `Storage`,
so `SqliteRateStorage` below keeps the entries in the lock file.

Each rate is aimed 10% under the documented one (`HEADROOM`): a request is counted when it leaves,
the provider counts it when it arrives, and the network (or a busy process) reorders those by a few
milliseconds; at the documented rate itself a burst near a window's edge could land as N + 1.

A provider that asks for a pause (`penalise`: a 429 with `retry-after`, urlscan's reset-after, a
spent GitHub window) holds every process until then, through the same storage. `acquire` waits at
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from limits import RateLimitItem, RateLimitItemPerSecond, parse_many
from limits.storage import MovingWindowSupport, RedisStorage, Storage
from limits.strategies import MovingWindowRateLimiter

from social_recording.locks._urls import mask_url, scrub
from social_recording.locks.base import LockBackendUnavailable
from social_recording.locks.outage import OUTAGE_S, is_redis_outage, ride_out
from social_recording.outbound.limits import PROVIDER_SERVICES, Rate, RateLimited
from social_recording.sqlite_file import connect, immediate, is_busy

log = logging.getLogger("social_recording.locks")

HEADROOM = 0.9
"""Each rate is enforced at this fraction of the documented one (at least 1 request)."""
MAX_WAIT_S = 60.0
"""The longest `acquire` holds one request; past it the request is not sent (RateLimited)."""
KEY_PREFIX = "social-recording-rate"
_PENALTY_NAMESPACE = "penalty"
_BUSY_TIMEOUT_S = 5.0
_MIN_POLL_S = 0.005


def effective_requests(rate: Rate) -> int:
    """The requests per window actually allowed: HEADROOM of the documented rate, at least 1."""
    return max(1, math.floor(rate.requests * HEADROOM))


# ------------------------------------------------------------------------------------------ storage

class SqliteRateStorage(Storage, MovingWindowSupport):
    """A `limits` storage on a SQLite file shared by every process on the machine (the lock file).

    Moving-window entries are rows (key, ts) read through their (key, ts) index; fixed-window
    counters (used for penalties) are rows with an expiry. Every change runs in `BEGIN IMMEDIATE`,
    so check-then-insert never interleaves across threads or processes. Timestamps are this
    machine's clock, which every process sharing the file reads alike."""

    STORAGE_SCHEME = None  # built directly, never from a `limits` URI

    _SCHEMA = (
        "CREATE TABLE IF NOT EXISTS rate_entries (key TEXT NOT NULL, ts REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS idx_rate_entries_key_ts ON rate_entries (key, ts)",
        "CREATE TABLE IF NOT EXISTS rate_counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL, "
        "expires_at REAL NOT NULL)",
    )

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time,
                 busy_timeout: float = _BUSY_TIMEOUT_S) -> None:
        super().__init__(None)
        raw = os.fspath(path)
        if not raw or raw == ":memory:" or raw.startswith("file:"):
            raise ValueError(f"SqliteRateStorage needs a file path shared by every process, got {raw!r}")
        self.path = os.path.abspath(raw)
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._local = threading.local()
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SqliteRateStorage({self.path!r})"

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return sqlite3.Error

    def _conn(self) -> sqlite3.Connection:
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            return held[1]
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        conn = connect(self.path, self._busy_timeout)
        with self._schema_lock:
            if not self._schema_ready:
                for stmt in self._SCHEMA:
                    conn.execute(stmt)
                self._schema_ready = True
        self._local.conn = (os.getpid(), conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with immediate(self._conn()) as conn:
            yield conn

    # ---- fixed-window counters (limits' Storage) -----------------------------------------------
    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        now = self._clock()
        with self._write() as conn:
            row = conn.execute(
                "INSERT INTO rate_counters (key, value, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET "
                "value = CASE WHEN rate_counters.expires_at <= ? THEN excluded.value "
                "ELSE rate_counters.value + excluded.value END, "
                "expires_at = CASE WHEN rate_counters.expires_at <= ? THEN excluded.expires_at "
                "ELSE rate_counters.expires_at END RETURNING value",
                (key, amount, now + expiry, now, now),
            ).fetchone()
        return int(row[0])

    def get(self, key: str) -> int:
        row = self._conn().execute(
            "SELECT value FROM rate_counters WHERE key = ? AND expires_at > ?", (key, self._clock())
        ).fetchone()
        return 0 if row is None else int(row[0])

    def get_expiry(self, key: str) -> float:
        now = self._clock()
        row = self._conn().execute(
            "SELECT expires_at FROM rate_counters WHERE key = ? AND expires_at > ?", (key, now)
        ).fetchone()
        return now if row is None else float(row[0])

    def check(self) -> bool:
        try:
            self._conn().execute("SELECT 1").fetchone()
            return True
        except sqlite3.Error:
            return False

    def reset(self) -> int | None:
        with self._write() as conn:
            n = conn.execute("DELETE FROM rate_counters").rowcount + conn.execute("DELETE FROM rate_entries").rowcount
        return int(n)

    def clear(self, key: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM rate_counters WHERE key = ?", (key,))
            conn.execute("DELETE FROM rate_entries WHERE key = ?", (key,))

    # ---- moving window (limits' MovingWindowSupport) ---------------------------------------------
    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        with self._write() as conn:
            now = self._clock()
            # The entry that would fall out of the window if `amount` more were added: while it is
            # still inside the window, the window is full (limits' own rule, as on Redis).
            row = conn.execute(
                "SELECT ts FROM rate_entries WHERE key = ? ORDER BY ts DESC LIMIT 1 OFFSET ?", (key, limit - amount)
            ).fetchone()
            if row is not None and float(row[0]) >= now - expiry:
                return False
            conn.executemany("INSERT INTO rate_entries (key, ts) VALUES (?, ?)", [(key, now)] * amount)
            conn.execute("DELETE FROM rate_entries WHERE key = ? AND ts < ?", (key, now - expiry))
        return True

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = self._clock()
        rows = self._conn().execute(
            "SELECT ts FROM rate_entries WHERE key = ? AND ts > ? ORDER BY ts DESC LIMIT ?", (key, now - expiry, limit)
        ).fetchall()
        if not rows:
            return now, 0
        return float(rows[-1][0]), len(rows)

    def close(self) -> None:
        held: tuple[int, sqlite3.Connection] | None = getattr(self._local, "conn", None)
        if held is not None and held[0] == os.getpid():
            held[1].close()
            self._local.conn = None


# ------------------------------------------------------------------------------------------ limiter

class SharedRateLimiter:
    """`outbound.limits.RequestLimiter` on a `limits` storage shared by every process.

    `rates` maps an outbound service name (e.g. "twitterapi") to the rates it must respect; a service
    without rates is only held by penalties. Thread-safe (the storage is)."""

    def __init__(
        self,
        storage: Storage,
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
        if not max_wait_s >= 0:
            raise ValueError(f"max_wait_s must be >= 0 seconds, got {max_wait_s!r}")
        if not outage_s >= 0:
            raise ValueError(f"outage_s must be >= 0 seconds, got {outage_s!r}")
        self._outage_s = outage_s
        self._is_outage = is_outage
        self._backend = backend or repr(storage)
        if not 0 < penalty_scale <= 1:
            raise ValueError(f"penalty_scale must be in (0, 1], got {penalty_scale!r}")
        self._penalty_scale = penalty_scale
        self.storage = storage
        self.rates = {service: tuple(r) for service, r in rates.items() if r}
        self._limiter = MovingWindowRateLimiter(storage)
        self._items: dict[str, tuple[RateLimitItem, ...]] = {
            service: tuple(RateLimitItemPerSecond(effective_requests(r), r.per_seconds, namespace=KEY_PREFIX)
                           for r in rs)
            for service, rs in self.rates.items()
        }
        self._penalty = RateLimitItemPerSecond(1, 1, namespace=f"{KEY_PREFIX}-{_PENALTY_NAMESPACE}")
        self._max_wait_s = max_wait_s
        self._sleep = sleep
        self._clock = clock
        self._describe = describe

    def __repr__(self) -> str:
        rates = ", ".join(f"{s}={'+'.join(map(str, r))}" for s, r in sorted(self.rates.items()))
        return f"SharedRateLimiter({self.storage!r}, {rates})"

    def acquire(self, service: str) -> None:
        items = self._items.get(service, ())
        deadline = self._clock() + self._max_wait_s
        while True:
            try:
                wait = ride_out(lambda: self._wait_needed(service, items), is_outage=self._is_outage,
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

    def _wait_needed(self, service: str, items: Sequence[RateLimitItem]) -> float:
        """0 when a request was admitted (every window took it), else the seconds to wait first."""
        now = self._clock()
        penalty = self._penalty.key_for(service)
        if self.storage.get(penalty) > 0:
            return max(_MIN_POLL_S, self.storage.get_expiry(penalty) - now)
        for item in items:
            # One atomic round trip per window in the common case. When a later window of a
            # multi-window rate refuses, the slots already taken in earlier ones stay unused until
            # they age out: capacity lost, never an excess.
            if not self._limiter.hit(item, service):
                stats = self._limiter.get_window_stats(item, service)
                return max(_MIN_POLL_S, stats.reset_time - now)
        return 0.0

    def used(self, service: str) -> list[int]:
        """Requests counted in each of `service`'s windows right now (one number per rate)."""
        return [item.amount - self._limiter.get_window_stats(item, service).remaining
                for item in self._items.get(service, ())]

    def penalise(self, service: str, retry_after_s: float) -> None:
        if not math.isfinite(retry_after_s) or retry_after_s <= 0:
            return
        retry_after_s *= self._penalty_scale
        key = self._penalty.key_for(service)
        until = self._clock() + retry_after_s
        try:
            if self.storage.get(key) > 0 and self.storage.get_expiry(key) >= until:
                return
            # Counters keep their first expiry: replace a shorter penalty with the longer one.
            self.storage.clear(key)
            self.storage.incr(key, max(1, math.ceil(retry_after_s)))
        except Exception as exc:
            log.warning("rate limiter for %s: could not record a %.1f s pause (%s: %s)", service, retry_after_s,
                        type(exc).__name__, self._describe(exc))
            return
        log.info("rate limiter: %s asked for a %.1f s pause; every process holds its requests", service, retry_after_s)

    def close(self) -> None:
        close = getattr(self.storage, "close", None)
        if callable(close):
            close()


# ------------------------------------------------------------------------------------------ settings

NO_RATE = "none"


def parse_rates(text: str) -> tuple[Rate, ...]:
    """`limits`' notation ("20/second", "60/minute;500/hour", "5000 per hour"), or "none" (no rate)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a rate must be like '20/second' or '60/minute;500/hour' or 'none', got {text!r}")
    if text.strip().lower() == NO_RATE:
        return ()
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

_REDIS_SCHEMES = {"redis": "redis", "rediss": "rediss", "unix": "redis+unix"}
_REDIS_OPTIONS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}


def open_rate_limiter(lock_url: str, rates: Mapping[str, Sequence[Rate]], **kwargs: Any) -> SharedRateLimiter:
    """The shared limiter on the lock backend named by `lock_url` (SOCIAL_RECORDING_LOCK_URL's forms:
    redis://, rediss://, unix:// or sqlite:///path). Connects lazily, on the first request."""
    if not isinstance(lock_url, str) or "://" not in lock_url:
        raise ValueError(f"the rate limiter needs the lock URL (redis://... or sqlite:///path), got {lock_url!r}")
    url = lock_url.strip()
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    storage: Storage
    is_outage: Callable[[BaseException], bool]
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) < 2:
            raise ValueError(f"a SQLite lock URL needs a file path (sqlite:///path), got {mask_url(url)!r}")
        storage = SqliteRateStorage(rest[1:])
        is_outage = is_busy
    elif scheme in _REDIS_SCHEMES:
        is_outage = is_redis_outage
        try:
            storage = RedisStorage(f"{_REDIS_SCHEMES[scheme]}://{rest}", key_prefix=KEY_PREFIX, **_REDIS_OPTIONS)
        except Exception as exc:
            raise ValueError(f"invalid Redis URL {mask_url(url)} for the rate limiter: "
                             f"{scrub(str(exc), url)}") from None
    else:
        raise ValueError(f"unsupported lock URL scheme {scheme!r} for the rate limiter ({mask_url(url)})")
    return SharedRateLimiter(storage, rates, describe=lambda exc: scrub(str(exc), url), is_outage=is_outage,
                             backend=mask_url(url), **kwargs)
