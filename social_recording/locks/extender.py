"""What both lock backends share: acquisition loops, auto-extension and owner-only release.

A backend supplies four atomic primitives (acquire / extend / release by owner token, plus an
optional cheap "is it worth trying" probe); `LeasingLockManager` turns them into the `LockManager`
context managers of `base.py`:

- try once, give up at once (token lock, job locks: seed 000 L-1, seed 004 §6.3);
- wait up to a bound with small jittered polls (URL lock: L-2; past the bound the caller leaves the
  URL pending, L-10);
- while held, a daemon thread extends the lease every ttl/3, so the TTL only decides how long a
  *dead* holder blocks the key (L-1, seed 004 §6.3 "tryUsingExtended"), never how long a live one may
  work. When an extension fails the lease is marked `lost` (seed 000 H-5: no silent fencing loss)
  and the holder is expected to check `lease.lost` before every write (L-6);
- on exit the key is deleted only if this lease still owns it (compare-and-delete).

Locks are NOT reentrant: every acquisition uses a fresh random owner token, so asking again for a
key the same process (or thread) already holds yields `held=False` until the first lease exits.
"""

from __future__ import annotations

import logging
import math
import os
import random
import secrets
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager

from social_recording.domain.urls import redact_url
from social_recording.locks.base import Lease

log = logging.getLogger("social_recording.locks")

#: Polling delays of `hold_within` (seconds): start small so a released key is taken quickly,
#: grow to a cap so many waiters on a long (180 s) wait don't hammer the backend.
POLL_MIN_DELAY = 0.02
POLL_MAX_DELAY = 0.1
#: How long exiting a lease waits for its extender thread (it may be inside a backend call).
EXTENDER_JOIN_TIMEOUT = 1.0


def new_owner_token() -> str:
    """A random, unguessable owner token; host and pid are only there to help an operator."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(16)}"


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


class AutoExtender:
    """Daemon thread that keeps one held lease alive every ttl/3 until stopped or lost."""

    def __init__(self, manager: LeasingLockManager, lease: Lease, ttl: float) -> None:
        self._manager = manager
        self._lease = lease
        self._ttl = ttl
        self._interval = ttl / 3.0
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"lock-extender[{lease.key[:80]}]", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = EXTENDER_JOIN_TIMEOUT) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self) -> None:
        lease = self._lease
        while not self._stop.wait(self._interval):
            try:
                still_owner = self._manager.extend(lease.key, lease.owner, self._ttl)
            except Exception as exc:  # backend unreachable, timeouts, locked database ...
                reason = f"extension failed: {type(exc).__name__}: {self._manager.describe_error(exc)}"
            else:
                if still_owner:
                    continue
                reason = "extension refused: the key expired, was deleted or is now held by another owner"
            if self._stop.is_set():  # the holder is leaving anyway; release decides the rest
                return
            lease.mark_lost(reason)
            log.warning("lock %r lost (%s); the holder must stop writing", redact_url(lease.key), reason)
            return


class LeasingLockManager(ABC):
    """`LockManager` built on a backend's atomic acquire / compare-and-extend / compare-and-delete."""

    # ---- backend primitives -------------------------------------------------------------------
    @abstractmethod
    def acquire(self, key: str, owner: str, ttl: float) -> bool:
        """Atomically take `key` for `owner` for `ttl` seconds if it is free or expired."""

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

    @abstractmethod
    def close(self) -> None: ...

    # ---- LockManager --------------------------------------------------------------------------
    @contextmanager
    def try_hold(self, key: str, ttl: float) -> Iterator[Lease]:
        check_args(key, ttl)
        owner = new_owner_token()
        started = time.monotonic()
        held = self.acquire(key, owner, ttl)
        lease = Lease(key, owner, held, waited_ms=(time.monotonic() - started) * 1000.0)
        with self._holding(lease, ttl):
            yield lease

    @contextmanager
    def hold_within(self, key: str, ttl: float, wait: float) -> Iterator[Lease]:
        check_args(key, ttl, wait)
        owner = new_owner_token()
        started = time.monotonic()
        deadline = started + wait
        delay = POLL_MIN_DELAY
        held = False
        while True:
            if self.may_be_free(key) and self.acquire(key, owner, ttl):
                held = True
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # Jitter spreads waiters that were released at the same moment (thundering herd).
            time.sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
            delay = min(POLL_MAX_DELAY, delay * 1.5)
        lease = Lease(key, owner, held, waited_ms=(time.monotonic() - started) * 1000.0)
        with self._holding(lease, ttl):
            yield lease

    @contextmanager
    def _holding(self, lease: Lease, ttl: float) -> Iterator[None]:
        """Extend while inside; on exit stop extending, then compare-and-delete (errors propagate)."""
        if not lease.held:
            yield
            return
        extender = AutoExtender(self, lease, ttl)
        extender.start()
        try:
            yield
        finally:
            extender.stop()
            self._release_quietly(lease)

    def _release_quietly(self, lease: Lease) -> None:
        """Never mask the holder's own exception: an unreleased key still expires after its TTL."""
        try:
            released = self.release(lease.key, lease.owner)
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
