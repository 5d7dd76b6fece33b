"""The model's walks of reconcile's partitions (docs/architecture.md, "Reconcile": "under a job lock per
window (partitions run in parallel)"): two UTC days' reconcile runs overlap, each through the job's two
steps (`read_window`, then `record_window`, as reconcile_job's stages call them). While the first day's
run calls its first URL, under its job lock, the other day's run records its own window (it is not held
back by the first day's lock), and a second run of the first day is skipped, "already running", recording
nothing; the first day's run then finishes its window. Listed among the model's walks
(test_support/url_machine_walks.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from social_recording.domain.url_machine import Why
from social_recording.recording.reconcile import ReconcileOutcome
from test_support.engine_fakes import T0, RangeItem, RangeScan
from test_support.url_machine_locks import model_timings
from test_support.url_machine_model import POOL, Op, UrlRules
from test_support.url_machine_steps import Steps

_, _, _, YT, TG = POOL
DAY = timedelta(days=1)
SKIPPED = "already running"
"""What a reconcile run says when its window's job lock is held by another run (docs/operations.md)."""


class DaysTracker:
    """The tracker's range answer by UTC day: each token traded on the day it is listed under."""

    def __init__(self, days: dict[datetime, list[RangeItem]]) -> None:
        self.days = days

    def scan_range(self, start: datetime, end: datetime, keep: Callable[[RangeItem], Any]) -> RangeScan:
        items = [i for day, listed in self.days.items() if start <= day < end for i in listed]
        return RangeScan([k for k in map(keep, items) if k is not None], len(items), [])


def _overlapping_days(m: UrlRules) -> None:
    """T000 traded on the first day, T001 on the second; the first day's run is interrupted at its call."""
    first, second = T0.replace(hour=0), T0.replace(hour=0) + DAY
    items = {i.address: i for i in m.tracker.items}
    tracker = DaysTracker({first: [items["T000"]], second: [items["T001"]]})
    timings = replace(model_timings(), job_lock_wait=0.05)  # the second run of a day gives up at once
    engine = m._engine_on(m.locks, m.paid, tracker=tracker, timings=timings)
    floor = m.deployed.af_investor_threshold

    def window(day: datetime) -> Any:
        return engine.reconcile.read_window(day, day + DAY, partition_key=day.date().isoformat(), min_af_count=floor)

    def a_run_of(day: datetime) -> ReconcileOutcome:
        """Another reconcile run, of `day`, inside the first day's run (its own operation)."""
        op = m.world.op
        m.world.op = Op("reconcile", interval=timedelta(minutes=m.live_interval))
        try:
            out: ReconcileOutcome = engine.reconcile.record_window(window(day), max_workers=1,
                                                                   run=m._run(Why.RECONCILE))
        finally:
            m.world.op = op
        for token in out.tokens:
            m._check_token_outcome(token)
        return out

    seen: dict[str, ReconcileOutcome] = {}

    def at_the_call(_url: str, _address: str) -> None:
        calls = m.world.calls
        seen["same day"] = a_run_of(first)
        if m.world.calls != calls:
            m.world.violations.append("a second reconcile run of a day called a URL while the first run of that "
                                      "day held its job lock")
        seen["other day"] = a_run_of(second)

    with m.doing("reconcile"):
        m.world.on_call = at_the_call
        out = engine.reconcile.record_window(window(first), max_workers=1, run=m._run(Why.RECONCILE))
    for token in out.tokens:
        m._check_token_outcome(token)
    v = m.world.violations
    same, other = seen.get("same day"), seen.get("other day")
    if same is None or other is None:
        v.append("the first day's reconcile run never called its URL")
        return
    if same.skipped != SKIPPED or same.tokens:
        v.append(f"a second reconcile run of {first.date()} while the first held its job lock: skipped "
                 f"{same.skipped!r}, recorded {[t.address for t in same.tokens]}; it is skipped, {SKIPPED!r}")
    if other.skipped is not None or [t.address for t in other.tokens] != ["T001"]:
        v.append(f"a reconcile run of {second.date()} while {first.date()}'s held its job lock: skipped "
                 f"{other.skipped!r}, recorded {[t.address for t in other.tokens]}; partitions run in parallel, "
                 "it records T001")
    if out.skipped is not None or [t.address for t in out.tokens] != ["T000"]:
        v.append(f"the first reconcile run of {first.date()}: skipped {out.skipped!r}, recorded "
                 f"{[t.address for t in out.tokens]}; it records T000")


def _two_days_reconciled_at_once(m: UrlRules) -> list[Callable[[], object]]:
    return [lambda: m.some_tokens_and_answers([[YT], [TG]], {}), lambda: _overlapping_days(m)]


PARTITION_WALKS: tuple[tuple[str, Steps], ...] = (
    ("two days reconciled at once, and a day twice", _two_days_reconciled_at_once),
)
"""(name, steps) of each walk."""
