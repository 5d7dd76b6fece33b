"""The model on what launches and bounds the runs (docs/architecture.md, "Retry selection", "Live",
"Reconcile", "Health"; docs/operations.md, "Health"): the Dagster sensors' guards, a retry run's cap,
reconcile's remaining count and the exhausted growth check's bound and baseline, each driven through the
entry point Dagster calls and judged by the documented rule, written here:

- `retry_candidates_sensor` launches no second retry run while one is queued or running, launches one (the
  due elements of the model's own default selection) once none is, and launches an unchanged selection
  again only after a back-off;
- `token_flow_sensor` launches nothing while a live run is queued or starting, and launches the traded
  tokens while one is running or none is;
- a retry run takes at most the documented cap of the many due elements, and a run configured past it is
  refused at launch;
- a reconcile run stopped by its limit reports as remaining exactly the tokens it did not start, a whole
  run none, with its per-URL outcomes only counted (as reconcile_job records);
- the exhausted growth check compares with the latest observation at least an hour old (the first while
  none is), and allows the documented default bound per hour when the deployment writes none.

The sensors run against one ephemeral Dagster instance per process (its runs and observations removed
after each use), at the model's clock. Listed among the model's walks (test_support/url_machine_walks.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from unittest import mock

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import Why
from test_support.engine_fakes import T0
from test_support.url_machine_steps import Steps, recorded_live

if TYPE_CHECKING:
    from dagster import DagsterInstance

    from test_support.url_machine_model import UrlRules

RETRY_CAP = 200
"""docs/architecture.md, "Settled numbers": a retry run's `limit` is 1-200."""
DEFAULT_EXHAUSTED_PER_HOUR = 25
"""docs/operations.md, "Settings": SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR defaults to 25."""
BACK_OFF = timedelta(minutes=60)
"""docs/architecture.md: an unchanged retry selection relaunches once per back-off (base 60 min)."""
WINDOW = timedelta(hours=1)
"""docs/operations.md: the growth is compared with the latest observation at least an hour old."""
RUNNING, QUEUED, STARTING, DONE = "STARTED", "QUEUED", "STARTING", ("SUCCESS", "FAILURE", "CANCELED")
"""Dagster's run statuses the documented guards speak of: running, queued, starting, and finished."""


@functools.cache
def _instance() -> DagsterInstance:
    """One ephemeral Dagster instance per process: building one costs a quarter of a second."""
    from dagster import DagsterInstance

    return DagsterInstance.ephemeral()


@contextmanager
def _one_run(job_name: str, status: str | None) -> Iterator[DagsterInstance]:
    """The instance holding one run of `job_name` in `status` (None: no run), removed afterwards."""
    from dagster import DagsterRunStatus
    from dagster._core.remote_origin import (
        GrpcServerCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.test_utils import create_run_for_test

    instance = _instance()
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(GrpcServerCodeLocationOrigin(host="localhost", port=1),
                                                    "code_location"), job_name)  # a queued run names where it runs
    run = None if status is None else create_run_for_test(instance, job_name=job_name, remote_job_origin=origin,
                                                          status=DagsterRunStatus[status])
    try:
        yield instance
    finally:
        if run is not None:
            instance.delete_run(run.run_id)


@contextmanager
def _sensor_clock(module: Any, now: datetime) -> Iterator[None]:
    """The sensor module reads `datetime.now(UTC)`: at the model's clock instead."""
    class At(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return now.astimezone(tz) if tz is not None else now

    with mock.patch.object(module, "datetime", At):
        yield


class _Held:
    """A resource as a sensor reads it (`get()`, `registry()`, `client()`, its switches)."""

    def __init__(self, value: Any = None, **fields: Any) -> None:
        self.value = value
        self.__dict__.update(fields)

    def get(self) -> Any:
        return self.value

    def registry(self) -> Any:
        return self.value

    def client(self) -> Any:
        return self.value


def _due_by_default(m: UrlRules, now: datetime) -> list[tuple[str, str]]:
    """The elements the model's own default retry selection takes at `now` (health's rules)."""
    return sorted((el.address, el.url) for el in m.held() if m._retry_takes(el)
                  and (el.checked_at is None or el.due_at is None or el.due_at <= now))


def _retry_sensor(m: UrlRules, status: str | None, cursor: str | None, now: datetime) -> Any:
    from dagster import DefaultSensorStatus, build_sensor_context

    from social_recording.dagster_defs.jobs import retry

    sensor = retry.make_retry_candidates_sensor(retry.retry_job, DefaultSensorStatus.RUNNING)
    with _one_run(retry.retry_job.name, status) as instance, _sensor_clock(retry, now):
        context = build_sensor_context(instance=instance, cursor=cursor, resources={
            "store": _Held(m.store), "platforms": _Held(m.registry), "policy": _Held(enable_paid=m.paid)})
        return sensor(context)


def the_retry_sensor_launches_one_run_at_a_time(m: UrlRules) -> None:
    """With a retry run running or queued, the sensor launches nothing and says why; with none (or only
    finished ones) it launches a run for the model's due elements; evaluated again with the cursor it
    left, it launches the unchanged selection again only once a back-off has passed."""
    now = m.clock()
    due = _due_by_default(m, now)
    v = m.world.violations
    if not due:
        v.append(f"the walk meant the default retry selection to find due elements at {now}")
        return
    for active in (RUNNING, QUEUED):
        out = _retry_sensor(m, active, None, now)
        if out.run_requests or out.skip_reason is None:
            v.append(f"the retry sensor with a retry run {active} launched {len(out.run_requests)} run(s) "
                     f"({out.skip_reason}); no second retry run while one is queued or running")
    launched: Any = None
    for status in (None, *DONE):
        out = _retry_sensor(m, status, None, now)  # none, or only a finished one
        counts = [r.tags.get("social_recording/candidate_urls") for r in out.run_requests]
        if counts != [str(len(due))]:
            v.append(f"the retry sensor with {status or 'no'} retry run at {now} asked for runs of {counts} "
                     f"element(s) ({out.skip_reason}); the default selection finds {len(due)} due: {due}")
        launched = out if launched is None else launched
    if launched is None or not launched.run_requests:
        return
    again = _retry_sensor(m, None, launched.cursor, now + BACK_OFF - timedelta(seconds=1))
    later = _retry_sensor(m, None, launched.cursor, now + BACK_OFF)
    if again.run_requests or len(later.run_requests) != 1 or \
            later.run_requests[0].run_key == launched.run_requests[0].run_key:
        v.append(f"the retry sensor relaunched an unchanged selection within its back-off "
                 f"({len(again.run_requests)} run(s)) or not after it ({[r.run_key for r in later.run_requests]}, "
                 f"first {launched.run_requests[0].run_key}); once per back-off")


def the_live_sensor_waits_for_a_queued_run(m: UrlRules) -> None:
    """With a live run queued or starting, the sensor launches nothing and keeps its cursor; with one
    running, finished or none, it launches the token that traded (the feed's rules, the model's)."""
    from dagster import DefaultSensorStatus, build_sensor_context

    from social_recording.dagster_defs.jobs import live
    from test_support.url_machine_feed import ModelCursor

    tracker, _ = m._feed()
    now = m.clock()
    expected = [a for a, _ in m._expected_read(ModelCursor(), now, live.LIVE_MAX_RUNS_PER_TICK * live.LIVE_BATCH_SIZE,
                                               None)[0]]
    sensor = live.make_token_flow_sensor(live.live_tokens_job, DefaultSensorStatus.RUNNING)
    v = m.world.violations
    kept = live.LiveCursor.parse(None).dump()
    for status in (QUEUED, STARTING, RUNNING, None, *DONE):
        with _one_run(live.live_tokens_job.name, status) as instance, _sensor_clock(live, now):
            context = build_sensor_context(instance=instance, cursor=None, resources={
                "tracker": _Held(tracker), "policy": _Held(af_investor_threshold=m.deployed.af_investor_threshold)})
            out: Any = sensor(context)
        tokens = [t["address"] for r in out.run_requests for t in r.run_config["ops"]["record_tokens"]["config"]["tokens"]]
        waits = status in (QUEUED, STARTING)
        if tokens != ([] if waits else expected) or (waits and (out.skip_reason is None or out.cursor != kept)):
            v.append(f"the live sensor with a live run {status or 'none'} launched {tokens} (cursor {out.cursor}, "
                     f"{out.skip_reason}); it waits while one is queued or starting, else launches {expected}")


def a_retry_run_takes_at_most_its_cap(m: UrlRules) -> None:
    """More elements due than a retry run may take: a run configured at the cap takes exactly the cap,
    one configured past it is refused at launch (Dagster's config check)."""
    from dagster import validate_run_config
    from dagster._core.errors import DagsterInvalidConfigError, DagsterUserCodeExecutionError
    from pydantic import ValidationError

    from social_recording.dagster_defs.jobs.retry import retry_job

    def launch(limit: int) -> bool:
        try:
            validate_run_config(retry_job, {"ops": {"retry_urls": {"config": {"limit": limit}}}})
        except (DagsterInvalidConfigError, DagsterUserCodeExecutionError, ValidationError):
            return False  # refused by the config's schema or by its mapping (the config's own check)
        return True

    v = m.world.violations
    if (launch(RETRY_CAP), launch(RETRY_CAP + 1)) != (True, False):
        v.append(f"a retry run of {RETRY_CAP} launched: {launch(RETRY_CAP)}, of {RETRY_CAP + 1}: "
                 f"{launch(RETRY_CAP + 1)}; the documented limit is 1-{RETRY_CAP}")
    now = m.clock()
    due = _due_by_default(m, now)
    selection = m.engine.retry.select_due(limit=RETRY_CAP, min_interval_minutes=60)
    if len(due) <= RETRY_CAP or len(selection.candidates) != RETRY_CAP:
        v.append(f"a retry run at its cap of {RETRY_CAP} took {len(selection.candidates)} of {len(due)} due")


def _many_due(m: UrlRules) -> None:
    """Tokens holding every URL of the pool, seen and never recorded: more elements than the cap."""
    from test_support.url_machine_model import POOL

    for i in range(RETRY_CAP // len(POOL) + 1):
        assert m.store.create_pending_token(TokenProfile(address=f"CAP{i:03d}", urls=list(POOL)), m.clock())


def a_reconcile_run_counts_what_it_did_not_start(m: UrlRules) -> None:
    """reconcile_job's record step (outcomes only counted): stopped by a limit of one, it started one token
    and leaves the others remaining; the next run records the rest and leaves none."""
    floor = m.deployed.af_investor_threshold
    v = m.world.violations
    for limit in (1, None):
        with m.doing("reconcile"):
            window = m.engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=floor)
            out = m.engine.reconcile.record_window(window, limit=limit, max_workers=1, run=m._run(Why.RECONCILE),
                                                   keep_url_outcomes=False)
        for token in out.tokens:
            m._check_token_outcome(token)
        targets = len(window.targets)
        started = targets if limit is None else min(limit, targets)
        if (out.processed, out.remaining) != (started, targets - started) or targets < 2 * (limit or 0):
            v.append(f"a reconcile run with a limit of {limit} over {targets} token(s): processed {out.processed}, "
                     f"remaining {out.remaining}; it starts {started} and {targets - started} remain")


def the_exhausted_growth_reads_its_baseline(m: UrlRules) -> None:
    """Three observations as a run's report stage writes them: the growth check's baseline, a millisecond
    either side of each one's first hour, is the latest an hour old (the first while none is), and it
    allows the documented bound per hour of that window (the deployment writes none)."""
    from social_recording.dagster_defs.assets import TOKEN_SOCIAL_URLS, observations_for_run
    from social_recording.dagster_defs.health_report import HealthInputs, evaluate_health, exhausted_baseline

    instance = _instance()
    instance.wipe_assets([TOKEN_SOCIAL_URLS])
    try:
        for _ in range(3):
            observed = [o for o in observations_for_run(m.store, None) if o.asset_key == TOKEN_SOCIAL_URLS]
            instance.report_runless_asset_event(observed[0])
        records = sorted(instance.fetch_observations(TOKEN_SOCIAL_URLS, limit=3).records, key=lambda r: r.storage_id)
        ats = [datetime.fromtimestamp(r.timestamp, UTC) for r in records]
        exhausted = sum(el.status is FetchStatus.EXHAUSTED for el in m.held())
        inputs = HealthInputs(enable_paid=m.paid, usable_platforms=frozenset(m.registry.usable_platforms()),
                              max_exhausted_per_hour=m.deployed.max_exhausted_per_hour, ledger=None)
        v = m.world.violations
        for now in sorted({at + WINDOW + d for at in ats for d in (-timedelta(milliseconds=1), timedelta(milliseconds=1))}):
            older = [at for at in ats if at <= now - WINDOW]
            want = older[-1] if older else ats[0]
            base = exhausted_baseline(instance, now)
            if base is None or (base.at, base.exhausted) != (want, exhausted):
                v.append(f"the exhausted growth at {now} compares with {base}; the latest observation an hour old "
                         f"(or the first) was at {want}, of {exhausted}")
                continue
            grown = evaluate_health(m.store, inputs, now=now, baseline=base)[2]
            allowed = round(DEFAULT_EXHAUSTED_PER_HOUR * max(1.0, (now - want) / timedelta(hours=1)), 2)
            if (grown.name, grown.figures.get("allowed")) != ("exhausted_growth_bounded", allowed):
                v.append(f"{grown.name} at {now} allows {grown.figures.get('allowed')}; the documented default "
                         f"{DEFAULT_EXHAUSTED_PER_HOUR} per hour over the window allows {allowed}")
    finally:
        instance.wipe_assets([TOKEN_SOCIAL_URLS])


def _guards_and_counts(m: UrlRules) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    _, _, _, yt, tg = POOL
    return [lambda: m.some_tokens_and_answers([[tg], [yt], [yt]], {tg: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: the_retry_sensor_launches_one_run_at_a_time(m),
            lambda: m.a_token_trades("T001", 0), lambda: the_live_sensor_waits_for_a_queued_run(m),
            lambda: a_reconcile_run_counts_what_it_did_not_start(m),
            lambda: the_exhausted_growth_reads_its_baseline(m)]


def _many_due_elements(m: UrlRules) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    return [lambda: m.some_tokens_and_answers([[POOL[0]], [POOL[1]]], {}), lambda: _many_due(m),
            lambda: m.clock_moves(61), lambda: a_retry_run_takes_at_most_its_cap(m)]


SENSOR_WALKS: tuple[tuple[str, Steps], ...] = (
    ("the sensors' guards, reconcile's remaining and the exhausted growth's baseline", _guards_and_counts),
    ("more due than a retry run's cap", _many_due_elements),
)
"""(name, steps) of each walk."""
