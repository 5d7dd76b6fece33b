"""The model's entries into the recording: the live feed the token flow sensor reads, and reconcile's
window at an AF floor (docs/architecture.md, "Live" and "Reconcile"). The other rules record a token
they name; these read the tracker as the sensor and the reconcile job do, so the rules of who is
taken are checked too: a token at the threshold (or the floor) is in, one below is out; each trade is
handed out once, at the token's latest trade of the range read; a reconcile records only the tokens
not stored when it records (a live run may have stored some since its window was read).

A mixin of the model (test_support/url_machine_model.py); its steps are driven by walks
(test_support/url_machine_feed_walks.py), and one drawn rule trades tokens and ticks the sensor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.url_machine import Why
from social_recording.recording.live_feed import LiveCursor
from test_support.engine_fakes import T0
from test_support.url_machine_settings import AF_FLOOR

if TYPE_CHECKING:
    from test_support.url_machine_model import World

THRESHOLD = AF_FLOOR
"""The sensor's AF investor threshold and reconcile's floor as the model expects them (the documented
floor); the engine's are the deployment's settings' (`deployed.af_investor_threshold`, their default)."""


@dataclass(frozen=True)
class Trade:
    """One entry of the tracker's range answer: a token, its AF investors, and when it traded."""

    address: str
    symbol: str | None
    investor_count: int
    last_transfer_at: datetime | None


class FeedTracker:
    """The tracker's range query as the live feed reads it: every trade in [start, end] (both ends:
    a trade on a page's boundary is answered by both pages, as an inclusive tracker would). Each page
    takes PAGE_SECONDS of the sensor's evaluation time (`monotonic`), so a time budget is used up after
    a number of pages the model chooses."""

    def __init__(self) -> None:
        self.trades: list[Trade] = []
        self.elapsed = 0.0

    def tokens_in_range(self, start: datetime, end: datetime) -> list[Trade]:
        self.elapsed += PAGE_SECONDS
        return [t for t in self.trades if t.last_transfer_at is not None and start <= t.last_transfer_at <= end]

    def monotonic(self) -> float:
        return self.elapsed


TRADED_AGO = (0, 30, 90, 9 * 60, 3 * 24 * 60)
"""Minutes: just now, within a first read's hour, before it, a page or two back, before the max lookback."""
PAGE_SECONDS = 10.0
"""How long one page of the tracker takes to read, on the evaluation's clock."""
BATCH = 20
"""Tokens per live run (docs/architecture.md, "Live": batches of at most 20): a tick hands out at most
this many per run it may launch, the oldest trades first."""
INITIAL_LOOKBACK = timedelta(hours=1)
MAX_LOOKBACK = timedelta(days=2)
PAGE = timedelta(hours=6)
RESCAN = timedelta(hours=1)
"""The feed's bounds (recording/live_feed.py's rules), the model's own numbers: a first read looks an
hour back; a cursor older than two days is read from two days back (the gap is reconcile's); one
tracker query covers six hours; a complete read leaves the cursor at most an hour behind its end."""


@dataclass
class ModelCursor:
    """The model's own record of what the sensor handed out: the latest trade handed out, and the
    tokens handed out at exactly that instant (None: nothing read yet)."""

    ts: datetime | None = None
    at_ts: set[str] = field(default_factory=set)

    def handed_before(self, address: str, ts: datetime) -> bool:
        return self.ts is not None and (ts < self.ts or (ts == self.ts and address in self.at_ts))


class FeedRules:
    """The live feed read as the sensor reads it and the reconcile at its floor, with their checks.
    Expects the model's `store`, `world`, `clock`, `tokens`, `new_token`, `tracker`, `engine`,
    `deployed` (its settings), `doing`, `_run` and `_check_token_outcome`."""

    store: Any
    world: World
    clock: Any
    tokens: list[str]
    new_token: Any
    tracker: Any
    engine: Any
    deployed: Any
    doing: Any
    _run: Any
    _check_token_outcome: Any

    def _feed(self) -> tuple[FeedTracker, dict[str, Any]]:
        """The feed's tracker and the sensor's state (its cursor as the sensor keeps it, a string; the
        model's own cursor; every token handed out, in order), made at first use (the machine's other
        rules never read them)."""
        if not hasattr(self, "_feed_state"):
            self._feed_state: tuple[FeedTracker, dict[str, Any]] = (
                FeedTracker(), {"cursor": None, "mine": ModelCursor(), "handed": []})
        return self._feed_state

    def a_token_with_investors(self, urls: list[str], investors: int) -> str:
        """A new token with `investors` AF investors in the tracker (the reconcile window's answer)."""
        self.new_token(urls, investors)
        return self.tokens[-1]

    def a_token_trades(self, address: str, minutes_ago: float, investors: int | None = None,
                       at: datetime | None = None) -> None:
        """`address` trades `minutes_ago` before now, or `at` (with the tracker's investor count, or `investors`)."""
        tracker, _ = self._feed()
        count = next(i.investor_count for i in self.tracker.items if i.address == address) if investors is None \
            else investors
        when = at if at is not None else self.clock() - timedelta(minutes=minutes_ago)
        tracker.trades.append(Trade(address, address, count, when))

    def the_sensor_ticks(self, max_runs: int = 25, pages: int | None = None) -> None:
        """The token flow sensor's evaluation at now, from its cursor as it keeps it between ticks (a
        string: parsed, then dumped), launching at most `max_runs` runs and, with `pages`, out of time
        after that many tracker pages; then each run it launches recorded as live_tokens_job does, one
        token at a time. It hands out exactly the tokens the model's own reading of the feed's rules
        says (`_expected_read`), in runs of at most BATCH in that order, and keeps a cursor that says
        what the model's says; evaluated again from the same cursor, it asks for the same runs."""
        from social_recording.dagster_defs.jobs.live import evaluate_token_flow

        tracker, state = self._feed()
        now = self.clock()
        budget = 3600.0 if pages is None else (pages - 0.5) * PAGE_SECONDS

        def evaluate() -> Any:
            return evaluate_token_flow(LiveCursor.parse(state["cursor"]), tracker, self.deployed.af_investor_threshold,
                                       now, budget_s=budget, max_runs=max_runs, clock=tracker.monotonic)

        result, again = evaluate(), evaluate()
        batches = [[t["address"] for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
                   for r in result.run_requests]
        launched_now = [a for batch in batches for a in batch]
        expected, mine, left = self._expected_read(state["mine"], now, max_runs * BATCH, pages)
        raw = result.cursor.dump()
        kept = LiveCursor.parse(raw)
        v = self.world.violations
        if launched_now != [a for a, _ in expected] or any(len(b) > BATCH or not b for b in batches):
            v.append(f"the sensor at {now} launched {batches}; the feed's rules hand out {expected}, in runs of at "
                     f"most {BATCH}")
        if (kept.ts, set(kept.at_ts)) != (mine.ts, mine.at_ts):
            v.append(f"the sensor's cursor after {now} is {raw}, read back as {kept}; it handed out up to {mine.ts} "
                     f"({sorted(mine.at_ts)} at that instant)")
        before = state["mine"].ts
        gap = before is not None and before < now - MAX_LOOKBACK
        said = (f"{left} qualifying token(s) left for the next read" in result.notes,
                any("left to reconcile_job" in n for n in result.notes))
        if said != (left > 0, gap):
            v.append(f"the sensor at {now} notes {result.notes}; {left} qualifying token(s) are left for the next "
                     f"read, and the gap before the max lookback is {'' if gap else 'not '}left to reconcile")
        if [r.run_key for r in again.run_requests] != [r.run_key for r in result.run_requests] or \
                again.cursor.dump() != raw:
            v.append(f"the sensor evaluated again from the same cursor at {now} asks for other runs or another cursor")
        state["cursor"], state["mine"] = raw, mine
        state["handed"].extend(launched_now)
        with self.doing("live"):
            for address in launched_now:
                self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))

    def _expected_read(self, cursor: ModelCursor, now: datetime, cap: int,
                       pages: int | None) -> tuple[list[tuple[str, datetime]], ModelCursor, int]:
        """What a read of the feed at `now` hands out, by its rules (recording/live_feed.py): from the
        cursor (an hour back on a first read, two days back at most), page by page up to now, stopping
        after `pages` pages (the time budget) or after the page where `cap` tokens are held; the tokens
        with at least THRESHOLD investors traded in what was read and not handed out before, each at its
        latest such trade, the `cap` oldest (then by address). The cursor moves past exactly those, and
        after a read through to now that handed out all it found, to at most RESCAN behind now. Also
        how many of the tokens found were left for the next read."""
        start = now - INITIAL_LOOKBACK if cursor.ts is None else max(cursor.ts, now - MAX_LOOKBACK)
        tracker, _ = self._feed()
        read_to, read, latest = start, 0, dict[str, datetime]()
        while read_to < now and (pages is None or read < pages) and (not read or len(latest) < cap):
            page_end = min(read_to + PAGE, now)
            for t in tracker.trades:
                ts = t.last_transfer_at
                if ts is not None and read_to <= ts <= page_end and t.investor_count >= THRESHOLD \
                        and not cursor.handed_before(t.address, ts):
                    latest[t.address] = max(ts, latest.get(t.address, ts))
            read_to, read = page_end, read + 1
        ordered = sorted(latest.items(), key=lambda kv: (kv[1], kv[0]))
        handed = ordered[:cap]
        mine = ModelCursor(cursor.ts, set(cursor.at_ts))
        for address, ts in handed:
            if mine.ts is None or ts > mine.ts:
                mine = ModelCursor(ts, {address})
            elif ts == mine.ts:
                mine.at_ts.add(address)
        if read_to >= now and len(ordered) <= cap and (mine.ts is None or mine.ts < now - RESCAN):
            mine = ModelCursor(now - RESCAN, set())
        return handed, mine, len(ordered) - len(handed)

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), minutes_ago=st.sampled_from(TRADED_AGO), pages=st.sampled_from((None, None, 1)))
    def some_tokens_trade_and_the_sensor_ticks(self, data: st.DataObject, minutes_ago: int, pages: int | None) -> None:
        """One or two of the model's tokens trade `minutes_ago` before now, then the sensor ticks (out of
        time after one page, sometimes), whatever the clock did since its last tick."""
        for address in data.draw(st.lists(st.sampled_from(self.tokens), min_size=1, max_size=2, unique=True)):
            self.a_token_trades(address, minutes_ago)
        self.the_sensor_ticks(pages=pages)

    def the_feed_handed_out_each_once(self, addresses: list[str]) -> None:
        """Every one of `addresses` (tokens that traded once each) was handed out by the ticks so far,
        none twice."""
        _, state = self._feed()
        handed = [a for a in state["handed"] if a in addresses]
        if sorted(handed) != sorted(addresses):
            self.world.violations.append(f"the sensor's ticks handed out {handed}; each of {addresses} once")

    def reconcile_at_the_floor(self, interleave: str = "none") -> None:
        """reconcile_job at the policy's floor over the model's day: its window read, then (if asked)
        a live run records the window's first target, then the window recorded. Exactly the tokens
        with at least the floor's investors not stored when it records are recorded, each once."""
        floor = THRESHOLD
        with self.doing("reconcile"):  # the reconcile op's floor: the settings' (no `min_af_count` in its config)
            window = self.engine.reconcile.read_window(T0, T0 + timedelta(days=1),
                                                       min_af_count=self.deployed.af_investor_threshold)
        if interleave == "live" and window.targets:
            first = window.targets[0].address
            with self.doing("live"):
                self._check_token_outcome(self.engine.processor.record(first, first, self._run(Why.LIVE)))
        taken = {i.address for i in self.tracker.items if i.investor_count >= floor}
        stored = self.store.find_existing_addresses(sorted({i.address for i in self.tracker.items}))
        with self.doing("reconcile"):
            out = self.engine.reconcile.record_window(window, max_workers=1, run=self._run(Why.RECONCILE))
        for token in out.tokens:
            self._check_token_outcome(token)
        recorded = [t.address for t in out.tokens]
        v = self.world.violations
        if sorted(recorded) != sorted(taken - set(stored)) or len(recorded) != len(set(recorded)):
            v.append(f"a reconcile at a floor of {floor} recorded {sorted(recorded)}; the tokens with >= {floor} "
                     f"AF investors not stored when it recorded: {sorted(taken - set(stored))}")
        if out.already_seen != len(taken & set(stored)):
            v.append(f"a reconcile counted {out.already_seen} token(s) already seen, "
                     f"{len(taken & set(stored))} were stored")

