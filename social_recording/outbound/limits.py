"""The rate-limit hook: one place where every provider request asks for permission to go out and
where a provider's "slow down" is reported; and each provider's documented rate.

Why a hook in the outbound layer and the limiter elsewhere: several worker processes share one
provider account, so a limiter that works must be shared across processes; it lives with the lock
backend (`locks.rate_limits`: Redis in production, the SQLite lock file in the embedded default).
The HTTP layer calls `acquire` before each request and `penalise` when a provider says how long to
wait, so any limiter plugs in without changing a client. The default lets everything through.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import Protocol


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


@dataclass(frozen=True)
class Rate:
    """At most `requests` requests in any `per_seconds` seconds."""

    requests: int
    per_seconds: int

    def __post_init__(self) -> None:
        if not isinstance(self.requests, int) or isinstance(self.requests, bool) or self.requests < 1:
            raise ValueError(f"Rate.requests must be an integer >= 1, got {self.requests!r}")
        if not isinstance(self.per_seconds, int) or isinstance(self.per_seconds, bool) or self.per_seconds < 1:
            raise ValueError(f"Rate.per_seconds must be an integer >= 1, got {self.per_seconds!r}")

    def __str__(self) -> str:
        return f"{self.requests}/{self.per_seconds}s"


TWITTERAPI_RATE = Rate(20, 1)
"""twitterapi.io counts requests per API key per second: 20 for any account that has topped up
(Starter, Builder, Pro); 50 on Scale, 500 on Business; a never-topped-up account gets 1 per 5 s
(set it with SOCIAL_RECORDING_RATE_LIMITS). Every process using the key shares it."""
URLSCAN_RATE = Rate(60, 60)
"""urlscan sets quotas per action (public, unlisted and private scans, result reads, searches) per
minute, hour and day, per account (GET /api/v1/quotas lists them), in fixed windows. 60 a minute is
a cautious default for every urlscan request (polls included); set the account's own quotas with
SOCIAL_RECORDING_RATE_LIMITS. A spent hour or day quota answers 429 with X-Rate-Limit-Reset-After,
which holds every process until the reset."""
GITHUB_RATE_WITH_TOKEN = Rate(5000, 3600)
"""GitHub REST: 5,000 requests an hour with a token (secondary limits on bursts answer 403/429 with
`retry-after`, honoured through `penalise`)."""
GITHUB_RATE_ANONYMOUS = Rate(60, 3600)
"""GitHub REST without a token: 60 requests an hour (per address)."""
YOUTUBE_RATE = Rate(10_000, 86_400)
"""YouTube Data API v3: 10,000 quota units a day by default; the list calls we make cost 1 unit
each (search.list, 100 units, is never used). Its day ends at midnight Pacific time; a moving
24-hour window never exceeds the quota of any such day."""

DEFAULT_RATES: Mapping[str, tuple[Rate, ...]] = MappingProxyType({
    "twitterapi": (TWITTERAPI_RATE,),
    "urlscan": (URLSCAN_RATE,),
    "youtube": (YOUTUBE_RATE,),
})
"""Rates by outbound service name. GitHub's depends on the token (`provider_rates`). Apify bounds
concurrent actor runs by memory, not requests (the per-provider concurrency bound handles it), and
t.me documents no rate (few at once, and its 429s are honoured): neither has a rate here."""


PROVIDER_SERVICES: frozenset[str] = frozenset(
    {"twitterapi", "apify", "urlscan", "rdap", "youtube", "github", "telegram"}
)
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


def provider_rates(*, github_token: bool, overrides: Mapping[str, tuple[Rate, ...]] | None = None
                   ) -> dict[str, tuple[Rate, ...]]:
    """The rates to enforce against the real providers: the documented defaults, GitHub's by whether
    a token is set, then the overrides."""
    github = GITHUB_RATE_WITH_TOKEN if github_token else GITHUB_RATE_ANONYMOUS
    return with_overrides({**DEFAULT_RATES, "github": (github,)}, overrides)


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


RATE_LIMIT_REMAINING_HEADERS = ("x-rate-limit-remaining", "x-ratelimit-remaining")
"""urlscan's and GitHub's count of requests left in the current window."""
RATE_LIMIT_RESET_HEADERS = ("x-rate-limit-reset-after", "x-ratelimit-reset")
"""When that window resets: urlscan's seconds from now, GitHub's epoch seconds."""


def penalty_seconds(
    status: int, headers: Mapping[str, str], now: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> float | None:
    """How long every process should hold requests to this service after this answer, or None.

    A 429 names its wait (`retry_after_seconds`). Any answer that says the window is spent
    (remaining 0) names its reset: urlscan's `X-Rate-Limit-Reset-After`, GitHub's epoch
    `x-ratelimit-reset` (its primary limit answers 403 with them)."""
    if status == 429:
        wait = retry_after_seconds(headers, now)
        if wait is not None:
            return wait
    remaining = next((headers.get(h) for h in RATE_LIMIT_REMAINING_HEADERS if headers.get(h) is not None), None)
    if remaining is None or remaining.strip() != "0":
        return None
    after = headers.get("x-rate-limit-reset-after")
    if after is not None:
        try:
            seconds = float(after)
        except ValueError:
            seconds = math.nan
        if math.isfinite(seconds):
            return max(0.0, seconds)
    reset = headers.get("x-ratelimit-reset")
    if reset is not None:
        try:
            epoch = float(reset)
        except ValueError:
            return None
        if math.isfinite(epoch):
            return max(0.0, epoch - now().timestamp())
    return None
