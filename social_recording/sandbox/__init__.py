"""A deterministic fake upstream (tracker, shortlinks, every platform API) for the quickstart, the
tests and the benchmarks. It plugs in as an httpx transport, so the real clients and
generators run unchanged against it, and it records every answered request in a JSON-lines ledger.
"""

from social_recording.sandbox.ledger import Ledger, LedgerEntry
from social_recording.sandbox.scenario import (
    DEMO_SCENARIO_PATH,
    OutcomeKind,
    Scenario,
    ScenarioError,
    ScriptedOutcome,
    load_scenario,
)
from social_recording.sandbox.transport import (
    SANDBOX_PUBLIC_ADDRESS,
    TRACKER_BASE_URL,
    SandboxTransport,
    sandbox_resolve_host,
)

__all__ = [
    "DEMO_SCENARIO_PATH",
    "SANDBOX_PUBLIC_ADDRESS",
    "TRACKER_BASE_URL",
    "Ledger",
    "LedgerEntry",
    "ScriptedOutcome",
    "OutcomeKind",
    "SandboxTransport",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "sandbox_resolve_host",
]
