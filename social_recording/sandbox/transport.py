"""SandboxTransport: a deterministic fake of every upstream, plugged in as an httpx transport, so the
real tracker client, shortlink resolver and generators run unchanged against it.

It only routes and records: each request goes to the fake that accepts its host (the tracker, the
scenario's redirects and shortener hosts, then every provider account's fakes, `<package>.fake`);
any other host is a ConnectError, as on a closed network, and is not recorded. Per request: the fake
describes it, the scenario's rate limit for the service applies, the fake answers (consuming the
targets' outcomes), the ledger line is written (on arrival: a provider bills what it receives), then
the simulated latency passes and the answer waits while a target's hold file exists (`held_while`,
for tests that need calls under way). See docs/architecture.md, "The sandbox".
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx

from social_recording.outbound.guard import wire_host
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.fake_api import FakeWorld
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.providers._common import (
    SANDBOX_PUBLIC_ADDRESS,
    Call,
    Outcomes,
    Provider,
    RateWindow,
    Reply,
)
from social_recording.sandbox.providers.shortlink import Redirects, ShortlinkProvider
from social_recording.sandbox.providers.tracker import TRACKER_BASE_URL, TrackerProvider
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.state import SandboxState

HOLD_POLL_S = 0.1
"""How often a held answer looks whether its hold file is gone."""


def sandbox_resolve_host(host: str) -> list[str]:
    """DNS for the sandbox: every host resolves to one fixed public address, so the shortlink
    resolver's SSRF check passes without a real resolver (and without network access)."""
    return [SANDBOX_PUBLIC_ADDRESS]


def provider_fakes(world: FakeWorld) -> list[Provider]:
    """Every provider account's fakes (`<package>.fake.make_fakes`), in catalogue order."""
    fakes: list[Provider] = []
    for account in CATALOGUE.accounts():
        if account.package:
            fakes.extend(importlib.import_module(f"{account.package}.fake").make_fakes(world))
    return fakes


class SandboxTransport(httpx.BaseTransport):
    """The fake upstream. Thread-safe; several processes may share one ledger and state file.

    `sleep` passes the simulated latency (tests inject a recorder); `clock` (epoch seconds) places a
    request in its rate-limit window."""

    def __init__(
        self,
        scenario: Scenario,
        ledger: Ledger | None,
        state_path: str | Path | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        tracker_base_url: str = TRACKER_BASE_URL,
    ) -> None:
        self.scenario = scenario
        self.ledger = ledger
        if state_path is None and ledger is not None:
            state_path = ledger.path.with_name(ledger.path.name + ".state.sqlite")
        self.state = SandboxState(state_path)
        self._sleep = sleep
        self._clock = clock
        outcomes = Outcomes(scenario, self.state)
        redirects = Redirects(scenario)
        # Order matters for the first two only: a scenario redirect may live on any host, and the
        # tracker's base URL is configurable.
        self._providers: tuple[Provider, ...] = (
            ShortlinkProvider(redirects),
            TrackerProvider(scenario, tracker_base_url),
            *provider_fakes(FakeWorld(scenario, outcomes, redirects)),
        )

    def __repr__(self) -> str:
        return (f"SandboxTransport(tokens={len(self.scenario.tokens)}, targets={len(self.scenario.targets)}, "
                f"ledger={self.ledger!r})")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        arrived = self._clock()  # the provider's time of the request: its rate window and its ledger line
        provider = self._route(request)
        call = provider.describe(request)
        refusal = self._rate_limited(provider, request, call, arrived)
        reply = refusal if refusal is not None else provider.answer(request, call)
        if self.ledger is not None:
            self.ledger.append(
                service=call.service,
                method=request.method,
                url=str(request.url),
                subject=call.subject,
                status=reply.status,
                paid=call.is_paid and refusal is None,  # a request refused for its rate is not billed
                ts=datetime.fromtimestamp(arrived, UTC),
            )
        latency_ms = max((self.scenario.latency_ms(t) for t in call.targets), default=self.scenario.default_latency_ms)
        if latency_ms > 0:
            self._sleep(latency_ms / 1000.0)
        self._wait_while_held(call.targets)
        if request.method.upper() == "HEAD":
            return httpx.Response(reply.status, headers=reply.headers, content=b"", request=request)
        content = reply.body if reply.chunks is None else iter(reply.chunks)
        return httpx.Response(reply.status, headers=reply.headers, content=content, request=request)

    def _wait_while_held(self, targets: list[str | None]) -> None:
        """The scenario's holds (`held_while`): the answer waits while any of its targets' files exist."""
        held = [Path(p) for t in targets if (p := self.scenario.held_while(t)) is not None]
        while any(p.exists() for p in held):
            self._sleep(HOLD_POLL_S)

    def _route(self, request: httpx.Request) -> Provider:
        for provider in self._providers:
            if provider.accepts(request.url):
                return provider
        host = wire_host(request.url)
        raise httpx.ConnectError(f"sandbox: no route to host {host!r} (not a sandboxed upstream)", request=request)

    def _rate_limited(self, provider: Provider, request: httpx.Request, call: Call, now: float) -> Reply | None:
        """The provider's 429 when the scenario's rate limit for the service is spent in the window of
        `now` (epoch seconds)."""
        limit = self.scenario.rate_limits.get(call.service)
        if limit is None or not call.rate_counted:
            return None
        window = math.floor(now / limit.per_seconds)
        count = self.state.bump(f"rate:{call.service}:{limit.per_seconds}:{window}")
        if count <= limit.requests:
            return None
        reset_at = (window + 1) * limit.per_seconds
        return provider.too_many_requests(
            request, RateWindow(limit.requests, limit.per_seconds, reset_at, max(1, math.ceil(reset_at - now)))
        )


__all__ = ["SANDBOX_PUBLIC_ADDRESS", "TRACKER_BASE_URL", "SandboxTransport", "sandbox_resolve_host"]
