"""The model's checks of the Mongo store's bookkeeping under the moments a busy server makes, and of the
store errors a write waits out (docs/architecture.md, "Fencing", "Spend budgets", "Health figures",
"Retry selection"):

- a store write meeting what MongoDB raises while it is unavailable for a moment (a failover, a write it
  labels retryable, a transaction it labels transient) is repeated until it lands, the same write, as
  SQLite's busy file is ("Fencing": "a write meeting an unavailable store ... is repeated");
- two writers entering the day's first spend-ledger line of one account at once: the one whose insert
  loses the race still enters its requests, so the line holds both ("Spend budgets": the ledger moves in
  the write that records the call's outcome);
- a counter a write moves while the hourly recount runs is reported as moving, left as the writes left
  it, and repaired by the next recount once it stands still ("Health figures": on MongoDB only when the
  counter stood still and a second count agrees);
- the default retry's count of the elements it holds back (not due yet) is of the elements it would
  take, an `unsupported` element only where its cause was a missing generator ("Retry selection").

Walk steps (not rules: they draw nothing and leave the machine's exploration as it was), run on both
stores by the walks of test_support/url_machine_mongo15_walks.py. A mixin of the model
(test_support/url_machine_model.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure

from social_recording.domain.models import TokenProfile
from social_recording.domain.url_machine import Why
from social_recording.recording.retry import REMAINING_PROBE
from social_recording.store.counts import TOKENS_KEY
from social_recording.store.mongo import MongoStore
from social_recording.store.mongo.schema import SPEND_LEDGER
from test_support import url_machine_table as table
from test_support.engine_fakes import StepClock
from test_support.url_machine_outages import store_down
from test_support.url_machine_steps import Draws

MONGO_OUTAGES: dict[str, Callable[[], Exception]] = {
    "failing over": lambda: AutoReconnect("the model's primary stepped down"),
    "labelling the write retryable": lambda: OperationFailure(
        "not writable primary", code=10107, details={"errorLabels": ["RetryableWriteError"]}),
    "labelling the transaction transient": lambda: OperationFailure(
        "write conflict", code=112, details={"errorLabels": ["TransientTransactionError"]}),
}
"""What MongoDB raises while it is unavailable for a moment (docs/architecture.md, "Fencing": a failover, a
retryable label; a write conflict a server labels a transient transaction is the same: repeat it)."""


@contextmanager
def _the_days_first_line_raced(store: MongoStore, racing: Callable[[], None]) -> Iterator[list[Any]]:
    """The next insert of a day's first spend-ledger line (an upsert finding no line) meets another
    writer's insert of that line first: `racing()` runs, then the upsert fails on the unique (account,
    day), as on a server where both race (mongomock serialises them). Yields the lines raced."""
    coll = store.db[SPEND_LEDGER]
    coll_type = type(getattr(coll, "_target", coll))  # the driver's collection, under any wrapper
    real = coll_type.update_one
    raced: list[Any] = []

    def update_one(c: Any, flt: Any, update: Any, *args: Any, **kw: Any) -> Any:
        if kw.get("upsert") and c.name == SPEND_LEDGER and not raced and c.find_one(flt) is None:
            raced.append(dict(flt))
            setattr(coll_type, "update_one", real)  # noqa: B010  (once: the racing writer's own is plain)
            racing()
            raise DuplicateKeyError("E11000 duplicate key error: account_day (the model's racing insert)")
        return real(c, flt, update, *args, **kw)

    setattr(coll_type, "update_one", update_one)  # noqa: B010
    try:
        yield raced
    finally:
        setattr(coll_type, "update_one", real)  # noqa: B010


class Mongo15Rules:
    """Walk steps on the machine's store, engine and clocks (mixed into `UrlRules`)."""

    store: Any
    world: Any
    tokens: list[str]
    paid: bool
    limits: Any

    # ------------------------------------------------------------------ a store unavailable, as MongoDB says it

    def the_store_is_unavailable_as_mongodb_says_it(self, data: Any, kind: str, seconds: float) -> None:
        """A holder records a URL while the store raises, for less than the write's bound, what MongoDB
        raises when it is unavailable for a moment (`kind`, MONGO_OUTAGES): the write is repeated, the
        same write, until it lands (docs/architecture.md, "Fencing")."""
        from test_support.url_machine_model import STATS

        m: Any = self
        picked = m._an_element(data)
        if picked is None:
            return
        address, element = picked
        clock = m.outage_clock
        started = clock.now
        with m.doing("live"), store_down(self.store, clock, element.url, seconds, MONGO_OUTAGES[kind]) as writes:
            outcome = m.engine.recorder.record_url((address, address), element.url, m._run(Why.LIVE))
        if not writes:
            STATS["Mongo outages met no write"] += 1
            return
        STATS[f"Mongo outages ({kind}) waited out"] += 1
        refused = [w for w, reached in writes if not reached]
        first = next((w for w, reached in writes if reached), None)
        if first is None or any(w != first for w in refused):
            self.world.violations.append(
                f"{address} {element.url}: the store was {kind} for {seconds} s and the recording ended "
                f"{outcome.status} ({outcome.detail}) after {len(writes)} write(s), waiting "
                f"{clock.now - started:.2f} s: not the same write repeated until it landed")

    # ------------------------------------------------------------------ the day's first ledger line, raced

    def a_second_writer_enters_the_days_first_ledger_line(self, address: str, racer: str) -> None:
        """A live run records token `address`; right as its write enters the day's first spend-ledger line
        of its account, a live run of token `racer` (a URL of the same account) records and enters that
        line first. The first write's insert fails on the unique line, and it still enters its requests:
        the day's line holds both writers' (docs/architecture.md, "Spend budgets"). On SQLite, whose
        writes are transactions, the two record one after the other."""
        from test_support.url_machine_model import STATS

        m: Any = self
        if not isinstance(self.store, MongoStore):
            m.live_event(Draws(lambda a: a == address), "none")
            m.live_event(Draws(lambda a: a == racer), "none")
            return
        billed = dict(self.world.billed)
        with _the_days_first_line_raced(self.store, lambda: m._second_recorder(racer)) as raced:
            m.live_event(Draws(lambda a: a == address), "none")
        if not raced:
            self.world.violations.append(f"the walk's live run of {address} entered no day's first ledger line")
            return
        STATS["days' first ledger lines raced"] += 1
        account, day = raced[0]["account"], raced[0]["day"]
        line = sum(r.requests for r in self.store.spend_rows(day) if (r.account, r.day) == (account, day))
        new = self.world.billed[account] - billed.get(account, 0)
        if line != new:
            self.world.violations.append(
                f"{account} {day}: two writers entered the day's first ledger line at once; it holds {line} "
                f"paid request(s), the provider billed {new} (the insert that lost the race dropped its own)")

    # ------------------------------------------------------------------ a counter moved while recounted

    def a_write_lands_while_the_counters_are_recounted(self) -> None:
        """The tokens' counter is off by one (a write made around the store); the hourly recount starts,
        and a token the tracker reports is stored (its document and its counters moved) while it counts.
        On MongoDB the counter moved during its recount: the recount reports it differing and moving,
        repairs none, and leaves it where the writes left it; the next recount, with nothing moving,
        repairs it (docs/architecture.md, "Health figures")."""
        from social_recording.dagster_defs.health_report import HealthInputs, evaluate_health
        from test_support.url_machine_model import POOL, STATS

        m: Any = self
        if not isinstance(self.store, MongoStore):
            return  # SQLite recounts in one transaction: no write lands inside it
        store = self.store
        m._move_counter(TOKENS_KEY, 1)
        real = store._recount

        def recount() -> dict[str, int]:
            del store._recount  # once
            m.new_token([POOL[3]])
            store.create_pending_token(TokenProfile(address=self.tokens[-1], urls=[POOL[3]]), m.clock())
            out: dict[str, int] = real()
            return out

        store._recount = recount
        inputs = HealthInputs(enable_paid=self.paid, usable_platforms=m._usable(), max_exhausted_per_hour=1, ledger=None)
        now = StepClock.__call__(m.clock)
        got = []
        for _ in range(2):
            check = evaluate_health(store, inputs, now=now, baseline=None, hourly=True)[-1]
            got.append((check.figures.get("counters_differing"), check.figures.get("counters_repaired"),
                        check.figures.get("drift"), store.counts().tokens - len(m.addresses)))
        STATS["counters moved while recounted"] += 1
        if got != [(1, 0, 1, 1), (1, 1, 1, 0)]:
            self.world.violations.append(
                f"the tokens' counter one off, a token stored while it was recounted: the recount said "
                f"(differing, repaired, drift, counter - tokens) {got[0]}, the next one {got[1]}; the rule: "
                f"(1, 0, 1, 1) (moving: left alone), then (1, 1, 1, 0) (repaired once it stood still)")

    # ------------------------------------------------------------------ what the default retry holds back

    def the_default_retry_counts_what_it_holds_back(self) -> None:
        """A default retry's selection counts, as held back, exactly the elements it would take that are
        not due yet (recorded, due after its moment moved by its interval): error and pending, skipped_paid
        while paid calls are on, `unsupported` only where a missing generator was the cause and the
        platform has one again (docs/architecture.md, "Retry selection"), at most REMAINING_PROBE."""
        m: Any = self
        selection = m.engine.retry.select_due()
        due_by = table.due_by(selection.selected_at, timedelta(minutes=selection.min_interval_minutes),
                              self.limits.expected)
        held = [el for el in m.held() if m._retry_takes(el) and el.checked_at is not None and el.due_at is not None
                and el.due_at > due_by]
        if self.paid and min(len(held), REMAINING_PROBE) != selection.held_back:
            self.world.violations.append(
                f"a default retry at {selection.selected_at} counted {selection.held_back} element(s) held back; "
                f"it would take {len(held)} not due yet: {[(e.address, e.url, e.status.value) for e in held]}")

