"""The LockManager protocol (DESIGN §8, seed 000 L-1, L-2, L-6).

Both context managers yield a Lease. While held, a background thread extends the lease every
ttl/3; if an extension fails (the key expired, was deleted or taken by another owner, or the
backend is unreachable) the lease marks itself `lost` and logs why, so its holder can stop before
writing. Release deletes the key only if this lease still owns it.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Protocol, runtime_checkable


class LockConfigError(ValueError):
    """A bad SOCIAL_RECORDING_LOCK_URL (the message names the variable, never a password)."""


class Lease:
    """The holder's view of one lock: `held` (acquired at all), `lost` (ownership gone since)."""

    def __init__(self, key: str, owner: str, held: bool, waited_ms: float = 0.0) -> None:
        self.key = key
        self.owner = owner
        self.held = held
        self.waited_ms = waited_ms
        self._lost = threading.Event()
        self.lost_reason: str | None = None

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def mark_lost(self, reason: str) -> None:
        self.lost_reason = reason
        self._lost.set()

    def __bool__(self) -> bool:
        return self.held and not self.lost

    def __repr__(self) -> str:
        return f"Lease(key={self.key!r}, held={self.held}, lost={self.lost})"


@runtime_checkable
class LockManager(Protocol):
    def try_hold(self, key: str, ttl: float) -> AbstractContextManager[Lease]:
        """Try once, immediately; `lease.held` is False when someone else holds `key`. ttl in seconds."""
        ...

    def hold_within(self, key: str, ttl: float, wait: float) -> AbstractContextManager[Lease]:
        """Wait up to `wait` seconds for `key`; `lease.held` is False when the wait ran out."""
        ...

    def close(self) -> None: ...
