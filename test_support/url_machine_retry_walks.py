"""The model's walks of the retry use case (test_support/url_machine_retry.py): raw values tried once
per interval until their budget, resolved into a URL the same run records, the oldest first past a
run's limit, and a retry run built by the retry itself. Listed among the model's walks
(test_support/url_machine_walks.py), so every run meets them whatever the draws."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from test_support.url_machine_model import POOL, TICK, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, YT, TG = POOL



def _retry(m: UrlRules, interval: int, limit: int = 50) -> Callable[[], object]:
    """A default retry with `interval` minutes and `limit`, nothing interleaved."""
    return lambda: m.default_retry(interval, "none", Draws(), limit)


def _a_raw_value_fails_until_its_budget(m: UrlRules) -> list[Callable[[], object]]:
    """A raw value failed at the read: not tried again within the interval, then tried once per due
    retry (one attempt more, checked then), and dropped at the attempt that reaches the budget."""
    return [lambda: m.a_token_with_raw_values([], [("transient", "fresh", True)]),
            _retry(m, 60), lambda: m.clock_moves(61), _retry(m, 60), _retry(m, 60), _retry(m, 0)]


def _a_raw_value_resolves(m: UrlRules) -> list[Callable[[], object]]:
    """Two raw values never tried since the read: one resolves to a URL, which joins the token and is
    recorded by the same retry run; the other is gone for good."""
    return [lambda: m.a_token_with_raw_values([X], [(YT, "fresh", False), ("gone", "one try left", False)]),
            _retry(m, 60)]


def _raw_values_past_a_retrys_limit(m: UrlRules) -> list[Callable[[], object]]:
    """Raw values of two tokens, more due than a retry's limit: the longest due first, then the other."""
    return [lambda: m.a_token_with_raw_values([], [("transient", "fresh", True)]), lambda: m.clock_moves(30),
            lambda: m.a_token_with_raw_values([], [("transient", "fresh", False)]), lambda: m.clock_moves(61),
            _retry(m, 60, 1), _retry(m, 60, 1), _retry(m, 60, 1)]


def _a_raw_value_due_in_the_selections_instant(ticks: int) -> Steps:
    """A retry selects a tick before, at, or after the instant a raw value is due (its last try plus
    the retry's interval): tried from that instant on."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def at_the_boundary() -> None:
            doc = m.store.find_token("T000")
            assert doc is not None and doc.unresolved[0].checked_at is not None
            # The retry's selection reads the clock once, a tick past where it is set.
            m.clock.set(doc.unresolved[0].checked_at + timedelta(minutes=60) - TICK + ticks * TICK)
            m.default_retry(60, "none", Draws())
        return [lambda: m.a_token_with_raw_values([], [("transient", "fresh", True)]), at_the_boundary]
    return steps


def _a_retry_builds_its_own_run(interval: int) -> Steps:
    """A retry recorded without a run given backs off by its selection's interval, not the default."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[YT], [TG]], {YT: "5xx", TG: "5xx"}), recorded_live(m, "T000"),
                recorded_live(m, "T001"), lambda: m.clock_moves(61), m.the_next_retry_builds_its_own_run,
                _retry(m, interval)]
    return steps


RETRY_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a raw value fails until its budget", _a_raw_value_fails_until_its_budget),
    ("a raw value resolves", _a_raw_value_resolves),
    ("raw values past a retry's limit", _raw_values_past_a_retrys_limit),
    *((f"a raw value due in a retry's instant, {ticks:+d} tick", _a_raw_value_due_in_the_selections_instant(ticks))
      for ticks in (-1, 0, 1)),
    *((f"a retry builds its own run ({interval} min)", _a_retry_builds_its_own_run(interval)) for interval in (0, 120)),
)
"""(name, steps) of each walk."""
