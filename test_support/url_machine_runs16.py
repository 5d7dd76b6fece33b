"""The model on a run's second look past its deadline, and on what the code location's schedule, backfill
sensor and settings launch or refuse (docs/architecture.md, "Runs tell the truth", "Reconcile";
docs/operations.md, "Settings"), each driven through the entry point Dagster or the process calls and
judged by the documented rule:

- a reconcile whose deadline passes while its second look waits for a locked-out token starts no other
  locked-out token (no unit starts at or after the deadline);
- `reconcile_schedule`'s daily tick covers yesterday and today (two partitions, two run keys);
- `backfill_start_sensor` requests one run per partition of a new backfill, each with its own run key
  `backfill:partition` (Dagster drops a request whose run key it knows);
- a MongoDB store URL (`mongodb://` or `mongodb+srv://`) without `SOCIAL_RECORDING_LOCK_URL` is refused
  (workers on several hosts need a shared lock).

A mixin of the model (test_support/url_machine_model.py); its steps are driven by RUNS16_WALKS, listed
among the model's walks (test_support/url_machine_walks.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta
from typing import Any

from social_recording.recording.processor import TOKEN_LOCK_PREFIX
from test_support.url_machine_steps import Steps

DEADLINE_S = 5.0
"""The second-look walk's reconcile deadline (seconds on its stepped clock)."""


class OtherHolds:
    """The shared locks, with another worker holding the token locks of `held` until the run's second look
    first waits for one of them; at that moment `at_second_look` runs (the walk moves the run's clock) and
    the other worker lets every one go."""

    def __init__(self, inner: Any, held: list[str], at_second_look: Callable[[], None]) -> None:
        self.inner = inner
        self.keys = {TOKEN_LOCK_PREFIX + a: a for a in held}
        self.other = ExitStack()
        self.at_second_look = at_second_look
        self.asked: list[tuple[str, str]] = []
        self.taken: set[str] = set()

    def try_hold(self, key: str, ttl: float) -> Any:
        if key in self.keys:
            self.asked.append(("first", self.keys[key]))
            if key not in self.taken:
                self.taken.add(key)
                assert self.other.enter_context(self.inner.try_hold(key, ttl)).held
        return self.inner.try_hold(key, ttl)

    def hold_within(self, key: str, ttl: float, wait: float) -> Any:
        if key in self.keys:
            if not any(step == "again" for step, _ in self.asked):
                self.at_second_look()
                self.other.close()
            self.asked.append(("again", self.keys[key]))
        return self.inner.hold_within(key, ttl, wait)

    def close(self) -> None:
        self.other.close()


class Runs16Rules:
    """The steps and checks above, mixed into UrlRules (whose store, world, clock, locks and engines they
    drive)."""

    world: Any
    store: Any
    clock: Any
    locks: Any
    paid: bool
    tracker: Any
    tokens: list[str]

    def a_second_look_meets_the_deadline(self) -> None:
        """A reconcile of three tokens, the first two locked out by another worker at its first look; its
        deadline passes while its second look waits for the first of them: that one goes on, the second
        is not started again (docs/architecture.md, "Runs tell the truth": no unit starts past the deadline)."""
        from test_support.url_machine_limits import _reconcile, _timings

        m: Any = self
        now = [0.0]
        first, second = self.tokens[:2]

        def deadline_passes() -> None:
            now[0] = DEADLINE_S

        locks = OtherHolds(self.locks, [first, second], deadline_passes)
        engine = m._engine_on(locks, self.paid, tracker=self.tracker, timings=_timings(), monotonic=lambda: now[0])
        try:
            _reconcile(m, engine, deadline_seconds=DEADLINE_S)
        finally:
            locks.close()
        again = [a for step, a in locks.asked if step == "again"]
        v = self.world.violations
        if [a for step, a in locks.asked if step == "first"] != [first, second] or not again:
            v.append(f"the walk meant {first} and {second} locked out at a reconcile's first look, then looked at "
                     f"again: asked {locks.asked}")
        elif again != [first] or self.store.find_token(second) is not None:
            v.append(f"a reconcile's deadline passed while its second look waited for {first}: it looked again at "
                     f"{again}, {second} stored: {self.store.find_token(second) is not None}; no token starts "
                     f"past the deadline")

    def the_schedule_backfills_and_settings_launch_what_the_docs_say(self) -> None:
        """The daily reconcile tick asks for yesterday's and today's partitions; a new backfill of three days
        gets three run requests with three run keys; a MongoDB store without a lock URL is refused."""
        v = self.world.violations
        v.extend(_reconcile_tick_problems())
        v.extend(_backfill_problems())
        v.extend(_settings_problems())


def _reconcile_tick_problems() -> list[str]:
    """docs/architecture.md, "Reconcile": `reconcile_schedule` (00:30 UTC) covers yesterday and today."""
    from dagster import DefaultScheduleStatus, build_schedule_context

    from social_recording.dagster_defs.jobs.reconcile import make_reconcile_job, make_reconcile_schedule

    schedule = make_reconcile_schedule(make_reconcile_job(date(2026, 1, 1)), DefaultScheduleStatus.STOPPED)
    tick = datetime(2026, 3, 10, 0, 30, tzinfo=UTC)
    with build_schedule_context(scheduled_execution_time=tick) as context:
        out: Any = schedule(context)
    requests = out if isinstance(out, list) else []
    days = sorted(str(r.partition_key) for r in requests)
    want = [(tick.date() - timedelta(days=1)).isoformat(), tick.date().isoformat()]
    if days != want or len({r.run_key for r in requests}) != 2:
        return [f"reconcile_schedule's tick at {tick} asked for {days} ({[r.run_key for r in requests]}); "
                f"it covers yesterday and today: {want}, each its own run"]
    return []


def _backfill_problems() -> list[str]:
    """docs/architecture.md, "Reconcile": `backfill_start_sensor` requests a run per partition (run key
    `backfill:partition`)."""
    from dagster import DagsterInstance, build_sensor_context
    from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
    from dagster._core.remote_origin import (
        GrpcServerCodeLocationOrigin,
        RemotePartitionSetOrigin,
        RemoteRepositoryOrigin,
    )

    from social_recording.dagster_defs.backfill_start import start_backfills
    from social_recording.dagster_defs.backfill_watch import partition_set_name

    days = ["2026-03-08", "2026-03-09", "2026-03-10"]
    origin = RemotePartitionSetOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=GrpcServerCodeLocationOrigin(host="localhost", port=1, location_name="code_location"),
            repository_name="__repository__"),
        partition_set_name=partition_set_name("reconcile_job"))
    with DagsterInstance.ephemeral() as instance:
        instance.add_backfill(PartitionBackfill(
            backfill_id="modelbf", status=BulkActionStatus.REQUESTED, from_failure=False, tags={},
            backfill_timestamp=time.time() - 1.0, partition_set_origin=origin, partition_names=days))
        with build_sensor_context(instance=instance) as context:
            out = start_backfills(context, ["reconcile_job"])
    requests = out.run_requests or []
    keys = [r.run_key for r in requests]
    if sorted(str(r.partition_key) for r in requests) != days or len(set(keys)) != len(days):
        return [f"a new backfill of {days}: the sensor requested {[r.partition_key for r in requests]} under run "
                f"keys {keys}; one run per partition, each its own key (Dagster drops a key it knows)"]
    return []


def _settings_problems() -> list[str]:
    """docs/operations.md, "Settings": SOCIAL_RECORDING_LOCK_URL is required with a MongoDB store."""
    from social_recording.settings import Settings

    problems = []
    for url in ("mongodb://mongo:27017/social", "MONGODB://mongo:27017/social", "mongodb+srv://cluster.example/social"):
        try:
            Settings(store_url=url, lock_url=None)
        except ValueError:
            continue
        problems.append(f"a store at {url} without a lock URL was accepted; a MongoDB store needs a shared lock")
    return problems


def _a_second_look_past_the_deadline(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_limits import ONE_EACH, TG, X2, YT

    return [lambda: m.some_tokens_and_answers(ONE_EACH, {YT: "ok", TG: "ok", X2: "ok"}),
            m.a_second_look_meets_the_deadline]


def _launches(m: Any) -> list[Callable[[], object]]:
    return [m.the_schedule_backfills_and_settings_launch_what_the_docs_say]


RUNS16_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a reconcile's second look meets its deadline", _a_second_look_past_the_deadline),
    ("the reconcile tick, a backfill's run keys and a shared store's lock URL", _launches),
)
"""(name, steps) of each walk."""
