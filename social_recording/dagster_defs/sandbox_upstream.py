"""The sandbox as an upstream resource: the same questions `UpstreamResource` answers, for the fake
upstream. Chosen once, by `definitions_builder`; the sandbox package is imported only when a run or
sensor sets this resource up (docs/architecture.md, "The sandbox")."""

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import InitResourceContext
from pydantic import PrivateAttr, SecretStr

from social_recording.dagster_defs.resources import UpstreamResource
from social_recording.outbound.limits import Rate, with_overrides
from social_recording.platforms.base import ProviderKeys
from social_recording.platforms.catalogue import CATALOGUE

if TYPE_CHECKING:
    from social_recording.sandbox.ledger import Ledger
    from social_recording.sandbox.transport import SandboxTransport

SANDBOX_API_KEY = "sandbox-key"
"""The sandbox accepts any non-empty key; this one is no secret."""
SANDBOX_AF_GROUP = "sandbox"
SANDBOX_SLEEP_SCALE = 0.01
"""Client-side waits (HTTP retry back-off, urlscan's wait before polling) are scaled down: the
sandbox's answers do not depend on elapsed time. Its own simulated latency is not scaled."""


def _scaled_sleep(seconds: float) -> None:
    time.sleep(max(0.0, seconds) * SANDBOX_SLEEP_SCALE)


class SandboxUpstreamResource(UpstreamResource):
    """One `SandboxTransport` serves the tracker, the shortlink resolver and every generator of the
    run, appending to the ledger; its call counters (`flaky:N`) live in a state file beside the
    ledger, so they hold across runs and processes."""

    sandbox_scenario: str | None = None
    sandbox_ledger: str | None = None

    _transport: "SandboxTransport | None" = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.transport()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None

    def transport(self) -> "SandboxTransport":
        from social_recording.sandbox.transport import SandboxTransport

        if self._transport is None:
            from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH, load_scenario

            scenario = load_scenario(Path(self.sandbox_scenario or DEMO_SCENARIO_PATH))
            self._transport = SandboxTransport(scenario, self.ledger())
        return self._transport

    def resolve_host(self) -> Callable[[str], Sequence[str]]:
        from social_recording.sandbox.transport import sandbox_resolve_host

        return sandbox_resolve_host

    def sleep(self) -> Callable[[float], None]:
        return _scaled_sleep

    def rates(self, keys: ProviderKeys, overrides: dict[str, tuple[Rate, ...]]) -> dict[str, tuple[Rate, ...]]:
        """The scenario plays the providers, so its `rate_limits` are the rates (a window shorter than
        a second counts as one second: stricter, never looser), then the overrides."""
        scenario = self.transport().scenario
        rates = {service: (Rate(limit.requests, max(1, math.ceil(limit.per_seconds))),)
                 for service, limit in scenario.rate_limits.items()}
        return with_overrides(rates, overrides)

    def penalty_scale(self) -> float:
        """The sandbox's 429s name waits in its compressed time, like every client-side wait here."""
        return SANDBOX_SLEEP_SCALE

    def provider_keys(self, configured: ProviderKeys) -> ProviderKeys:
        """A placeholder for every required key left unset: every platform is usable in the sandbox
        (an optional key stays unset, as at the provider)."""
        placeholders: dict[str, SecretStr | str | None] = {
            a.key_variable: SecretStr(SANDBOX_API_KEY) for a in CATALOGUE.accounts() if a.key_variable and a.key_required
        }
        return ProviderKeys({**placeholders, **{v: configured.secret(v) for v in CATALOGUE.key_variables()
                                                if configured.value(v)}})

    def tracker_endpoint(self, url: str | None, api_key: str | None, groups: list[str]) -> tuple[str, str | None, list[str]]:
        """The sandbox's own tracker host (the transport answers only there)."""
        from social_recording.sandbox.transport import TRACKER_BASE_URL

        return TRACKER_BASE_URL, api_key or SANDBOX_API_KEY, list(groups) or [SANDBOX_AF_GROUP]

    def ledger(self) -> "Ledger":
        from social_recording.sandbox.ledger import Ledger

        return Ledger(Path(self.sandbox_ledger or ".social_recording/sandbox-ledger.jsonl"))
