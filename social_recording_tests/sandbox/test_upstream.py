"""The sandbox's upstream answers as plain functions: what the Dagster resource and a process without
Dagster (the benchmarks' baselines) both wire the sandbox from."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import SecretStr

from social_recording.outbound.limits import Rate
from social_recording.platforms.base import ProviderKeys
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox import upstream
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import TRACKER_BASE_URL
from social_recording.sandbox.upstream import (
    SANDBOX_API_KEY,
    SANDBOX_SLEEP_SCALE,
    sandbox_keys,
    sandbox_tracker_endpoint,
    scaled_sleep,
    scenario_rates,
)


def test_every_required_key_gets_a_placeholder_and_a_configured_key_wins() -> None:
    required = [a.key_variable for a in CATALOGUE.accounts() if a.key_variable and a.key_required]
    optional = [a.key_variable for a in CATALOGUE.accounts() if a.key_variable and not a.key_required]
    assert required and optional
    keys = sandbox_keys(ProviderKeys({required[0]: SecretStr("mine")}))
    assert keys.value(required[0]) == "mine"
    assert all(keys.value(v) == SANDBOX_API_KEY for v in required[1:])
    assert all(keys.value(v) is None for v in optional), "an optional key stays unset, as at the provider"
    assert sandbox_keys(ProviderKeys({optional[0]: "set"})).value(optional[0]) == "set"


def test_the_scenarios_rates_round_a_short_window_up_then_take_the_overrides() -> None:
    scenario = Scenario.model_validate({"tokens": [], "rate_limits": {
        "github": {"requests": 5, "per_seconds": 0.25}, "youtube": {"requests": 9, "per_seconds": 60}}})
    rates = scenario_rates(scenario, {"youtube": (Rate(1, 1),)})
    assert rates["github"] == (Rate(5, 1),), "a window under a second counts as one second: stricter, never looser"
    assert rates["youtube"] == (Rate(1, 1),)


def test_the_tracker_endpoint_is_the_sandboxs_own_host() -> None:
    assert sandbox_tracker_endpoint(None, []) == (TRACKER_BASE_URL, SANDBOX_API_KEY, ["sandbox"])
    assert sandbox_tracker_endpoint("k", ["g1", "g2"]) == (TRACKER_BASE_URL, "k", ["g1", "g2"])


def test_client_waits_are_scaled_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the clients' wait asks the clock for (recorded, not timed: a busy machine sleeps longer)."""
    asked: list[float] = []
    monkeypatch.setattr(upstream.time, "sleep", asked.append)
    scaled_sleep(10.0)
    scaled_sleep(-1.0)
    assert asked == [10.0 * SANDBOX_SLEEP_SCALE, 0.0] and SANDBOX_SLEEP_SCALE < 1


def test_the_plain_sandbox_wiring_never_imports_dagster() -> None:
    code = ("import sys, social_recording.sandbox.upstream, social_recording.recording.engine; "
            "sys.exit(1 if any(m.split('.')[0] == 'dagster' for m in sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
