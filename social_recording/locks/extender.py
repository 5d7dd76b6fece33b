"""What both lock backends share: acquisition loops, renewal, fencing tokens and owner-only release.

A backend supplies atomic primitives (acquire-with-fencing-token / extend / release by owner token,
an ownership probe, plus an optional cheap "is it worth trying" probe); `LeasingLockManager` turns
them into the `LockManager` context managers of `base.py`:

- try once, give up at once (token lock, job locks): another holder is doing the same work;
- wait up to a bound with small jittered polls (URL lock); past the bound the caller leaves the URL
  for the next run;
- while held, a daemon thread renews the lease every ttl/3, so the TTL only decides how long a
  *dead* holder blocks the key, never how long a live one may work. A renewal that raises (backend
  busy or unreachable for a moment) is retried with back-off until the lease's own expiry is near:
  a single socket error or a busy database must not throw away a paid result. The lease is marked
  `lost` only when the backend answers that the key is no longer ours, or when the retries run into
  the expiry;
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

from social_recording.domain.redaction import redact_url
from social_recording.locks.base import Lease

log = logging.getLogger("social_recording.locks")

#: Polling delays of `hold_within` (seconds): start small so a released key is taken quickly,
#: grow to a cap so many waiters on a long (180 s) wait don't hammer the backend.
POLL_MIN_DELAY = 0.02
POLL_MAX_DELAY = 0.1
#: How long exiting a lease waits for its extender thread (it may be inside a backend call).
EXTENDER_JOIN_TIMEOUT = 1.0
#: Back-off of a failed renewal: first retry after this many seconds, doubling up to a tenth of the TTL.
RENEW_RETRY_MIN_DELAY = 0.05
#: A failing renewal gives up (lease lost) when less than this fraction of the TTL is left before the
#: expiry the backend last confirmed: past that point another process may take the key at any moment.
RENEW_GIVE_UP_FRACTION = 0.1


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
    """Daemon thread that keeps one held lease alive every ttl/3 until stopped or lost.

    `expires_at` (monotonic) is when the backend will drop the key if no renewal lands: set at
    acquisition and pushed out by each successful renewal, measured from the moment the renewal was
    *sent* (the conservative end). Failed renewals are retried until `expires_at` is within
    RENEW_GIVE_UP_FRACTION of the TTL.
    """

    def __init__(self, manager: LeasingLockManager, lease: Lease, ttl: float, acquired_at: float) -> None:
        self._manager = manager
        self._lease = lease
        self._ttl = ttl
        self._interval = ttl / 3.0
        self._margin = ttl * RENEW_GIVE_UP_FRACTION
        self.expires_at = acquired_at + ttl
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
        while not self._stop.wait(self._interval):
            reason = self._renew()
            if reason is None:
                continue
            if self._stop.is_set():  # the holder is leaving anyway; release decides the rest
                return
            self._lease.mark_lost(reason)
            log.warning("lock %r lost (%s); writes under it are fenced", redact_url(self._lease.key), reason)
            return

    def _renew(self) -> str | None:
        """One renewal, retried on errors until the expiry is near; None when renewed, else why lost."""
        lease = self._lease
        delay = RENEW_RETRY_MIN_DELAY
        failures = 0
        while True:
            sent_at = time.monotonic()
            try:
                still_owner = self._manager.extend(lease.key, lease.owner, self._ttl)
            except Exception as exc:  # backend unreachable, timeouts, locked database ...
                failures += 1
                error = f"{type(exc).__name__}: {self._manager.describe_error(exc)}"
                left = self.expires_at - time.monotonic()
                if left <= self._margin:
                    return f"renewal failed {failures} time(s) until the lease expired (last: {error})"
                log.info(
                    "lock %r: renewal failed (%s); retrying, %.2f s left before expiry",
                    redact_url(lease.key), error, left,
                )
                if self._stop.wait(min(delay, max(0.0, left - self._margin))):
                    return None
                delay = min(delay * 2.0, max(RENEW_RETRY_MIN_DELAY, self._ttl / 10.0))
                continue
            if still_owner:
                self.expires_at = sent_at + self._ttl
                if failures:
                    log.info("lock %r: renewed after %d failed attempt(s)", redact_url(lease.key), failures)
                return None
            return "renewal refused: the key expired, was deleted or is now held by another owner"


class LeasingLockManager(ABC):
    """`LockManager` built on a backend's atomic acquire / compare-and-extend / compare-and-delete."""

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

    @abstractmethod
    def close(self) -> None: ...

    # ---- LockManager --------------------------------------------------------------------------
    @contextmanager
    def try_hold(self, key: str, ttl: float) -> Iterator[Lease]:
        check_args(key, ttl)
        owner = new_owner_token()
        started = time.monotonic()
        fence = self.acquire(key, owner, ttl)
        lease = self._lease(key, owner, fence, started)
        with self._holding(lease, ttl, started):
            yield lease

    @contextmanager
    def hold_within(self, key: str, ttl: float, wait: float) -> Iterator[Lease]:
        check_args(key, ttl, wait)
        owner = new_owner_token()
        started = time.monotonic()
        deadline = started + wait
        delay = POLL_MIN_DELAY
        fence = 0
        attempt_at = started
        while True:
            attempt_at = time.monotonic()
            if self.may_be_free(key):
                fence = self.acquire(key, owner, ttl)
                if fence:
                    break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            # Jitter spreads waiters that were released at the same moment (thundering herd).
            time.sleep(min(remaining, delay * random.uniform(0.5, 1.0)))
            delay = min(POLL_MAX_DELAY, delay * 1.5)
        lease = self._lease(key, owner, fence, started)
        with self._holding(lease, ttl, attempt_at):
            yield lease

    def _lease(self, key: str, owner: str, fence: int, started: float) -> Lease:
        return Lease(
            key,
            owner,
            fence > 0,
            waited_ms=(time.monotonic() - started) * 1000.0,
            fence=fence,
            confirm=lambda: self.holds(key, owner),
        )

    @contextmanager
    def _holding(self, lease: Lease, ttl: float, acquired_at: float) -> Iterator[None]:
        """Extend while inside; on exit stop extending, then compare-and-delete (errors propagate)."""
        if not lease.held:
            yield
            return
        extender = AutoExtender(self, lease, ttl, acquired_at)
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
