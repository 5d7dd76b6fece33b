"""The rate-limit hook: one place where every provider request asks for permission to go out and
where a provider's "slow down" is reported.

Why a hook now and no limiter: several worker processes share one provider account, so a limiter
that works must be shared across processes (it lives with the lock backend). Until it exists the
default lets everything through; the HTTP layer already calls `acquire` before each request and
`penalise` when a provider answers 429 with a wait, so plugging a real one in changes no client.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

RETRY_AFTER_HEADERS = ("retry-after", "x-rate-limit-reset-after")
"""Where a provider says how long to wait: the standard `Retry-After` (seconds or an HTTP date), and
urlscan's `X-Rate-Limit-Reset-After` (seconds until its window resets)."""


class RequestLimiter(Protocol):
    def acquire(self, service: str) -> None:
        """Return once one more request to `service` may be sent (may block until then)."""
        ...

    def penalise(self, service: str, retry_after_s: float) -> None:
        """`service` asked us to wait `retry_after_s` seconds before the next request."""
        ...


class NoLimit:
    """The default limiter: every request may go at once; penalties are ignored."""

    def acquire(self, service: str) -> None:
        return None

    def penalise(self, service: str, retry_after_s: float) -> None:
        return None

    def __repr__(self) -> str:
        return "NoLimit()"


NO_LIMIT = NoLimit()


def retry_after_seconds(
    headers: Mapping[str, str], now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> float | None:
    """The wait a response asks for, in seconds (>= 0), from the first header of
    RETRY_AFTER_HEADERS that holds a number of seconds or an HTTP date; None when none does."""
    for name in RETRY_AFTER_HEADERS:
        raw = headers.get(name)
        if raw is None or not raw.strip():
            continue
        text = raw.strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                when = parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            seconds = (when - now()).total_seconds()
        if not math.isfinite(seconds):  # NaN / inf: junk
            continue
        return max(0.0, seconds)
    return None
