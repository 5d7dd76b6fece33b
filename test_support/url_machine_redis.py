"""The model on the Redis spend counters (locks/spend_budget.py's `RedisSpendCounters`, its Lua
scripts on a real redis-server) instead of SQLite's: the walks that meet a day's or a month's budget,
so "Spend budgets" is checked on both backends' counters (each script admits up to its limit, never
one past it). The store stays SQLite; only the counters move."""

from __future__ import annotations

from typing import Any, ClassVar

import redis

from social_recording.locks.spend_budget import RedisSpendCounters
from test_support.url_machine_model import UrlRules
from test_support.url_machine_walks import WALKS, Walk

BUDGET_WALKS: tuple[Walk, ...] = tuple(
    w for w in WALKS if any(word in w.name for word in ("budget", "paid request", "a day ends")))
"""The walks whose paid requests meet an account's budget or count against it."""


class UrlRulesOnRedisCounters(UrlRules):
    """The machine with its spend budget counted on Redis (the server at `redis_url`, flushed per example)."""

    redis_url: ClassVar[str | None] = None

    def _spend_counters(self) -> Any:
        assert self.redis_url is not None, "set UrlRulesOnRedisCounters.redis_url to a running server"
        client = redis.Redis.from_url(self.redis_url)
        try:
            client.flushdb()  # each example starts with no request counted
        finally:
            client.close()
        return RedisSpendCounters(self.redis_url)

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.counters.inner.close()
