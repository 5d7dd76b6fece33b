"""The one shape of the model's test lock managers: a wrapper around a lock manager whose leases a test
watches, marks lost, hands out stale or delays (the engine's lock manager protocol: `try_hold`,
`hold_within`, `close`). A wrapper says only what it does around one take, in `_held`."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from social_recording.locks.base import Lease


class WrappedLocks:
    """Forwards both takes to `_held` with the inner take still to be made (`hold()`); closing a wrapper
    leaves the inner manager to its owner."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def _held(self, key: str, hold: Callable[[], Any]) -> AbstractContextManager[Lease]:
        raise NotImplementedError

    def try_hold(self, key: str, ttl: float) -> Any:
        return self._held(key, lambda: self.inner.try_hold(key, ttl))

    def hold_within(self, key: str, ttl: float, wait: float) -> Any:
        return self._held(key, lambda: self.inner.hold_within(key, ttl, wait))

    def close(self) -> None:
        pass
