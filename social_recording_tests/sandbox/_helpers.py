"""Shared helpers for the sandbox tests: a small scenario builder and a client bound to a transport."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from social_recording.sandbox import Ledger, SandboxTransport
from social_recording.sandbox.scenario import Scenario, parse_scenario

KEY = "sandbox-test-key"


def token(address: str, *, last: str, investors: int = 5, first: str | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "address": address,
        "symbol": fields.pop("symbol", address[:4].upper()),
        "name": fields.pop("name", f"Token {address}"),
        "image_url": fields.pop("image_url", f"https://img.example/{address}.png"),
        "investor_count": investors,
        "first_transfer_at": first or last,
        "last_transfer_at": last,
        **fields,
    }


def scenario(targets: dict[str, Any] | None = None, **extra: Any) -> Scenario:
    data: dict[str, Any] = {"targets": {k: v if isinstance(v, dict) else {"outcome": v} for k, v in (targets or {}).items()}}
    data.update(extra)
    return parse_scenario(data, source="<test>")


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make(tmp_path: Path, sc: Scenario, **kwargs: Any) -> tuple[SandboxTransport, Ledger, httpx.Client, Sleeps]:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    sleeps = Sleeps()
    transport = SandboxTransport(sc, ledger, sleep=sleeps, **kwargs)
    return transport, ledger, httpx.Client(transport=transport, follow_redirects=False), sleeps
