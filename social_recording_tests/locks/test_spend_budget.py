"""The shared spend budget (locks/spend_budget.py): exact across OS processes on both lock backends,
periods in UTC from an injected clock, kept across a restart, and never spent blind."""

from __future__ import annotations

import multiprocessing as mp
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from social_recording.domain.spend import (
    DAY,
    MONTH,
    Budget,
    BudgetReached,
    parse_budget,
    parse_budgets,
    resets_at,
)
from social_recording.locks.spend_budget import SpendCounterUnavailable, open_spend_budgets
from test_support.redis_server import free_port

NOW = datetime(2026, 12, 31, 23, 0, tzinfo=UTC)


class Clock:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("redis_url") if backend == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"


def test_budget_notation_and_its_errors_name_the_bad_value() -> None:
    assert parse_budget("twitterapi", "500/day;10000/month") == Budget("twitterapi", 500, 10000)
    assert parse_budget("apify", " 20 per month ") == Budget("apify", None, 20)
    assert not parse_budget("apify", "none").bounded
    with pytest.raises(ValueError, match=r"'5x/day'"):
        parse_budget("twitterapi", "5x/day")
    with pytest.raises(ValueError, match="day given twice"):
        parse_budget("twitterapi", "1/day;2/day")
    with pytest.raises(ValueError, match=r"'youtube', which is not a paid billing account"):
        parse_budgets({"youtube": "1/day"}, frozenset({"twitterapi"}))
    assert parse_budgets({"twitterapi": "none"}, frozenset({"twitterapi"})) == {}


def test_periods_reset_at_utc_midnight_and_on_the_first_of_the_month() -> None:
    assert resets_at(DAY, NOW) == datetime(2027, 1, 1, tzinfo=UTC)
    assert resets_at(MONTH, NOW) == datetime(2027, 1, 1, tzinfo=UTC)
    assert resets_at(MONTH, datetime(2026, 3, 9, 1, tzinfo=UTC)) == datetime(2026, 4, 1, tzinfo=UTC)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_day_and_month_budgets_hold_and_a_new_day_starts_at_zero(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    clock = Clock(datetime(2026, 12, 30, 22, tzinfo=UTC))
    budgets = open_spend_budgets(_url(backend, tmp_path, request), {"twitterapi": Budget("twitterapi", 2, 3)},
                                 clock=clock)
    assert [budgets.take("twitterapi") for _ in range(2)] == [None, None]
    reached = budgets.take("twitterapi")
    assert reached == BudgetReached("twitterapi", DAY, 2, datetime(2026, 12, 31, tzinfo=UTC))
    assert "twitterapi spend budget of 2 paid request(s) per UTC day" in str(reached)
    assert "resets at 2026-12-31T00:00Z" in str(reached)
    assert budgets.used("twitterapi") == {DAY: 2, MONTH: 2}  # a refusal counts nothing
    clock.now += timedelta(hours=3)  # the next UTC day, the same month
    assert budgets.take("twitterapi") is None
    month = budgets.take("twitterapi")
    assert month is not None and (month.period, month.limit) == (MONTH, 3)
    assert budgets.used("twitterapi") == {DAY: 1, MONTH: 3}
    assert budgets.take("apify") is None and not budgets.bounds("apify")  # no budget: never asked
    budgets.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_restart_mid_day_keeps_the_days_count(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url = _url(backend, tmp_path, request)
    first = open_spend_budgets(url, {"urlscan": Budget("urlscan", per_day=3)}, clock=Clock())
    assert first.take("urlscan") is None and first.take("urlscan") is None
    first.close()
    again = open_spend_budgets(url, {"urlscan": Budget("urlscan", per_day=3)}, clock=Clock())
    assert again.used("urlscan")[DAY] == 2
    assert again.take("urlscan") is None
    assert again.take("urlscan") is not None
    again.close()


def test_a_counter_that_cannot_be_asked_sends_nothing() -> None:
    budgets = open_spend_budgets(f"redis://127.0.0.1:{free_port()}/0", {"apify": Budget("apify", per_day=5)},
                                 outage_s=0.2)
    with pytest.raises(SpendCounterUnavailable, match="could not be asked"):
        budgets.take("apify")
    budgets.close()


# ------------------------------------------------------------------ across OS processes, both backends

def _race(lock_url: str, tries: int, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    budgets = open_spend_budgets(lock_url, {"twitterapi": Budget("twitterapi", per_day=25)})
    while time.time() < start_at:
        time.sleep(0.001)
    out.put(sum(budgets.take("twitterapi") is None for _ in range(tries)))
    budgets.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_processes_racing_at_the_edge_send_exactly_the_budget(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    lock_url = _url(backend, tmp_path, request)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 3.0
    procs = [ctx.Process(target=_race, args=(lock_url, 12, start_at, out)) for _ in range(4)]
    for p in procs:
        p.start()
    admitted = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert sum(admitted) == 25  # 48 tries for 25 slots: exactly the budget, never one more
    reader = open_spend_budgets(lock_url, {})
    assert reader.used("twitterapi")[DAY] == 25
    reader.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_slot_given_back_is_free_again_in_the_periods_it_was_taken_in(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    clock = Clock(datetime(2026, 12, 30, 23, 59, tzinfo=UTC))
    budgets = open_spend_budgets(_url(backend, tmp_path, request), {"apify": Budget("apify", 2, 10)}, clock=clock)
    before_midnight = budgets.now()
    assert budgets.take("apify", before_midnight) is None and budgets.take("apify") is None
    assert budgets.take("apify") is not None  # the day's 2 are used
    budgets.give_back("apify", before_midnight)
    assert budgets.used("apify") == {DAY: 1, MONTH: 1}
    assert budgets.take("apify") is None  # the slot given back is taken again
    clock.now += timedelta(minutes=2)  # the next UTC day: a slot taken yesterday is given back to yesterday
    assert budgets.take("apify") is None
    budgets.give_back("apify", before_midnight)
    assert budgets.used("apify") == {DAY: 1, MONTH: 2}
    assert budgets.used("apify", before_midnight)[DAY] == 1
    for _ in range(3):  # never below zero
        budgets.give_back("apify", before_midnight)
    assert budgets.used("apify", before_midnight) == {DAY: 0, MONTH: 0}
    budgets.give_back("twitterapi", before_midnight)  # no budget: nothing to give back, never asked
    budgets.close()
