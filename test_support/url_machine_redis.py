"""The model on Redis (a real redis-server) instead of SQLite, in two variants; the store stays SQLite.

- `UrlRulesOnRedisCounters`: the spend counters (locks/spend_budget.py's `RedisSpendCounters`, its Lua
  scripts), on the walks that meet a day's or a month's budget, so "Spend budgets" is checked on both
  backends' counters (each script admits up to its limit, never one past it);
- `UrlRulesOnRedisLocks`: the lock manager (locks/redis.py's `RedisLockManager`: URL, token and job
  locks), on the walks whose holders' locks end under them or meet another holder, so "Locks and
  fencing" is checked on both backends (test_support/url_machine_locks.py);
- `UrlRulesOnRedisRates`: our shared rate limiter (locks/rate_limits.py's `RedisRateWindows`, its Lua
  scripts, timed by the server's clock), on the walk meeting every documented rate of a minute or more in
  one instant (test_support/url_machine_rates.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

import redis
from hypothesis.stateful import invariant

from social_recording.domain.spend import DAY, PERIODS
from social_recording.locks.redis import RedisLockManager
from social_recording.locks.spend_budget import KEY_PREFIX, RedisSpendCounters
from test_support.url_machine_lock_walks import LOCK_WALKS
from test_support.url_machine_locks import LockTable, RedisLockTable
from test_support.url_machine_model import UrlRules
from test_support.url_machine_walks import WALKS, Walk

BUDGET_WALKS: tuple[Walk, ...] = tuple(
    w for w in WALKS if any(word in w.name for word in ("budget", "paid request", "a day ends")))
"""The walks whose paid requests meet an account's budget or count against it."""
RATE_LIMIT_WALKS: tuple[Walk, ...] = tuple(w for w in WALKS if w.name.startswith("every documented rate"))
"""The walks whose rate windows no walk crosses in real time (the server's clock does not follow the model's)."""
LOCKING_WALKS: tuple[Walk, ...] = tuple(
    w for w in WALKS if w.name in {name for name, _ in LOCK_WALKS} or "lock" in w.name or "two holders" in w.name)
"""The walks whose holders' URL or token locks end under them, or meet another holder of the key."""


def _flushed(redis_url: str | None, variant: str) -> str:
    """`redis_url` (the variant's server, which the test sets) emptied for a new example."""
    assert redis_url is not None, f"set {variant}.redis_url to a running server"
    client = redis.Redis.from_url(redis_url)
    try:
        client.flushdb()
    finally:
        client.close()
    return redis_url


class UrlRulesOnRedisCounters(UrlRules):
    """The machine with its spend budget counted on Redis (the server at `redis_url`, flushed per example)."""

    redis_url: ClassVar[str | None] = None

    def _spend_counters(self) -> Any:
        # each example starts with no request counted
        return RedisSpendCounters(_flushed(self.redis_url, "UrlRulesOnRedisCounters"))

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.counters.inner.close()

    @invariant()
    def a_counter_lives_past_its_period(self) -> None:
        """Each counter of the current UTC day or month lives on the server at least until that period
        ends by the model's clock (docs/architecture.md, "Spend budgets": a month's count holds all month)."""
        from test_support.url_machine_model import _period_end

        assert self.redis_url is not None
        now = self.clock()
        current = {p: now.date().isoformat() if p == DAY else f"{now:%Y-%m}" for p in PERIODS}
        client = redis.Redis.from_url(self.redis_url)
        try:
            for key in client.scan_iter(match=f"{KEY_PREFIX}:*"):
                *_, period, named = key.decode().split(":")
                if current.get(period) != named:
                    continue
                left, needed = client.ttl(key), _period_end(period, now) - now
                if left < 0 or timedelta(seconds=left) < needed:
                    self.world.violations.append(f"the {period} counter {key.decode()} lives {left} s more; its "
                                                 f"{period} ends in {needed} (at {now})")
        finally:
            client.close()


class UrlRulesOnRedisLocks(UrlRules):
    """The machine with its locks on Redis (the server at `redis_url`, flushed per example)."""

    redis_url: ClassVar[str | None] = None

    def _lock_manager(self) -> Any:
        # each example starts with no key held and no fencing token handed out
        return RedisLockManager(_flushed(self.redis_url, "UrlRulesOnRedisLocks"))

    def _open_lock_table(self) -> LockTable:
        assert self.redis_url is not None
        return RedisLockTable(redis.Redis.from_url(self.redis_url))

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            if isinstance(self._lock_table, RedisLockTable):
                self._lock_table.client.close()


class UrlRulesOnRedisRates(UrlRules):
    """The machine with our rate limiter counting on Redis (the server at `redis_url`, flushed per example)."""

    redis_url: ClassVar[str | None] = None
    real_time_rates = True

    def _rates_url(self, keyed: bool) -> str:
        # each example starts with no request counted; both deployments' windows differ by their rates
        if not self.__dict__.get("_rates_flushed"):
            self._rates_flushed = True
            return _flushed(self.redis_url, "UrlRulesOnRedisRates")
        assert self.redis_url is not None
        return self.redis_url
