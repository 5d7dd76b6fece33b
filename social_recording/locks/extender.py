"""What both lock backends share: acquisition loops, renewal, fencing tokens and owner-only release.

A backend supplies atomic primitives (acquire-with-fencing-token / extend / release by owner token,
an ownership probe, plus an optional cheap "is it worth trying" probe); `LeasingLockManager` turns
them into the `LockManager` context managers of `base.py`:

- try once, give up at once (token lock, job locks): another holder is doing the same work;
- wait up to a bound with small jittered polls (URL lock); past the bound the caller leaves the URL
  for the next run;
- while held, the lease is renewed every ttl/3 (by the process's one `LeaseRenewer`), so the TTL
  only decides how long a *dead* holder blocks the key, never how long a live one may work. A
  renewal that raises (backend busy or unreachable for a moment) is retried with back-off until the
  lease's own expiry is near: a single socket error or a busy database must not throw away a paid
  result. The lease is marked `lost` only when the backend answers that the key is no longer ours,
  or when the retries run into the expiry;
- on exit the key is deleted only if this lease still owns it (compare-and-delete);
- taking, probing, checking and releasing a key ride out a backend that does not answer for up to
  `outage_s` (locks/outage.py): a token waits instead of failing, a release lands once the backend
  is back instead of leaving the key to block re-runs for its TTL. A take repeated after an outage
  first deletes the key if it is already ours (the first attempt may have landed with its answer
  lost), so it never locks itself out.

Locks are NOT reentrant: every acquisition uses a fresh owner token, so asking again for a
key the same process (or thread) already holds yields `held=False` until the first lease exits.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import queue
import random
import secrets
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from social_recording.domain.redaction import redact_url
from social_recording.locks.base import Lease
from social_recording.locks.outage import OUTAGE_S, ride_out

log = logging.getLogger("social_recording.locks")

T = TypeVar("T")

#: Polling delays of `hold_within` (seconds): start small so a released key is taken quickly,
#: grow to a cap so many waiters on a long (180 s) wait don't hammer the backend.
POLL_MIN_DELAY = 0.02
POLL_MAX_DELAY = 0.1
#: Daemon threads that send renewals for the whole process (one slow backend call delays no other).
RENEW_WORKERS = 4
#: Stopped leases left in the renewal heap before it is compacted (they are skipped when due anyway).
STALE_COMPACT_MIN = 1000
#: Back-off of a failed renewal: first retry after this many seconds, doubling up to a tenth of the TTL.
RENEW_RETRY_MIN_DELAY = 0.05
#: A failing renewal gives up (lease lost) when less than this fraction of the TTL is left before the
#: expiry the backend last confirmed: past that point another process may take the key at any moment.
RENEW_GIVE_UP_FRACTION = 0.1


class _Identity:
    """What a process's owner tokens are made of: `host:pid` (for an operator), a secret drawn once
    per process, and a counter."""

    __slots__ = ("pid", "prefix", "counter")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.prefix = f"{socket.gethostname()}:{pid}:{secrets.token_hex(16)}:"
        self.counter = itertools.count(1)


_identity: _Identity | None = None


def _process_identity() -> _Identity:
    """This process's identity, made once per process (again in a forked child, which must not share
    its parent's secret and counter)."""
    global _identity
    current = _identity
    pid = os.getpid()
    if current is None or current.pid != pid:
        current = _identity = _Identity(pid)
    return current


def new_owner_token() -> str:
    """A unique owner token: this process's secret (drawn once, with its host and pid for an operator)
    and the next number of its counter, so no two leases anywhere share one. Not a random draw per
    lock: `os.urandom` is a system call that lets go of the interpreter lock, and at 4 recording
    threads getting it back cost every URL lock ~0.08 ms of waiting (docs/architecture.md,
    "Per-URL bookkeeping")."""
    identity = _process_identity()
    return f"{identity.prefix}{next(identity.counter)}"


def check_args(key: str, ttl: float, wait: float = 0.0) -> None:
    """Reject nonsense early with the bad value named (a 0 TTL would never hold anything)."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"lock key must be a non-empty string, got {key!r}")
    if not _finite_number(ttl) or not ttl > 0:
        raise ValueError(f"lock ttl must be a positive number of seconds, got {ttl!r} for key {key!r}")
    if not _finite_number(wait) or not wait >= 0:
        raise ValueError(f"lock wait must be a finite number of seconds >= 0, got {wait!r} for key {key!r}")


def _finite_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


class _Renewal:
    """One held lease's renewal state (owned by the shared renewer)."""

    __slots__ = ("manager", "lease", "ttl", "interval", "margin", "expires_at", "stopped", "failures", "delay",
                 "in_heap")

    def __init__(self, manager: LeasingLockManager, lease: Lease, ttl: float, acquired_at: float) -> None:
        self.manager = manager
        self.lease = lease
        self.ttl = ttl
        self.interval = ttl / 3.0
        self.margin = ttl * RENEW_GIVE_UP_FRACTION
        self.expires_at = acquired_at + ttl
        """When the backend drops the key if no renewal lands (monotonic): set at acquisition and pushed
        out by each successful renewal, measured from the moment it was *sent* (the conservative end)."""
        self.stopped = False
        self.failures = 0
        self.delay = RENEW_RETRY_MIN_DELAY
        self.in_heap = False

    def stop(self) -> None:
        """The holder is leaving: no renewal is sent after this, and none reports a loss. A renewal
        already in flight may still land; it cannot resurrect the key, because release and renewal
        both compare the owner token at the backend."""
        self.stopped = True


class LeaseRenewer:
    """Keeps every held lease of this process alive: each one every ttl/3 until stopped or lost.

    Why one renewer and not a thread per lease: starting and joining a thread for every URL a worker
    records cost more than the lock round trips themselves. One scheduler thread keeps the leases in
    a heap by their next renewal time and hands each due renewal to a few daemon workers, so a
    backend call that hangs (a paused Redis, a busy SQLite file) delays no other lease's renewal.

    `clock` (monotonic seconds) and `threaded` are a test's seam: a renewer built with
    `threaded=False` starts no thread, and its owner steps it on its own clock with `renew_due`, so a
    lease held through a long call is renewed at the moments the rules give, not at wall-clock ones.

    A renewal that raises is retried with back-off (RENEW_RETRY_MIN_DELAY, doubling up to a tenth of
    the TTL) until `expires_at` is within RENEW_GIVE_UP_FRACTION of the TTL; only then, or when the
    backend says the key is no longer ours, is the lease marked lost."""

    def __init__(self, workers: int = RENEW_WORKERS, *, clock: Callable[[], float] = time.monotonic,
                 threaded: bool = True) -> None:
        self.pid = os.getpid()
        self.clock = clock
        self._threaded = threaded
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Renewal]] = []
        self._seq = itertools.count()
        self._stale = 0
        self._jobs: queue.SimpleQueue[_Renewal] = queue.SimpleQueue()
        self._max_workers = workers
        self._workers = 0
        self._idle = 0
        self._scheduler: threading.Thread | None = None

    def start(self, manager: LeasingLockManager, lease: Lease, ttl: float, acquired_at: float) -> _Renewal:
        entry = _Renewal(manager, lease, ttl, acquired_at)
        with self._cond:
            if self._scheduler is None and self._threaded:
                self._scheduler = threading.Thread(target=self._schedule_loop, name="lock-renewer", daemon=True)
                self._scheduler.start()
            self._push(entry, acquired_at + entry.interval)
        return entry

    def stop(self, entry: _Renewal) -> None:
        with self._cond:
            if not entry.stopped and entry.in_heap:
                self._stale += 1
            entry.stop()
            if self._stale > STALE_COMPACT_MIN and self._stale * 2 > len(self._heap):
                self._heap = [item for item in self._heap if not item[2].stopped]
                heapq.heapify(self._heap)
                self._stale = 0

    def _push(self, entry: _Renewal, due: float) -> None:
        """Schedule `entry` (caller holds the condition). The scheduler is woken only when `entry` is
        now the first due: otherwise it already sleeps until an earlier one, and waking it for every
        lease taken would cost each URL a thread switch."""
        entry.in_heap = True
        first = not self._heap or due < self._heap[0][0]
        heapq.heappush(self._heap, (due, next(self._seq), entry))
        if first:
            self._cond.notify()

    def _schedule(self, entry: _Renewal, due: float) -> None:
        with self._cond:
            if not entry.stopped:
                self._push(entry, due)

    def _schedule_loop(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][2].stopped:
                        heapq.heappop(self._heap)[2].in_heap = False
                        self._stale = max(0, self._stale - 1)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    due = self._heap[0][0]
                    left = due - self.clock()
                    if left <= 0:
                        entry = heapq.heappop(self._heap)[2]
                        entry.in_heap = False
                        break
                    self._cond.wait(left)
                if self._idle == 0 and self._workers < self._max_workers:
                    self._workers += 1
                    threading.Thread(target=self._work_loop, name="lock-renewal", daemon=True).start()
            self._jobs.put(entry)

    def renew_due(self) -> int:
        """Send, in the caller's thread, every renewal due by `clock()` (those a failure re-schedules
        within it too); the number sent. For a renewer built with `threaded=False`."""
        sent = 0
        while True:
            with self._cond:
                while self._heap and self._heap[0][2].stopped:
                    heapq.heappop(self._heap)[2].in_heap = False
                    self._stale = max(0, self._stale - 1)
                if not self._heap or self._heap[0][0] > self.clock():
                    return sent
                entry = heapq.heappop(self._heap)[2]
                entry.in_heap = False
            self._renew(entry)
            sent += 1

    def _work_loop(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
            entry = self._jobs.get()
            with self._cond:
                self._idle -= 1
            try:
                self._renew(entry)
            except Exception:  # never let one lease's trouble stop the renewer
                log.exception("lock renewer: unexpected error renewing %r", redact_url(entry.lease.key))

    def _renew(self, entry: _Renewal) -> None:
        if entry.stopped:
            return
        lease = entry.lease
        sent_at = self.clock()
        try:
            still_owner = entry.manager.extend(lease.key, lease.owner, entry.ttl)
        except Exception as exc:  # backend unreachable, timeouts, locked database ...
            entry.failures += 1
            error = f"{type(exc).__name__}: {entry.manager.describe_error(exc)}"
            left = entry.expires_at - self.clock()
            if left <= entry.margin:
                self._lose(entry, f"renewal failed {entry.failures} time(s) until the lease expired (last: {error})")
                return
            log.info("lock %r: renewal failed (%s); retrying, %.2f s left before expiry",
                     redact_url(lease.key), error, left)
            self._schedule(entry, self.clock() + min(entry.delay, max(0.0, left - entry.margin)))
            entry.delay = min(entry.delay * 2.0, max(RENEW_RETRY_MIN_DELAY, entry.ttl / 10.0))
            return
        if not still_owner:
            self._lose(entry, "renewal refused: the key expired, was deleted or is now held by another owner")
            return
        entry.expires_at = sent_at + entry.ttl
        if entry.failures:
            log.info("lock %r: renewed after %d failed attempt(s)", redact_url(lease.key), entry.failures)
        entry.failures = 0
        entry.delay = RENEW_RETRY_MIN_DELAY
        self._schedule(entry, self.clock() + entry.interval)

    @staticmethod
    def _lose(entry: _Renewal, reason: str) -> None:
        if entry.stopped:  # the holder is leaving anyway; release decides the rest
            return
        entry.lease.mark_lost(reason)
        log.warning("lock %r lost (%s); writes under it are fenced", redact_url(entry.lease.key), reason)


_renewer: LeaseRenewer | None = None
_renewer_lock = threading.Lock()


def shared_renewer() -> LeaseRenewer:
    """This process's renewer (a forked child gets its own, without the parent's leases)."""
    global _renewer
    current = _renewer
    if current is not None and current.pid == os.getpid():
        return current
    with _renewer_lock:
        if _renewer is None or _renewer.pid != os.getpid():
            _renewer = LeaseRenewer()
        return _renewer


def _after_fork_in_child() -> None:
    global _renewer, _renewer_lock
    _renewer = None
    _renewer_lock = threading.Lock()  # the parent's may have been held by one of its threads


os.register_at_fork(after_in_child=_after_fork_in_child)


class LeasingLockManager(ABC):
    """`LockManager` built on a backend's atomic acquire / compare-and-extend / compare-and-delete."""

    outage_s: float = OUTAGE_S
    """How long a call to the backend is repeated while the backend does not answer (set per manager)."""
    renewer: LeaseRenewer | None = None
    """The renewer of this manager's leases; None: the process's shared one. A test sets its own,
    stepped on the test's clock; the manager's waits then read and sleep on that clock too."""

    # ---- backend primitives -------------------------------------------------------------------
    @abstractmethod
    def acquire(self, key: str, owner: str, ttl: float) -> int:
        """Atomically take `key` for `owner` for `ttl` seconds if it is free or expired, and return the
        acquisition's fencing token (> every token handed out before by this backend); 0 when the
        key is held by someone else."""

    @abstractmethod
    def holds(self, key: str, owner: str) -> bool:
        """Whether `owner` holds `key` right now (unexpired), asked of the backend."""

    @abstractmethod
    def extend(self, key: str, owner: str, ttl: float) -> bool:
        """Reset the TTL only if `owner` still holds `key` (and it has not expired); False otherwise."""

    @abstractmethod
    def release(self, key: str, owner: str) -> bool:
        """Delete `key` only if `owner` holds it; True when something was deleted."""

    def may_be_free(self, key: str) -> bool:
        """Cheap read-only probe used between polls; True means "worth trying to acquire"."""
        return True

    def describe_error(self, exc: BaseException) -> str:
        """Text of a backend error, safe to log (backends scrub credentials here)."""
        return str(exc)

    def is_outage(self, exc: BaseException) -> bool:
        """Whether `exc` means the backend did not answer (worth waiting for), not a fault."""
        return False

    def backend_name(self) -> str:
        """The backend as an operator knows it, safe to show (a Redis URL with its password masked)."""
        return repr(self)

    def _monotonic(self) -> float:
        return time.monotonic() if self.renewer is None else self.renewer.clock()

    def _sleep(self, seconds: float) -> None:
        """A wait between polls of `hold_within` (a test with its own clock moves that clock instead)."""
        time.sleep(seconds)

    def _ride(self, what: Callable[[], str], call: Callable[[], T], give_up: Callable[[], bool] | None = None) -> T:
        return ride_out(call, is_outage=self.is_outage, bound=self.outage_s, backend=self.backend_name,
                        what=what, describe=self.describe_error, give_up=give_up)

    def _take(self, key: str, owner: str, ttl: float) -> int:
        """`acquire`, riding out an outage. A repeat first deletes the key if it is ours: the attempt
        that failed may have been applied with only its answer lost."""
        tried = False

        def attempt() -> int:
            nonlocal tried
            if tried:
                self.release(key, owner)
            tried = True
            return self.acquire(key, owner, ttl)

        return self._ride(lambda: f"taking {redact_url(key)}", attempt)

    @abstractmethod
    def close(self) -> None: ...

    # ---- LockManager --------------------------------------------------------------------------
    @contextmanager
    def try_hold(self, key: str, ttl: float) -> Iterator[Lease]:
        check_args(key, ttl)
        owner = new_owner_token()
        started = self._monotonic()
        fence = self._take(key, owner, ttl)
        lease = self._lease(key, owner, fence, started)
        with self._holding(lease, ttl, started):
            yield lease

    @contextmanager
    def hold_within(self, key: str, ttl: float, wait: float) -> Iterator[Lease]:
        check_args(key, ttl, wait)
        owner = new_owner_token()
        started = self._monotonic()
        deadline = started + wait
        delay = POLL_MIN_DELAY
        fence = 0
        attempt_at = started
        while True:
            attempt_at = self._monotonic()
            if self._ride(lambda: f"probing {redact_url(key)}", lambda: self.may_be_free(key)):
                fence = self._take(key, owner, ttl)
                if fence:
                    break
            remaining = deadline - self._monotonic()
            if remaining <= 0:
                break
            # Jitter spreads waiters that were released at the same moment (thundering herd).
            self._sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
            delay = min(POLL_MAX_DELAY, delay * 1.5)
        lease = self._lease(key, owner, fence, started)
        with self._holding(lease, ttl, attempt_at):
            yield lease

    def _lease(self, key: str, owner: str, fence: int, started: float) -> Lease:
        made: list[Lease] = []

        def confirm() -> bool:
            # An outage is waited out, but not past the moment the renewer gives the lease up.
            return self._ride(lambda: f"checking {redact_url(key)}", lambda: self.holds(key, owner),
                              give_up=lambda: bool(made) and made[0].lost)

        lease = Lease(key, owner, fence > 0, waited_ms=(self._monotonic() - started) * 1000.0, fence=fence,
                      confirm=confirm)
        made.append(lease)
        return lease

    @contextmanager
    def _holding(self, lease: Lease, ttl: float, acquired_at: float) -> Iterator[None]:
        """Extend while inside; on exit stop extending, then compare-and-delete (errors propagate)."""
        if not lease.held:
            yield
            return
        renewer = self.renewer or shared_renewer()
        renewal = renewer.start(self, lease, ttl, acquired_at)
        try:
            yield
        finally:
            renewer.stop(renewal)
            self._release_quietly(lease)

    def _release_quietly(self, lease: Lease) -> None:
        """Never mask the holder's own exception. A backend that does not answer is waited out, so
        the key does not block the next holder for its whole TTL; past the bound it still expires."""
        try:
            released = self._ride(lambda: f"releasing {redact_url(lease.key)}", lambda: self.release(lease.key, lease.owner))
        except Exception as exc:
            log.warning(
                "lock %r: release failed (%s: %s); the key frees itself when its TTL runs out",
                redact_url(lease.key), type(exc).__name__, self.describe_error(exc),
            )
            return
        if not released and not lease.lost:
            # Expired or taken between the last extension and the exit: report it, touch nothing.
            lease.mark_lost("the key was no longer ours at release")
            log.warning("lock %r was no longer held by this lease at release; left untouched", redact_url(lease.key))
