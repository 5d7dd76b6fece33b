"""The status command's spend section: today's and this month's paid requests and estimated cost per
paid billing account (the store's spend ledger), against the budgets of the settings, with what the
shared budget counted (docs/architecture.md, "Spend budgets"). Never imports Dagster; a spend that
cannot be read is reported in its section and never fails the rest of the command."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from social_recording.domain.redaction import scrub
from social_recording.domain.spend import DAY, MONTH, PERIODS, Budget
from social_recording.locks.spend_budget import open_spend_budgets
from social_recording.recording.spend_report import SpendFigures, budget_verdict
from social_recording.store import open_store

COUNTER_WAIT_S = 0.5
"""How long the command waits for a lock backend that does not answer (it reports, never waits long)."""


@dataclass(frozen=True)
class SpendSection:
    figures: SpendFigures | None
    counted: dict[str, dict[str, int]]
    """Account -> period -> paid requests the shared budget admitted (accounts with a budget)."""
    problem: str = ""

    def as_json(self) -> dict[str, Any]:
        if self.figures is None:
            return {"error": self.problem}
        f = self.figures
        return {
            "day": f.day, "month": f.month,
            "accounts": {a.account: {
                "requests": dict(a.requests), "cost_usd": {p: round(c, 6) for p, c in a.cost_usd.items()},
                "unanswered": dict(a.unanswered),
                "budget": None if a.budget is None else {p: a.budget.limit(p) for p in PERIODS},
                "counted_by_budget": self.counted.get(a.account),
            } for a in f.accounts},
            "verdict": budget_verdict(f).summary,
            **({"counter_problem": self.problem} if self.problem else {}),
        }


def read_spend(store_url: str, lock_url: str, budgets: dict[str, Budget], now: datetime) -> SpendSection:
    try:
        store = open_store(store_url)
        try:
            figures = SpendFigures.read(store, budgets, now)
        finally:
            store.close()
    except Exception as exc:
        return SpendSection(None, {}, f"cannot read the spend ledger: {type(exc).__name__}: {scrub(str(exc), store_url)}")
    counted: dict[str, dict[str, int]] = {}
    problem = ""
    if budgets:
        counter = open_spend_budgets(lock_url, budgets, outage_s=COUNTER_WAIT_S, clock=lambda: now)
        try:
            counted = {account: counter.used(account) for account in sorted(budgets)}
        except Exception as exc:
            problem = f"the shared budget could not be read: {scrub(str(exc), lock_url)}"[:300]
        finally:
            counter.close()
    return SpendSection(figures, counted, problem)


def _limit(budget: Budget | None, period: str, used: int) -> str:
    limit = None if budget is None else budget.limit(period)
    if limit is None:
        return "none"
    share = "used up" if used >= limit else f"{used / limit:.0%}" if limit else "used up"
    return f"{limit} ({share})"


def render_spend(section: SpendSection) -> str:
    if section.figures is None:
        return f"spend\n  {section.problem}"
    f = section.figures
    lines = [f"spend (UTC day {f.day}, month {f.month}; cost estimated from each provider's unit price)"]
    header = ["account", "today", "cost today", "budget/day", "month", "cost month", "budget/month"]
    rows = [[a.account, str(a.requests[DAY]), f"${a.cost_usd[DAY]:.4f}", _limit(a.budget, DAY, a.requests[DAY]),
             str(a.requests[MONTH]), f"${a.cost_usd[MONTH]:.4f}", _limit(a.budget, MONTH, a.requests[MONTH])]
            for a in f.accounts]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for cells in [header, *rows]:
        lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(cells, widths, strict=True))))
    for a in f.accounts:
        if a.unanswered.get(MONTH):
            lines.append(f"  {a.account}: {a.unanswered[DAY]} of today's requests ({a.unanswered[MONTH]} this month) "
                         "had no answer: their process died after recording the call (billed if it had left)")
    for account, used in section.counted.items():
        lines.append(f"  {account}: the shared budget counted {used[DAY]} today, {used[MONTH]} this month "
                     "(requests admitted; above the ledger's by any whose process died between the budget's "
                     "answer and the call's record: kept until the budget resets)")
    if section.problem:
        lines.append(f"  {section.problem}")
    if not any(a.budget for a in f.accounts):
        lines.append("  no spend budget set (SOCIAL_RECORDING_SPEND_BUDGETS)")
    return "\n".join(lines)
