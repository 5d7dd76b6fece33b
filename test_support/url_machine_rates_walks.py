"""The model's walks of our shared rate limiter (test_support/url_machine_rates.py): every documented rate
met in one instant, with its key set and without; a window's edge a tick either side; requests offered
faster than a rate; a shorter pause asked while a longer one holds, a pause past the limiter's longest
wait, and a pause's end a tick either side. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from social_recording.domain.platform import Rate
from social_recording.platforms.catalogue import CATALOGUE
from test_support.url_machine_model import TICK, UrlRules
from test_support.url_machine_rates import bound, documented
from test_support.url_machine_steps import Steps

X = "twitterapi"
"""A rate of 20 a second: its window's edge is met without a long wait."""
MANY = 600
"""A bound past this (YouTube's day, GitHub's hour with its token) is met only past GitHub's bound without it."""


def _frozen(m: UrlRules) -> Callable[[], object]:
    """A step: the clock stands still (every request of a burst in one instant) but when the limiter sleeps."""
    return lambda: setattr(m.clock, "frozen", True)


def _burst(m: UrlRules, keyed: bool, account: str, n: int) -> Callable[[], object]:
    """A step: `n` requests to `account` one after another."""
    return lambda: m.requests_leave(keyed, account, n)


def _every_documented_rate_in_one_instant(m: UrlRules) -> list[Callable[[], object]]:
    """Each account with a rate (documented, or the operator's), in the deployment without keys (and, in the
    one with every key, each whose key changes its rate) is sent its smallest bound and one more request in
    one instant: the bound leaves at once, the last waits for the window (a second's, a minute's) or is
    refused (a longer one's); a bound past `MANY`, or none (the operator's "none"), is sent 61. (On a
    server's clock, only windows of a minute or more.)"""
    steps: list[Callable[[], object]] = [_frozen(m)]
    for keyed in (False, True):
        for account in CATALOGUE.accounts():
            rates = m.held_to(account.name, keyed)
            if not (rates or documented(account, keyed)) or (keyed and rates == m.held_to(account.name, False)):
                continue  # with keys: the rates a key changes
            if m.real_time_rates and any(r.per_seconds < 60 for r in rates):
                continue
            n = min((bound(r) for r in rates), default=MANY + 1)
            steps.append(_burst(m, keyed, account.name, n + 1 if n <= MANY else 61))
    return steps


def _a_windows_edge(ticks: int) -> Steps:
    """A burst of the bound in one instant; then, a tick before, at or a tick after the moment its window
    has passed, the bound and one more: all but the last leave at once (but the first, a tick before)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        n = bound(m.held_to(X, False)[0])
        return [_frozen(m), lambda: m.requests_leave(False, X, n),
                lambda: m.clock.set(m.rate_log.sent[(False, X)][0] + timedelta(seconds=1) + ticks * TICK),
                lambda: m.requests_leave(False, X, n + 1)]
    return steps


def _faster_than_the_rate(m: UrlRules) -> list[Callable[[], object]]:
    """Requests offered one every 50 ms to a rate of 20 a second, and one a second to 60 a minute: each
    moving window holds its bound, the rest wait for room."""
    return [lambda: m.requests_leave(False, X, 45, every=timedelta(milliseconds=50)),
            lambda: m.requests_leave(True, "urlscan", 70, every=timedelta(seconds=1))]


def _a_pause_asked_in_flight(retry_afters: tuple[float, float], ticks: int) -> Steps:
    """Two requests in flight answer 429, the later one sent answering first (asking `retry_afters[1]`,
    then the other `retry_afters[0]`): another account's request leaves at once, the next one waits for
    the later end. Then a pause again: at its end (+ `ticks`) the window's bound leaves at once (but a
    tick before), and no more."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def at_the_end() -> None:
            m.clock.set(m.rate_log.paused_until[(False, X)] + ticks * TICK)
        n = bound(m.held_to(X, False)[0])
        return [_frozen(m), lambda: m.requests_leave(False, X, 1, retry_afters=retry_afters),
                lambda: m.requests_leave(False, "urlscan", 1), lambda: m.requests_leave(False, X, 1),
                lambda: m.requests_leave(False, X, 1, retry_afters=(30,)), at_the_end,
                lambda: m.requests_leave(False, X, n + 1)]
    return steps


def _a_pause_past_the_longest_wait(m: UrlRules) -> list[Callable[[], object]]:
    """A 429 asking two minutes: the next request is refused (nothing sent), and leaves once they passed."""
    return [_frozen(m), lambda: m.requests_leave(False, X, 1, retry_afters=(120,)), lambda: m.requests_leave(False, X, 1),
            lambda: m.clock.advance(timedelta(seconds=120)), lambda: m.requests_leave(False, X, 1)]


def _held_again_on_waking(m: UrlRules) -> list[Callable[[], object]]:
    """A 429 asking 40 s holds the next request; as the limiter's sleep ends another process's request is
    answered 429 asking 40 s more: the waits add up past the limiter's longest, so it is not sent."""
    return [_frozen(m), lambda: m.requests_leave(False, X, 1, retry_afters=(40,)),
            lambda: m.rate_log.at_wake.append(lambda: m.a_pause_asked_elsewhere(False, X, 40)),
            lambda: m.requests_leave(False, X, 1)]


RATE_WALKS: tuple[tuple[str, Steps], ...] = (
    ("every documented rate in one instant, with and without keys", _every_documented_rate_in_one_instant),
    *((f"a rate window's edge, {t:+d} tick", _a_windows_edge(t)) for t in (-1, 0, 1)),
    ("requests offered faster than their rate", _faster_than_the_rate),
    *((f"a shorter pause asked while a longer one holds, a pause's end {t:+d} tick",
       _a_pause_asked_in_flight((5, 30), t)) for t in (-1, 0, 1)),
    ("a longer pause asked while a shorter one holds", _a_pause_asked_in_flight((30, 5), 0)),
    ("a pause past the limiter's longest wait", _a_pause_past_the_longest_wait),
    ("a request held again as its wait ends", _held_again_on_waking),
)
"""(name, steps) of each walk."""
OVERRIDES = {X: ("10/second", (Rate(10, 1),)), "github": ("100 per hour", (Rate(100, 3600),)), "urlscan": ("none", ())}
"""The operator's rates of a walk (SOCIAL_RECORDING_RATE_LIMITS's notation), as the model reads them."""
RATE_WALKS_WITH_SETTINGS: tuple[tuple[str, Steps, dict[str, object]], ...] = (
    ("the operator's rates in one instant, with and without keys", _every_documented_rate_in_one_instant,
     {"rate_overrides": OVERRIDES}),
)
"""(name, steps, the machine's settings) of each walk that needs its own."""
