"""What was spent, per paid billing account, today and this month (UTC), against its budget: read from
the store's spend ledger for the `provider_spend` asset, its check and the status command; and the
hourly reconciliation of the ledger against the URL states (docs/architecture.md, "Spend budgets").
Plain Python: no Dagster here (the status command imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from social_recording.domain.spend import DAY, MONTH, PERIODS, Budget, day_key, month_key, resets_at
from social_recording.domain.urls import Platform
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.store.base import SpendStore, SpendTotals

WARN_AT = 0.8
"""A budget used to this fraction warns; used up (1.0) it fails: the paid requests past it wait."""


@dataclass(frozen=True)
class AccountSpend:
    """One paid billing account's spend in the current UTC day and month."""

    account: str
    requests: Mapping[str, int]
    """Period (day, month) -> paid requests recorded."""
    cost_usd: Mapping[str, float]
    budget: Budget | None
    unanswered: Mapping[str, int] = field(default_factory=dict)
    """Period -> of `requests`, those whose answer never came: a holder died (or lost its URL) after
    recording the call. Billed if the request had left, which nothing on our side can tell."""

    def used(self, period: str) -> float | None:
        """The fraction of the period's budget used (None: no budget for the period)."""
        limit = None if self.budget is None else self.budget.limit(period)
        if limit is None:
            return None
        return 1.0 if limit == 0 else self.requests.get(period, 0) / limit


@dataclass(frozen=True)
class SpendFigures:
    day: str
    month: str
    accounts: tuple[AccountSpend, ...]
    resets: Mapping[str, datetime]

    @classmethod
    def read(cls, store: SpendStore, budgets: Mapping[str, Budget], now: datetime) -> SpendFigures:
        """Every paid account (with or without a budget), from this month's ledger rows."""
        day, month = day_key(now), month_key(now)
        rows = store.spend_rows(f"{month}-01")
        accounts = []
        for account in CATALOGUE.paid_accounts():
            mine = [r for r in rows if r.account == account.name]
            today = [r for r in mine if r.day == day]
            accounts.append(AccountSpend(
                account.name,
                {DAY: sum(r.requests for r in today), MONTH: sum(r.requests for r in mine)},
                {DAY: float(sum(r.cost_usd for r in today)), MONTH: float(sum(r.cost_usd for r in mine))},
                budgets.get(account.name),
                {DAY: sum(r.unanswered for r in today), MONTH: sum(r.unanswered for r in mine)},
            ))
        return cls(day, month, tuple(accounts), {p: resets_at(p, now) for p in PERIODS})


@dataclass(frozen=True)
class BudgetVerdict:
    """The check's verdict: `level` 0 pass, 1 warn (>= 80 % of a budget), 2 fail (a budget used up)."""

    level: int
    summary: str
    lines: tuple[str, ...]


def budget_verdict(figures: SpendFigures) -> BudgetVerdict:
    level, lines = 0, []
    for a in figures.accounts:
        for period in PERIODS:
            used = a.used(period)
            if used is None or used < WARN_AT:
                continue
            assert a.budget is not None
            limit = a.budget.limit(period)
            word = "used up" if used >= 1.0 else f"{used:.0%} used"
            level = max(level, 2 if used >= 1.0 else 1)
            lines.append(f"{a.account}: {a.requests[period]} of {limit} paid requests this UTC {period} ({word}; "
                         f"resets {figures.resets[period].strftime('%Y-%m-%dT%H:%MZ')})")
    if not lines:
        return BudgetVerdict(0, "every spend budget is under 80 % used (or none is set)", ())
    return BudgetVerdict(level, "; ".join(lines), tuple(lines))


def spend_drift(totals: SpendTotals) -> dict[str, tuple[int, int]]:
    """Accounts whose ledger total differs from the paid requests their URL states count: account ->
    (ledger, URL states). Both are moved by the same write, so any difference is a write interrupted
    between them (a Mongo-protocol store has no multi-document transaction) or a defect."""
    by_account: dict[str, int] = {}
    for platform, n in totals.url_states.items():
        try:
            account = CATALOGUE[Platform(platform)].account.name
        except ValueError:
            account = platform
        by_account[account] = by_account.get(account, 0) + n
    names = sorted(set(by_account) | set(totals.ledger))
    return {a: (totals.ledger.get(a, 0), by_account.get(a, 0)) for a in names
            if totals.ledger.get(a, 0) != by_account.get(a, 0)}
