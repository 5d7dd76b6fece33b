"""Dagster resources: the connections and clients the plain-Python engine runs on.

Each resource is a `ConfigurableResource` whose live objects (store, lock manager, HTTP clients,
the sandbox transport) are built once per run process in `setup_for_execution` and closed in
`teardown_after_execution`; nothing connects when the code location is loaded. Sensors get the
same lifecycle per evaluation.

The store and the upstream are shared by the resources that depend on them: definitions.py
registers them as top-level *partial* resources (`configure_at_launch(...)` with every value
given), which Dagster resolves to the one initialised top-level instance; a fully configured
nested resource would be initialised a second time, with its own connections.

Values that can carry secrets (store/lock URLs with passwords, API keys) are passed as `EnvVar`s,
so the UI and every repr show the variable's name only; `__repr_args__` masks anything else that
looks secret once the values are resolved inside a run.
"""

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from dagster import ConfigurableResource, EnvVar, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr, SecretStr

from social_recording.domain.policy import DEFAULT_MAX_EXHAUSTED_PER_HOUR
from social_recording.locks import open_lock_manager
from social_recording.locks.base import LockManager
from social_recording.locks.rate_limits import SharedRateLimiter, open_rate_limiter, parse_rate_overrides
from social_recording.outbound.limits import Rate, provider_rates, with_overrides
from social_recording.platforms.base import GeneratorRegistry, ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.store import mask_url_password, open_store
from social_recording.store.base import Store
from social_recording.upstream.profile import TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient

SANDBOX_API_KEY = "sandbox-key"
"""The sandbox accepts any non-empty key; this one is no secret."""
SANDBOX_AF_GROUP = "sandbox"
UPSTREAM_MODES = ("sandbox", "live")
SANDBOX_SLEEP_SCALE = 0.01
"""In sandbox mode client-side waits (HTTP retry back-off, urlscan's 10 s before polling) are scaled
down: the sandbox's answers do not depend on elapsed time, and the demo and tests stay quick. The
sandbox's own simulated latency is not affected."""
_SECRET_HINTS = ("key", "token", "password", "secret")


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


class StoreResource(_SafeRepr, ConfigurableResource):
    """The store of tokens, their URLs and the recorded graphs (a SQLite file by default, MongoDB in
    production); opened once per run process."""

    store_url: str

    _store: Store | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.get()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def get(self) -> Store:
        if self._store is None:
            self._store = open_store(self.store_url)
        return self._store


class LockManagerResource(_SafeRepr, ConfigurableResource):
    """Token, URL and job locks with fencing tokens (Redis in production, the SQLite file by
    default): one worker per URL calls the provider, the others reuse its answer."""

    lock_url: str

    _locks: LockManager | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.get()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._locks is not None:
            self._locks.close()
            self._locks = None

    def get(self) -> LockManager:
        if self._locks is None:
            self._locks = open_lock_manager(self.lock_url)
        return self._locks


class UpstreamResource(_SafeRepr, ConfigurableResource):
    """Where HTTP goes: the real internet (`live`) or the deterministic sandbox, a fake of every
    upstream that costs nothing.

    In sandbox mode one `SandboxTransport` serves the tracker, the shortlink resolver and every
    generator of the run, appending to the ledger; its call counters (`flaky:N`) live in a state
    file beside the ledger, so they hold across runs and processes.
    """

    mode: str = "sandbox"
    sandbox_scenario: str | None = None
    sandbox_ledger: str | None = None

    _transport: httpx.BaseTransport | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.transport()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def is_sandbox(self) -> bool:
        if self.mode not in UPSTREAM_MODES:
            raise ValueError(f"SOCIAL_RECORDING_UPSTREAM must be 'sandbox' or 'live', got {self.mode!r}")
        return self.mode == "sandbox"

    def transport(self) -> httpx.BaseTransport | None:
        """The sandbox transport, or None for the real network."""
        if not self.is_sandbox():
            return None
        if self._transport is None:
            from social_recording.sandbox.ledger import Ledger
            from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH, load_scenario
            from social_recording.sandbox.transport import SandboxTransport

            scenario = load_scenario(Path(self.sandbox_scenario or DEMO_SCENARIO_PATH))
            ledger = Ledger(Path(self.sandbox_ledger or ".social_recording/sandbox-ledger.jsonl"))
            self._transport = SandboxTransport(scenario, ledger)
        return self._transport

    def resolve_host(self) -> Callable[[str], Sequence[str]] | None:
        """The sandbox's DNS (every host public) for the redirect guard of the shortlink resolver and
        every platform client; None live (the system resolver)."""
        if not self.is_sandbox():
            return None
        from social_recording.sandbox.transport import sandbox_resolve_host

        return sandbox_resolve_host

    def sleep(self) -> Callable[[float], None]:
        """The clients' wait function: real time live, compressed in the sandbox."""
        if not self.is_sandbox():
            return time.sleep
        return _scaled_sleep

    def sandbox_rates(self) -> dict[str, tuple[Rate, ...]] | None:
        """In sandbox mode the scenario plays the providers, so its `rate_limits` are the rates to
        respect (a window shorter than a second is counted as one second: stricter, never looser);
        None live."""
        if not self.is_sandbox():
            return None
        from social_recording.sandbox.transport import SandboxTransport

        transport = self.transport()
        assert isinstance(transport, SandboxTransport)
        return {service: (Rate(limit.requests, max(1, math.ceil(limit.per_seconds))),)
                for service, limit in transport.scenario.rate_limits.items()}

    def tracker_base_url(self) -> str:
        from social_recording.sandbox.transport import TRACKER_BASE_URL

        return TRACKER_BASE_URL


def _scaled_sleep(seconds: float) -> None:
    time.sleep(max(0.0, seconds) * SANDBOX_SLEEP_SCALE)


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
            key: str | None
            if self.upstream.is_sandbox():
                # The sandbox transport answers only at its own tracker host.
                base = self.upstream.tracker_base_url()
                key = self.api_key or SANDBOX_API_KEY
                groups = list(self.af_group_ids) or [SANDBOX_AF_GROUP]
            else:
                if not self.tracker_url:
                    raise ValueError(
                        "SOCIAL_RECORDING_TRACKER_URL is required when SOCIAL_RECORDING_UPSTREAM=live"
                    )
                if not self.af_group_ids:
                    raise ValueError(
                        "SOCIAL_RECORDING_AF_GROUP_IDS is required when SOCIAL_RECORDING_UPSTREAM=live"
                    )
                base, key, groups = self.tracker_url, self.api_key, list(self.af_group_ids)
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
    """The platform generator registry: real clients, on the sandbox transport in sandbox mode.

    With `rate_limit_url` (the lock backend's URL) every provider request first asks the shared rate
    limiter, so each provider's rate holds across every run and process: the documented rates live
    (`outbound.limits`, GitHub's by whether a token is set), the scenario's in sandbox mode, then
    `rate_limits` overrides (service -> "N/second;M/hour", `limits`' notation)."""

    upstream: ResourceDependency[UpstreamResource]
    twitterapi_io_key: str | None = None
    apify_token: str | None = None
    youtube_api_key: str | None = None
    github_token: str | None = None
    urlscan_api_key: str | None = None
    rate_limit_url: str | None = None
    rate_limits: dict[str, str] = {}

    _registry: GeneratorRegistry | None = PrivateAttr(default=None)
    _limiter: SharedRateLimiter | None = PrivateAttr(default=None)

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

    def limiter(self) -> SharedRateLimiter | None:
        """The shared limiter (None without `rate_limit_url`)."""
        if self._limiter is None and self.rate_limit_url:
            overrides = parse_rate_overrides(self.rate_limits)
            sandbox = self.upstream.sandbox_rates()
            if sandbox is not None:
                rates = with_overrides(sandbox, overrides)
            else:
                rates = provider_rates(github_token=bool(self.github_token), overrides=overrides)
            # The sandbox's 429s name waits in its compressed time, like every client-side wait there.
            scale = SANDBOX_SLEEP_SCALE if sandbox is not None else 1.0
            self._limiter = open_rate_limiter(self.rate_limit_url, rates, penalty_scale=scale)
        return self._limiter

    def registry(self) -> GeneratorRegistry:
        if self._registry is None:
            sandbox = self.upstream.is_sandbox()

            def secret(value: str | None, *, sandbox_default: bool = True) -> SecretStr | None:
                if value:
                    return SecretStr(value)
                return SecretStr(SANDBOX_API_KEY) if sandbox and sandbox_default else None

            keys = ProviderKeys(
                twitterapi_io_key=secret(self.twitterapi_io_key),
                apify_token=secret(self.apify_token),
                youtube_api_key=secret(self.youtube_api_key),
                github_token=secret(self.github_token, sandbox_default=False),  # optional at GitHub too
                urlscan_api_key=secret(self.urlscan_api_key),
            )
            self._registry = build_registry(
                keys,
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
    max_attempts: int = 5
    af_investor_threshold: int = 3
    max_exhausted_per_hour: int = DEFAULT_MAX_EXHAUSTED_PER_HOUR
    """The health check's bound on `exhausted` growth (a check, never a switch on recording)."""

