"""The model's checks of the stores' own bookkeeping, read after every step against the rows or the
model's own counts (docs/architecture.md, "Health figures", "Retry selection", "Spend budgets"):

- a URL state never counts more calls than its providers received requests (its first record, the one
  behind a paid request's open call, counts none: the call is counted when its outcome or its timeout is);
- on the SQLite store, each health counter (`store_counts`) is the number of rows it counts, whatever
  inserted, replaced or deleted them (a token's links replaced whole, a token's elements);
- the retry selection of raw values hands out, at a cutoff, exactly the raw values checked at or before
  it (of a token holding several, the ones due only);
- the hourly reconciliation sums an account's paid requests over every platform it answers (one Apify
  account for several platforms), so a shared account drifts only when its own totals differ.

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from contextlib import closing
from datetime import UTC, datetime
from typing import Any

from hypothesis.stateful import invariant

from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.spend_report import spend_drift
from social_recording.store._codec import OBJECT_COLLECTIONS
from social_recording.store.base import SpendTotals
from social_recording.store.counts import LINKS_KEY, METRICS_KEY, TOKENS_KEY, object_key
from social_recording.store.sqlite import SqliteStore

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
"""A raw value never checked sorts as checked at the earliest instant (due at any cutoff)."""
FAR = datetime(2999, 1, 1, tzinfo=UTC)
"""A cutoff past every check: every raw value the store holds is due at it."""


class StoreRules:
    """The stores' counters and selections against the rows and the model. Expects the model's `store`
    and `world` (with `requests_to`: URL -> requests its providers received)."""

    store: Any
    world: Any

    @invariant()
    def a_url_state_counts_no_call_without_a_request(self) -> None:
        """A URL state's calls (`attempts`) are calls whose request left: never more than its providers
        received, whichever write made the state (its first record is a paid request's open call's)."""
        from test_support.url_machine_model import POOL

        for url in POOL:
            state = self.store.find_url_state(url)
            if state is not None and state.attempts > self.world.requests_to[url]:
                self.world.violations.append(
                    f"{url}: the URL state counts {state.attempts} call(s); its providers received "
                    f"{self.world.requests_to[url]} request(s) (open call: {state.open_call is not None})")

    @invariant()
    def the_health_counters_count_the_rows(self) -> None:
        """On the SQLite store, each counter of `store_counts` equals the rows it counts (tokens, links,
        metrics, each object collection), after every insert and delete the step made; and after a
        delete too (a (token, URL)'s links replaced), tried on a copy of the store: the counters follow
        every statement, whichever makes it."""
        if not isinstance(self.store, SqliteStore):
            return
        conn = self.store._conn()
        tables = {"tokens": TOKENS_KEY, "token_links": LINKS_KEY, "metrics": METRICS_KEY,
                  **{table: object_key(kind) for kind, table in OBJECT_COLLECTIONS.items()}}
        self._check_counters(conn, tables, "")
        held = conn.execute("SELECT token_address, entry_url FROM token_links LIMIT 1").fetchone()
        if held is not None:  # a (token, URL)'s links replaced whole: on a copy, its older links deleted
            with closing(sqlite3.connect(":memory:")) as copy:
                conn.backup(copy)
                copy.execute("DELETE FROM token_links WHERE token_address = ? AND entry_url = ?", held)
                self._check_counters(copy, tables, f" once the links of {held} are deleted")

    def _check_counters(self, conn: sqlite3.Connection, tables: dict[str, str], after: str) -> None:
        counters = dict(conn.execute("SELECT key, n FROM store_counts").fetchall())
        for table, key in tables.items():
            rows = conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608 (our table names)
            if counters.get(key, 0) != rows:
                self.world.violations.append(f"the health counter {key!r} reads {counters.get(key, 0)}; "
                                             f"the table {table} holds {rows} row(s){after}")

    @invariant()
    def the_due_raw_values_are_those_checked_by_the_cutoff(self) -> None:
        """At a cutoff, the retry selection hands out every raw value checked at or before it and none
        checked after (a token holding a due one and one tried since hands out the due one only),
        oldest first; each raw value's own check time is the cutoff tried."""
        held = self.store.select_unresolved(FAR, 10_000)
        checked = {(a, v.field): v.checked_at or NEVER for a, v in held}
        for cutoff in sorted(set(checked.values())):
            due = {key for key, at in checked.items() if at <= cutoff}
            handed = self.store.select_unresolved(cutoff, 10_000)
            got = [(a, v.field) for a, v in handed]
            times = [v.checked_at or NEVER for _, v in handed]
            if set(got) != due or len(got) != len(due) or times != sorted(times):
                self.world.violations.append(f"the raw values due at {cutoff} are {sorted(due)}; the retry "
                                             f"selection hands out {got}")

    @invariant()
    def a_shared_accounts_platforms_add_up(self) -> None:
        """The reconciliation compares an account's ledger with its URL states summed over every platform
        it answers: the model's own totals, spread over a shared account's platforms (one request each,
        the rest on its first), reconcile; one request less in its ledger drifts by exactly that."""
        totals = self.store.spend_totals()
        n = max(sum(totals.url_states.values()), 1) + 1
        shared = Counter(d.account.name for d in CATALOGUE.platforms if d.account.paid)
        for account, platforms in shared.items():
            if platforms < 2:
                continue
            names = [d.platform.value for d in CATALOGUE.platforms if d.account.name == account]
            spread = {p: 1 for p in names[1:]} | {names[0]: n - len(names) + 1}
            got = (spend_drift(SpendTotals(ledger={account: n}, url_states=spread)),
                   spend_drift(SpendTotals(ledger={account: n - 1}, url_states=spread)))
            if got != ({}, {account: (n - 1, n)}):
                self.world.violations.append(
                    f"{account} answers {names}: with {spread} paid request(s) on their URL states, the "
                    f"reconciliation reports {got[0]} against a ledger of {n}, {got[1]} against {n - 1}")
