"""The model's walks of its entries (test_support/url_machine_feed.py): tokens with AF investors just
below, at and above the threshold, traded, traded again and read again by the token flow sensor; and
reconcile's window at its floor, with a live run recording one of its tokens between the window's
read and its recording. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from test_support.url_machine_feed import THRESHOLD
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Steps, recorded_live

X, _, WEB, YT, TG = POOL

AROUND = (THRESHOLD - 1, THRESHOLD, THRESHOLD + 1)
"""Investor counts below, at and above the threshold (the floor)."""


def _around(m: UrlRules) -> list[str]:
    """Three new tokens, with investors below, at and above the threshold."""
    return [m.a_token_with_investors([url], n) for url, n in zip((YT, TG, WEB), AROUND, strict=True)]


def _all_trade(m: UrlRules, tokens: list[str], minutes_ago: int) -> None:
    """Each of `tokens` trades `minutes_ago` before now."""
    for address in tokens:
        m.a_token_trades(address, minutes_ago)


def _tokens_trade_around_the_threshold(m: UrlRules) -> list[Callable[[], object]]:
    """Each token trades; the sensor hands out those at or above the threshold, once, at their trade;
    read again a minute later, nothing (their trades sit at the cursor's instant)."""
    tokens: list[str] = []
    return [lambda: m.some_tokens_and_answers([[X]], {}), lambda: tokens.extend(_around(m)),
            lambda: _all_trade(m, tokens, 20), m.the_sensor_ticks,
            lambda: m.clock_moves(1), m.the_sensor_ticks]


def _a_token_trades_again(m: UrlRules) -> list[Callable[[], object]]:
    """Tokens trade twice before a read (handed out at their latest trade), then again after it
    (handed out once more, at the new trade), and one trades in the cursor's very instant."""
    tokens: list[str] = []
    return [lambda: m.some_tokens_and_answers([[X]], {}), lambda: tokens.extend(_around(m)),
            lambda: _all_trade(m, tokens, 40), lambda: _all_trade(m, tokens, 10),
            m.the_sensor_ticks, lambda: m.clock_moves(5), lambda: m.a_token_trades(tokens[2], 2),
            lambda: m.a_token_trades(tokens[1], 30), m.the_sensor_ticks, m.the_sensor_ticks]


def _one_ticks_runs_share_a_url_that_reads_nothing(m: UrlRules) -> list[Callable[[], object]]:
    """Two tokens holding one URL that reads nothing trade together: the tick launches a run for each,
    so the second run may call it again (the run's memory of what read nothing is its own). Found by
    the model as its own false alarm: it kept that memory per operation, not per run."""
    tokens: list[str] = []
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "unreadable"}),
            lambda: tokens.extend(m.tokens), lambda: _all_trade(m, tokens, 0), m.the_sensor_ticks]


def _a_reconcile_at_the_floor(interleave: str) -> Steps:
    """Tokens below, at and above the floor, one already recorded; a reconcile at the floor records
    the others at or above it (with a live run recording one between the window's read and its
    recording, if asked)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        tokens: list[str] = []
        return [lambda: m.some_tokens_and_answers([[X], [YT]], {}), lambda: tokens.extend(_around(m)),
                lambda: tokens.extend(_around(m)),
                lambda: recorded_live(m, tokens[-1])(),
                lambda: m.reconcile_at_the_floor(interleave), lambda: m.reconcile_at_the_floor("none")]
    return steps




def _the_cap_leaves_the_rest_for_the_next_tick(m: UrlRules) -> list[Callable[[], object]]:
    """More qualifying tokens than one run takes (20), the first three traded last, in one instant:
    a tick allowed one run hands out the 20 oldest trades (not the first 20 addresses; of the three,
    the first by address), the next tick the other two at that instant; each once, none lost (tokens
    without URLs: the feed is the point)."""
    tokens: list[str] = []
    many = lambda: tokens.extend(m.a_token_with_investors([], THRESHOLD) for _ in range(22))  # noqa: E731

    def trade() -> None:
        tie = m.clock() - timedelta(minutes=10)
        for i, address in enumerate(tokens):
            m.a_token_trades(address, 50 - i, at=tie if i < 3 else None)
        m.a_token_trades(m.a_token_with_investors([], THRESHOLD - 1), 0, at=tie)

    return [lambda: m.some_tokens_and_answers([[X]], {}), many, trade,
            lambda: m.the_sensor_ticks(max_runs=1), lambda: m.clock_moves(1), lambda: m.the_sensor_ticks(max_runs=1),
            lambda: m.the_feed_handed_out_each_once(tokens), m.the_sensor_ticks]


def _the_cap_met_before_the_last_page(m: UrlRules) -> list[Callable[[], object]]:
    """Twelve hours after a tick (three pages), 20 qualifying tokens (a run's worth) traded in the first
    page, the first of them again in the second: the read stops after the page that holds the cap, so
    that token is handed out at its first trade with the 19 others; the next tick hands out its later
    trade."""
    tokens: list[str] = []

    def trade() -> None:
        tokens.extend(m.a_token_with_investors([], THRESHOLD) for _ in range(20))
        for i, address in enumerate(tokens):
            m.a_token_trades(address, 660 - i)
        m.a_token_trades(tokens[0], 180)

    return [lambda: m.some_tokens_and_answers([[X]], {}), m.the_sensor_ticks, lambda: m.clock_moves(12 * 60), trade,
            lambda: m.the_sensor_ticks(max_runs=1), lambda: m.the_sensor_ticks(max_runs=1),
            lambda: m.the_feed_handed_out_each_once(tokens[1:])]


def _an_old_cursor_leaves_the_gap_to_reconcile(m: UrlRules) -> list[Callable[[], object]]:
    """A trade older than the first read's hour is not handed out; three days without a tick, a token
    traded before the two days the feed looks back is left to reconcile (which records it), one traded
    after is handed out."""
    tokens: list[str] = []
    return [lambda: m.some_tokens_and_answers([[X]], {}), lambda: tokens.extend(_around(m)),
            lambda: m.a_token_trades(tokens[2], 120), m.the_sensor_ticks, lambda: m.clock_moves(3 * 24 * 60),
            lambda: m.a_token_trades(tokens[1], int(2.5 * 24 * 60)), lambda: m.a_token_trades(tokens[2], 24 * 60),
            m.the_sensor_ticks, lambda: m.reconcile_at_the_floor("none")]


def _a_read_out_of_time_resumes(m: UrlRules) -> list[Callable[[], object]]:
    """A day after a tick, the feed reads five pages; out of time after two, it hands out what they
    hold (a token at its trade in them, though it traded again later), then after one more page
    nothing, then the rest, from where it stopped."""
    tokens: list[str] = []
    return [lambda: m.some_tokens_and_answers([[X]], {}), lambda: tokens.extend(_around(m)), m.the_sensor_ticks,
            lambda: m.clock_moves(24 * 60), lambda: m.a_token_trades(tokens[1], 24 * 60),
            lambda: m.a_token_trades(tokens[2], 15 * 60), lambda: m.a_token_trades(tokens[1], 3 * 60),
            lambda: m.the_sensor_ticks(pages=2), lambda: m.the_sensor_ticks(pages=1), m.the_sensor_ticks,
            m.the_sensor_ticks]


FEED_LIMIT_WALKS: tuple[tuple[str, Steps], ...] = (
    ("the feed's cap leaves the rest for the next tick", _the_cap_leaves_the_rest_for_the_next_tick),
    ("the feed's cap met before the last page", _the_cap_met_before_the_last_page),
    ("an old feed cursor leaves the gap to reconcile", _an_old_cursor_leaves_the_gap_to_reconcile),
    ("a feed read out of time resumes", _a_read_out_of_time_resumes),
)
"""(name, steps) of the walks of the feed's limits."""


FEED_WALKS: tuple[tuple[str, Steps], ...] = (
    ("tokens trade around the threshold", _tokens_trade_around_the_threshold),
    ("a token trades again", _a_token_trades_again),
    ("one tick's runs share a URL that reads nothing", _one_ticks_runs_share_a_url_that_reads_nothing),
    *((f"a reconcile at the floor ({interleave})", _a_reconcile_at_the_floor(interleave))
      for interleave in ("none", "live")),
    *FEED_LIMIT_WALKS,
)
"""(name, steps) of each walk."""
