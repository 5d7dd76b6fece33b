"""The model on the health report every recording run executes (docs/operations.md, "Health checks"): the
store's figures and the checks the Dagster layer reads (`dagster_defs/health_report.py`'s
`evaluate_health`, the status command's `next_retry` and `oldest_waiting`), judged against what the model
computes from its own record of every element: when the store was asked to create it (the time the
model handed it), and what the store holds for it now (every write of it checked by the model).

- the figures: elements per platform and status equal the model's tally, at every step; the hourly job's
  recount finds no drift, and finds (and repairs) the drift the model makes by hand in a counter;
- `no_stuck_pending`: the pending elements waiting past the URL lock's expiry plus the longest run,
  counted and the oldest named, non-canonical ones included;
- `no_starved_retries`: the elements the default retry would take, due two retry cycles past their
  back-off (a never-recorded one due one base interval after its creation); what the retry leaves
  alone (no generator, paid calls off, not canonical) never counted;
- `exhausted_growth_bounded` against the model's own baseline (the latest observation an hour old, or
  the first), and the next retry (due now, by status, or when the first comes due; the next tick);
- a run's figures and summary against the URL outcomes it produced (heard as the run noted them).

All of it after every step, as an invariant (it draws nothing, so the rules' exploration stays the
machine's), at the step's moment and at the next moment an element becomes stuck, starved or due, exactly
and a microsecond or a millisecond either side; the recount every few steps.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis.stateful import invariant

from social_recording.domain.models import TokenProfile, as_stored
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import parse_canonical
from social_recording.recording.health import (
    ExhaustedBaseline,
    HealthCheck,
    RunFigures,
    StoreFigures,
    check_starved_retries,
    check_stuck_pending,
    next_retry,
    oldest_waiting,
    status_rows,
)
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.run_state import RunState
from test_support.engine_fakes import StepClock

BASE = timedelta(minutes=60)
"""The back-off's base and the retry job's interval (docs/architecture.md): a never-recorded element
counts as due one base after its creation."""
STUCK_AFTER = timedelta(minutes=3) + timedelta(hours=2)
"""docs/operations.md: the URL lock's expiry (3 min) plus the longest run (2 h)."""
STARVED_LATE = timedelta(hours=2)
"""docs/operations.md: due for more than two hourly retry cycles."""
NAMED = 5
"""Elements a failing check names (the oldest)."""
LISTED = 3
"""Elements the model asks `oldest_waiting` for (fewer than it holds, often)."""
RETRYABLE = frozenset({FetchStatus.ERROR, FetchStatus.UNSUPPORTED, FetchStatus.SKIPPED_PAID, FetchStatus.PENDING})
"""What a retry may still change (the status command's "not converged")."""
ABSORBING = frozenset({FetchStatus.OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID,
                       FetchStatus.EXHAUSTED})
US = timedelta(microseconds=1)
MS = timedelta(milliseconds=1)
HEALTH_BOUNDS = ("stuck pending", "starved retry", "next due")
"""The moments `the_clock_reaches_a_health_bound` lands on, per element."""
TICKS = (timedelta(0), -US, US, -MS, MS)
REPORT_EVERY = 10
"""Steps between two reports of every check at the step's moment (every other step between them: the
figures and one check at a bound). Every check at every step would double the model's time (the
starvation check alone reads two ranges per usable platform)."""
RECOUNT_EVERY = 20
"""Steps between two recounts of the hourly job (a full count of the store)."""


@dataclass(frozen=True)
class Held:
    """One element as the model knows it: its creation (the model's record) and what the store holds."""

    address: str
    url: str
    status: FetchStatus
    cause: Cause | None
    attempts: int
    platform: str | None
    created: datetime
    checked_at: datetime | None
    due_at: datetime | None
    detail: str | None

    @property
    def key(self) -> datetime:
        """When it was due: its due time, or one base after its creation if never recorded."""
        return self.created + BASE if self.checked_at is None or self.due_at is None else self.due_at

    @property
    def since(self) -> datetime:
        return self.created if self.checked_at is None else self.checked_at

    @property
    def order(self) -> tuple[datetime, str, str]:
        return self.key, self.address, self.url


class HeardRun:
    """A run's URL outcomes, as the run noted them (its `RunListener`)."""

    def __init__(self) -> None:
        self.outcomes: list[UrlOutcome] = []

    def noted(self, outcome: UrlOutcome) -> None:
        self.outcomes.append(outcome)

    def interrupted(self, message: str) -> None:
        pass


def _platform_or_none(url: str) -> str | None:
    try:
        return parse_canonical(url).platform.value
    except ValueError:
        return None


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class HealthRules:
    """The health report's checks on the machine's store (mixed into `UrlRules`)."""

    store: Any
    clock: Any
    paid: bool
    registry: Any
    tokens: list[str]
    world: Any

    def install_health_checks(self) -> None:
        """Record every element's creation as the store is asked for it (runs and walks alike), and
        hear every run's outcomes."""
        self.created: dict[tuple[str, str], datetime] = {}
        self.addresses: list[str] = []
        self.observed: list[tuple[datetime, int]] = []
        self.heard: list[tuple[RunState, HeardRun]] = []
        self.health_turn = 0
        store = self.store
        create, add = store.create_pending_token, store.add_resolved_url

        def create_pending_token(profile: TokenProfile, now: datetime | None = None) -> bool:
            assert now is not None, "the model's engine always hands the store its clock"
            made = bool(create(profile, now))
            if made:
                self.addresses.append(profile.address)
                doc = store.find_token(profile.address)
                for el in doc.social_urls if doc is not None else ():
                    self.created[(profile.address, el.url)] = now
            return made

        def add_resolved_url(address: str, field: str, url: str, fence: int, now: datetime) -> Any:
            out = add(address, field, url, fence, now)
            if out.applied:
                self.created.setdefault((address, url), now)
            return out

        store.create_pending_token, store.add_resolved_url = create_pending_token, add_resolved_url

    def heard_run(self, build: Callable[[HeardRun], RunState]) -> RunState:
        """A run the model builds (`build` given its listener): its outcomes, checked against its counters."""
        heard = HeardRun()
        run = build(heard)
        self.heard.append((run, heard))
        return run

    # ------------------------------------------------------------------ the model's elements

    def _kept(self, at: datetime) -> datetime:
        """A time at the resolution the store keeps (docs: milliseconds on MongoDB, more on SQLite)."""
        from social_recording.store.mongo import MongoStore

        return as_stored(at) if isinstance(self.store, MongoStore) else at

    def held(self) -> list[Held]:
        out = []
        for address in self.addresses:
            doc = self.store.find_token(address)
            for el in doc.social_urls if doc is not None else ():
                created = self.created.get((address, el.url))
                if created is None:
                    self.world.violations.append(f"{address} {el.url}: an element the store was never asked for")
                    continue
                out.append(Held(address, el.url, el.status, el.cause, el.attempts, _platform_or_none(el.url),
                                self._kept(created), el.checked_at, el.due_at, el.detail))
        return out

    def _retry_takes(self, el: Held) -> bool:
        """The default retry selection's rules, the model's own: error and pending; skipped_paid while
        paid calls are on; unsupported for want of a generator the platform has again; canonical only."""
        if el.platform is None:
            return False
        if el.status is FetchStatus.UNSUPPORTED:
            return el.cause is Cause.NO_GENERATOR and parse_canonical(el.url).platform not in self.registry.unavailable
        return el.status in ({FetchStatus.ERROR, FetchStatus.PENDING} | ({FetchStatus.SKIPPED_PAID} if self.paid else set()))

    def _usable(self) -> frozenset[Any]:
        return frozenset(self.registry.usable_platforms())

    # ------------------------------------------------------------------ checks

    def _check_figures(self, held: list[Held]) -> None:
        """The figures read from the counters equal the model's tally of its elements."""
        figures = StoreFigures.read(self.store)
        w = self.world.violations
        tally: Counter[tuple[str, FetchStatus]] = Counter((el.platform or "unknown", el.status) for el in held)
        got = {(p, s): n for p, row in figures.by_platform.items() for s, n in row.items() if n}
        if got != dict(tally):
            w.append(f"the figures count {sorted(got.items())}, the elements are {sorted(tally.items())}")
        by_status = Counter(el.status for el in held)
        if dict(figures.by_status) != {s: by_status.get(s, 0) for s in FetchStatus}:
            w.append(f"the figures by status {dict(figures.by_status)}, the elements {dict(by_status)}")
        if figures.urls != len(held) or figures.not_converged != sum(el.status in RETRYABLE for el in held):
            w.append(f"the figures say {figures.urls} elements, {figures.not_converged} not converged; the model "
                     f"holds {len(held)}, {sum(el.status in RETRYABLE for el in held)}")
        if figures.tokens != len(self.addresses):
            w.append(f"the figures count {figures.tokens} tokens, the store was asked for {len(self.addresses)}")
        rows = list(status_rows(figures))
        platforms = sorted({p for p, _ in tally})
        if [p for p, _ in rows] != platforms:
            w.append(f"the status rows are {[p for p, _ in rows]}, the platforms held {platforms}")
        for platform, row in rows:
            want = {s.value: tally.get((platform, s), 0) for s in FetchStatus}
            if row != {**want, "total": sum(want.values())}:
                w.append(f"the status row of {platform} is {row}, the model's {want}")

    def _expect_waiting(self, check: HealthCheck, held: Iterable[Held], now: datetime, after: timedelta,
                        what: str) -> None:
        """A waiting check names the elements waiting past `after` (due `after` - BASE past their key,
        at the exact instant included), counted, the oldest `NAMED` in the fair order."""
        late = sorted((el for el in held if el.key <= now + BASE - after), key=lambda e: e.order)
        w = self.world.violations
        if check.passed != (not late) or check.figures.get("elements") != len(late):
            w.append(f"{check.name} at {now}: passed={check.passed}, {check.figures.get('elements')} counted; "
                     f"the model's {what} past {after}: {[(e.address, e.url, e.key) for e in late]}")
            return
        want = [(e.address, e.url, e.status.value, e.platform or "(not canonical)", e.attempts,
                 _iso(e.since) + ("" if e.checked_at is not None else " (created, never recorded)"))
                for e in late[:NAMED]]
        got = [(x.token, x.url, x.status, x.platform, x.attempts, x.waiting_since) for x in check.examples]
        if got != want:
            w.append(f"{check.name} at {now} names {got}, the model's oldest {what} are {want}")
        hours = round(max(((now - e.since).total_seconds() / 3600 for e in late[:NAMED]), default=0.0), 2)
        if check.figures.get("oldest_hours") != hours:
            w.append(f"{check.name} at {now}: oldest {check.figures.get('oldest_hours')} h, the model's {hours} h")

    def _check_next_retry(self, held: list[Held], now: datetime) -> None:
        """What the default retry would take now (by status), or when the first comes due; the next tick."""
        nxt = next_retry(self.store, now, enable_paid=self.paid, usable_platforms=self._usable())
        taken = [el for el in held if self._retry_takes(el)]
        due = [el for el in taken if el.checked_at is None or el.due_at is None or el.due_at <= now]
        ahead = [el.key for el in taken if el not in due]
        want_at = now if due else min(ahead, default=None)
        by_status = Counter(el.status.value for el in due)
        tick = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
        got = (nxt.due_now, nxt.due_now_capped, nxt.next_due_at, nxt.next_tick, dict(nxt.due_by_status))
        want = (len(due), False, want_at, tick, dict(sorted(by_status.items())))
        if got != want:
            self.world.violations.append(f"next_retry at {now}: {got}; the model's {want}")

    def _check_oldest_waiting(self, held: list[Held], now: datetime) -> None:
        want = [(e.address, e.url) for e in sorted((e for e in held if e.status in RETRYABLE),
                                                   key=lambda e: e.order)[:LISTED]]
        got = [(e.address, e.url) for e in oldest_waiting(self.store, now, LISTED)]
        if got != want:
            self.world.violations.append(f"oldest_waiting at {now}: {got}; the model's {want}")

    def report_health(self, now: datetime, held: list[Held], *, observe: bool = True) -> None:
        """The checks a run's report stage evaluates (the hourly job's with `hourly`), at `now`,
        against the model's elements; the exhausted figure observed for the next growth check."""
        from social_recording.dagster_defs.health_report import HealthInputs, check_names, evaluate_health

        self._check_figures(held)
        exhausted = sum(el.status is FetchStatus.EXHAUSTED for el in held)
        before = [(at, n) for at, n in self.observed if at <= now - timedelta(hours=1)]
        base = before[-1] if before else (self.observed[0] if self.observed else None)
        max_per_hour = self.health_turn % 3
        inputs = HealthInputs(enable_paid=self.paid, usable_platforms=self._usable(), max_exhausted_per_hour=max_per_hour,
                              ledger=None)
        checks = evaluate_health(self.store, inputs, now=now, baseline=base and ExhaustedBaseline(base[1], base[0]))
        named = check_names(sandbox=False)
        if [c.name for c in checks] != named:
            self.world.violations.append(f"the health checks {[c.name for c in checks]}, not {named}")
            return
        by = {c.name: c for c in checks}
        self._expect_waiting(by["no_stuck_pending"], [e for e in held if e.status is FetchStatus.PENDING], now,
                             STUCK_AFTER, "pending elements")
        self._expect_waiting(by["no_starved_retries"], [e for e in held if self._retry_takes(e)], now,
                             BASE + STARVED_LATE, "elements the retry takes")
        grown = by["exhausted_growth_bounded"]
        if base is None:
            passed, growth = True, 0
        else:
            growth = exhausted - base[1]
            passed = growth <= max_per_hour * max(1.0, (now - base[0]) / timedelta(hours=1))
        if (grown.passed, grown.figures.get("exhausted"), grown.figures.get("growth")) != (passed, exhausted, growth):
            self.world.violations.append(f"exhausted growth at {now} from {base}: {grown.passed} {dict(grown.figures)}; "
                                         f"the model's {passed}, {exhausted} now, grown {growth} (at most "
                                         f"{max_per_hour} per hour)")
        if observe:
            self.observed.append((now, exhausted))
        self._check_next_retry(held, now)
        self._check_oldest_waiting(held, now)

    # ------------------------------------------------------------------ the probes (no draws: the rules' exploration is the machine's)

    def _probe_a_bound(self, held: list[Held], now: datetime) -> None:
        """One check read at the next moment one of its elements becomes stuck, starved or due, exactly
        or a tick either side (a microsecond or a millisecond, the stores' resolutions): a clock may land
        there. Bounds and ticks taken in turn, one per step."""
        turn = self.health_turn // 2
        bound = HEALTH_BOUNDS[turn % len(HEALTH_BOUNDS)]
        tick = TICKS[(turn // len(HEALTH_BOUNDS)) % len(TICKS)]
        if bound == "stuck pending":
            late, which = STUCK_AFTER, [e for e in held if e.status is FetchStatus.PENDING]
        else:
            late, which = (BASE + STARVED_LATE if bound == "starved retry" else BASE), [
                e for e in held if self._retry_takes(e)]
        at = min((at for el in which if (at := el.key + late - BASE + tick) > now), default=None)
        if at is None:
            return
        if bound == "stuck pending":
            self._expect_waiting(check_stuck_pending(self.store, at), which, at, late, "pending elements")
        elif bound == "starved retry":
            check = check_starved_retries(self.store, at, enable_paid=self.paid, usable_platforms=self._usable())
            self._expect_waiting(check, which, at, late, "elements the retry takes")
        else:
            self._check_next_retry(held, at)

    def _probe_the_recount(self, held: list[Held], now: datetime) -> None:
        """The hourly job: its recount finds a counter the model moved by hand (a write made around the
        store, +1 or -1 in turn) with both values, and repairs it; with none moved, finds nothing."""
        from social_recording.dagster_defs.health_report import HealthInputs, evaluate_health

        turn = self.health_turn // RECOUNT_EVERY
        drift = (0, 1, -1)[turn % 3]
        want: dict[str, tuple[int, int]] = {}
        if drift and held:
            el = held[turn % len(held)]
            key = f"urls|{el.platform or ''}|{el.status.value}"
            n = sum(1 for e in held if e.platform == el.platform and e.status is el.status)
            self._move_counter(key, drift)
            want = {key: (n + drift, n)}
        inputs = HealthInputs(enable_paid=self.paid, usable_platforms=self._usable(),
                              max_exhausted_per_hour=1, ledger=None)
        recount = evaluate_health(self.store, inputs, now=now, baseline=None, hourly=True)[-1]
        figures = (recount.name, recount.passed, recount.figures.get("counters_differing"),
                   recount.figures.get("counters_repaired"), recount.figures.get("drift"))
        if figures != ("counts_match_recount", not want, len(want), len(want), abs(drift) if want else 0):
            self.world.violations.append(f"the recount after a counter moved by hand ({want}): {recount.summary} "
                                         f"{figures}")
        if want:
            self._check_figures(held)  # repaired: the figures are the elements' again

    def _move_counter(self, key: str, by: int) -> None:
        """A write around the store: one counter moved without its elements."""
        from social_recording.store.mongo import MongoStore

        if isinstance(self.store, MongoStore):
            self.store.db["store_counts"].update_one({"_id": "counts"}, {"$inc": {f"n.{key}": by}}, upsert=True)
            return
        conn = sqlite3.connect(self.store.path)  # another process's write, beside the store
        try:
            conn.execute("INSERT INTO store_counts (key, n) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET n = n + ?",
                         [key, by, by])
            conn.commit()
        finally:
            conn.close()

    # ------------------------------------------------------------------ invariants

    @invariant()
    def the_health_report_reads_what_the_model_holds(self) -> None:
        """As a run's report stage does: every run's figures and summary are the outcomes it noted (every
        step); the figures are the model's tally and one check names what the model's elements say at its
        next bound (every other step); every check at the step's moment, and the hourly recount (every
        few steps)."""
        if not hasattr(self, "created"):
            return
        now = StepClock.__call__(self.clock)  # read without the tick a reading adds
        turn = self.health_turn
        if turn % 2 == 0:
            held = self.held()
            if turn % REPORT_EVERY == 0:
                self.report_health(now, held)
            else:
                self._check_figures(held)
                self._probe_a_bound(held, now)
            if turn % RECOUNT_EVERY == 2:
                self._probe_the_recount(held, now)
        self.health_turn += 1
        for run, heard in self.heard:
            self._check_run(run, heard.outcomes)
        self.heard.clear()

    def _check_run(self, run: RunState, outcomes: list[UrlOutcome]) -> None:
        def fetch(o: UrlOutcome) -> FetchStatus | None:
            return o.status if isinstance(o.status, FetchStatus) else None

        converged = sum(1 for o in outcomes if fetch(o) in ABSORBING and fetch(o) != o.previous)
        want = RunFigures(urls=len(outcomes), converged=converged, calls_made=sum(o.attempted for o in outcomes),
                          calls_reused=sum(o.reused for o in outcomes), paid_calls=run.paid_requests)
        if RunFigures.of(run) != want:
            self.world.violations.append(f"a run's figures {RunFigures.of(run)}, its outcomes say {want}")
        s = run.summary()
        written: Counter[Any] = Counter()
        for o in outcomes:
            written.update(o.written)
        said = (s.urls, s.by_status, s.converged, s.attempted, s.reused, s.lost, s.engine_failures, s.written)
        heard = (len(outcomes), dict(sorted(Counter(str(o.status) for o in outcomes).items())), converged,
                 want.calls_made, want.calls_reused,
                 sum(1 for o in outcomes if o.lease_lost or str(o.status) == "lost"),
                 sum(1 for o in outcomes if o.status is EngineOutcome.FAILED), dict(written))
        if said != heard:
            self.world.violations.append(f"a run's summary {said}, its outcomes say {heard}")
