"""The model's walks of a run's own limits (test_support/url_machine_model.py): a reconcile run driven
through the engine's entry point the reconcile job calls (`record_window`), with its limit, its deadline
on a stepped clock, its job lock lost mid-run, and its provider-concurrency override (the job's
`provider_concurrency`, set on the run as the job's stage does: `RunState.limit_calls`). Checked against
the model's own count of what the run may start (docs/architecture.md, "Runs tell the truth", "Provider
concurrency and rates"): no unit past its limit, at or after its deadline's instant, or after its job lock
is lost; the rest reported as remaining; a provider's calls in flight at once those its bound lets
through. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from social_recording.domain.url_machine import Why
from social_recording.domain.urls import parse_canonical
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.engine import Timings
from social_recording.recording.job_pool import STOPPED_BY_DEADLINE, STOPPED_BY_LIMIT, STOPPED_BY_LOCK_LOST
from social_recording.recording.reconcile import JOB_LOCK_PREFIX, ReconcileOutcome
from test_support.engine_fakes import T0
from test_support.url_machine_model import POOL, LosingLocks, UrlRules
from test_support.url_machine_outbound import SlotGate
from test_support.url_machine_steps import Steps

X, X2, WEB, YT, TG = POOL
ONE_EACH = [[YT], [TG], [X2]]
"""Three tokens of one URL each, every URL its own: each token's unit makes exactly one call."""
UNITS = Callable[[str, str], None]


def account_of(url: str) -> str:
    return CATALOGUE[parse_canonical(url).platform].account.name


@contextmanager
def _at_every_call(m: UrlRules, before: UNITS, after: Callable[[], None] | None = None) -> Iterator[None]:
    """`before(url, token)` runs at the start of every provider call (inside the run's call slot), and
    `after()` at its end; the calls themselves run one at a time, so the model's world is counted by one
    thread whatever the run's threads."""
    provider: Any = next(iter(m.registry.generators.values()))
    real = provider.generate
    one = threading.Lock()

    def generate(url: str, ctx: Any) -> Any:
        before(url, ctx.token_address)
        try:
            with one:
                return real(url, ctx)
        finally:
            if after is not None:
                after()

    provider.generate = generate
    try:
        yield
    finally:
        del provider.generate


def _reconcile(m: UrlRules, engine: Any = None, **bounds: Any) -> ReconcileOutcome:
    """The reconcile job's two steps over the day's window, one token at a time (`bounds`: its limit,
    deadline); every token's outcome checked as the model's reconcile checks it."""
    engine = engine or m.engine
    with m.doing("reconcile"):
        window = engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=1)
        out: ReconcileOutcome = engine.reconcile.record_window(
            window, max_workers=1, run=m._run(Why.RECONCILE), **bounds)
    for token in out.tokens:
        m._check_token_outcome(token)
    return out


def _check_started(m: UrlRules, out: ReconcileOutcome, targets: list[str], may_start: int, stopped_by: str,
                   why: str) -> None:
    """The run started the first `may_start` of `targets` (in the window's order) and no other; it
    reports the rest as remaining, stopped by `stopped_by`; the unstarted tokens are not in the store."""
    started = [a for a in targets if m.store.find_token(a) is not None]
    if started != targets[:may_start] or out.processed != may_start or out.remaining != len(targets) - may_start \
            or out.stopped_by != stopped_by:
        m.world.violations.append(
            f"a reconcile {why} may start {targets[:may_start]} of {targets}: it recorded {started}, said "
            f"{out.processed} processed, {out.remaining} remaining, stopped by {out.stopped_by!r}")


def _limited(limit: int) -> Steps:
    """A reconcile limited to `limit` tokens of three: it starts the first `limit`, reports the rest as
    remaining; the next run without a limit records them."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def limited() -> None:
            _check_started(m, _reconcile(m, limit=limit), m.tokens[:3], min(limit, 3),
                           STOPPED_BY_LIMIT if limit < 3 else "drained", f"limited to {limit}")

        def the_rest() -> None:
            _check_started(m, _reconcile(m), m.tokens[min(limit, 3):3], 3 - min(limit, 3), "drained",
                           f"after one limited to {limit}")
        return [lambda: m.some_tokens_and_answers(ONE_EACH, {YT: "ok", TG: "ok", X2: "ok"}), limited, the_rest]
    return steps


def _deadline(seconds: float) -> Steps:
    """A reconcile with a deadline, its clock a stepped one that moves a second at each call (so a token
    starts exactly on whole seconds from the run's start): no token starts at or after the deadline's
    instant, every one before it does."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def bounded() -> None:
            now = [0.0]
            late: list[str] = []

            def call(_url: str, token: str) -> None:
                if now[0] >= seconds:
                    late.append(f"{token} at {now[0]} s")
                now[0] += 1.0

            engine = m._engine_on(m.locks, m.paid, tracker=m.tracker, timings=_timings(),
                                  monotonic=lambda: now[0])
            with _at_every_call(m, call):
                out = _reconcile(m, engine, deadline_seconds=seconds)
            if late:
                m.world.violations.append(f"a reconcile with a deadline of {seconds} s started {late}")
            may_start = min(3, -int(-seconds // 1))  # tokens starting at 0, 1, 2 s: those before the deadline
            _check_started(m, out, m.tokens[:3], may_start, STOPPED_BY_DEADLINE if may_start < 3 else "drained",
                           f"with a deadline of {seconds} s")
        return [lambda: m.some_tokens_and_answers(ONE_EACH, {YT: "ok", TG: "ok", X2: "ok"}), bounded]
    return steps


def _timings() -> Timings:
    return Timings(url_lock_wait=0.02, url_lock_ttl=30.0, token_lock_ttl=30.0, write_retry_s=1.0)


def _job_lock_lost(m: UrlRules) -> list[Callable[[], object]]:
    """A reconcile loses its job lock (the renewer found its key gone) during its first token's call: the
    token finishes, no other starts ("Runs tell the truth": a run whose job lock is lost stops)."""
    def losing() -> None:
        locks = LosingLocks(m.locks)
        called: list[str] = []

        def call(_url: str, token: str) -> None:
            called.append(token)
            for lease in locks.leases:
                if lease.key.startswith(JOB_LOCK_PREFIX):
                    lease.mark_lost("the test: the job lock's key was found gone")

        engine = m._engine_on(locks, m.paid, tracker=m.tracker, timings=_timings())
        with _at_every_call(m, call):
            out = _reconcile(m, engine)
        if called != m.tokens[:1]:
            m.world.violations.append(f"a reconcile that lost its job lock at {m.tokens[0]}'s call went on to call "
                                      f"for {called[1:]}")
        _check_started(m, out, m.tokens[:3], 1, STOPPED_BY_LOCK_LOST, "that lost its job lock at its first call")
    return [lambda: m.some_tokens_and_answers(ONE_EACH, {YT: "ok", TG: "ok", X2: "ok"}), losing]


def _side_by_side(override: Mapping[str, int] | None) -> Steps:
    """A token's two x.com URLs (one provider account) recorded side by side by a run whose job config
    sets that account's calls at once (`override`) or leaves its default (the platform catalogue's): the
    calls in flight at once are as many as the bound lets through, of the two."""
    account = account_of(X)

    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def run() -> None:
            bound = (override or {}).get(account) or CATALOGUE[parse_canonical(X).platform].account.concurrency or 0
            gate = SlotGate(2)
            with _at_every_call(m, gate.call, gate.done), m.doing("reconcile"):
                window = m.engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=1)
                r = m._run(Why.RECONCILE)
                r.calls = CallSlots(per_token=2)  # the token's two URLs at once
                r.limit_calls(override)  # as the job's stage does with its `provider_concurrency`
                lane = r.calls._lane(account)
                lane.cond = gate.parking()
                out = m.engine.reconcile.record_window(window, max_workers=1, run=r)
            for token in out.tokens:
                m._check_token_outcome(token)
            want = min(bound, 2)
            if gate.stalled or gate.peak != want:
                m.world.violations.append(
                    f"a token's two {account} URLs side by side under a bound of {bound} ({override or 'default'}): "
                    f"{gate.peak} call(s) in flight at once, {want} expected" + (" (stalled)" if gate.stalled else ""))
        return [lambda: m.some_tokens_and_answers([[X, X2]], {X: "ok", X2: "ok"}), run]
    return steps


LIMIT_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"a reconcile limited to {n} of three tokens", _limited(n)) for n in (1, 2)),
    *((f"a reconcile with a deadline of {s} s", _deadline(s)) for s in (2.0, 1.5)),
    ("a reconcile loses its job lock at its first call", _job_lock_lost),
    *((f"a token's provider calls side by side ({'one at a time by config' if o else 'default'})", _side_by_side(o))
      for o in ({account_of(X): 1}, None)),
)
"""(name, steps) of each walk."""
