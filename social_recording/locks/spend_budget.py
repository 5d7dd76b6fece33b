"""The shared spend budget: each billing account's paid requests per UTC day and month, counted where
every process of every run meets — the lock backend, beside the rate limiter (docs/architecture.md,
"Spend budgets").

Why here: a budget per process or per run would let N processes spend N budgets. Checking the count
and adding the request to it is ONE atomic step — a Lua script on Redis, one `BEGIN IMMEDIATE`
transaction on SQLite — so N processes racing at the budget's edge send exactly the budget, never
one more. A request is counted when it is admitted, right before it is sent; one that a live process
then does not send (its URL lock was lost at that moment, its call could not be recorded) is given
back, in the periods it was counted in. One whose process died between the two keeps its count until
the period ends (no record names its URL): the budget errs on the side of spending less
(docs/operations.md, "Spend budgets").

The day and the month are read from an injectable clock in UTC and are part of the counter's key,
so a new period starts at zero by itself, and a process that restarts mid-day finds the day's count
where it was. A backend that does not answer is waited out for up to `outage_s` (locks/outage.py);
past that the request is not sent (`SpendCounterUnavailable`), as for the rate limits.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from social_recording.domain.models import utcnow
from social_recording.domain.spend import (
    DAY,
    MONTH,
    PERIODS,
    Budget,
    BudgetReached,
    period_key,
    resets_at,
    seconds_left,
)
from social_recording.locks._urls import mask_url
from social_recording.locks.base import LockBackendUnavailable
from social_recording.locks.outage import OUTAGE_S, ride_out
from social_recording.locks.shared_counts import counts_backend
from social_recording.sqlite_file import ThreadConnections, immediate

log = logging.getLogger("social_recording.locks")

KEY_PREFIX = "social-recording-spend"
KEEP_AFTER_PERIOD_S = 2 * 86400
"""A Redis counter outlives its period by this much (the status command reads yesterday's)."""
UNBOUNDED = -1
"""A period without a limit, as the atomic step receives it: counted, never refused."""


class SpendCounterUnavailable(ConnectionError):
    """The budget's counter could not be asked: the request is not sent (its URL is left as it was)."""


def counter_key(account: str, period: str, key: str) -> str:
    """An account's counters share the hash tag `{account}`: one script touches both on a cluster too."""
    return f"{KEY_PREFIX}:{{{account}}}:{period}:{key}"


class SpendCounters(Protocol):
    """What the budget needs of its backend; `take` is one atomic step (one round trip)."""

    def take(self, keys: tuple[str, str], limits: tuple[int, int], ttls: tuple[int, int]) -> int:
        """Count one request under both keys (day, month) unless a limit (UNBOUNDED: none) is already
        reached: 0 when counted, else 1 (the day's limit) or 2 (the month's), counting nothing."""
        ...

    def read(self, keys: tuple[str, str]) -> tuple[int, int]: ...

    def give_back(self, keys: tuple[str, str]) -> None:
        """Uncount one request under both keys (never below zero): one step, like `take`."""
        ...

    def close(self) -> None: ...


class SqliteSpendCounters:
    """The counters in the SQLite lock file shared by every process on the machine: one row per
    (account, period) key, checked and moved in one `BEGIN IMMEDIATE` transaction."""

    _SCHEMA = "CREATE TABLE IF NOT EXISTS spend_budget_counts (key TEXT PRIMARY KEY, n INTEGER NOT NULL)"

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self._conns = ThreadConnections(path, busy_timeout, owner="SqliteSpendCounters")
        self.path = self._conns.path

    def __repr__(self) -> str:
        return f"SqliteSpendCounters({self.path!r})"

    def _conn(self) -> sqlite3.Connection:
        return self._conns.get()

    def take(self, keys: tuple[str, str], limits: tuple[int, int], ttls: tuple[int, int]) -> int:
        with immediate(self._conn()) as conn:
            conn.execute(self._SCHEMA)  # here, not on connecting: a reader (the status command) writes nothing
            for i, key in enumerate(keys):
                row = conn.execute("SELECT n FROM spend_budget_counts WHERE key = ?", (key,)).fetchone()
                if limits[i] != UNBOUNDED and (0 if row is None else int(row[0])) >= limits[i]:
                    return i + 1
            conn.executemany("INSERT INTO spend_budget_counts (key, n) VALUES (?, 1) "
                             "ON CONFLICT (key) DO UPDATE SET n = n + 1", [(k,) for k in keys])
        return 0

    def give_back(self, keys: tuple[str, str]) -> None:
        with immediate(self._conn()) as conn:
            conn.execute(self._SCHEMA)
            conn.execute("UPDATE spend_budget_counts SET n = n - 1 WHERE key IN (?, ?) AND n > 0", keys)

    def read(self, keys: tuple[str, str]) -> tuple[int, int]:
        try:
            found = dict(self._conn().execute("SELECT key, n FROM spend_budget_counts WHERE key IN (?, ?)",
                                              keys).fetchall())
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
            return 0, 0  # nothing was ever counted here
        return int(found.get(keys[0], 0)), int(found.get(keys[1], 0))

    def close(self) -> None:
        self._conns.close()


# KEYS = day counter, month counter; ARGV = their limits (-1: none), then their lifetimes in seconds.
# Returns 0 after counting the request in both, else 1 or 2 (the limit reached), counting nothing.
_TAKE_LUA = """
for i = 1, 2 do
  local limit = tonumber(ARGV[i])
  if limit >= 0 and tonumber(redis.call('get', KEYS[i]) or '0') >= limit then
    return i
  end
end
for i = 1, 2 do
  redis.call('incr', KEYS[i])
  redis.call('expire', KEYS[i], tonumber(ARGV[i + 2]))
end
return 0
"""


# KEYS = day counter, month counter: each moved one down, never below zero.
_GIVE_BACK_LUA = """
for i = 1, 2 do
  if tonumber(redis.call('get', KEYS[i]) or '0') > 0 then
    redis.call('decr', KEYS[i])
  end
end
return 0
"""


class RedisSpendCounters:
    """The counters on Redis: one script per request, on the process's per-thread connections
    (locks/redis_client.py); the client is imported here, so a process on SQLite never loads it."""

    def __init__(self, url: str) -> None:
        from social_recording.locks.redis_client import scripts_at

        self._url = url
        self._redis = scripts_at(url, {"take": _TAKE_LUA, "give_back": _GIVE_BACK_LUA}, purpose="the spend budget")

    def __repr__(self) -> str:
        return f"RedisSpendCounters({mask_url(self._url)})"

    def take(self, keys: tuple[str, str], limits: tuple[int, int], ttls: tuple[int, int]) -> int:
        return int(self._redis.run("take", list(keys), [*limits, *ttls]))

    def give_back(self, keys: tuple[str, str]) -> None:
        self._redis.run("give_back", list(keys), [])

    def read(self, keys: tuple[str, str]) -> tuple[int, int]:
        day, month = self._redis.command("MGET", *keys)
        return int(day or 0), int(month or 0)

    def close(self) -> None:
        self._redis.close()


class SpendBudgets:
    """The budgets of the paid billing accounts, held across every process by `counters`.

    `take(account)` admits one new paid request (None) or says which budget is used up; an account
    without a budget is never asked about (no round trip). Thread-safe (the backends are)."""

    def __init__(
        self,
        counters: SpendCounters,
        budgets: Mapping[str, Budget],
        *,
        clock: Callable[[], datetime] = utcnow,
        outage_s: float = OUTAGE_S,
        is_outage: Callable[[BaseException], bool] = lambda exc: True,
        describe: Callable[[BaseException], str] = str,
        backend: str = "",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.counters = counters
        self.budgets = {name: b for name, b in budgets.items() if b.bounded}
        self._clock = clock
        self._outage_s = outage_s
        self._is_outage = is_outage
        self._describe = describe
        self._backend = backend or repr(counters)
        self._sleep = sleep

    def __repr__(self) -> str:
        shown = ", ".join(f"{a}={b}" for a, b in sorted(self.budgets.items()))
        return f"SpendBudgets({self._backend}, {shown or 'none'})"

    def bounds(self, account: str) -> bool:
        return account in self.budgets

    def now(self) -> datetime:
        """The budget's clock: which day and month a request taken now is counted in."""
        return self._clock()

    def take(self, account: str, at: datetime | None = None) -> BudgetReached | None:
        """Count one new paid request of `account` in the periods of `at` (default: now), or say which
        of its budgets is used up (nothing counted). Raises SpendCounterUnavailable when the counter
        cannot be asked."""
        budget = self.budgets.get(account)
        if budget is None:
            return None
        now = self._clock() if at is None else at
        day, month = (UNBOUNDED if (n := budget.limit(p)) is None else n for p in PERIODS)
        limits = (day, month)
        keys = self._keys(account, now)
        ttls = (seconds_left(DAY, now) + KEEP_AFTER_PERIOD_S, seconds_left(MONTH, now) + KEEP_AFTER_PERIOD_S)
        refused = self._ask(lambda: self.counters.take(keys, limits, ttls), f"asking the {account} spend budget")
        if not refused:
            return None
        period = PERIODS[refused - 1]
        return BudgetReached(account, period, limits[refused - 1], resets_at(period, now))

    def give_back(self, account: str, at: datetime) -> None:
        """Uncount a request `take(account, at)` counted that a live process then did not send (its
        URL lock was lost right then, or its call could not be recorded): in the periods it was
        counted in, so a give-back across midnight never frees a slot of the new day. Raises
        SpendCounterUnavailable when the counter cannot be asked (the slot then stays used)."""
        if account in self.budgets:
            self._ask(lambda: self.counters.give_back(self._keys(account, at)), f"giving back to the {account} budget")

    def used(self, account: str, now: datetime | None = None) -> dict[str, int]:
        """Paid requests counted for `account` in the current day and month."""
        day, month = self._ask(lambda: self.counters.read(self._keys(account, now or self._clock())),
                               f"reading the {account} spend budget")
        return {DAY: day, MONTH: month}

    @staticmethod
    def _keys(account: str, now: datetime) -> tuple[str, str]:
        return counter_key(account, DAY, period_key(DAY, now)), counter_key(account, MONTH, period_key(MONTH, now))

    def _ask(self, call: Callable[[], Any], what: str) -> Any:
        try:
            return ride_out(call, is_outage=self._is_outage, bound=self._outage_s, backend=self._backend, what=what,
                            describe=self._describe, sleep=self._sleep)
        except LockBackendUnavailable as exc:
            raise SpendCounterUnavailable(f"the spend budget could not be asked: {exc}") from None
        except Exception as exc:  # an error waiting does not heal: never spend blind
            raise SpendCounterUnavailable(f"the spend budget ({self._backend}) could not be asked "
                                          f"({type(exc).__name__}: {self._describe(exc)})") from None

    def close(self) -> None:
        self.counters.close()


def open_spend_budgets(lock_url: str, budgets: Mapping[str, Budget], **kwargs: Any) -> SpendBudgets:
    """The budgets on the lock backend named by `lock_url` (SOCIAL_RECORDING_LOCK_URL's forms, as the
    rate limiter's). Connects lazily, on the first request."""
    backend = counts_backend(lock_url, "the spend budget")
    counters: SpendCounters = backend.storage(SqliteSpendCounters, RedisSpendCounters)
    return SpendBudgets(counters, budgets, is_outage=backend.is_outage, describe=backend.describe,
                        backend=backend.masked, **kwargs)
