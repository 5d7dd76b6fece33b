"""The spend as reported (docs/architecture.md, "Spend budgets"): what the `provider_spend` asset, its
budget check and the hourly reconciliation show, read after every step through the functions the
Dagster layer calls (`dagster_defs/spend.py`: `SpendFigures.read`, `budget_verdict`, `spend_drift`) and
compared with the model's own bill. Each paid account's figures for the current UTC day and month are
the new paid requests the provider received in that period, less the calls still open on the URL
states (entered once their answer is known never to come); the periods, their keys and their resets
are the model's own reckoning of the UTC calendar; the verdict is warn at 80 % of a budget, fail once
used up, nothing for an account without one; the ledger never drifts from the URL states, and against
the provider's bill it drifts by exactly the accounts with calls still open. The clock lands on the
end of a UTC day or month, a tick either side, while a paid URL is recorded, and the report is read in
that very instant.

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from social_recording.domain.spend import DAY, MONTH, PERIODS, Budget, seconds_left
from social_recording.domain.url_machine import Why
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.spend_report import SpendFigures, budget_verdict, spend_drift
from social_recording.store.base import SpendTotals

if TYPE_CHECKING:
    from test_support.url_machine_model import World

SLACK = timedelta(milliseconds=10)
"""A request the provider received this soon after a period began may be entered in the period before:
the engine enters a call at its attempt's moment, a few clock readings before the request leaves (the
model's clock ticks at every reading). Only then may a figure differ from the bill, by those requests."""


class SpendRules:
    """The spend report's figures against the model's bill. Expects the model's `store`, `world`,
    `clock`, `per_month`, `tokens`, `profiles`, `new_token`, `engine`, `doing`, `_run` and
    `_check_token_outcome`; the model's provider logs every new paid request in `world.bill`."""

    store: Any
    world: World
    clock: Any
    per_month: ClassVar[Mapping[str, int]]
    tokens: list[str]
    profiles: Any
    new_token: Any
    engine: Any
    doing: Any
    _run: Any
    _check_token_outcome: Any

    def _budgets(self) -> dict[str, Budget]:
        """The operator's budgets as the model sets them (the Dagster layer's, parsed from the settings)."""
        from test_support.url_machine_model import SPEND_PER_DAY

        return {a: Budget(a, per_day=n, per_month=self.per_month.get(a)) for a, n in SPEND_PER_DAY.items()}

    def _bill_in(self, now: datetime) -> tuple[dict[tuple[str, str], int], Counter[str]]:
        """(account, period) -> new paid requests received in `now`'s UTC day or month less the calls
        still open that were recorded in it; and account -> requests that may be in the period before."""
        from test_support.url_machine_model import POOL, _carried

        def same(period: str, at: datetime) -> bool:
            return at.date() == now.date() if period == DAY else (at.year, at.month) == (now.year, now.month)

        items: list[tuple[str, datetime, int, bool]] = [(a, at, 1, exact) for a, at, exact in self.world.bill]
        for url in POOL:
            state = self.store.find_url_state(url)
            for call in _carried(None if state is None else state.open_call):
                if call.new_spending:
                    items.append((call.provider, call.started_at, -call.requests, False))
        expected: dict[tuple[str, str], int] = Counter()
        loose: Counter[str] = Counter()
        for account, at, n, exact in items:
            for period in PERIODS:
                expected[(account, period)] += n if same(period, at) else 0
            if not exact and (at - SLACK).date() != at.date():
                loose[account] += abs(n)
        return expected, loose

    def _check_spend_report(self, now: datetime) -> None:
        """The figures `provider_spend` and its checks show at `now` (docs/architecture.md, "Spend budgets")."""
        from test_support.url_machine_model import _period_end

        v = self.world.violations
        budgets = self._budgets()
        figures = SpendFigures.read(self.store, budgets, now)
        ends = {p: _period_end(p, now) for p in PERIODS}
        if (figures.day, figures.month) != (now.date().isoformat(), f"{now:%Y-%m}") or dict(figures.resets) != ends:
            v.append(f"the spend report at {now} reads day {figures.day}, month {figures.month}, resets "
                     f"{dict(figures.resets)}; the UTC day is {now.date()}, its periods end at {ends}")
        for p in PERIODS:  # a period's counter lives past its end, not a second more than its whole seconds
            left = now + timedelta(seconds=seconds_left(p, now))
            if not ends[p] < left <= ends[p] + timedelta(seconds=1):
                v.append(f"the {p}'s counter at {now} lives until {left}; the {p} ends at {ends[p]}")
        expected, loose = self._bill_in(now)
        shown = {a.account: a for a in figures.accounts}
        if sorted(shown) != sorted(a.name for a in CATALOGUE.paid_accounts()):
            v.append(f"the spend report shows accounts {sorted(shown)}; the paid ones are "
                     f"{sorted(a.name for a in CATALOGUE.paid_accounts())}")
        from social_recording.recording.call_guard import UNIT_PRICES

        lines: set[tuple[str, str]] = set()
        level = 0
        for account, spend in shown.items():
            budget = budgets.get(account)
            if spend.budget != budget:
                v.append(f"the spend report shows {account}'s budget as {spend.budget}, the operator's is {budget}")
            for p in PERIODS:
                n, want = spend.requests[p], expected.get((account, p), 0)
                if abs(n - want) > loose[account] or (n != want and not loose[account]):
                    v.append(f"the spend report shows {n} paid {account} request(s) this UTC {p} (at {now}); "
                             f"the provider billed {want} in it, less the calls still open")
                if abs(spend.cost_usd[p] - n * UNIT_PRICES[account]) > 1e-9 or not 0 <= spend.unanswered[p] <= n:
                    v.append(f"the spend report shows {account}'s {n} request(s) this {p} costing "
                             f"{spend.cost_usd[p]}, {spend.unanswered[p]} unanswered, at {UNIT_PRICES[account]} each")
                limit = None if budget is None else budget.limit(p)
                if limit is not None and 5 * n >= 4 * limit:  # 80 % of the budget: warn; all of it: fail
                    lines.add((account, f"{account}: {n} of {limit} paid requests this UTC {p} ("))
                    level = max(level, 2 if n >= limit else 1)
        verdict = budget_verdict(figures)
        if not any(loose.values()):
            got = sorted(line.split("(")[0] + "(" for line in verdict.lines)
            if verdict.level != level or got != sorted(text for _, text in lines):
                v.append(f"the budget check at {now} says level {verdict.level}: {list(verdict.lines)}; the bill "
                         f"against the budgets says level {level}: {sorted(text for _, text in lines)}")
            for line in verdict.lines:
                period = DAY if f"this UTC {DAY} " in line else MONTH
                resets = f"resets {ends[period]:%Y-%m-%dT%H:%MZ})"
                if not line.endswith(resets) or ("used up" in line) != (int(line.split(" of ")[0].split()[-1])
                                                                        >= int(line.split(" of ")[1].split()[0])):
                    v.append(f"the budget check's line {line!r}: its {period} {resets}, used up only at its limit")
        unbounded = budget_verdict(replace(figures, accounts=tuple(replace(a, budget=None) for a in figures.accounts)))
        if unbounded.level or unbounded.lines:
            v.append(f"with no budget set, the budget check says {unbounded.summary!r}")
        self._check_drift()

    def _check_drift(self) -> None:
        """The ledger matches the URL states (the same writes move both); against the provider's bill,
        exactly the accounts with calls still open differ, by those calls."""
        from test_support.url_machine_model import ACCOUNTS

        totals = self.store.spend_totals()
        v = self.world.violations
        if drift := spend_drift(totals):
            v.append(f"the hourly reconciliation reports a drift {drift}; the same writes moved ledger and URL states")
        billed = {a: self.world.billed[a] for a in ACCOUNTS.values()}
        against_bill = spend_drift(SpendTotals(ledger=billed, url_states=totals.url_states))
        expected = {a: (n, totals.ledger.get(a, 0)) for a, n in billed.items() if n != totals.ledger.get(a, 0)}
        if against_bill != expected:
            v.append(f"the ledger's URL states against the provider's bill drift by {against_bill}; the calls still "
                     f"open say {expected}")

    @invariant()
    def the_spend_report_shows_the_bill(self) -> None:
        self._check_spend_report(self.clock())

    @rule(period=st.sampled_from(PERIODS), ticks=st.sampled_from((-1, 0, 1)), data=st.data())
    def a_spend_period_ends_as_a_paid_url_is_recorded(self, period: str, ticks: int, data: st.DataObject) -> None:
        """The clock lands on the end of the UTC day or month (a tick before, on it, or past it) and
        stands there while a holder of a paid URL records it (one of its holders, or a token traded just
        now): the request is billed in the period of that instant, and the report read then shows it so."""
        from test_support.url_machine_model import POOL, STATS, TICK, _paid, _period_end

        at = _period_end(period, self.clock()) + ticks * TICK
        url = data.draw(st.sampled_from([u for u in POOL if _paid(u)]))
        if data.draw(st.booleans()):
            self.new_token([url])
        holders = [a for a in self.tokens if url in self.profiles.profiles[a].urls]
        if not holders or at <= self.clock():
            return
        address = data.draw(st.sampled_from(holders))
        self.clock.set(at)
        self.clock.frozen = True
        billed = len(self.world.bill)
        try:
            with self.doing("live"):
                self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))
            self._check_spend_report(self.clock())
        finally:
            self.clock.frozen = False
        STATS[f"paid requests as a UTC {period} ends, {ticks:+d} tick"] += len(self.world.bill) - billed
