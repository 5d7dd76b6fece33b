"""Spend budgets: an operator's ceiling on the paid requests of each billing account, per UTC day and
per UTC month, and the ledger line one recorded call adds (docs/architecture.md, "Spend budgets").

Pure: the periods, the budget's notation and its reading. The counting itself is shared by every
process and lives with the lock backend (locks/spend_budget.py); the ledger lives in the store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from social_recording.domain.models import ensure_utc

DAY = "day"
MONTH = "month"
PERIODS = (DAY, MONTH)
"""A budget's periods, both in UTC: a day starts at 00:00 UTC, a month on its first day at 00:00 UTC."""


def day_key(now: datetime) -> str:
    """The UTC day `now` falls in ("2026-12-03"): a ledger line's and a day budget's key."""
    return ensure_utc(now).date().isoformat()


def month_key(now: datetime) -> str:
    """The UTC month `now` falls in ("2026-12")."""
    return ensure_utc(now).strftime("%Y-%m")


def period_key(period: str, now: datetime) -> str:
    return day_key(now) if period == DAY else month_key(now)


def resets_at(period: str, now: datetime) -> datetime:
    """When the period `now` falls in ends: the next 00:00 UTC, or the first of the next month."""
    d = ensure_utc(now).date()
    nxt = d + timedelta(days=1) if period == DAY else date(d.year + (d.month == 12), d.month % 12 + 1, 1)
    return datetime(nxt.year, nxt.month, nxt.day, tzinfo=UTC)


def seconds_left(period: str, now: datetime) -> int:
    """Whole seconds until the period ends (at least 1): how long a period's counter must live."""
    return max(1, int((resets_at(period, now) - ensure_utc(now)).total_seconds()) + 1)


@dataclass(frozen=True)
class Budget:
    """The paid requests one billing account may send per UTC day and per UTC month (None: no bound)."""

    account: str
    per_day: int | None = None
    per_month: int | None = None

    def __post_init__(self) -> None:
        for name, value in ((DAY, self.per_day), (MONTH, self.per_month)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"budget of {self.account!r} per {name} must be an integer >= 0, got {value!r}")

    def limit(self, period: str) -> int | None:
        return self.per_day if period == DAY else self.per_month

    @property
    def bounded(self) -> bool:
        return self.per_day is not None or self.per_month is not None

    def __str__(self) -> str:
        parts = [f"{n}/{p}" for p in PERIODS if (n := self.limit(p)) is not None]
        return ";".join(parts) or "none"


@dataclass(frozen=True)
class BudgetReached:
    """Why a paid request was not sent: which budget of which account, and when it resets."""

    account: str
    period: str
    limit: int
    resets: datetime

    def __str__(self) -> str:
        return (f"the {self.account} spend budget of {self.limit} paid request(s) per UTC {self.period} is used up; "
                f"not sent, it resets at {self.resets.strftime('%Y-%m-%dT%H:%MZ')}")


@dataclass(frozen=True)
class SpendLine:
    """What one recorded call adds to the ledger: its billing account's new paid requests on one UTC
    day, and their estimated cost (the descriptor's unit price times the requests)."""

    account: str
    day: str
    requests: int
    cost_usd: float

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ValueError(f"a spend line counts at least one paid request, got {self.requests!r}")


@dataclass(frozen=True)
class SpendRow:
    """One ledger counter as stored: an account's paid requests and estimated cost on one UTC day."""

    account: str
    day: str
    requests: int
    cost_usd: float


_ITEM = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(day|month)\s*$", re.IGNORECASE)
NO_BUDGET = "none"


def parse_budget(account: str, text: str) -> Budget:
    """`"500/day"`, `"500/day;10000/month"`, `"10000 per month"` or `"none"`."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"budget for {account!r}: expected e.g. '500/day;10000/month' or 'none', got {text!r}")
    if text.strip().lower() == NO_BUDGET:
        return Budget(account)
    found: dict[str, int] = {}
    for item in text.split(";"):
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"budget for {account!r}: cannot read {item.strip()!r} in {text!r}; expected "
                             "'<paid requests>/day' and/or '<paid requests>/month', e.g. '500/day;10000/month'")
        period = m.group(2).lower()
        if period in found:
            raise ValueError(f"budget for {account!r}: {period} given twice in {text!r}")
        found[period] = int(m.group(1))
    return Budget(account, per_day=found.get(DAY), per_month=found.get(MONTH))


def parse_budgets(raw: Mapping[str, str] | None, paid_accounts: frozenset[str]) -> dict[str, Budget]:
    """Per-account budgets (account -> `parse_budget` text), account names checked against the paid
    billing accounts of the descriptors. Accounts left out have no budget (the default)."""
    out: dict[str, Budget] = {}
    for account, text in (raw or {}).items():
        if account not in paid_accounts:
            raise ValueError(f"spend budget for {account!r}, which is not a paid billing account; expected one of "
                             f"{sorted(paid_accounts)}")
        budget = parse_budget(account, text)
        if budget.bounded:
            out[account] = budget
    return out
