"""Dagster resources: the thin shell around the plain-Python engine (DESIGN §1, §10).

Each resource is a `ConfigurableResource`, built once per run process (`setup_for_execution`) and
closed after (`teardown_after_execution`); sensors build them lazily through `get()`. Values that
can carry secrets come from `EnvVar` in definitions.py, so the UI never shows them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
from dagster import ConfigurableResource, InitResourceContext
from pydantic import PrivateAttr, SecretStr

from social_recording.locks import open_lock_manager
from social_recording.locks.base import LockManager
from social_recording.platforms.base import GeneratorRegistry, ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.recording.gate import DedupeGate
from social_recording.recording.writer import GraphWriter
from social_recording.store import open_store
from social_recording.store.base import Store
from social_recording.upstream.profile import TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient

SANDBOX_API_KEY = "sandbox-key"
"""The sandbox accepts any non-empty key; this one is no secret."""


class StoreResource(ConfigurableResource):
    """The Store (SQLite file by default, MongoDB in production)."""

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


class LockManagerResource(ConfigurableResource):
    """Token, URL and job locks (Redis in production, the SQLite file by default)."""

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


class DedupeGateResource(ConfigurableResource):
    """The dedupe gate over the shared store (seed 002)."""

    store: StoreResource

    def get(self) -> DedupeGate:
        return DedupeGate(self.store.get())


class GraphWriterResource(ConfigurableResource):
    """The graph writer over the shared store (DESIGN §6)."""

    store: StoreResource

    def get(self) -> GraphWriter:
        return GraphWriter(self.store.get())


class UpstreamResource(ConfigurableResource):
    """Where HTTP goes: the real internet (`live`) or the deterministic sandbox (DESIGN §9)."""

    mode: str = "sandbox"
    sandbox_scenario: str | None = None
    sandbox_ledger: str | None = None

    _transport: httpx.BaseTransport | None = PrivateAttr(default=None)

    def is_sandbox(self) -> bool:
        if self.mode not in ("sandbox", "live"):
            raise ValueError(f"SOCIAL_RECORDING_UPSTREAM must be 'sandbox' or 'live', got {self.mode!r}")
        return self.mode == "sandbox"

    def transport(self) -> httpx.BaseTransport | None:
        if not self.is_sandbox():
            return None
        if self._transport is None:
            from social_recording.sandbox import DEMO_SCENARIO_PATH, Ledger, SandboxTransport, load_scenario

            scenario = load_scenario(Path(self.sandbox_scenario or DEMO_SCENARIO_PATH))
            ledger_path = Path(self.sandbox_ledger or ".social_recording/sandbox-ledger.jsonl")
            self._transport = SandboxTransport(scenario, Ledger(ledger_path))
        return self._transport

    def resolve_host(self) -> Callable[[str], Sequence[str]] | None:
        if not self.is_sandbox():
            return None
        from social_recording.sandbox import sandbox_resolve_host

        return sandbox_resolve_host

    def sleep(self) -> Callable[[float], None]:
        return time.sleep


class TrackerResource(ConfigurableResource):
    """The in-house tracker: range queries (reconcile, live sensor) and token info (profile reader)."""

    upstream: UpstreamResource
    tracker_url: str | None = None
    api_key: str | None = None
    af_group_ids: list[str] = []

    def client(self) -> TrackerClient:
        if self.upstream.is_sandbox():
            from social_recording.sandbox import TRACKER_BASE_URL

            base = self.tracker_url or TRACKER_BASE_URL
            key = self.api_key or SANDBOX_API_KEY
            groups = self.af_group_ids or ["sandbox"]
        else:
            if not self.tracker_url:
                raise ValueError("SOCIAL_RECORDING_TRACKER_URL is required when SOCIAL_RECORDING_UPSTREAM=live")
            if not self.af_group_ids:
                raise ValueError("SOCIAL_RECORDING_AF_GROUP_IDS is required when SOCIAL_RECORDING_UPSTREAM=live")
            base, key, groups = self.tracker_url, self.api_key, self.af_group_ids
        return TrackerClient(
            base,
            SecretStr(key) if key else None,
            groups,
            transport=self.upstream.transport(),
        )

    def profile_reader(self) -> TokenProfileReader:
        kwargs: dict[str, Any] = {"transport": self.upstream.transport()}
        resolver_fn = self.upstream.resolve_host()
        if resolver_fn is not None:
            kwargs["resolve_host"] = resolver_fn
        return TokenProfileReader(self.client(), ShortlinkResolver(**kwargs))


class PlatformsResource(ConfigurableResource):
    """The platform generator registry (real clients; sandbox transport in dev)."""

    upstream: UpstreamResource
    twitterapi_io_key: str | None = None
    apify_token: str | None = None
    youtube_api_key: str | None = None
    github_token: str | None = None
    urlscan_api_key: str | None = None

    def registry(self) -> GeneratorRegistry:
        def secret(value: str | None) -> SecretStr | None:
            if value:
                return SecretStr(value)
            return SecretStr(SANDBOX_API_KEY) if self.upstream.is_sandbox() else None

        keys = ProviderKeys(
            twitterapi_io_key=secret(self.twitterapi_io_key),
            apify_token=secret(self.apify_token),
            youtube_api_key=secret(self.youtube_api_key),
            github_token=secret(self.github_token) if self.github_token else None,
            urlscan_api_key=secret(self.urlscan_api_key),
        )
        return build_registry(keys, transport=self.upstream.transport())


class RecordingPolicyResource(ConfigurableResource):
    """Switches that decide spending and convergence (DESIGN §10)."""

    enable_paid: bool = False
    max_attempts: int = 5
    af_investor_threshold: int = 3
