"""The model-based test of the per-URL rules (the machine: test_support/url_machine_model.py): on the
SQLite store with the CI sizes, on the Mongo store's code over mongomock, and over the wire (docs/architecture.md, "The
per-URL state machine")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from test_support.mongo_server import MongoServer
from test_support.url_machine_model import (
    MONGO_EXAMPLES,
    UrlRules,
    UrlRulesFourAttempts,
    UrlRulesOnMongo,
    UrlRulesOnMongomock,
    UrlRulesWithDefaults,
)
from test_support.url_machine_redis import (
    BUDGET_WALKS,
    LOCKING_WALKS,
    RATE_LIMIT_WALKS,
    UrlRulesOnRedisCounters,
    UrlRulesOnRedisLocks,
    UrlRulesOnRedisRates,
)
from test_support.url_machine_walks import WALKS, Walk

pytestmark = pytest.mark.heavy


class TestUrlRulesWalks:
    """The model's explicit examples (test_support/url_machine_walks.py): every boundary of the tables,
    and a tick either side, met on every run whatever the draws; run with the model, mutants included."""

    @pytest.mark.parametrize("walk", WALKS, ids=lambda w: w.name)
    def test_the_walk_holds(self, walk: Walk) -> None:
        walk.run()


class TestUrlRulesOnMongomockWalks:
    """The same walks on the Mongo store's code over mongomock (its own fences and fields)."""

    @pytest.mark.parametrize("walk", WALKS, ids=lambda w: w.name)
    def test_the_walk_holds(self, walk: Walk) -> None:
        walk.run(UrlRulesOnMongomock)


def _walk_on_redis(walk: Walk, machine: Any, redis_url: str) -> None:
    """`walk` on a Redis variant of the machine, pointed at the test's server for this walk only."""
    machine.redis_url = redis_url
    try:
        walk.run(machine)
    finally:
        machine.redis_url = None


class TestUrlRulesOnRedisLocksWalks:
    """The walks whose holders' locks end under them or meet another holder, on Redis's lock manager
    (before the drawn examples: a mutant of the Redis backend dies without waiting for them)."""

    @pytest.mark.parametrize("walk", LOCKING_WALKS, ids=lambda w: w.name)
    def test_the_walk_holds(self, walk: Walk, redis_url: str) -> None:
        _walk_on_redis(walk, UrlRulesOnRedisLocks, redis_url)


def test_some_walks_meet_a_spend_budget() -> None:
    """The Redis variant's walks are picked by name: a rename must not leave it with none to run."""
    assert BUDGET_WALKS, "no walk's name says it meets a budget"


class TestUrlRulesOnRedisCountersWalks:
    """The walks meeting a spend budget, with the budget counted by the Redis scripts (a real server);
    before the drawn examples, as the lock walks are."""

    @pytest.mark.parametrize("walk", BUDGET_WALKS, ids=lambda w: w.name)
    def test_the_walk_holds(self, walk: Walk, redis_url: str) -> None:
        _walk_on_redis(walk, UrlRulesOnRedisCounters, redis_url)


class TestUrlRulesOnRedisRatesWalks:
    """The walk meeting every documented rate in one instant, with our rate limiter on Redis's scripts;
    before the drawn examples, as the lock walks are."""

    @pytest.mark.parametrize("walk", RATE_LIMIT_WALKS, ids=lambda w: w.name)
    def test_the_walk_holds(self, walk: Walk, redis_url: str) -> None:
        _walk_on_redis(walk, UrlRulesOnRedisRates, redis_url)


TestUrlRules = UrlRules.TestCase
TestUrlRulesOnMongomock = UrlRulesOnMongomock.TestCase
TestUrlRulesFourAttempts = UrlRulesFourAttempts.TestCase
TestUrlRulesWithDefaults = UrlRulesWithDefaults.TestCase


@pytest.mark.mongo_server
def test_the_url_rules_hold_on_the_mongo_store(mongo_server: MongoServer) -> None:
    UrlRulesOnMongo.server = mongo_server
    try:
        run_state_machine_as_test(UrlRulesOnMongo, settings=settings(
            UrlRules.TestCase.settings, max_examples=MONGO_EXAMPLES,
            suppress_health_check=[*HealthCheck],
        ))
    finally:
        UrlRulesOnMongo.server = None
