"""The model's walks of test_support/url_machine_locks15.py, and of a slowly growing back-off past its
seventh failure: fences taken while the lock clock stands still or steps back; a paid URL's key run out
or taken over right before its paid request; a lease whose renewal is answered late; a paid URL recorded
with every budget written `none` while the counter is down; eight failed calls in a row under a growth
of 1.5 and a budget of nine. Listed among the model's walks (test_support/url_machine_walks.py); the
names saying "lock" are walked on Redis's locks too."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from test_support.url_machine_lease_walks import _failed_once
from test_support.url_machine_locks15 import CLOCKS, DISOWNED
from test_support.url_machine_model import POOL, DefaultCap, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, YT, TG = POOL

SLOW_GROWTH = DefaultCap(max_attempts=9, growth=1.5, cap_minutes=24 * 60)
"""A slow growth with a budget past seven calls: the waits grow 1 h, 1.5 h, ... and the eighth failure's,
1.5**7 = 17.1 h, is still below the default 24 h maximum (docs/architecture.md, "Back-off: one due time":
min(cap, base x growth^(n-1)) for every n, not only the first few)."""


def _a_slow_growth_past_the_seventh_failure(m: UrlRules) -> list[Callable[[], object]]:
    """Eight failed calls in a row, each once the URL may be called again: every wait, the eighth's
    included, is base x 1.5^(n-1), below the cap (checked at each stored due time and each call)."""
    again = lambda: m.clock_reaches_a_boundary(  # noqa: E731
        "it may be called again", 1, Draws(lambda u: u == YT, lambda new: not new, lambda a: a == "T000",  # type: ignore[arg-type]
                                           lambda before: before is False))
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "5xx"}), recorded_live(m, "T000"), *[again] * 7]


def _fences(clock: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[X], [TG]], {X: "ok", TG: "ok"}), recorded_live(m, "T000"),
                lambda: m.the_lock_clock_stands_still_or_steps_back(clock)]
    return steps


def _disowned(how: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, X),
                lambda: m.a_paid_check_meets_a_disowned_key(Draws(lambda c: c == ("T000", X)), how),  # type: ignore[arg-type]
                recorded_live(m, "T001")]
    return steps


def _late_answer(url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url),
                lambda: m.a_renewal_is_answered_late(Draws(lambda c: c == ("T000", url))),  # type: ignore[arg-type]
                recorded_live(m, "T001")]
    return steps


def _budgets_none(url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url),
                lambda: m.budgets_written_none_while_the_counter_is_down(Draws(lambda c: c == ("T000", url)))]  # type: ignore[arg-type]
    return steps


def _retried_in_the_sandbox(m: UrlRules) -> list[Callable[[], object]]:
    """A paid URL answered 5xx, then 429, then (the next UTC day: its account's day budget is two) ok, with
    the sandbox ledger kept: the paid-once check passes (two retries after a transient failure, no payment
    made twice)."""
    return [lambda: m.some_tokens_and_answers([[X], [TG]], {X: "5xx"}), m.a_sandbox_ledger_is_kept,
            recorded_live(m, "T000"), lambda: m.provider_changes(X, "429"), lambda: m.clock_moves(61),
            recorded_live(m, "T000"), lambda: m.provider_changes(X, "ok"), lambda: m.clock_moves(24 * 60),
            recorded_live(m, "T000"), m.the_paid_once_check_reads_the_ledger]


LOCKS15_WALKS: tuple[tuple[str, Steps, Mapping[str, Any]], ...] = (
    ("a slow back-off growth past the seventh failure", _a_slow_growth_past_the_seventh_failure,
     {"limits": SLOW_GROWTH}),
    *((f"fences taken while the lock clock {clock}", _fences(clock), {}) for clock in CLOCKS),
    *((f"a paid URL's lock key {how} right before its paid check", _disowned(how), {}) for how in DISOWNED),
    ("a paid URL's lock renewal answered late, then failing", _late_answer(X), {}),
    ("a free URL's lock renewal answered late, then failing", _late_answer(TG), {}),
    ("a paid URL recorded with every account written none, the counter down", _budgets_none(X), {}),
    ("a paid URL retried after transient failures, the sandbox's paid-once check", _retried_in_the_sandbox, {}),
)
"""(name, steps, the machine's settings) of each walk."""
