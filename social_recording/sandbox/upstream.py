"""The sandbox's answers to the questions an upstream answers (keys, tracker endpoint, waits, rates),
as plain functions: the Dagster resource (`dagster_defs/sandbox_upstream.py`) and a process without
Dagster (the benchmarks' baselines) wire the same sandbox from them (docs/architecture.md, "The
sandbox")."""

from __future__ import annotations

import math
import time

from pydantic import SecretStr

from social_recording.domain.provider_keys import ProviderKeys
from social_recording.outbound.limits import Rate, with_overrides
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import TRACKER_BASE_URL

SANDBOX_API_KEY = "sandbox-key"
"""The sandbox accepts any non-empty key; this one is no secret."""
SANDBOX_AF_GROUP = "sandbox"
SANDBOX_SLEEP_SCALE = 0.01
"""Client-side waits (HTTP retry back-off, urlscan's wait before polling) are scaled down: the
sandbox's answers do not depend on elapsed time. Its own simulated latency is not scaled."""


def scaled_sleep(seconds: float) -> None:
    """The clients' wait in the sandbox: `SANDBOX_SLEEP_SCALE` of what they asked for."""
    time.sleep(max(0.0, seconds) * SANDBOX_SLEEP_SCALE)


def scenario_rates(scenario: Scenario, overrides: dict[str, tuple[Rate, ...]]) -> dict[str, tuple[Rate, ...]]:
    """The scenario plays the providers, so its `rate_limits` are the rates (a window shorter than a
    second counts as one second: stricter, never looser), then the overrides."""
    rates = {service: (Rate(limit.requests, max(1, math.ceil(limit.per_seconds))),)
             for service, limit in scenario.rate_limits.items()}
    return with_overrides(rates, overrides)


def sandbox_keys(configured: ProviderKeys) -> ProviderKeys:
    """A placeholder for every required key left unset: every platform is usable in the sandbox (an
    optional key stays unset, as at the provider)."""
    placeholders: dict[str, SecretStr | str | None] = {
        a.key_variable: SecretStr(SANDBOX_API_KEY) for a in CATALOGUE.accounts() if a.key_variable and a.key_required
    }
    return ProviderKeys({**placeholders, **{v: configured.secret(v) for v in CATALOGUE.key_variables()
                                            if configured.value(v)}})


def sandbox_tracker_endpoint(api_key: str | None, groups: list[str]) -> tuple[str, str, list[str]]:
    """(base URL, key, AF group ids) of the sandbox's own tracker host (the transport answers only there)."""
    return TRACKER_BASE_URL, api_key or SANDBOX_API_KEY, list(groups) or [SANDBOX_AF_GROUP]
