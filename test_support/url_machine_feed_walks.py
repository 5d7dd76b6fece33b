"""The model's walks of its entries (test_support/url_machine_feed.py): tokens with AF investors just
below, at and above the threshold, traded, traded again and read again by the token flow sensor; and
reconcile's window at its floor, with a live run recording one of its tokens between the window's
read and its recording. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable

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


FEED_WALKS: tuple[tuple[str, Steps], ...] = (
    ("tokens trade around the threshold", _tokens_trade_around_the_threshold),
    ("a token trades again", _a_token_trades_again),
    *((f"a reconcile at the floor ({interleave})", _a_reconcile_at_the_floor(interleave))
      for interleave in ("none", "live")),
)
"""(name, steps) of each walk."""
