"""SandboxTransport: a deterministic fake of every upstream, plugged in as an httpx transport.

Why a transport: the real tracker client, shortlink resolver and platform generators run unchanged
against it, so what the sandbox proves (a payment avoided, a retry converging, a quote cycle
rejected) is proven about the production code paths, not about a mock of them.

This module only routes and records: each request goes to the provider that accepts its host (one
module per provider under `providers/`, holding its payloads and its handler: the tracker at
`TRACKER_BASE_URL` or any base given, the scenario's `redirects` and shortener hosts,
api.twitterapi.io, api.apify.com, www.googleapis.com, api.github.com, t.me, urlscan.io, rdap.org and
the RDAP registries it redirects to). Any other host raises httpx.ConnectError, as a closed network
would, and is not recorded.

For each request, in this order: the provider describes it (ledger service, subject, scenario
targets); the scenario's rate limit for the service is applied (fixed windows counted across
processes in the state file; past it the provider's own 429, not billed); the provider answers,
consuming the targets' outcomes; the ledger line is written; then the simulated latency passes.
The line is written when the request arrives, before the latency: a real provider bills a request
when it receives it, so a caller that gives up mid-way (a timeout, a killed worker) was still billed.

Outcomes per provider are described in each provider module. `invalid` needs a payload that breaks
the graph contract; only X's quote chain can express one, so other providers answer it as `ok`
(`scenario.unservable_reason` rejects such scenarios at load time). Ledger subjects for multi-item
requests (a `tweet_ids=a,b` lookup, a by-addresses POST, a multi-URL actor input) join the items with
"," after the prefix: `tweet:a,b`, `token:A1,A2`, `apify:u1,u2`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from social_recording.outbound.guard import wire_host
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.providers._common import Call, Outcomes, Provider, RateWindow, Reply
from social_recording.sandbox.providers.apify import ApifyProvider
from social_recording.sandbox.providers.github import SANDBOX_PUBLIC_ADDRESS, GitHubProvider
from social_recording.sandbox.providers.rdap import RdapProvider
from social_recording.sandbox.providers.shortlink import Redirects, ShortlinkProvider
from social_recording.sandbox.providers.telegram import TelegramProvider
from social_recording.sandbox.providers.tracker import TRACKER_BASE_URL, TrackerProvider
from social_recording.sandbox.providers.twitterapi import TwitterApiProvider, tweet_authors
from social_recording.sandbox.providers.urlscan import UrlscanProvider
from social_recording.sandbox.providers.youtube import YouTubeProvider
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.state import SandboxState


def sandbox_resolve_host(host: str) -> list[str]:
    """DNS for the sandbox: every host resolves to one fixed public address, so the shortlink
    resolver's SSRF check passes without a real resolver (and without network access)."""
    return [SANDBOX_PUBLIC_ADDRESS]


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
            TwitterApiProvider(outcomes, tweet_authors(scenario, redirects)),
            ApifyProvider(outcomes),
            YouTubeProvider(outcomes),
            GitHubProvider(outcomes),
            TelegramProvider(outcomes),
            UrlscanProvider(outcomes),
            RdapProvider(scenario),
        )

    def __repr__(self) -> str:
        return (f"SandboxTransport(tokens={len(self.scenario.tokens)}, targets={len(self.scenario.targets)}, "
                f"ledger={self.ledger!r})")

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        provider = self._route(request)
        call = provider.describe(request)
        refusal = self._rate_limited(provider, request, call)
        reply = refusal if refusal is not None else provider.answer(request, call)
        if self.ledger is not None:
            self.ledger.append(
                service=call.service,
                method=request.method,
                url=str(request.url),
                subject=call.subject,
                status=reply.status,
                paid=call.is_paid and refusal is None,  # a request refused for its rate is not billed
            )
        latency_ms = max((self.scenario.latency_ms(t) for t in call.targets), default=self.scenario.default_latency_ms)
        if latency_ms > 0:
            self._sleep(latency_ms / 1000.0)
        body = b"" if request.method.upper() == "HEAD" else reply.body
        return httpx.Response(reply.status, headers=reply.headers, content=body, request=request)

    def _route(self, request: httpx.Request) -> Provider:
        for provider in self._providers:
            if provider.accepts(request.url):
                return provider
        host = wire_host(request.url)
        raise httpx.ConnectError(f"sandbox: no route to host {host!r} (not a sandboxed upstream)", request=request)

    def _rate_limited(self, provider: Provider, request: httpx.Request, call: Call) -> Reply | None:
        """The provider's 429 when the scenario's rate limit for the service is spent in this window."""
        limit = self.scenario.rate_limits.get(call.service)
        if limit is None or not call.rate_counted:
            return None
        now = self._clock()
        window = math.floor(now / limit.per_seconds)
        count = self.state.bump(f"rate:{call.service}:{limit.per_seconds}:{window}")
        if count <= limit.requests:
            return None
        reset_at = (window + 1) * limit.per_seconds
        return provider.too_many_requests(
            request, RateWindow(limit.requests, limit.per_seconds, reset_at, max(1, math.ceil(reset_at - now)))
        )


__all__ = ["SANDBOX_PUBLIC_ADDRESS", "TRACKER_BASE_URL", "SandboxTransport", "sandbox_resolve_host"]
