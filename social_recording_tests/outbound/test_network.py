"""On the real network, every client of one registry sends on one transport: a provider's connection is
kept from one URL to the next (no new TCP and TLS handshake, no CA bundle read per URL), and only
whoever made a transport closes it."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.outbound import network as network_module
from social_recording.outbound.client import OutboundClient
from social_recording.outbound.network import Network
from social_recording.platforms.base import ExternalFetchError, GenerateContext, ProviderKeys
from social_recording.platforms.github.generator import GitHubGenerator
from social_recording.platforms.registry import build_registry
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import SandboxTransport
from social_recording_tests.http_front import serving


class RecordingTransport(httpx.BaseTransport):
    made: list[RecordingTransport] = []

    def __init__(self, **_: object) -> None:
        self.closed = False
        RecordingTransport.made.append(self)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"{}")

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def recording_transports(monkeypatch: pytest.MonkeyPatch) -> list[RecordingTransport]:
    """httpx.HTTPTransport, as the network and the client make it, replaced by one that records."""
    RecordingTransport.made = []
    monkeypatch.setattr(network_module.httpx, "HTTPTransport", RecordingTransport)
    return RecordingTransport.made


def sandbox(tmp_path: Path) -> SandboxTransport:
    return SandboxTransport(Scenario.model_validate({"tokens": []}), Ledger(tmp_path / "ledger.jsonl"))


def test_a_registry_on_the_real_network_keeps_one_connection_across_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(sandbox(tmp_path), "https://api.github.com") as front:
        monkeypatch.setattr(GitHubGenerator, "default_base_url", front.base_url)
        registry = build_registry(ProviderKeys(github_token=SecretStr("ghp_front")))  # no transport: real sockets
        try:
            github = registry.get(Platform.GITHUB)
            assert github is not None
            results = [github.generate(f"https://github.com/frontorg{i}/repo", GenerateContext(token_address="Mint1"))
                       for i in range(6)]
        finally:
            registry.close()
    assert all(r.attempted and r.graph.groups for r in results)
    assert front.requests == sum(r.requests for r in results) >= 6
    assert front.connections == 1  # one kept-alive connection for every URL (a transport per call opened 6)


def test_the_registry_shares_one_transport_and_close_releases_it(
    recording_transports: list[RecordingTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = build_registry(ProviderKeys(github_token=SecretStr("ghp_x")))
    github = registry.get(Platform.GITHUB)
    assert github is not None
    for i in range(3):
        with pytest.raises(ExternalFetchError):  # the recording transport answers "{}": not a repository
            github.generate(f"https://github.com/org{i}/repo", GenerateContext(token_address="Mint1"))
    assert len(recording_transports) == 1 and not recording_transports[0].closed  # a call's close leaves it open
    registry.close()
    assert recording_transports[0].closed


def test_a_forked_child_makes_its_own_transport_and_leaves_the_parents_alone(
    recording_transports: list[RecordingTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    network = Network()
    parent = network.sending_transport()
    assert network.sending_transport() is parent
    monkeypatch.setattr(network_module.os, "getpid", lambda: -1)  # as in a child after fork
    child = network.sending_transport()
    assert child is not parent and not parent.closed
    monkeypatch.undo()
    network.close()  # the parent's process no longer holds it: its sockets are the child's to drop
    assert not parent.closed and not child.closed


def test_a_network_never_closes_a_transport_it_was_given(tmp_path: Path) -> None:
    given = RecordingTransport()
    network = Network(given)
    assert network.sending_transport() is given
    network.close()
    assert not given.closed


def test_a_client_closes_only_the_transport_it_made(
    recording_transports: list[RecordingTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    from social_recording.outbound import client as client_module

    monkeypatch.setattr(client_module.httpx, "HTTPTransport", RecordingTransport)
    given = RecordingTransport()
    for transport in (given, Network(given)):
        OutboundClient(service="s", paid=False, timeout=httpx.Timeout(1), max_bytes=10,
                       transport=transport).close()
    assert not given.closed
    OutboundClient(service="s", paid=False, timeout=httpx.Timeout(1), max_bytes=10).close()
    assert recording_transports[-1] is not given and recording_transports[-1].closed
