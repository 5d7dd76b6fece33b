"""Process entry points for the multi-process sandbox tests (spawn context: importable functions)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx


def append_lines(ledger_path: str, worker: int, count: int) -> None:
    from social_recording.sandbox import Ledger

    ledger = Ledger(ledger_path)
    for i in range(count):
        ledger.append(service="twitterapi", method="GET", url=f"https://api.twitterapi.io/twitter/tweets?tweet_ids={worker}{i}",
                      subject=f"tweet:{worker}-{i}-" + "x" * 300, status=200, paid=True)


def call_flaky(scenario_json: str, ledger_path: str, url: str, calls: int, out_path: str) -> None:
    """Make `calls` requests to `url` through a SandboxTransport sharing the ledger/state; write the statuses."""
    from social_recording.sandbox import Ledger, SandboxTransport
    from social_recording.sandbox.scenario import parse_scenario

    transport = SandboxTransport(parse_scenario(json.loads(scenario_json)), Ledger(ledger_path), sleep=lambda s: None)
    statuses = []
    with httpx.Client(transport=transport) as client:
        for _ in range(calls):
            statuses.append(client.get(url, headers={"X-API-Key": "k"}).status_code)
    Path(out_path).write_text(json.dumps(statuses), encoding="utf-8")


def call_rate_limited(scenario_json: str, ledger_path: str, url: str, calls: int, now: float, out_path: str) -> None:
    """Make `calls` requests to `url` at the fixed time `now` (one rate-limit window for every
    process); write the statuses."""
    from social_recording.sandbox import Ledger, SandboxTransport
    from social_recording.sandbox.scenario import parse_scenario

    transport = SandboxTransport(parse_scenario(json.loads(scenario_json)), Ledger(ledger_path),
                                 sleep=lambda s: None, clock=lambda: now)
    with httpx.Client(transport=transport) as client:
        statuses = [client.get(url, headers={"X-API-Key": "k"}).status_code for _ in range(calls)]
    Path(out_path).write_text(json.dumps(statuses), encoding="utf-8")
