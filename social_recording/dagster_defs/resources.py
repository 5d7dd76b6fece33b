"""Dagster resources: the connections and clients the plain-Python engine runs on, built once per
run process and closed after; nothing connects when the code location loads. Shared resources are
top-level partial resources (see `definitions_builder`); values that can carry secrets are `EnvVar`s
or variable names, never values (docs/architecture.md, "Deployment").
"""

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx
from dagster import ConfigurableResource, EnvVar, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr, SecretStr

from social_recording.domain.policy import (
    DEFAULT_AF_INVESTOR_THRESHOLD,
    DEFAULT_BACKOFF_GROWTH,
    DEFAULT_BACKOFF_MAX_MINUTES,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EXHAUSTED_PER_HOUR,
    Backoff,
)
from social_recording.domain.spend import Budget, parse_budgets
from social_recording.locks import open_lock_manager
from social_recording.locks.base import LockManager
from social_recording.locks.rate_limits import SharedRateLimiter, open_rate_limiter, parse_rate_overrides
from social_recording.locks.spend_budget import SpendBudgets, open_spend_budgets
from social_recording.outbound.limits import Rate, provider_rates
from social_recording.platforms.base import GeneratorRegistry, ProviderKeys
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import build_registry
from social_recording.store import mask_url_password, open_store
from social_recording.store.base import Store
from social_recording.upstream.profile import TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient

if TYPE_CHECKING:
    from social_recording.sandbox.ledger import Ledger

_SECRET_HINTS = ("key", "token", "password", "secret")


T = TypeVar("T")


class _SafeRepr:
    """Mixin: an `EnvVar` shows as its name; a secret-looking field's resolved value as `***`; URLs
    with `user:password@` masked. Keeps resolved run-time copies as safe to print as definitions."""

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():  # type: ignore[misc]
            if isinstance(value, EnvVar) or value is None:
                yield name, value
            elif name and any(h in name for h in _SECRET_HINTS):
                yield name, "***"
            elif isinstance(value, str) and "://" in value:
                yield name, mask_url_password(value)
            else:
                yield name, value


class _OpenedPerProcess(_SafeRepr, ConfigurableResource):
    """A resource holding one backend per run process (a store, a lock manager): opened at setup or
    on first use (`get`), closed at teardown."""

    _opened: Any = PrivateAttr(default=None)

    def get(self) -> Any:
        raise NotImplementedError

    def _held(self, open_backend: Callable[[], T]) -> T:
        if self._opened is None:
            self._opened = open_backend()
        return cast(T, self._opened)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.get()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None


class StoreResource(_OpenedPerProcess):
    """The store of tokens, their URLs and the recorded graphs (a SQLite file by default, MongoDB in
    production); opened once per run process."""

    store_url: str

    def get(self) -> Store:
        return self._held(lambda: open_store(self.store_url))


class LockManagerResource(_OpenedPerProcess):
    """Token, URL and job locks with fencing tokens (Redis in production, the SQLite file by
    default): one worker per URL calls the provider, the others reuse its answer."""

    lock_url: str

    def get(self) -> LockManager:
        return self._held(lambda: open_lock_manager(self.lock_url))


class UpstreamResource(_SafeRepr, ConfigurableResource):
    """Where HTTP goes: the real internet. The sandbox's subclass (`sandbox_upstream.py`) answers the
    same questions for the fake upstream; `definitions_builder` chooses one, once."""

    def transport(self) -> httpx.BaseTransport | None:
        """The transport every client sends on (None: the real network)."""
        return None

    def resolve_host(self) -> Callable[[str], Sequence[str]] | None:
        """The redirect guard's DNS (None: the system resolver)."""
        return None

    def sleep(self) -> Callable[[float], None]:
        """The clients' wait function."""
        return time.sleep

    def rates(self, keys: ProviderKeys, overrides: dict[str, tuple[Rate, ...]]) -> dict[str, tuple[Rate, ...]]:
        """The provider rates the shared limiter holds: the descriptors' documented rates for the keys
        set, then the overrides."""
        return provider_rates(with_keys={v for v in CATALOGUE.key_variables() if keys.value(v)}, overrides=overrides)

    def penalty_scale(self) -> float:
        """How a provider's "wait N seconds" translates into our waits."""
        return 1.0

    def provider_keys(self, configured: ProviderKeys) -> ProviderKeys:
        """The keys the generators get: the configured ones."""
        return configured

    def tracker_endpoint(self, url: str | None, api_key: str | None, groups: list[str]) -> tuple[str, str | None, list[str]]:
        """(base URL, key, AF group ids) of the tracker; live, the URL and the groups are required."""
        if not url:
            raise ValueError("SOCIAL_RECORDING_TRACKER_URL is required when SOCIAL_RECORDING_UPSTREAM=live")
        if not groups:
            raise ValueError("SOCIAL_RECORDING_AF_GROUP_IDS is required when SOCIAL_RECORDING_UPSTREAM=live")
        return url, api_key, list(groups)

    def ledger(self) -> "Ledger | None":
        """The request ledger a health check counts paid requests in (None: no ledger live)."""
        return None


class TrackerResource(_SafeRepr, ConfigurableResource):
    """The in-house tracker: range queries (reconcile, live sensor) and token info (profile reader).

    The client and the shortlink resolver are built once per process and closed after.
    """

    upstream: ResourceDependency[UpstreamResource]
    tracker_url: str | None = None
    api_key: str | None = None
    af_group_ids: list[str] = []

    _client: TrackerClient | None = PrivateAttr(default=None)
    _resolver: ShortlinkResolver | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.client()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        for closable in (self._client, self._resolver):
            if closable is not None:
                with contextlib.suppress(Exception):
                    closable.close()
        self._client = None
        self._resolver = None

    def client(self) -> TrackerClient:
        if self._client is None:
            base, key, groups = self.upstream.tracker_endpoint(self.tracker_url, self.api_key, list(self.af_group_ids))
            self._client = TrackerClient(
                base,
                SecretStr(key) if key else None,
                groups,
                transport=self.upstream.transport(),
                sleep=self.upstream.sleep(),
            )
        return self._client

    def resolver(self) -> ShortlinkResolver:
        if self._resolver is None:
            kwargs: dict[str, Any] = {"transport": self.upstream.transport()}
            resolve_host = self.upstream.resolve_host()
            if resolve_host is not None:
                kwargs["resolve_host"] = resolve_host
            self._resolver = ShortlinkResolver(**kwargs)
        return self._resolver

    def profile_reader(self) -> TokenProfileReader:
        return TokenProfileReader(self.client(), self.resolver())


class PlatformsResource(_SafeRepr, ConfigurableResource):
    """The platform generator registry, on the upstream's transport.

    `key_variables` names the provider key variables that are set (the descriptors'); their values
    are read from the run process's environment when the registry is built, so no key is ever part
    of a run's config. With `rate_limit_url` (the lock backend's URL) every provider request first
    asks the shared rate limiter: the upstream's rates, then `rate_limits` overrides; and every new
    paid request asks the spend budget of its account (`spend_budgets`, on the same backend)."""

    upstream: ResourceDependency[UpstreamResource]
    key_variables: list[str] = []
    rate_limit_url: str | None = None
    rate_limits: dict[str, str] = {}
    spend_budgets: dict[str, str] = {}

    _registry: GeneratorRegistry | None = PrivateAttr(default=None)
    _limiter: SharedRateLimiter | None = PrivateAttr(default=None)
    _budgets: SpendBudgets | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.registry()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._registry is not None:
            for platform in list(self._registry):
                close = getattr(self._registry.get(platform), "close", None)
                if callable(close):
                    with contextlib.suppress(Exception):
                        close()
            self._registry = None
        if self._limiter is not None:
            with contextlib.suppress(Exception):
                self._limiter.close()
            self._limiter = None
        if self._budgets is not None:
            with contextlib.suppress(Exception):
                self._budgets.close()
            self._budgets = None

    def provider_keys(self) -> ProviderKeys:
        """The provider keys the generators run with (the upstream decides what unset ones mean)."""
        configured = ProviderKeys({name: os.environ.get(name) for name in self.key_variables})
        return self.upstream.provider_keys(configured)

    def limiter(self) -> SharedRateLimiter | None:
        """The shared limiter (None without `rate_limit_url`)."""
        if self._limiter is None and self.rate_limit_url:
            rates = self.upstream.rates(self.provider_keys(), parse_rate_overrides(self.rate_limits))
            self._limiter = open_rate_limiter(self.rate_limit_url, rates, penalty_scale=self.upstream.penalty_scale())
        return self._limiter

    def parsed_budgets(self) -> dict[str, Budget]:
        return parse_budgets(self.spend_budgets, frozenset(a.name for a in CATALOGUE.paid_accounts()))

    def budgets(self) -> SpendBudgets | None:
        """The shared spend budgets (None without a budget or without `rate_limit_url`)."""
        budgets = self.parsed_budgets()
        if self._budgets is None and budgets:
            if not self.rate_limit_url:
                raise ValueError("spend budgets need the shared lock backend (SOCIAL_RECORDING_LOCK_URL or the "
                                 "store's SQLite file) to count across processes")
            self._budgets = open_spend_budgets(self.rate_limit_url, budgets)
        return self._budgets

    def registry(self) -> GeneratorRegistry:
        if self._registry is None:
            self._registry = build_registry(
                self.provider_keys(),
                transport=self.upstream.transport(),
                sleep=self.upstream.sleep(),
                resolve_host=self.upstream.resolve_host(),
                limiter=self.limiter(),
            )
        return self._registry


class RecordingPolicyResource(_SafeRepr, ConfigurableResource):
    """Switches that decide spending and convergence: paid calls on or off, the attempts a URL may
    spend before it is `exhausted`, and the AF investor floor."""

    enable_paid: bool = False
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_growth: float = DEFAULT_BACKOFF_GROWTH
    backoff_max_minutes: int = DEFAULT_BACKOFF_MAX_MINUTES
    af_investor_threshold: int = DEFAULT_AF_INVESTOR_THRESHOLD
    max_exhausted_per_hour: int = DEFAULT_MAX_EXHAUSTED_PER_HOUR
    """The health check's bound on `exhausted` growth (a check, never a switch on recording)."""
    spool_dir: str = ""
    """Where paid answers the store could not take wait for the next run ("" keeps none)."""

    def backoff(self) -> Backoff:
        """The back-off policy every recording dates its element's next due time by."""
        return Backoff.configured(self.backoff_growth, self.backoff_max_minutes)

