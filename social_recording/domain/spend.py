"""Spend budgets: an operator's ceiling on the paid requests of each billing account, per UTC day and
per UTC month, and the ledger line one recorded call adds (docs/architecture.md, "Spend budgets").

Pure: the periods, the budget's notation and its reading. The counting itself is shared by every
process and lives with the lock backend (locks/spend_budget.py); the ledger lives in the store.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from social_recording.domain.models import OpenCall, ensure_utc

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
    unanswered: int = 0
    """Of `requests`, those whose answer never came (`unanswered_lines`)."""

    def __post_init__(self) -> None:
        if self.requests < 1:
            raise ValueError(f"a spend line counts at least one paid request, got {self.requests!r}")
        if not 0 <= self.unanswered <= self.requests:
            raise ValueError(f"a spend line's unanswered requests are 0 to {self.requests}, got {self.unanswered!r}")


def unanswered_lines(stored: OpenCall | None, fence: int, kept: OpenCall | None) -> list[SpendLine]:
    """The ledger lines of paid calls whose answer never came: a fenced write of the URL state with
    `fence` that removes (clears, or writes another over) open calls of holders of a LOWER fence
    enters each as spent, every request it recorded (`OpenCall.requests`), on the day it left, at its
    price. A call is removed when it is in the `stored` record (with the ones it replaced,
    `OpenCall.chain`) and not in the `kept` one: a record written over a timed-out call keeps it, to be
    entered when the record itself goes. Its own
    holder can no longer enter it: its result write is refused by the larger fence from now on. Whether
    the request reached the provider before its holder died nobody on our side can tell, so it counts
    as billed, the side the budget errs on too; a poll of a request already paid for is no new spending
    and is not entered (docs/architecture.md, "Spend budgets")."""
    if stored is None:
        return []
    still = set(kept.chain()) if kept is not None else set()
    return [SpendLine(call.provider, day_key(call.started_at), call.requests, call.requests * call.unit_price_usd,
                      unanswered=call.requests)
            for call in stored.chain() if call.fence < fence and call not in still and call.new_spending]


@dataclass(frozen=True)
class SpendRow:
    """One ledger counter as stored: an account's paid requests and estimated cost on one UTC day."""

    account: str
    day: str
    requests: int
    cost_usd: float
    unanswered: int = 0
    """Of `requests`, those entered from calls whose answer never came (`unanswered_lines`)."""


_ITEM = re.compile(r"^\s*(\d+)\s*(?:/|per)\s*(day|month)\s*$", re.IGNORECASE)
NO_BUDGET = "none"
MAX_DIGITS = 12
"""A limit has at most this many digits (under a trillion paid requests): a longer number is a typo,
refused with its account named before Python's own integer conversion would refuse it obscurely."""
EXAMPLE = "'500/day;10000/month' or 'none'"


def _abridged(text: str) -> str:
    """`text` as a message shows it: a value of thousands of characters is cut, its length said."""
    return repr(text) if len(text) <= 60 else f"{text[:24]!r}… ({len(text)} characters)"


def _limit(account: str, digits: str, period: str, text: str) -> int:
    if len(digits) > MAX_DIGITS:
        raise ValueError(f"budget for {account!r}: a {len(digits)}-digit number of paid requests per {period} in "
                         f"{_abridged(text)} is too large; at most {MAX_DIGITS} digits")
    return int(digits)


def parse_budget(account: str, text: str) -> Budget:
    """`"500/day"`, `"500/day;10000/month"`, `"10000 per month"` or `"none"`; a month's limit is never
    below its day's (that day limit could never be reached, a typo)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"budget for {account!r}: expected e.g. {EXAMPLE}, got {_described(text)}")
    if text.strip().lower() == NO_BUDGET:
        return Budget(account)
    found: dict[str, int] = {}
    for item in text.split(";"):
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"budget for {account!r}: cannot read {_abridged(item.strip())} in {_abridged(text)}; "
                             "expected '<paid requests>/day' and/or '<paid requests>/month', e.g. '500/day;10000/month'")
        period = m.group(2).lower()
        if period in found:
            raise ValueError(f"budget for {account!r}: {period} given twice in {text!r}")
        found[period] = _limit(account, m.group(1), period, text)
    day, month = found.get(DAY), found.get(MONTH)
    if day is not None and month is not None and month < day:
        raise ValueError(f"budget for {account!r}: {month} paid requests per month is below {day} per day in "
                         f"{text!r}; a month's limit must be at least its day's")
    return Budget(account, per_day=day, per_month=month)


class _JsonNumber(str):
    """A number in the settings' JSON, kept as its text: its account is named when it is refused."""


def _described(value: object) -> str:
    """A budget value that is not text, in plain words."""
    if value is None:
        return "null (no value)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a yes/no value)"
    if isinstance(value, _JsonNumber | int | float):
        shown = str(value)
        return f"the number {shown}" if len(shown) <= 24 else f"a {len(shown)}-digit number"
    if isinstance(value, list | dict):
        return f"a JSON {'list' if isinstance(value, list) else 'object'}"
    return _abridged(value) if isinstance(value, str) else repr(value)


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"budget for {key!r} given twice ({_described(out[key])}, then {_described(value)}); "
                             "give each account once")
        out[key] = value
    return out


def budget_texts(raw: object) -> dict[str, str]:
    """The settings' value (a JSON object's text, or a mapping) as account -> budget text: an account
    given twice, a value that is not text (a number, null, a list) and a text that is not an object
    are refused naming the account and the value (json would keep the last of two keys silently)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw, object_pairs_hook=_refuse_duplicates, parse_int=_JsonNumber,
                             parse_float=_JsonNumber, parse_constant=_JsonNumber)
        except json.JSONDecodeError:
            raise ValueError("expected a JSON object of account -> budget, e.g. {\"twitterapi\": \"500/day;10000/month\"}; "
                             "this is not JSON") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"expected a JSON object of account -> budget, e.g. {{\"twitterapi\": \"500/day\"}}; "
                         f"this is {_described(raw)}")
    out: dict[str, str] = {}
    for account, text in raw.items():
        if isinstance(text, _JsonNumber) or not isinstance(text, str):
            raise ValueError(f"budget for {account!r} is {_described(text)}; expected text such as {EXAMPLE}")
        out[str(account)] = str(text)
    return out


def parse_budgets(raw: Mapping[str, str] | None, paid_accounts: frozenset[str]) -> dict[str, Budget]:
    """Per-account budgets (account -> `parse_budget` text), account names checked against the paid
    billing accounts of the descriptors. Accounts left out have no budget (the default)."""
    out: dict[str, Budget] = {}
    for account, text in budget_texts(raw or {}).items():
        if account not in paid_accounts:
            raise ValueError(f"spend budget for {account!r}, which is not a paid billing account; expected one of "
                             f"{sorted(paid_accounts)}")
        budget = parse_budget(account, text)
        if budget.bounded:
            out[account] = budget
    return out
