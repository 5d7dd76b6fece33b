"""The URL locks themselves, on the real backend (docs/architecture.md, "Locks and fencing", "Fencing").

The model's other holders that lose their lease are stand-ins (a lease marked lost, a backend that
says no); here the engine's holder takes its URL lock from the machine's real lock manager (SQLite's,
or Redis's in a variant: test_support/url_machine_redis.py) and its lease ends under it while it calls:

- its TTL runs out while it is paused and another holder takes the key: its ownership check right
  before a paid request says no (nothing paid leaves), and when it leaves, its release does not free
  the newer owner's key (a third holder does not get in beside it);
- its TTL runs out and nobody takes the key: the check says no all the same;
- its renewer reports it lost (renewals failing until its expiry was near) just as the holder read that
  it was not, the backend still naming it the owner: a lease reported lost never confirms.

The model reads the backend itself (`LockTable`: who owns a key, for how long) and expects, at each
moment, the owner it knows: the calling holder while it calls, the newer holder once it took the key,
nobody once every holder left; a key lives the TTL it was taken for, counted in seconds. A holder
"paused past its TTL" is the backend's key aged past its expiry (its expiry moved into the past, as
the clock would have moved it): both backends then treat it as they treat any key whose time ran out.

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import redis
from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from social_recording.domain.status import ABSORBING
from social_recording.domain.url_machine import Why
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks.base import Lease
from social_recording.locks.redis import FENCE_KEY
from social_recording.recording.engine import Timings
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from test_support.wrapped_locks import WrappedLocks

if TYPE_CHECKING:
    from test_support.url_machine_model import World

URL_LOCK_TTL = 30.0
"""Seconds: the URL lock's TTL in the model's engines."""
TTL_SLACK = 0.5
"""A key read while its holder works has at least this fraction of its TTL left (a step takes far less
than half a minute); a TTL read in the wrong unit leaves a thousandth, or a thousand times it."""
HOW = ("taken over", "runs out", "reported lost")
"""How a URL lease ends under its holder (the rule's draw; see the module doc)."""


def model_timings() -> Timings:
    """The model's engines' lock timings: a short wait for a busy URL, the TTL above."""
    return Timings(url_lock_wait=0.02, url_lock_ttl=URL_LOCK_TTL, token_lock_ttl=30.0, write_retry_s=1.0)


class LockTable(Protocol):
    """What a lock backend holds, read and aged by the model, not through the manager under test."""

    def owner(self, key: str) -> tuple[str, float] | None:
        """The key's owner token and the seconds it has left; None when the key is free (or expired)."""
        ...

    def run_out(self, key: str) -> None:
        """The key's TTL runs out now (its holder was paused past it)."""
        ...

    def held(self) -> list[str]:
        """Every key held now (unexpired)."""
        ...


class SqliteLockTable:
    """The `locks` table of a `SqliteLockManager`'s file (a connection per look: nothing to close)."""

    def __init__(self, path: str) -> None:
        self.path = path

    @contextmanager
    def _rows(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()

    def owner(self, key: str) -> tuple[str, float] | None:
        with self._rows() as conn:
            try:
                row = conn.execute("SELECT owner, expires_at FROM locks WHERE key = ?", (key,)).fetchone()
            except sqlite3.OperationalError:  # no lock taken yet: the manager makes its table on first use
                return None
        left = None if row is None else float(row[1]) - time.time()
        return None if row is None or left is None or left <= 0 else (str(row[0]), left)

    def run_out(self, key: str) -> None:
        with self._rows() as conn:
            conn.execute("UPDATE locks SET expires_at = ? WHERE key = ?", (time.time() - 1.0, key))

    def held(self) -> list[str]:
        with self._rows() as conn:
            try:
                rows = conn.execute("SELECT key FROM locks WHERE expires_at > ?", (time.time(),)).fetchall()
            except sqlite3.OperationalError:
                return []
        return sorted(str(r[0]) for r in rows)


class RedisLockTable:
    """The keys of a Redis lock backend (the fencing counter is not a lock)."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def owner(self, key: str) -> tuple[str, float] | None:
        raw, ms = self.client.get(key), self.client.pttl(key)
        if raw is None or ms is None or int(ms) < 0:
            return None
        return (raw.decode() if isinstance(raw, bytes) else str(raw)), int(ms) / 1000.0

    def run_out(self, key: str) -> None:
        self.client.pexpireat(key, 1)  # an expiry in the past: the key is gone, as when its TTL ran out

    def held(self) -> list[str]:
        return sorted(k.decode() if isinstance(k, bytes) else str(k) for k in self.client.scan_iter("social-*")
                      if (k.decode() if isinstance(k, bytes) else str(k)) != FENCE_KEY)


class KeptLeases(WrappedLocks):
    """A lock manager's leases, each kept as it is taken (the engine's holder's), by key."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.leases: dict[str, Lease] = {}

    @contextmanager
    def _held(self, key: str, hold: Callable[[], Any]) -> Iterator[Lease]:
        with hold() as lease:
            self.leases[lease.key] = lease
            yield lease


class _LostAsChecked(Lease):
    """A lease its renewer reports lost just after its holder read that it was not (another thread's
    mark landing between two looks of the holder): the holder's next look must see it lost."""

    @property
    def lost(self) -> bool:
        was = self._lost
        if not was:
            self.mark_lost("the test: renewals kept failing until the lease's expiry was near")
        return was


class LockRules:
    """The URL lock's owner at each moment, on the machine's real lock manager. Expects the model's
    `locks`, `store`, `world`, `clock`, `tokens`, `engine`, `doing`, `_run`, `_engine_on` and
    `_callable_at`; a variant on another backend overrides `_open_lock_table`."""

    locks: Any
    store: Any
    world: World
    clock: Any
    tokens: list[str]
    doing: Any
    _run: Any
    _engine_on: Any
    _callable_at: Any
    _lock_table: LockTable | None = None


    def _drawn_and_callable(self, data: Any, keep: Callable[[str], bool]) -> tuple[str, str] | None:
        """A (token, URL) drawn among the tokens' elements still open whose URL `keep`s, the clock moved to
        when it may be called; None when there is none, or the drawn one may not be called."""
        candidates = [(a, el.url) for a in self.tokens if (doc := self.store.find_token(a)) for el in doc.social_urls
                      if el.status not in ABSORBING and keep(el.url)]
        if not candidates:
            return None
        address, url = data.draw(st.sampled_from(candidates))
        element = self.store.find_element(address, url)
        when = None if element is None else self._callable_at(element)
        if when is None:
            return None
        if when > self.clock():
            self.clock.set(when)
        return address, url

    def _open_lock_table(self) -> LockTable:
        return SqliteLockTable(self.locks.path)

    @property
    def lock_table(self) -> LockTable:
        if self._lock_table is None:
            self._lock_table = self._open_lock_table()
        return self._lock_table

    def _expect_owner(self, key: str, owner: str | None, moment: str, ttl: float = URL_LOCK_TTL) -> None:
        """The backend names `owner` for `key` (None: nobody), with between half its TTL and its TTL left."""
        held = self.lock_table.owner(key)
        named = None if held is None else held[0]
        if named != owner:
            self.world.violations.append(f"{key} {moment}: the lock backend names {named!r} its owner, "
                                         f"the model expects {owner!r}")
        elif held is not None and not ttl * TTL_SLACK < held[1] <= ttl + 1.0:
            self.world.violations.append(f"{key} {moment}: its owner's key expires in {held[1]:.3f} s; it was taken "
                                         f"or renewed for {ttl:g} s (a TTL is counted in seconds)")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), how=st.sampled_from(HOW))
    def a_url_lock_ends_under_its_holder(self, data: st.DataObject, how: str) -> None:
        """A holder records a URL when it may be called, its URL lock taken from the real lock manager,
        and right before its first request its lease ends under it (`how`, see the module doc). It
        owned the key until then; no paid request leaves from it after; once it left, the newer owner
        (if any) still owns the key and a third holder does not get in; then nobody holds it."""
        only_x = how == "reported lost"  # its first request is the paid one, which the ownership check precedes
        picked = self._drawn_and_callable(data, lambda url: not only_x or parse_canonical(url).platform is Platform.X)
        if picked is None:
            return
        address, url = picked
        from test_support.url_machine_model import STATS

        STATS[f"URL locks ended under their holder: {how}"] += 1
        key, w = URL_LOCK_PREFIX + url, self.world
        held, others = KeptLeases(self.locks), ExitStack()
        newer: list[Lease] = []

        def ends(_url: str, _address: str) -> None:
            lease = held.leases[key]
            self._expect_owner(key, lease.owner, "while its holder calls")
            if how == "reported lost":
                lease.__class__ = _LostAsChecked
                w.lease_lost = True
                return
            self.lock_table.run_out(key)
            w.unconfirmed = True  # no longer the owner: its ownership check must say no
            if how == "taken over":
                newer.append(others.enter_context(self.locks.try_hold(key, URL_LOCK_TTL)))
                if not newer[0].held:
                    w.violations.append(f"{key}: its holder's TTL ran out, yet another holder could not take it")
                self._expect_owner(key, newer[0].owner, "once another holder took it")

        before = (self.store.find_url_state(url), self.store.find_element(address, url))
        with others:
            try:
                with self.doing("live"):
                    w.on_call = ends
                    self._engine_on(held, True, timings=model_timings()).recorder.record_url(
                        (address, address), url, self._run(Why.LIVE))
            finally:
                vetoed, w.lease_lost, w.vetoed, w.unconfirmed = w.vetoed, False, False, False
            if how == "reported lost" and vetoed and (self.store.find_url_state(url),
                                                     self.store.find_element(address, url)) != before:
                w.violations.append(f"{address} {url}: recorded after its URL lock was reported lost")
            if newer and newer[0].held:
                self._third_holder_is_kept_out(key, newer[0], held.leases.get(key))
        self._expect_owner(key, None, "once every holder left")

    def _third_holder_is_kept_out(self, key: str, newer: Lease, old: Lease | None) -> None:
        """The old holder left: the newer one still owns the key, confirms it, and nobody else gets in."""
        self._expect_owner(key, newer.owner, "once the holder it was taken from left")
        if old is not None and not old.lost:  # told at the latest by its release, which found the key another's
            self.world.violations.append(f"{key}: the holder it was taken from left without its lease reported lost")
        if old is not None and old.confirm():
            self.world.violations.append(f"{key}: the holder it was taken from still confirms it ({old!r})")
        if not newer.confirm():
            self.world.violations.append(f"{key}: its owner's ownership check says no ({newer.lost_reason})")
        with self.locks.try_hold(key, URL_LOCK_TTL) as third:
            if third.held:
                self.world.violations.append(f"{key}: a third holder took it beside its owner")

    @invariant()
    def every_holder_left_its_key(self) -> None:
        """Between steps nobody is recording: every lock a holder took was released (only its own)."""
        held = self.lock_table.held()
        if held:
            self.world.violations.append(f"keys still held once every holder left: {held}")


def ended(how: str, url: str, address: str = "T000") -> Callable[[Any], Callable[[], object]]:
    """A walk's step: `address`'s URL lock of `url` ends under it (`how`)."""
    from test_support.url_machine_steps import Draws

    return lambda m: lambda: m.a_url_lock_ends_under_its_holder(Draws(lambda c: c == (address, url)), how)
