"""The sandbox as an upstream resource: the same questions `UpstreamResource` answers, for the fake
upstream, each answer `sandbox/upstream.py`'s. Chosen once, by `definitions_builder`; the sandbox
package is imported only when a run or sensor asks this resource (docs/architecture.md, "The sandbox")."""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import InitResourceContext
from pydantic import PrivateAttr

from social_recording.dagster_defs.resources import UpstreamResource
from social_recording.outbound.limits import Rate
from social_recording.platforms.base import ProviderKeys

if TYPE_CHECKING:
    from social_recording.sandbox.ledger import Ledger
    from social_recording.sandbox.transport import SandboxTransport


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
        from social_recording.sandbox.upstream import scaled_sleep

        return scaled_sleep

    def rates(self, keys: ProviderKeys, overrides: dict[str, tuple[Rate, ...]]) -> dict[str, tuple[Rate, ...]]:
        from social_recording.sandbox.upstream import scenario_rates

        return scenario_rates(self.transport().scenario, overrides)

    def penalty_scale(self) -> float:
        """The sandbox's 429s name waits in its compressed time, like every client-side wait here."""
        from social_recording.sandbox.upstream import SANDBOX_SLEEP_SCALE

        return SANDBOX_SLEEP_SCALE

    def provider_keys(self, configured: ProviderKeys) -> ProviderKeys:
        from social_recording.sandbox.upstream import sandbox_keys

        return sandbox_keys(configured)

    def tracker_endpoint(self, url: str | None, api_key: str | None, groups: list[str]) -> tuple[str, str | None, list[str]]:
        from social_recording.sandbox.upstream import sandbox_tracker_endpoint

        return sandbox_tracker_endpoint(api_key, groups)

    def ledger(self) -> "Ledger":
        from social_recording.sandbox.ledger import Ledger

        return Ledger(Path(self.sandbox_ledger or ".social_recording/sandbox-ledger.jsonl"))
