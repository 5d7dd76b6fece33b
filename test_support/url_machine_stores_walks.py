"""The model's walks of the stores' bookkeeping and the budgets' edges (test_support/url_machine_stores.py):
a month budget equal to its day budget (allowed: a month's limit is at least its day's), met on the first
day and holding the next. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable

from test_support.url_machine_model import POOL, SPEND_PER_DAY, UrlRules
from test_support.url_machine_steps import Steps, recorded_live

X, X2, WEB, _, _ = POOL


def _a_month_budget_equal_to_its_day(m: UrlRules) -> list[Callable[[], object]]:
    """The operator writes each paid account's month budget equal to its day budget ("2/day;2/month"):
    the deployment takes it; two failing paid URLs called on one day use both up, and the next day the
    month's budget holds them (none sent)."""
    day = lambda: m.clock_moves(24 * 60)  # noqa: E731
    return [lambda: m.some_tokens_and_answers([[X, WEB], [X2]], {X: "5xx", X2: "5xx", WEB: "5xx"}),
            recorded_live(m, "T000"), recorded_live(m, "T001"), day, recorded_live(m, "T000"),
            recorded_live(m, "T001")]


STORE_WALKS: tuple[tuple[str, Steps, dict[str, object]], ...] = (
    ("a month's budget equal to its day's budget", _a_month_budget_equal_to_its_day,
     {"per_month": dict(SPEND_PER_DAY)}),
)
"""(name, steps, the machine's settings) of each walk."""
