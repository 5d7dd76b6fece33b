"""The LockManager protocol: leases with fencing tokens (docs/architecture.md, "Locks and fencing").

Both context managers yield a Lease. Every acquisition gets a fencing token (`Lease.fence`) from the
backend, larger than any token handed out before, so the store can refuse a write from a holder
that was overtaken (paused past its TTL, cut off from the backend) by a newer one. While held, a
background thread renews the lease every ttl/3; a renewal that fails for lack of an answer is
retried until the lease's own expiry is near, and only then, or when the backend says the key is no
longer ours, is the lease marked `lost`. `confirm()` asks the backend itself, for the moments where a
local flag is not enough (right before a paid call). Release deletes the key only if this lease
still owns it. A backend that does not answer for a moment is waited out (locks/outage.py): taking,
checking and releasing a key raise `LockBackendUnavailable` only past the outage bound.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable


class LockConfigError(ValueError):
    """A bad SOCIAL_RECORDING_LOCK_URL (the message names the variable, never a password)."""


class LockBackendUnavailable(ConnectionError):
    """The lock backend did not answer for longer than the outage bound (locks/outage.py). The
    message names the backend (its URL with the password masked) and what was being done."""

    def __init__(self, backend: str, what: str, waited: float, bound: float, error: str) -> None:
        super().__init__(f"the lock backend {backend} did not answer for {waited:.1f} s (the bound is {bound:g} s) "
                         f"while {what}; last error {error}")
        self.backend = backend
        self.what = what


def _unconfirmable() -> bool:
    return False


class Lease:
    """The holder's view of one lock: `held` (acquired at all), `lost` (ownership gone since, as far
    as this process knows), `fence` (the acquisition's fencing token; 0 when not held)."""

    def __init__(
        self,
        key: str,
        owner: str,
        held: bool,
        waited_ms: float = 0.0,
        *,
        fence: int = 0,
        confirm: Callable[[], bool] = _unconfirmable,
    ) -> None:
        if held and fence < 1:
            raise ValueError(f"a held lease needs a fencing token >= 1, got {fence!r} for {key!r}")
        self.key = key
        self.owner = owner
        self.held = held
        self.waited_ms = waited_ms
        self.fence = fence if held else 0
        self._confirm = confirm
        self._lost = False
        """Set once, by the renewer's thread or the holder's; read by the holder. A plain attribute: its
        assignment is atomic, and an `Event` (a lock and a condition made per lease) cost every URL
        lock more than the rest of the lease, with nobody ever waiting on it."""
        self.lost_reason: str | None = None

    def confirm(self) -> bool:
        """Ask the backend whether this lease still owns its key (a round trip). False when it does
        not, when it was never held, and when the backend cannot answer: a caller about to spend
        money must not proceed on "probably"."""
        if not self.held or self.lost:
            return False
        try:
            ok = bool(self._confirm())
        except Exception as exc:  # the backend is unreachable: we cannot know, so we do not own
            self.lost_reason = self.lost_reason or f"ownership check failed: {type(exc).__name__}"
            return False
        if not ok:
            self.mark_lost("the backend says the key is no longer ours")
        return ok

    @property
    def lost(self) -> bool:
        return self._lost

    def mark_lost(self, reason: str) -> None:
        if not self._lost:
            self.lost_reason = reason
        self._lost = True

    def __bool__(self) -> bool:
        return self.held and not self.lost

    def __repr__(self) -> str:
        return f"Lease(key={self.key!r}, held={self.held}, lost={self.lost}, fence={self.fence})"


@runtime_checkable
class LockManager(Protocol):
    def try_hold(self, key: str, ttl: float) -> AbstractContextManager[Lease]:
        """Try once, immediately; `lease.held` is False when someone else holds `key`. ttl in seconds."""
        ...

    def hold_within(self, key: str, ttl: float, wait: float) -> AbstractContextManager[Lease]:
        """Wait up to `wait` seconds for `key`; `lease.held` is False when the wait ran out."""
        ...

    def close(self) -> None: ...
