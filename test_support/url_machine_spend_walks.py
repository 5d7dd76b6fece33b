"""The model's walks of the spend report (test_support/url_machine_spend.py): paid requests a tick
before, at and a tick after the end of a UTC day, and of a UTC month that is also the year's end,
with the report read in that very instant. Listed among the model's walks
(test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable

from social_recording.domain.spend import DAY, MONTH
from test_support.engine_fakes import T0
from test_support.url_machine_model import POOL, SPEND_PER_MONTH, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, X2, WEB, _, _ = POOL


def _paid_requests_as_a_period_ends(period: str, ticks: int) -> Steps:
    """On the 30th of December (a day's end) or the 31st (the month's and the year's), one account pays
    once; at the period's end (+ `ticks`) a token holding a URL of each paid account is recorded: the
    report read then shows each request in the period of that instant (the one-step account's day
    budget of two used up before the end, half used after it; the other's day budget of one used up)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        at_the_end = Draws(lambda u: u == X, lambda new: not new, lambda a: a == "T000")
        return [lambda: m.clock.set(T0.replace(month=12, day=30 if period == DAY else 31)),
                lambda: m.some_tokens_and_answers([[X, WEB], [X2]], {}), recorded_live(m, "T001"),
                lambda: m.a_spend_period_ends_as_a_paid_url_is_recorded(period, ticks, at_the_end)]  # type: ignore[arg-type]
    return steps


SPEND_WALKS: tuple[tuple[str, Steps, dict[str, object]], ...] = tuple(
    (f"paid requests as a UTC {period} ends, {ticks:+d} tick", _paid_requests_as_a_period_ends(period, ticks),
     {} if period == DAY else {"per_month": SPEND_PER_MONTH})
    for period in (DAY, MONTH) for ticks in (-1, 0, 1))
"""(name, steps, the machine's settings) of each walk."""
