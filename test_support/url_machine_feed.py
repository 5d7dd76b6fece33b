"""The model's entries into the recording: the live feed the token flow sensor reads, and reconcile's
window at an AF floor (docs/architecture.md, "Live" and "Reconcile"). The other rules record a token
they name; these read the tracker as the sensor and the reconcile job do, so the rules of who is
taken are checked too: a token at the threshold (or the floor) is in, one below is out; each trade is
handed out once, at the token's latest trade of the range read; a reconcile records only the tokens
not stored when it records (a live run may have stored some since its window was read).

A mixin of the model (test_support/url_machine_model.py); its steps are driven by walks
(test_support/url_machine_feed_walks.py), so the drawn examples do not move.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from social_recording.domain.policy import DEFAULT_AF_INVESTOR_THRESHOLD
from social_recording.domain.url_machine import Why
from social_recording.recording.live_feed import LiveCursor, scan_traded
from test_support.engine_fakes import T0

if TYPE_CHECKING:
    from test_support.url_machine_model import World

THRESHOLD = DEFAULT_AF_INVESTOR_THRESHOLD
"""The sensor's AF investor threshold and reconcile's floor (the policy's default for both)."""


@dataclass(frozen=True)
class Trade:
    """One entry of the tracker's range answer: a token, its AF investors, and when it traded."""

    address: str
    symbol: str | None
    investor_count: int
    last_transfer_at: datetime | None


class FeedTracker:
    """The tracker's range query as the live feed reads it: every trade in [start, end] (both ends:
    a trade on a page's boundary is answered by both pages, as an inclusive tracker would)."""

    def __init__(self) -> None:
        self.trades: list[Trade] = []

    def tokens_in_range(self, start: datetime, end: datetime) -> list[Trade]:
        return [t for t in self.trades if t.last_transfer_at is not None and start <= t.last_transfer_at <= end]


class FeedRules:
    """The live feed read as the sensor reads it and the reconcile at its floor, with their checks.
    Expects the model's `store`, `world`, `clock`, `tokens`, `new_token`, `tracker`, `engine`,
    `doing`, `_run` and `_check_token_outcome`."""

    store: Any
    world: World
    clock: Any
    tokens: list[str]
    new_token: Any
    tracker: Any
    engine: Any
    doing: Any
    _run: Any
    _check_token_outcome: Any

    def _feed(self) -> tuple[FeedTracker, dict[str, Any]]:
        """The feed's tracker and the sensor's state (cursor, trades launched), made at first use (the
        machine's other rules never read them)."""
        if not hasattr(self, "_feed_state"):
            self._feed_state = (FeedTracker(), {"cursor": LiveCursor(), "launched": set()})
        return self._feed_state

    def a_token_with_investors(self, urls: list[str], investors: int) -> str:
        """A new token with `investors` AF investors in the tracker (the reconcile window's answer)."""
        self.new_token(urls, investors)
        return self.tokens[-1]

    def a_token_trades(self, address: str, minutes_ago: int, investors: int | None = None) -> None:
        """`address` trades `minutes_ago` before now (with the tracker's investor count, or `investors`)."""
        tracker, _ = self._feed()
        count = next(i.investor_count for i in self.tracker.items if i.address == address) if investors is None \
            else investors
        when = self.clock() - timedelta(minutes=minutes_ago)
        tracker.trades.append(Trade(address, address, count, when))

    def the_sensor_ticks(self) -> None:
        """The token flow sensor's evaluation at now (no budget cut), then each run it launches
        recorded as live_tokens_job does, one token at a time; then the feed's rules. The trade each
        token is handed out at is read from the feed's scan, which the evaluation turns into its runs
        (checked: the same tokens, in the same order, and the same cursor)."""
        from social_recording.dagster_defs.jobs.live import evaluate_token_flow

        tracker, state = self._feed()
        before: LiveCursor = state["cursor"]
        now = self.clock()
        result = evaluate_token_flow(before, tracker, THRESHOLD, now, budget_s=3600.0, clock=lambda: 0.0)
        scan = scan_traded(before, tracker, THRESHOLD, now, cap=10_000, budget_s=3600.0, clock=lambda: 0.0)
        launched_now = [t["address"] for r in result.run_requests
                        for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
        handed = [(t.address, t.last_transfer_at) for t in scan.tokens]
        if launched_now != [a for a, _ in handed] or result.cursor != scan.cursor_after(before, scan.tokens):
            self.world.violations.append(f"the sensor launched {launched_now} (cursor {result.cursor}); its feed "
                                         f"read {handed}")
        state["cursor"] = result.cursor
        self._check_handed_out(handed, before, now, state["launched"], tracker)
        state["launched"].update(handed)
        with self.doing("live"):
            for address in launched_now:
                self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))

    def _check_handed_out(self, handed: list[tuple[str, datetime | None]], before: LiveCursor, now: datetime,
                          launched: set[tuple[str, datetime | None]], tracker: FeedTracker) -> None:
        """Exactly the tokens with at least THRESHOLD investors that traded since the cursor (after
        its instant, or at it and not handed out then), each once, at its latest such trade; no
        trade handed out before is handed out again. The walks keep every trade within the feed's
        first lookback, so nothing is left to reconcile."""
        v = self.world.violations
        addresses = [a for a, _ in handed]
        if len(addresses) != len(set(addresses)):
            v.append(f"the live feed handed out a token twice in one read: {sorted(addresses)}")
        for a, ts in handed:
            if (a, ts) in launched:
                v.append(f"the live feed handed out {a}'s trade at {ts} again (launched before)")
        new = [t for t in tracker.trades if t.last_transfer_at is not None and t.last_transfer_at <= now
               and t.investor_count >= THRESHOLD
               and (before.ts is None or t.last_transfer_at > before.ts
                    or (t.last_transfer_at == before.ts and t.address not in before.at_ts))]
        latest: dict[str, datetime] = {}
        for t in new:
            assert t.last_transfer_at is not None
            if t.address not in latest or t.last_transfer_at > latest[t.address]:
                latest[t.address] = t.last_transfer_at
        if dict(handed) != latest:
            v.append(f"the live feed handed out {sorted(dict(handed).items())}; the tokens with >= {THRESHOLD} "
                     f"AF investors traded since the cursor, at their latest trade: {sorted(latest.items())}")

    def reconcile_at_the_floor(self, interleave: str = "none") -> None:
        """reconcile_job at the policy's floor over the model's day: its window read, then (if asked)
        a live run records the window's first target, then the window recorded. Exactly the tokens
        with at least the floor's investors not stored when it records are recorded, each once."""
        floor = THRESHOLD
        with self.doing("reconcile"):
            window = self.engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=floor)
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

