"""The sandbox's DNS reaches every platform client through the Dagster resources: RDAP's redirect to a
(fake) registry host is checked with it and followed, where the system resolver knows no such host."""

from __future__ import annotations

from pathlib import Path

import pytest

from social_recording.dagster_defs.resources import PlatformsResource, UpstreamResource
from social_recording.dagster_defs.sandbox_upstream import SandboxUpstreamResource
from social_recording.domain.urls import Platform
from social_recording.outbound.limits import Rate
from social_recording.outbound.network import Network
from social_recording.outbound.observe import CountingObserver, observing
from social_recording.platforms.base import GenerateContext
from social_recording.sandbox.transport import sandbox_resolve_host


def test_sandbox_registry_follows_rdap_redirects_with_the_sandbox_dns(tmp_path: Path) -> None:
    upstream = SandboxUpstreamResource(sandbox_ledger=str(tmp_path / "ledger.jsonl"))
    platforms = PlatformsResource(upstream=upstream)
    try:
        web = platforms.registry().get(Platform.WEB)
        assert web is not None
        transport = getattr(web, "_transport", None)
        assert isinstance(transport, Network) and transport.resolve_host is sandbox_resolve_host
        counter = CountingObserver()
        with observing(counter):
            result = web.generate("https://bonkdog.io", GenerateContext(token_address="Mint1111"))
        page = result.graph.groups[0].content
        assert page is not None and page.fields["rdap_status"] == "ok" and page.fields["registration_date"]
        assert counter.sent == result.requests and counter.paid_sent >= 1
    finally:
        sandbox = upstream.transport()
        if sandbox is not None:
            sandbox.close()


def test_the_shared_limiter_reaches_every_platform_client_with_the_scenarios_rates(tmp_path: Path) -> None:
    """In sandbox mode the scenario plays the providers, so its rate limits are the limiter's rates;
    the limiter lives on the lock backend and travels to every client with the transport."""
    import json

    from social_recording.outbound.limits import Rate

    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"tokens": [], "rate_limits": {"github": {"requests": 5, "per_seconds": 0.5}}}))
    upstream = SandboxUpstreamResource(sandbox_scenario=str(scenario),
                                sandbox_ledger=str(tmp_path / "ledger.jsonl"))
    platforms = PlatformsResource(upstream=upstream, rate_limit_url=f"sqlite:///{tmp_path / 'locks.db'}",
                                  rate_limits={"urlscan": "2/second"})
    try:
        limiter = platforms.limiter()
        assert limiter is not None
        assert limiter.rates == {"github": (Rate(5, 1),), "urlscan": (Rate(2, 1),)}
        github = platforms.registry().get(Platform.GITHUB)
        assert github is not None
        counter = CountingObserver()
        with observing(counter):
            github.generate("https://github.com/owner/repo", GenerateContext(token_address="Mint1111"))
        # Every request the client sent was counted in the shared window first.
        assert limiter.used("github") == [counter.sent] and counter.sent >= 1
    finally:
        sandbox = upstream.transport()
        if sandbox is not None:
            sandbox.close()


def test_live_rates_are_the_documented_ones_with_githubs_by_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from social_recording.platforms.github import GITHUB
    from social_recording.platforms.x import TWITTERAPI

    url = f"sqlite:///{tmp_path / 'locks.db'}"
    live = UpstreamResource()
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    anonymous = PlatformsResource(upstream=live, rate_limit_url=url).limiter()
    with_token = PlatformsResource(upstream=live, rate_limit_url=url, key_variables=["GITHUB_TOKEN"]).limiter()
    assert anonymous is not None and with_token is not None
    assert anonymous.rates["github"] == GITHUB.rates_without_key == (Rate(60, 3600),)
    assert with_token.rates["github"] == GITHUB.rates == (Rate(5000, 3600),)
    assert anonymous.rates["twitterapi"] == TWITTERAPI.rates
    assert PlatformsResource(upstream=live).limiter() is None  # no lock URL: no limiter
