"""The rate-limit hook: where every provider request asks to go out and where a provider's "slow
down" is reported; and the rates to hold, from the provider descriptors. The limiter itself is
shared across processes and lives with the lock backend (docs/architecture.md, "Provider
concurrency and rates").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Protocol

from social_recording.domain.platform import Rate
from social_recording.platforms.catalogue import CATALOGUE

__all__ = ["DEFAULT_RATES", "NO_LIMIT", "PROVIDER_SERVICES", "NoLimit", "Rate", "RateLimited", "RequestLimiter",
           "penalty_seconds", "provider_rates", "retry_after_seconds", "with_overrides"]


class RateLimited(Exception):
    """A request was not sent: its provider's rate (or a wait the provider asked for) would hold it
    longer than the limiter may wait, or the shared limiter could not be asked. Nothing left, so
    nothing was paid; the URL is recorded as a transient error and retried after its back-off."""

    def __init__(self, service: str, reason: str, *, unavailable: bool = False) -> None:
        super().__init__(f"{service}: {reason}")
        self.service = service
        self.reason = reason
        self.unavailable = unavailable
        """True when the limiter itself could not be asked (rather than a rate that says wait)."""


DEFAULT_RATES: Mapping[str, tuple[Rate, ...]] = MappingProxyType(
    {account.name: account.rates for account in CATALOGUE.accounts() if account.rates}
)
"""Each account's documented rates (with its key, where a key changes them: `provider_rates`)."""

PROVIDER_SERVICES: frozenset[str] = frozenset(account.name for account in CATALOGUE.accounts())
"""The outbound service names the platform clients send under (the keys a rate can be set for)."""


def with_overrides(rates: Mapping[str, tuple[Rate, ...]], overrides: Mapping[str, tuple[Rate, ...]] | None
                   ) -> dict[str, tuple[Rate, ...]]:
    """`rates` with each overridden service's rates replaced (an empty tuple removes its rate)."""
    out = dict(rates)
    for service, value in (overrides or {}).items():
        if value:
            out[service] = tuple(value)
        else:
            out.pop(service, None)
    return out


def provider_rates(*, with_keys: Collection[str] = (), overrides: Mapping[str, tuple[Rate, ...]] | None = None
                   ) -> dict[str, tuple[Rate, ...]]:
    """The rates to hold against the real providers: each account's documented rates for whether its
    key variable is among `with_keys` (GitHub's differ), then the overrides."""
    rates = {
        account.name: account.rates_for(has_key=account.key_variable in with_keys)
        for account in CATALOGUE.accounts()
    }
    return with_overrides({name: r for name, r in rates.items() if r}, overrides)


RETRY_AFTER_HEADERS = ("retry-after", "x-rate-limit-reset-after")
"""Where a provider says how long to wait: the standard `Retry-After` (seconds or an HTTP date), and
urlscan's `X-Rate-Limit-Reset-After` (seconds until its window resets)."""


class RequestLimiter(Protocol):
    def acquire(self, service: str) -> None:
        """Return once one more request to `service` may be sent (may block until then); raise
        RateLimited when it may not be sent within the limiter's longest wait."""
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


RATE_LIMIT_REMAINING_HEADERS = ("x-rate-limit-remaining", "x-ratelimit-remaining", "ratelimit-remaining")
"""urlscan's, GitHub's and Bluesky's count of requests left in the current window."""
RATE_LIMIT_RESET_HEADERS: tuple[tuple[str, bool], ...] = (
    ("x-rate-limit-reset-after", False),
    ("x-ratelimit-reset", True),
    ("ratelimit-reset", True),
)
"""When that window resets, and whether the value is epoch seconds (else seconds from now): urlscan's
seconds from now, GitHub's and Bluesky's AppView's epoch seconds."""


def penalty_seconds(
    status: int, headers: Mapping[str, str], now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> float | None:
    """How long every process should hold requests to this service after this answer, or None.

    A 429 names its wait (`retry_after_seconds`). Any answer that says the window is spent
    (remaining 0) names its reset (RATE_LIMIT_RESET_HEADERS): urlscan's `X-Rate-Limit-Reset-After`,
    GitHub's epoch `x-ratelimit-reset` (its primary limit answers 403 with them), Bluesky's epoch
    `ratelimit-reset` (the AppView's 429 carries the `ratelimit-*` headers, a `retry-after` is not
    promised)."""
    if status == 429:
        wait = retry_after_seconds(headers, now)
        if wait is not None:
            return wait
    remaining = next((headers.get(h) for h in RATE_LIMIT_REMAINING_HEADERS if headers.get(h) is not None), None)
    if remaining is None or remaining.strip() != "0":
        return None
    for name, epoch in RATE_LIMIT_RESET_HEADERS:
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            seconds = float(raw)
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(0.0, seconds - now().timestamp() if epoch else seconds)
    return None
