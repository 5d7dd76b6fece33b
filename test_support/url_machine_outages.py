"""The model's backend outages and cut-short retries beside the per-URL rules
(test_support/url_machine_model.py; docs/architecture.md, "Fencing", "Backend outages", "Retry selection",
"Runs tell the truth", and the third promise, "Nothing is lost").

A mixin of the model's machine. Faults go into the real store and lock manager through small wrappers,
timed on the model's own outage clock (`OutageClock`: an outage is waited out without a real wait, and
no two timings race):

- a store write meeting an unavailable store (busy, or a full disk, as SQLite raises them) shorter than
  the write's bound is repeated: the same write lands once, and the URL ends as it would have without the
  outage; past the bound the URL fails as *attempted* (or not), left as it was for the next run;
- a lock server that does not answer is waited out up to its bound; past it the URL is left as it was,
  nothing sent, reported `deferred` (not a failure of ours);
- a retry cut short by its deadline reports exactly what it selected and did not reach as remaining, and
  tries no raw value once its deadline passed; a URL whose lock was lost during a retry and then written
  is counted lost (the report's own checks, test_support/url_machine_retry.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.status import ABSORBING
from social_recording.domain.url_machine import Why
from social_recording.locks.outage import ride_out
from social_recording.recording.engine import Timings
from social_recording.recording.job_pool import STOPPED_BY_DEADLINE
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.recording.url_recorder import URL_LOCK_PREFIX, UrlRecorder
from social_recording.recording.writer import GraphWriter
from social_recording.store.base import UrlWrite, WriteOutcome
from test_support.url_machine_spool import StoreAway
from test_support.wrapped_locks import WrappedLocks

WRITE_BOUND_S = 1.0
"""How long the model's engines repeat a write through a store outage (their `write_retry_s`)."""
LOCK_BOUND_S = 30.0
"""How long a lock server that does not answer is waited out, as docs/architecture.md gives it."""
DEADLINE_S = 600.0
"""A retry's deadline in the cut-short rule (on the outage clock, which jumps past it)."""
TIMINGS = Timings(url_lock_wait=0.02, url_lock_ttl=30.0, token_lock_ttl=30.0, write_retry_s=WRITE_BOUND_S)
"""The model's engines' lock timings (url_machine_model.py's `_engine`)."""
STORE_OUTAGES = {"busy": "database is locked", "full disk": "database or disk is full"}
"""What the SQLite store raises when another writer holds its file past its timeout, or its disk is full."""
OUTAGE_LENGTHS = (0.05, 0.25, 0.9)
"""Seconds the store stays away, within the write's bound: one, two, four repeats (the last just short of it)."""


class OutageClock:
    """The clock outages are waited out on: `sleep` moves it, nothing else does."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        # At least one step of the float: a wait of what is left of a bound (bound - waited) can be
        # smaller than the clock's resolution, and a sleep that moves nothing would wait forever.
        self.now = max(self.now + max(0.0, seconds), math.nextafter(self.now, math.inf))

    def monotonic(self) -> float:
        return self.now


class DownLocks(WrappedLocks):
    """The shared lock manager, whose server does not answer for `seconds` from the next URL lock asked:
    taking it is waited out as a lock manager does (`ride_out`, on the outage clock), up to LOCK_BOUND_S."""

    def __init__(self, inner: Any, clock: OutageClock, seconds: float) -> None:
        super().__init__(inner)
        self.clock, self.seconds = clock, seconds
        self.until: float | None = None

    def _answer(self) -> None:
        if self.until is not None and self.clock.now < self.until:
            raise ConnectionError("the model's lock server does not answer")

    @contextmanager
    def _held(self, key: str, hold: Callable[[], Any]) -> Iterator[Any]:
        if key.startswith(URL_LOCK_PREFIX) and self.until is None:
            self.until = self.clock.now + self.seconds
        ride_out(self._answer, is_outage=lambda exc: isinstance(exc, ConnectionError), bound=LOCK_BOUND_S,
                 backend="the model's lock server", what=f"taking {key}", sleep=self.clock.sleep,
                 clock=self.clock.monotonic)
        with hold() as lease:
            yield lease



@contextmanager
def store_down(store: Any, clock: OutageClock, url: str, seconds: float,
               error: str | Callable[[], Exception]) -> Iterator[list[tuple[UrlWrite, bool]]]:
    """The store raises `error` (a message, raised as SQLite does; or the exception a factory makes) for the
    writes of `url`'s recordings made within `seconds` of the first one, before changing anything; each
    write of `url` is yielded with whether it reached the store."""
    writes: list[tuple[UrlWrite, bool]] = []
    real = store.apply_url_write
    until: list[float] = []

    def apply(write: UrlWrite) -> WriteOutcome:
        if write.url == url:
            if not until:
                until.append(clock.now + seconds)
            reached = clock.now >= until[0]
            writes.append((write, reached))
            if not reached:
                raise StoreAway(error) if isinstance(error, str) else error()
        out: WriteOutcome = real(write)
        return out

    store.apply_url_write = apply
    try:
        yield writes
    finally:
        del store.apply_url_write


class OutageRules:
    """The outage rules, mixed into UrlRules (whose store, world, clock, locks and engines they drive)."""

    world: Any
    store: Any
    tokens: list[str]
    locks: Any
    paid: bool
    outage_clock: OutageClock

    def outage_recorder(self, store: Any, locks: Any, writer: GraphWriter, registry: Any, **kw: Any) -> UrlRecorder:
        """The engines' recorder, its writes repeated through a store outage on the outage clock."""
        if not hasattr(self, "outage_clock"):
            self.outage_clock = OutageClock()
        clock = self.outage_clock
        return UrlRecorder(store, locks, GraphWriter(store, retry_s=writer.retry_s, sleep=clock.sleep,
                                                     monotonic=clock.monotonic), registry, **kw)

    def _an_element(self, data: st.DataObject) -> tuple[str, Any] | None:
        """A token's element that may be recorded (not absorbing), the clock moved to when it may be called."""
        m: Any = self
        candidates = [(a, el) for a in self.tokens if (doc := self.store.find_token(a))
                      for el in doc.social_urls if el.status not in ABSORBING]
        if not candidates:
            return None
        address, element = data.draw(st.sampled_from(candidates))
        when = m._callable_at(element)
        if when is not None and when > m.clock():
            m.clock.set(when)
        return address, element

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), kind=st.sampled_from(sorted(STORE_OUTAGES)), seconds=st.sampled_from(OUTAGE_LENGTHS))
    def the_store_is_unavailable_for_a_moment(self, data: st.DataObject, kind: str, seconds: float) -> None:
        """A holder records a URL while the store is unavailable (busy, or its disk full) for less than the
        write's bound: its write is repeated and lands once, the same write, and the URL is recorded as
        it would have been (docs/architecture.md, "Fencing": "repeated up to a minute")."""
        from test_support.url_machine_model import STATS

        m: Any = self
        picked = self._an_element(data)
        if picked is None:
            return
        address, element = picked
        started = self.outage_clock.now
        with m.doing("live"), store_down(self.store, self.outage_clock, element.url, seconds,
                                         STORE_OUTAGES[kind]) as writes:
            outcome = m.engine.recorder.record_url((address, address), element.url, m._run(Why.LIVE))
        v = self.world.violations
        waited = self.outage_clock.now - started
        if not writes:
            STATS["store outages met no write"] += 1
            return
        STATS[f"store outages ({kind}) waited out"] += 1
        refused = [w for w, reached in writes if not reached]
        first = next((w for w, reached in writes if reached), None)
        if first is None or any(w != first for w in refused):
            v.append(f"{address} {element.url}: the store was {kind} for {seconds} s (the write's bound is "
                     f"{WRITE_BOUND_S} s) and the recording ended {outcome.status} ({outcome.detail}) after "
                     f"{len(writes)} write(s), waiting {waited:.2f} s: not the same write repeated until it landed")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), seconds=st.sampled_from((5.0, 60.0)))
    def the_lock_server_does_not_answer(self, data: st.DataObject, seconds: float) -> None:
        """A holder asks for a URL's lock while the lock server does not answer: within the bound it is
        waited out and the URL recorded; past it the URL is left as it was, nothing sent, and reported
        deferred, not as a failure of ours (docs/architecture.md, "Backend outages")."""
        from test_support.url_machine_model import STATS

        m: Any = self
        picked = self._an_element(data)
        if picked is None:
            return
        address, element = picked
        url = element.url
        locks = DownLocks(self.locks, self.outage_clock, seconds)
        before = (self.store.find_url_state(url), self.store.find_element(address, url))
        calls = self.world.calls
        with m.doing("live"):
            outcome: UrlOutcome = m._engine_on(locks, self.paid).recorder.record_url((address, address), url,
                                                                                 m._run(Why.LIVE))
        after = (self.store.find_url_state(url), self.store.find_element(address, url))
        v = self.world.violations
        STATS[f"lock server down {'past' if seconds > LOCK_BOUND_S else 'within'} its bound"] += 1
        if seconds > LOCK_BOUND_S:
            if (outcome.status is not EngineOutcome.DEFERRED or outcome.attempted or self.world.calls != calls
                    or after != before):
                v.append(f"{address} {url}: the lock server did not answer past its bound; the URL ended "
                         f"{outcome.status} (attempted {outcome.attempted}, {self.world.calls - calls} call(s)), "
                         f"{before!r} -> {after!r}: not left as it was, deferred")
        elif "lock backend" in outcome.detail:  # whatever else it ended (a defect of the model's provider)
            v.append(f"{address} {url}: the lock server was back within its bound; the URL ended {outcome.status} "
                     f"({outcome.detail})")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), min_interval=st.sampled_from((0, 60)), limit=st.sampled_from((50, 2)),
          deadline_at=st.sampled_from((0, 1, 2, None)), lost_at=st.sampled_from((None, None, 0, 1)))
    def a_retry_cut_short_or_losing_a_lock(self, data: st.DataObject, min_interval: int, limit: int,
                                           deadline_at: int | None, lost_at: int | None) -> None:
        """A default retry whose deadline passes as it starts its `deadline_at`-th URL (0: the first), and
        whose URL lock is lost right before the write of its `lost_at`-th URL (the result is still written:
        its fence is the newest). Its report says exactly what it did not reach as remaining, with what was
        past its limit; it tries no raw value once its deadline passed; each URL whose lock was lost is
        counted lost (docs/architecture.md, "Runs tell the truth"; the report's checks are the retry's,
        test_support/url_machine_retry.py)."""
        from test_support.url_machine_model import STATS, LosingLocks
        from test_support.url_machine_retry import CheckedRetry

        m: Any = self
        clock = self.outage_clock
        locks = LosingLocks(self.locks)
        engine = m._engine_on(locks, self.paid, tracker=m.tracker, monotonic=clock.monotonic, timings=TIMINGS)
        started: list[str] = []
        real_record = engine.recorder.record_url

        def record_url(token: Any, url: str, run: Any, selected: Any = None) -> Any:
            if len(started) == deadline_at:
                clock.now += DEADLINE_S  # the deadline passes as this URL starts
                m.deadline_passed = True
            started.append(url)
            return real_record(token, url, run, selected)

        object.__setattr__(engine.recorder, "record_url", m._watching_record_url(record_url))
        retry = CheckedRetry(engine.retry, m)
        real_apply = self.store.apply_url_write
        writes: list[str] = []

        def apply(write: UrlWrite) -> WriteOutcome:
            if write.url not in writes:
                if len(writes) == lost_at:
                    locks.lose()
                writes.append(write.url)
            out: WriteOutcome = real_apply(write)
            return out

        self.store.apply_url_write = apply
        try:
            with m.doing("retry", interval=min_interval):
                selection = retry.select_due(min_interval_minutes=min_interval, limit=limit)
                out = retry.record_selection(selection, max_workers=1, run=m._run(Why.RETRY),
                                             deadline_seconds=DEADLINE_S)
        finally:
            del self.store.apply_url_write
            m.deadline_passed = False
        cut = out.skipped is None and out.processed + out.changed_meanwhile < len(selection.candidates)
        if cut and out.stopped_by != STOPPED_BY_DEADLINE:
            self.world.violations.append(f"a retry whose deadline passed left {len(selection.candidates)} selected "
                                         f"URL(s) after {out.processed}, and says it stopped by {out.stopped_by}")
        STATS[f"retries cut short: {out.stopped_by}, {out.remaining} remaining"] += 1
        STATS["retries losing a URL lock, counted"] += int(locks.lost and out.lost > 0)
