"""On the real network every client of a process sends on one transport: a provider's connection is
kept from one URL to the next (no new TCP and TLS handshake, no CA bundle read per URL or per sensor
tick), and no client closes a transport others send on."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.outbound import network as network_module
from social_recording.outbound.client import OutboundClient
from social_recording.outbound.network import Network, real_network_transport
from social_recording.platforms.base import ExternalFetchError, GenerateContext, ProviderKeys
from social_recording.platforms.github.generator import GitHubGenerator
from social_recording.platforms.registry import build_registry
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import SandboxTransport
from social_recording.upstream.tracker import TrackerClient, TrackerError
from test_support.http_front import serving


class RecordingTransport(httpx.BaseTransport):
    made: list[RecordingTransport] = []

    def __init__(self, **_: object) -> None:
        self.closed = False
        self.sent = 0
        RecordingTransport.made.append(self)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        return httpx.Response(200, content=b"{}")

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def recording_transports(monkeypatch: pytest.MonkeyPatch) -> list[RecordingTransport]:
    """The process's real-network transport, made afresh as one that records."""
    RecordingTransport.made = []
    monkeypatch.setattr(network_module, "_real", None)
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
        github = registry.get(Platform.GITHUB)
        assert github is not None
        results = [github.generate(f"https://github.com/frontorg{i}/repo", GenerateContext(token_address="Mint1"))
                   for i in range(6)]
    assert all(r.attempted and r.graph.groups for r in results)
    assert front.requests == sum(r.requests for r in results) >= 6
    assert front.connections == 1  # one kept-alive connection for every URL (a transport per call opened 6)


def test_every_client_without_a_transport_sends_on_the_one_real_transport_and_none_closes_it(
    recording_transports: list[RecordingTransport],
) -> None:
    registry = build_registry(ProviderKeys(github_token=SecretStr("ghp_x")))
    github = registry.get(Platform.GITHUB)
    assert github is not None
    for i in range(3):
        with pytest.raises(ExternalFetchError):  # the recording transport answers "{}": not a repository
            github.generate(f"https://github.com/org{i}/repo", GenerateContext(token_address="Mint1"))
    for _ in range(2):  # as a sensor does on each tick: a tracker client made, used and closed
        with (TrackerClient("https://tracker.example", SecretStr("k"), ["g1"]) as tracker,
              pytest.raises(TrackerError, match="malformed")):  # "{}" is no tracker answer; it was sent
            tracker.token_by_address("Mint1")
    assert len(recording_transports) == 1
    assert recording_transports[0].sent >= 5 and not recording_transports[0].closed


def test_a_forked_child_makes_its_own_real_transport_and_leaves_the_parents_alone(
    recording_transports: list[RecordingTransport], monkeypatch: pytest.MonkeyPatch
) -> None:
    parent = real_network_transport()
    assert real_network_transport() is parent and Network().sending_transport() is parent
    monkeypatch.setattr(network_module.os, "getpid", lambda: -1)  # as in a child after fork
    child = real_network_transport()
    assert child is not parent and not parent.closed  # type: ignore[attr-defined]


def test_no_client_closes_a_transport_it_was_given() -> None:
    given = RecordingTransport()
    for transport in (given, Network(given)):
        OutboundClient(service="s", paid=False, timeout=httpx.Timeout(1), max_bytes=10, transport=transport).close()
    assert not given.closed


def test_a_body_cut_at_the_size_cap_closes_its_connection_and_the_next_request_opens_a_new_one() -> None:
    from social_recording.outbound.reader import ResponseTooLarge

    answers = httpx.MockTransport(lambda r: httpx.Response(200, content=b"x" * (100_000 if r.url.path == "/big" else 2)))
    with serving(answers, "https://provider.example") as front:
        client = OutboundClient(service="s", paid=False, timeout=httpx.Timeout(5), max_bytes=1_000)
        assert client.send(client.build("GET", f"{front.base_url}/small")).body == b"xx"
        assert front.connections == 1
        with pytest.raises(ResponseTooLarge):
            client.send(client.build("GET", f"{front.base_url}/big"))
        for _ in range(2):
            assert client.send(client.build("GET", f"{front.base_url}/small")).body == b"xx"
    assert front.requests == 4
    assert front.connections == 2  # the cut one was dropped, never handed back half-read; the new one is kept


def test_the_shared_pool_adds_no_cap_of_its_own_to_requests_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """More requests at once than httpx's default pool cap (100) all go out together: only the calls at
    once per provider bound them, never a hidden second limit that would time requests out."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(network_module, "_real", None)
    at_once = 120
    everyone_in = threading.Barrier(at_once, timeout=60)

    def answer(request: httpx.Request) -> httpx.Response:
        everyone_in.wait()  # answers only once every request has arrived
        return httpx.Response(200, content=b"ok")

    with serving(httpx.MockTransport(answer), "https://provider.example") as front:
        client = OutboundClient(service="s", paid=False, timeout=httpx.Timeout(30, pool=1), max_bytes=100)
        with ThreadPoolExecutor(max_workers=at_once) as pool:
            bodies = list(pool.map(lambda _: client.send(client.build("GET", f"{front.base_url}/x")).body,
                                   range(at_once)))
    assert bodies == [b"ok"] * at_once and front.connections == at_once
