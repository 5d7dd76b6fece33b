"""The lock backends' own expiries: takes, renewals and waits on the real SQLite and Redis managers
(docs/architecture.md, "Locks and fencing", "Fencing", "Backend outages"; docs/operations.md).

The model's other time-bound lock rules run on an in-memory backend (`ClockedLocks`); here the engine
takes its locks from a second manager on the machine's own backend (the same SQLite file, or the same
Redis server: its fencing tokens keep growing with the machine's), its renewer stepped on the model's
clock. SQLite's keys expire on that clock (the backend's `time` read, patched for the rule's length);
Redis's expire on the server's, so a Redis key "runs out" by the model moving its expiry into the past.

- a holder paused past its key's expiry: its late renewal is refused (a lease whose key ran out is
  lost, even when nobody took the key) and nothing leaves from it after; a waiter that meets the dead
  key takes it at once, and the old holder's renewal and release leave the newer holder's key and its
  (shorter) TTL alone;
- a take whose answer is lost in an outage (applied, then the backend stops answering): the repeat
  takes the key all the same (it never locks itself out) and the URL is recorded in this run;
- a run re-executed right after a crashed run (its job lock left to expire, documented TTL 120 s):
  it waits the dead run's lock out and does the work, instead of ending "already running".

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import redis
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.url_machine import Why
from social_recording.locks.base import Lease
from social_recording.locks.extender import LeaseRenewer
from social_recording.locks.redis import RedisLockManager
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.recording.outcomes import EngineOutcome
from social_recording.recording.reconcile import reconcile_lock_key
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from test_support.url_machine_locks import URL_LOCK_TTL, model_timings

JOB_LOCK_TTL = 120.0
"""The job lock's documented TTL (docs/operations.md): how long a crashed run's lock blocks the next."""
WAITER_TTL = URL_LOCK_TTL / 2
"""The TTL a waiter takes a dead holder's key for: shorter than the old holder's, so a renewal of the
old holder that wrongly lands on the newer's key shows as a TTL grown past it."""
PAUSES = ("nobody took it", "a waiter took it")
"""What happens to a paused holder's key once it ran out."""


class ModelTime:
    """Epoch seconds that move only when the model says (from the wall's, so every other reader stays sane)."""

    def __init__(self) -> None:
        import time

        self.now = time.time()

    def time(self) -> float:
        return self.now


def _stepped(base: type) -> type:
    """`base` (a real lock manager) whose renewer and polls run on a `ModelTime`."""

    class Stepped(base):  # type: ignore[misc, valid-type]
        clock: ModelTime
        leases: dict[str, Lease]
        lose_answer: str | None

        def _lease(self, key: str, owner: str, fence: int, started: float) -> Lease:
            lease = super()._lease(key, owner, fence, started)
            if lease.held:
                self.leases[key] = lease
            return lease

        def _sleep(self, seconds: float) -> None:
            self.step(seconds)

        def step(self, seconds: float) -> None:
            """The model's clock moves on; the renewals due by then are sent."""
            self.clock.now += seconds
            self.renewer.renew_due()  # type: ignore[union-attr]

        def acquire(self, key: str, owner: str, ttl: float) -> int:
            fence = int(super().acquire(key, owner, ttl))
            if self.lose_answer is not None and key == self.lose_answer:
                self.lose_answer = None  # applied; its answer lost (the backend stops answering a moment)
                raise (redis.ConnectionError("connection reset") if isinstance(self, RedisLockManager)
                       else sqlite3.OperationalError("database is locked"))
            return fence

    return Stepped


SteppedSqlite = _stepped(SqliteLockManager)
SteppedRedis = _stepped(RedisLockManager)


class ExpiryRules:
    """A paused holder past its expiry, a take whose answer is lost, a run re-executed after a crash, on
    the machine's real lock backend. Expects the model's `locks`, `world`, `paid`, `doing`, `_run`,
    `_engine_on`, `_a_callable_url`, `lock_table`."""

    locks: Any
    world: Any
    paid: bool
    doing: Any
    tokens: list[str]
    _run: Any
    _engine_on: Any
    _a_callable_url: Any
    lock_table: Any

    @contextmanager
    def _expiring_locks(self) -> Iterator[Any]:
        """A second manager on the machine's backend, stepped on a `ModelTime` (SQLite's keys read on it)."""
        clock = ModelTime()
        sqlite_module: Any = importlib.import_module("social_recording.locks.sqlite")
        real_time = sqlite_module.time
        if isinstance(self.locks, RedisLockManager):
            manager = SteppedRedis(self.locks._url)
        else:
            manager = SteppedSqlite(self.locks.path)
            sqlite_module.time = SimpleNamespace(time=clock.time)
        manager.clock, manager.leases, manager.lose_answer = clock, {}, None
        manager.renewer = LeaseRenewer(clock=clock.time, threaded=False)
        try:
            yield manager
        finally:
            sqlite_module.time = real_time
            if isinstance(manager, SqliteLockManager):
                with manager._conn() as conn:  # nothing the rule left may outlive it on the model's clock
                    conn.execute("DELETE FROM locks WHERE expires_at > ?", (real_time.time() + 3 * JOB_LOCK_TTL,))
            manager.close()

    def _owner(self, locks: Any, key: str) -> tuple[str, float] | None:
        """Who holds `key` on the backend and for how many more seconds, read on the backend's own clock."""
        if isinstance(locks, RedisLockManager):
            return self.lock_table.owner(key)  # type: ignore[no-any-return]
        with locks._conn() as conn:
            row = conn.execute("SELECT owner, expires_at FROM locks WHERE key = ?", (key,)).fetchone()
        left = None if row is None else float(row[1]) - locks.clock.now
        return None if row is None or left is None or left <= 0 else (str(row[0]), left)

    def _run_out(self, locks: Any, key: str) -> None:
        """The key's holder is paused past its expiry (no renewal sent meanwhile)."""
        if isinstance(locks, RedisLockManager):
            self.lock_table.run_out(key)
        else:
            locks.clock.now += URL_LOCK_TTL + 1.0

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), then=st.sampled_from(PAUSES))
    def a_paused_holder_meets_its_expiry(self, data: st.DataObject, then: str) -> None:
        """A holder is paused during its call past its key's expiry (see the module doc): its late renewal
        is refused and it is lost, whether or not a waiter took the key meanwhile; a waiter takes the dead
        key at once, with a fencing token above the old holder's, and keeps it (and its TTL) through the
        old holder's renewal and release; nothing is recorded from the old holder after."""
        chosen = self._a_callable_url(data)
        if chosen is None:
            return
        address, url = chosen
        from test_support.url_machine_model import STATS

        STATS[f"holders paused past their expiry: {then}"] += 1
        key, w = URL_LOCK_PREFIX + url, self.world
        with self._expiring_locks() as locks, ExitStack() as waiters:
            newer: list[Lease] = []

            def paused(_url: str, _address: str) -> None:
                lease = locks.leases[key]
                self._run_out(locks, key)
                if then == "a waiter took it":
                    waiter = waiters.enter_context(locks.hold_within(key, WAITER_TTL, URL_LOCK_TTL))
                    newer.append(waiter)
                    if not waiter.held or waiter.fence <= lease.fence or waiter.waited_ms > 1.0:
                        w.violations.append(f"{key}: its holder paused past its expiry, a waiter took it "
                                            f"{'at once' if waiter.held else 'never'} (waited {waiter.waited_ms:g} "
                                            f"ms, fence {waiter.fence} after {lease.fence}): a key whose TTL ran "
                                            f"out is free")
                locks.step(URL_LOCK_TTL / 3)  # the paused holder wakes; its renewal is sent late
                if not lease.lost:
                    w.violations.append(f"{key}: its holder's renewal landed past its expiry ({then}) and its lease "
                                        f"is not lost: a lease whose key ran out is lost")
                    lease.mark_lost("the test: its key ran out")
                self._newer_kept(locks, key, newer, "the old holder's renewal")
                w.lease_lost = True

            before = (self.store.find_url_state(url), self.store.find_element(address, url))  # type: ignore[attr-defined]
            try:
                with self.doing("live"):
                    w.on_call = paused
                    self._engine_on(locks, self.paid, timings=model_timings()).recorder.record_url(
                        (address, address), url, self._run(Why.LIVE))
            finally:
                vetoed, w.lease_lost, w.vetoed, w.on_call = w.vetoed, False, False, None
            if vetoed and (self.store.find_url_state(url),  # type: ignore[attr-defined]
                           self.store.find_element(address, url)) != before:  # type: ignore[attr-defined]
                w.violations.append(f"{address} {url}: recorded after its holder's key ran out")
            self._newer_kept(locks, key, newer, "the old holder's release")
        if self._owner(locks, key) is not None:
            w.violations.append(f"{key}: still held ({self._owner(locks, key)}) once every holder left")

    def _newer_kept(self, locks: Any, key: str, newer: list[Lease], after: str) -> None:
        """The waiter (if any) still holds `key`, with no more than its own TTL left; else nobody does."""
        held = self._owner(locks, key)
        if newer and (held is None or held[0] != newer[0].owner or held[1] > WAITER_TTL + 0.5):
            self.world.violations.append(f"{key}: after {after}, the waiter that took it for {WAITER_TTL:g} s "
                                         f"finds it {held}: a renewal or release by another owner leaves a key alone")
        if not newer and held is not None:
            self.world.violations.append(f"{key}: after {after}, the key that ran out is held again ({held}): "
                                         f"a lease whose key ran out is not renewed")

    def a_take_loses_its_answer(self, data: st.DataObject) -> None:
        """Taking a URL's lock is applied by the backend, whose answer is then lost (it stops answering a
        moment): the take is repeated after the outage and holds the key (the repeat never locks its taker
        out); the URL is recorded in this run, not left `locked`, and its key is free after. A walk's step
        (the outage is waited out in real time)."""
        chosen = self._a_callable_url(data)
        if chosen is None:
            return
        address, url = chosen
        from test_support.url_machine_model import STATS

        STATS["takes whose answer was lost"] += 1
        key, w = URL_LOCK_PREFIX + url, self.world
        with self._expiring_locks() as locks:
            locks.lose_answer = key

            def holding(_url: str, _address: str) -> None:
                lease, held = locks.leases.get(key), self._owner(locks, key)
                if lease is None or held is None or held[0] != lease.owner:
                    w.violations.append(f"{key}: called while the backend names {held} its owner, not the caller")

            try:
                with self.doing("live"):
                    w.on_call = holding
                    out = self._engine_on(locks, self.paid, timings=model_timings()).recorder.record_url(
                        (address, address), url, self._run(Why.LIVE))
            finally:
                w.on_call = None
            if out.status is EngineOutcome.LOCKED or locks.lose_answer is not None:
                w.violations.append(f"{address} {url}: its take's answer lost in an outage, it came back {out.status} "
                                    f"({out.detail}); a repeated take holds the key it took")
            if self._owner(locks, key) is not None:
                w.violations.append(f"{key}: still held ({self._owner(locks, key)}) once its holder left")

    def a_run_is_re_executed_after_a_crash(self) -> None:
        """A reconcile run crashed a moment ago holding its window's job lock (its key left on the backend,
        no longer renewed); the run is re-executed right away with the documented job lock timings: it
        waits the dead run's lock out (it expires within the TTL) and records the window's tokens, not
        ending "already running"; through a first call of over a minute its job lock stays its own, with at
        most the TTL left, and the run does the whole window. A walk's step; on SQLite only (Redis's keys run out on the server's clock)."""
        from test_support.url_machine_limits import T0, _at_every_call, _reconcile
        from test_support.url_machine_model import STATS

        if isinstance(self.locks, RedisLockManager):  # a walk runs it on every backend
            return
        STATS["runs re-executed after a crash"] += 1
        with self._expiring_locks() as locks:
            engine = self._engine_on(locks, self.paid, tracker=self.tracker,  # type: ignore[attr-defined]
                                     timings=model_timings())
            window = engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=1)
            key = reconcile_lock_key(window.partition_key)
            crashed = f"crashed-run:{os.getpid()}"
            assert locks.acquire(key, crashed, JOB_LOCK_TTL) > 0
            locks.step(1.0)  # re-executed a second after the crash
            started = locks.clock.now
            held: list[tuple[str, float] | None] = []

            def calling(_url: str, _token: str) -> None:
                held.append(self._owner(locks, key))
                if len(held) == 1:  # its first call lasts over a minute, every lock renewed on time meanwhile
                    for _ in range(7):
                        locks.step(10.0)

            with _at_every_call(self, calling):  # type: ignore[arg-type]
                out = _reconcile(self, engine)  # type: ignore[arg-type]
            waited = locks.clock.now - started
        if out.skipped is not None or waited < JOB_LOCK_TTL - 1.0 - 1e-6:
            self.world.violations.append(f"a reconcile re-executed a second after a crashed run (its job lock's TTL "
                                         f"{JOB_LOCK_TTL:g} s) ended {out.skipped!r} after waiting {waited:g} s: it "
                                         f"waits the crashed run's lock out and does the work")
        elif out.stopped_by != "drained" or out.remaining or out.processed != len(window.targets):
            self.world.violations.append(f"a reconcile re-executed after a crashed run processed {out.processed} of "
                                         f"{len(window.targets)} tokens, stopped by {out.stopped_by!r}: once it holds "
                                         f"its job lock it keeps it and does the whole window")
        for owner in held:
            if owner is None or owner[0] == crashed or not JOB_LOCK_TTL / 2 < owner[1] <= JOB_LOCK_TTL:
                self.world.violations.append(f"{key}: while the re-executed run calls, the backend names {owner} its "
                                             f"holder: the run's own, with at most its TTL ({JOB_LOCK_TTL:g} s) left")
