"""How many provider calls one run makes at once: a bound per provider account (its descriptor's
default, or the job's config), and how many URLs of one token are recorded side by side. Why per
provider, why side by side and why no lock cycle can form: docs/architecture.md, "Provider
concurrency and rates".
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import MappingProxyType

from social_recording.platforms.catalogue import CATALOGUE

DEFAULT_PROVIDER_CONCURRENCY: Mapping[str, int] = MappingProxyType(
    {account.name: account.concurrency for account in CATALOGUE.platform_accounts() if account.concurrency}
)
"""Concurrent calls per provider account in one run, unless the job's config says otherwise."""
PROVIDERS: frozenset[str] = frozenset(DEFAULT_PROVIDER_CONCURRENCY)

OTHER_PROVIDER_CONCURRENCY = 4
"""A provider with no bound of its own (none today: every platform's account has one)."""
MAX_PROVIDER_CONCURRENCY = 64
URLS_PER_TOKEN_AT_ONCE = 8
"""How many URLs of one token are recorded side by side (a token rarely holds more)."""

URL_THREADS = 64
"""Threads of the process-wide pool that records URLs side by side (shared by every token and run)."""

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def url_pool() -> ThreadPoolExecutor:
    """The process's pool for a token's URLs. Shared and long-lived on purpose: each thread keeps its
    own store connection, so fresh threads per token would open (and page-cache) a connection per URL.
    No task waits for another task of the pool (a URL waits only for a URL lock held by a running
    recording, or a provider slot held by a running call), so sharing it cannot deadlock."""
    global _pool
    current = _pool
    if current is not None and current[0] == os.getpid():
        return current[1]
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=URL_THREADS, thread_name_prefix="recording-url"))
        return _pool[1]


def _after_fork_in_child() -> None:
    global _pool, _pool_lock
    _pool = None  # the parent's threads do not exist here
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def check_provider_concurrency(overrides: Mapping[str, int] | None) -> dict[str, int]:
    """Validate per-provider overrides (provider name -> calls at once, 1..MAX_PROVIDER_CONCURRENCY)."""
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise ValueError(f"provider_concurrency must map provider names to integers, got {overrides!r}")
    checked: dict[str, int] = {}
    for provider, bound in overrides.items():
        if provider not in PROVIDERS:
            raise ValueError(
                f"provider_concurrency names unknown provider {provider!r}; expected one of {sorted(PROVIDERS)}"
            )
        if not isinstance(bound, int) or isinstance(bound, bool) or not 1 <= bound <= MAX_PROVIDER_CONCURRENCY:
            raise ValueError(
                f"provider_concurrency[{provider!r}] must be an integer in 1..{MAX_PROVIDER_CONCURRENCY}, got {bound!r}"
            )
        checked[provider] = bound
    return checked


class _Lane:
    """One provider's calls in flight in one run, under its own condition."""

    __slots__ = ("cond", "bound", "in_flight", "peak")

    def __init__(self, bound: int) -> None:
        self.cond = threading.Condition(threading.Lock())
        self.bound = bound
        self.in_flight = 0
        self.peak = 0


class CallSlots:
    """The per-provider bounds of one run: `slot(provider)` is held around each `generate()` call.

    `per_token` is how many URLs of one token run at once (1 records them one after another).
    `peak` reports the most calls seen in flight per provider (run metadata, tests, benchmarks).

    A provider's slots are one count under one condition (taken once to enter, once to leave), not a
    semaphore beside a run-wide lock around the counts: every URL passes here, and the five lock
    rounds of those cost each one 4.1 us (2.4 now) and, at 4 threads, waits on the shared lock."""

    def __init__(
        self,
        overrides: Mapping[str, int] | None = None,
        *,
        per_token: int = URLS_PER_TOKEN_AT_ONCE,
    ) -> None:
        if not isinstance(per_token, int) or isinstance(per_token, bool) or per_token < 1:
            raise ValueError(f"per_token must be an integer >= 1, got {per_token!r}")
        self.bounds: dict[str, int] = {**DEFAULT_PROVIDER_CONCURRENCY, **check_provider_concurrency(overrides)}
        self.per_token = per_token
        self._lock = threading.Lock()
        self._lanes: dict[str, _Lane] = {}

    def bound(self, provider: str) -> int:
        return self.bounds.get(provider, OTHER_PROVIDER_CONCURRENCY)

    def _lane(self, provider: str) -> _Lane:
        lane = self._lanes.get(provider)
        if lane is None:
            with self._lock:
                lane = self._lanes.get(provider)
                if lane is None:
                    lane = self._lanes[provider] = _Lane(self.bound(provider))
        return lane

    @contextmanager
    def slot(self, provider: str) -> Iterator[None]:
        """Wait for a free call slot of `provider`, hold it for the call."""
        lane = self._lane(provider)
        with lane.cond:
            while lane.in_flight >= lane.bound:
                lane.cond.wait()
            lane.in_flight += 1
            if lane.in_flight > lane.peak:
                lane.peak = lane.in_flight
        try:
            yield
        finally:
            with lane.cond:
                lane.in_flight -= 1
                lane.cond.notify()

    def peak(self) -> dict[str, int]:
        with self._lock:
            lanes = list(self._lanes.items())
        return {p: lane.peak for p, lane in lanes if lane.peak}

    def __repr__(self) -> str:
        bounds = ",".join(f"{p}={n}" for p, n in sorted(self.bounds.items()))
        return f"CallSlots({bounds}, per_token={self.per_token})"
