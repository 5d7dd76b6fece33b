"""The model on what a run reports when a lock goes, and on what its sensors launch (docs/architecture.md,
"Runs tell the truth", "Backend outages", "Retry selection", "Live"), each driven through the engine's
or the sensor's own entry point and judged by the documented rule:

- a token whose token lock is lost before all its due URLs were started is reported `lost`, never
  `recorded`; the URLs not started are left as they were;
- a run whose job lock is lost starts no further URL, neither the rest of a token's batch nor a raw
  value to resolve, and says it stopped by `lock_lost` (not `deadline`), whatever it left;
- a URL recorded under a lock whose release then fails (the lock server gone past its outage bound)
  is reported and counted once, as what was recorded; the key expires by its TTL;
- the retry sensor launches a changed selection at once, within the back-off of its last launch (only an
  unchanged one waits);
- two live batches spanning the same first and last trade times, in one tick or two, get two run keys
  (Dagster drops a run whose key it knows).

A mixin of the model (test_support/url_machine_model.py); its steps are driven by RUNS15_WALKS, listed
among the model's walks (test_support/url_machine_walks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from unittest import mock

from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import Why
from social_recording.locks.base import LockBackendUnavailable
from social_recording.recording.job_pool import STOPPED_BY_LOCK_LOST
from social_recording.recording.outcomes import TokenStatus
from social_recording.recording.retry import RETRY_LOCK_KEY
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from test_support.url_machine_feed import THRESHOLD
from test_support.url_machine_locks import model_timings
from test_support.url_machine_steps import Steps, recorded_live


class ReleaseFails:
    """The shared locks, whose URL locks are released and then reported not released: the lock server
    stopped answering past its outage bound right as the release was sent (`LockBackendUnavailable`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.failed: list[str] = []

    @contextmanager
    def _failing(self, key: str, held: Any) -> Iterator[Any]:
        with held as lease:
            yield lease
        if key.startswith(URL_LOCK_PREFIX) and lease.held:
            self.failed.append(key)
            raise LockBackendUnavailable("the model's lock server", f"releasing {key}", 30.0, 30.0,
                                         "ConnectionError: no answer")

    def try_hold(self, key: str, ttl: float) -> Any:
        return self._failing(key, self.inner.try_hold(key, ttl))

    def hold_within(self, key: str, ttl: float, wait: float) -> Any:
        return self._failing(key, self.inner.hold_within(key, ttl, wait))

    def close(self) -> None:
        pass


class Runs15Rules:
    """The steps and checks above, mixed into UrlRules (whose store, world, clock, locks and engines they
    drive)."""

    world: Any
    store: Any
    clock: Any
    locks: Any
    paid: bool
    tracker: Any
    tokens: list[str]
    doing: Any
    _run: Any
    _engine_on: Any
    _check_token_outcome: Any

    # ------------------------------------------------------------------ a token lock lost part way

    def a_token_loses_its_lock_part_way(self, address: str) -> None:
        """A live run of `address` (two due URLs, recorded one at a time) loses its token lock while it calls
        the first: the token is reported `lost` with that one URL's outcome, as the live job's counters say
        it (`tokens_lost`), and the other URL is left as it was ("Runs tell the truth")."""
        from social_recording.dagster_defs.jobs.live import live_counters
        from test_support.url_machine_model import LosingLocks

        m: Any = self
        locks = LosingLocks(self.locks)
        doc = self.store.find_token(address)
        assert doc is not None
        due = [el.url for el in doc.social_urls if el.status in (FetchStatus.ERROR, FetchStatus.PENDING)]
        before = {url: self.store.find_element(address, url) for url in due}

        def lost(_url: str, _address: str) -> None:
            locks.leases[0].mark_lost("the test: the token lock's key was found gone")

        with self.doing("live"):
            self.world.on_call = lost
            run = self._run(Why.LIVE)
            out = m._engine_on(locks, self.paid).processor.record_batch([(address, address)], run, max_workers=1)
        self.world.on_call = None
        counters = live_counters(out, run.status_counts())
        left = [url for url in due if self.store.find_element(address, url) == before[url]]
        v = self.world.violations
        if len(due) < 2:
            v.append(f"the walk meant {address} to hold two due URLs, it holds {due}")
        elif ([o.status for o in out], counters["tokens_lost"], counters["tokens_recorded"], run.urls, len(left)) != \
                ([TokenStatus.LOST], 1, 0, 1, len(due) - 1):
            v.append(f"{address}: its token lock lost at the first of its {len(due)} due URLs; reported "
                     f"{[str(o.status) for o in out]} ({counters['tokens_lost']} lost, {counters['tokens_recorded']} "
                     f"recorded), {run.urls} URL(s) recorded, {left} left: a token stopped part way is lost")

    # ------------------------------------------------------------------ a retry's job lock lost

    def a_retry_loses_its_job_lock_at_a_call(self) -> None:
        """A default retry loses its job lock (the renewer found its key gone) while it calls its first URL:
        no other URL starts, not even the rest of that token's batch, no raw value is tried, and the retry
        says it stopped by `lock_lost`, with what it did not start remaining ("Runs tell the truth")."""
        from test_support.url_machine_model import LosingLocks
        from test_support.url_machine_retry import CheckedRetry

        m: Any = self
        locks = LosingLocks(self.locks)
        engine = m._engine_on(locks, self.paid, tracker=self.tracker, timings=model_timings())
        object.__setattr__(engine.recorder, "record_url", m._watching_record_url(engine.recorder.record_url))
        retry = CheckedRetry(engine.retry, m)
        called: list[str] = []

        def lose_the_job_lock(url: str, _address: str) -> None:
            called.append(url)
            for lease in locks.leases:
                if lease.key == RETRY_LOCK_KEY:
                    lease.mark_lost("the test: the job lock's key was found gone")

        raw_before = m.raw_values()
        calls = self.world.calls
        with self.doing("retry", interval=60):
            selection = retry.select_due(min_interval_minutes=60, limit=50)
            elements = {(c.address, c.url): self.store.find_element(c.address, c.url) for c in selection.candidates}
            self.world.on_call = lose_the_job_lock
            out = retry.record_selection(selection, max_workers=1, run=self._run(Why.RETRY))
        self.world.on_call = None
        moved = [key for key, el in elements.items() if self.store.find_element(*key) != el]
        v = self.world.violations
        if not selection.candidates or not raw_before:
            v.append(f"the walk meant a retry to find due URLs ({len(selection.candidates)}) and raw values "
                     f"({len(raw_before)})")
            return
        if self.world.calls - calls != 1 or len(moved) != 1 or m.raw_values() != raw_before:
            v.append(f"a retry that lost its job lock at its first call ({called[:1]}) went on: "
                     f"{self.world.calls - calls} call(s), {moved} recorded of {sorted(elements)}, raw values "
                     f"{raw_before} became {m.raw_values()}")
        left = len(selection.candidates) - 1
        if (out.stopped_by, out.processed, out.remaining) != (STOPPED_BY_LOCK_LOST, 1, selection.remaining + left):
            v.append(f"a retry that lost its job lock at the first of its {len(selection.candidates)} URL(s), raw "
                     f"values due, says stopped by {out.stopped_by!r}, {out.processed} processed, {out.remaining} "
                     f"remaining; it stopped by lock_lost, 1 processed, {selection.remaining + left} remaining")

    # ------------------------------------------------------------------ a URL lock's release fails

    def a_url_locks_release_fails(self, address: str) -> None:
        """A live run records `address`'s one due URL, and the release of its URL lock fails (the lock server
        did not answer past its bound): the URL is reported as recorded, what its element now holds, and
        counted once in the run ("Backend outages")."""
        m: Any = self
        locks = ReleaseFails(self.locks)
        with self.doing("live"):
            run = self._run(Why.LIVE)
            out = m._engine_on(locks, self.paid).processor.record(address, address, run)
        self._check_token_outcome(out)
        doc = self.store.find_token(address)
        assert doc is not None
        stored = {el.url: str(el.status) for el in doc.social_urls}
        said = [(o.url, str(o.status)) for o in out.urls]
        v = self.world.violations
        if not locks.failed:
            v.append(f"the walk meant {address}'s URL lock release to fail; no URL lock was released")
        elif said != [(url, stored[url]) for url, _ in said] or len(said) != 1 or run.status_counts() != {said[0][1]: 1}:
            v.append(f"{address}: its URL recorded, the lock's release then failed; reported {said}, the run counts "
                     f"{run.status_counts()}, the element holds {stored}: reported and counted once, as recorded")

    # ------------------------------------------------------------------ the retry sensor, a changed selection

    def the_retry_sensor_launches_a_changed_selection(self, recorded: str) -> None:
        """The retry sensor launches the default selection; a live run then records `recorded` (one element
        of it, no longer due); a minute later, well within the back-off, the sensor launches the changed
        selection (a new digest) at once ("Retry selection": only an unchanged one waits a back-off)."""
        from test_support.url_machine_sensors import _due_by_default, _retry_sensor

        m: Any = self
        now = self.clock()
        first = _retry_sensor(m, None, None, now)
        due_before = _due_by_default(m, now)
        recorded_live(m, recorded)()
        later = self.clock() + timedelta(minutes=1)
        due = _due_by_default(m, later)
        again = _retry_sensor(m, None, first.cursor, later)
        v = self.world.violations
        if len(first.run_requests) != 1 or not due or due == due_before:
            v.append(f"the walk meant the retry sensor to launch {due_before}, then meet a changed selection {due}: "
                     f"it launched {len(first.run_requests)} run(s) ({first.skip_reason})")
            return
        keys = [r.run_key for r in again.run_requests]
        counts = [r.tags.get("social_recording/candidate_urls") for r in again.run_requests]
        if counts != [str(len(due))] or keys == [first.run_requests[0].run_key]:
            v.append(f"the retry sensor, a minute after launching {due_before} ({first.run_requests[0].run_key}), "
                     f"met the changed selection {due}: it asked for {keys} of {counts} element(s) "
                     f"({again.skip_reason}); a changed selection is launched at once")

    # ------------------------------------------------------------------ live batches of one instant

    def live_batches_of_one_instant(self, count: int) -> None:
        """`count` qualifying tokens trade in one instant; the sensor ticks allowed one run, then as many as
        it likes: each tick's batches span that one instant, and every batch gets its own run key, each
        tick's and across ticks ("Live": a batch with a new token gets a new key, never dropped)."""
        from social_recording.dagster_defs.jobs import live

        m: Any = self
        tie = self.clock() - timedelta(minutes=10)
        for _ in range(count):
            m.a_token_trades(m.a_token_with_investors([], THRESHOLD), 0, at=tie)
        real = live.evaluate_token_flow
        batches: dict[str, set[frozenset[str]]] = {}

        def evaluate(*args: Any, **kw: Any) -> Any:
            result = real(*args, **kw)
            for r in result.run_requests:
                tokens = r.run_config["ops"]["record_tokens"]["config"]["tokens"]
                batches.setdefault(r.run_key, set()).add(frozenset(t["address"] for t in tokens))
            return result

        with mock.patch.object(live, "evaluate_token_flow", evaluate):
            m.the_sensor_ticks(max_runs=1)
            m.clock_moves(1)
            m.the_sensor_ticks()
        shared = {key: sorted(sorted(b) for b in bs) for key, bs in batches.items() if len(bs) > 1}
        if sum(len(bs) for bs in batches.values()) < 3 or shared:
            self.world.violations.append(f"{count} tokens traded at {tie}, launched in {len(batches)} run key(s); "
                                         f"batches sharing a key: {shared}: each batch its own key")


def _a_token_of_two_due_urls(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    _, _, _, yt, tg = POOL
    return [lambda: m.some_tokens_and_answers([[tg, yt]], {tg: "5xx", yt: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: m.a_token_loses_its_lock_part_way("T000")]


def _a_retry_losing_its_job_lock(urls: int) -> Steps:
    """A token of `urls` failing URLs due, and a token with two raw values due."""
    def steps(m: Any) -> list[Callable[[], object]]:
        from test_support.url_machine_model import POOL

        _, _, _, yt, tg = POOL
        held = [tg, yt][:urls]
        return [lambda: m.some_tokens_and_answers([held], {tg: "5xx", yt: "5xx"}), recorded_live(m, "T000"),
                lambda: m.a_token_with_raw_values([], [("transient", "fresh", True), ("transient", "fresh", True)]),
                lambda: m.clock_moves(61), m.a_retry_loses_its_job_lock_at_a_call]
    return steps


def _a_release_fails(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    _, _, _, yt, _ = POOL
    return [lambda: m.some_tokens_and_answers([[yt]], {yt: "5xx"}), lambda: m.a_url_locks_release_fails("T000")]


def _a_changed_retry_selection(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    _, _, _, yt, tg = POOL
    return [lambda: m.some_tokens_and_answers([[tg], [yt]], {tg: "5xx", yt: "5xx"}), recorded_live(m, "T000"),
            recorded_live(m, "T001"), lambda: m.clock_moves(61),
            lambda: m.the_retry_sensor_launches_a_changed_selection("T000")]


def _live_batches_of_one_instant(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL

    return [lambda: m.some_tokens_and_answers([[POOL[0]]], {}), lambda: m.live_batches_of_one_instant(41)]


RUNS15_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a token loses its lock part way", _a_token_of_two_due_urls),
    *((f"a retry loses its job lock at its {'first of two' if n == 2 else 'only'} URL's call",
       _a_retry_losing_its_job_lock(n)) for n in (2, 1)),
    ("a URL lock's release fails", _a_release_fails),
    ("the retry sensor meets a changed selection", _a_changed_retry_selection),
    ("live batches of one instant", _live_batches_of_one_instant),
)
"""(name, steps) of each walk."""
