"""The sandbox's DNS reaches every platform client through the Dagster resources: RDAP's redirect to a
(fake) registry host is checked with it and followed, where the system resolver knows no such host."""

from __future__ import annotations

from pathlib import Path

from social_recording.dagster_defs.resources import PlatformsResource, UpstreamResource
from social_recording.domain.urls import Platform
from social_recording.outbound.network import Network
from social_recording.outbound.observe import CountingObserver, observing
from social_recording.platforms.base import GenerateContext
from social_recording.sandbox.transport import sandbox_resolve_host


def test_sandbox_registry_follows_rdap_redirects_with_the_sandbox_dns(tmp_path: Path) -> None:
    upstream = UpstreamResource(mode="sandbox", sandbox_ledger=str(tmp_path / "ledger.jsonl"))
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
