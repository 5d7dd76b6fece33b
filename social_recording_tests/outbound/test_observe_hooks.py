"""Request accounting: every request handed to the transport (each retry and redirect hop) is
announced to the observer first (which may veto it: nothing is sent, CallVetoed propagates unchanged
out of the clients and the generators) and counted as sent once the transport has it, even when no
response ever arrives."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.outbound.observe import CallVetoed, CountingObserver, observing
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateContext, ProviderKeys
from social_recording.platforms.http import HttpPolicy, ProviderHttp
from social_recording.platforms.registry import build_registry
from social_recording.platforms.web.generator import RDAP_BASE, URLSCAN_BASE
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient
from social_recording_tests.outbound._net import Dns, Internet, Observer, Sleeps, redirect
from social_recording_tests.platforms.mocks import fixture_bytes, fixture_response

URL = "https://api.provider.com/v1/thing"
CTX = GenerateContext(token_address="Mint1111")


def _http(net: Internet, policy: HttpPolicy, sleeps: Sleeps | None = None) -> ProviderHttp:
    return ProviderHttp(policy, auth_hosts=[], transport=net.transport, sleep=sleeps or Sleeps(), resolve_host=Dns())


# ------------------------------------------------------------------ ProviderHttp


@pytest.mark.parametrize("policy", [HttpPolicy.free("github"), HttpPolicy.paid_once("apify")], ids=["free", "paid"])
def test_a_vetoed_request_is_never_sent_and_the_veto_propagates_unchanged(policy: HttpPolicy) -> None:
    net = Internet({URL: httpx.Response(200)})
    sleeps = Sleeps()
    http = _http(net, policy, sleeps)
    observer = Observer(veto=lambda service, paid: True)
    with observing(observer), pytest.raises(CallVetoed) as info:
        http.get(URL)
    assert type(info.value) is CallVetoed  # not wrapped into ExternalFetchError
    assert net.requests == [] and http.requests_made == 0 and sleeps == []  # nor retried
    assert observer.events == [("before", policy.service, policy.paid)]


def test_veto_of_a_later_hop_stops_there() -> None:
    net = Internet({URL: redirect("https://cdn.example.net/x"), "https://cdn.example.net/x": httpx.Response(200)})
    http = _http(net, HttpPolicy.free("github"))
    calls = iter([False, True])
    observer = Observer(veto=lambda service, paid: next(calls))
    with observing(observer), pytest.raises(CallVetoed):
        http.get(URL)
    assert net.hosts == ["api.provider.com"]
    assert observer.events == [("before", "github", False), ("sent", "github", False), ("before", "github", False)]


def test_every_retry_and_redirect_hop_is_announced_and_counted() -> None:
    answers = iter([httpx.Response(503), redirect("https://cdn.example.net/x")])
    net = Internet({URL: lambda request: next(answers), "https://cdn.example.net/x": httpx.Response(200)})
    http = _http(net, HttpPolicy.free("youtube"))
    observer = Observer()
    with observing(observer):
        assert http.get(URL).requests == 3
    assert observer.events == [("before", "youtube", False), ("sent", "youtube", False)] * 3
    assert len(net.requests) == 3


@pytest.mark.parametrize(
    "failure",
    [httpx.ReadTimeout("slow"), httpx.ConnectError("refused"), httpx.RemoteProtocolError("reset")],
    ids=["read-timeout", "connect-error", "protocol-error"],
)
def test_a_request_that_gets_no_response_still_counts_as_sent(failure: Exception) -> None:
    net = Internet({URL: failure})
    http = _http(net, HttpPolicy.paid_once("twitterapi"))
    counter = CountingObserver()
    with observing(counter), pytest.raises(ExternalFetchError) as info:
        http.get(URL)
    assert info.value.attempted is True
    assert (counter.sent, counter.paid_sent) == (1, 1) and len(net.requests) == 1


def test_paid_flag_follows_the_policy_and_no_observer_means_no_reports() -> None:
    net = Internet({URL: httpx.Response(200)})
    counter = CountingObserver()
    with observing(counter):
        _http(net, HttpPolicy.free("github")).get(URL)
        _http(net, HttpPolicy.paid_once("urlscan")).get(URL)
    assert (counter.sent, counter.paid_sent) == (2, 1)
    _http(net, HttpPolicy.free("github")).get(URL)  # outside `observing`: still works, nobody told
    assert counter.sent == 2 and len(net.requests) == 3


# ------------------------------------------------------------------ tracker and shortlinks


def _tracker(net: Internet) -> TrackerClient:
    return TrackerClient("https://tracker.example", SecretStr("k"), ["g"], transport=net.transport, sleep=Sleeps())


def test_tracker_reports_its_requests_unpaid_and_lets_a_veto_through() -> None:
    net = Internet({"https://tracker.example/api/v1/tokens": httpx.Response(200, json={"data": []})})
    observer = Observer()
    with observing(observer):
        _tracker(net).tokens_in_range(datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 2, tzinfo=UTC))
    assert observer.sent() == [("tracker", False)]

    vetoing = Observer(veto=lambda service, paid: True)
    with observing(vetoing), pytest.raises(CallVetoed):
        _tracker(net).token_by_address("Mint1111")
    assert len(net.requests) == 1


def test_tracker_timeout_after_send_counts_and_retries_are_announced() -> None:
    net = Internet({"https://tracker.example/api/v1/tokens/by-addresses": httpx.ReadTimeout("slow")})
    counter = CountingObserver()
    with observing(counter), pytest.raises(Exception, match="timed out"):
        _tracker(net).token_by_address("Mint1111")
    assert counter.sent == 3 and counter.paid_sent == 0 and len(net.requests) == 3


def test_shortlink_hops_are_reported_and_a_veto_propagates() -> None:
    net = Internet({"https://t.co/a": redirect("https://example.com/landing", 301)})
    observer = Observer()
    with observing(observer), ShortlinkResolver(transport=net.transport, resolve_host=Dns()) as resolver:
        assert resolver.resolve("https://t.co/a") == "https://example.com/landing"
    assert observer.sent() == [("shortlink", False)]

    with observing(Observer(veto=lambda s, p: True)), ShortlinkResolver(
        transport=net.transport, resolve_host=Dns()
    ) as resolver, pytest.raises(CallVetoed):
        resolver.resolve("https://t.co/a")
    assert len(net.requests) == 1


# ------------------------------------------------------------------ through real generators


def test_x_generator_lets_a_paid_veto_through_before_anything_is_sent() -> None:
    net = Internet({"https://api.twitterapi.io/twitter/user/info": httpx.Response(
        200, content=fixture_bytes("x", "user_info.json"))})
    x_gen = build_registry(ProviderKeys(twitterapi_io_key=SecretStr("tw-key")), transport=net.transport,
                           sleep=Sleeps()).get(Platform.X)
    assert x_gen is not None
    observer = Observer(veto=lambda service, paid: paid)
    with observing(observer), pytest.raises(CallVetoed):
        x_gen.generate("https://x.com/soldevalice", CTX)
    assert net.requests == [] and observer.events == [("before", "twitterapi", True)]

    counter = CountingObserver()
    with observing(counter):
        assert x_gen.generate("https://x.com/soldevalice", CTX).requests == 1
    assert (counter.sent, counter.paid_sent) == (1, 1)


UUID = "0196d976-07f6-7aae-8a57-aa019145f31c"


def _web_net() -> Internet:
    return Internet({
        f"{URLSCAN_BASE}/scan/": fixture_response("web", "submit_ok.json"),
        f"{URLSCAN_BASE}/result/{UUID}/": fixture_response("web", "result.json"),
        f"{RDAP_BASE}/domain/example-token.io": fixture_response("web", "rdap.json"),
    })


def test_web_generator_never_swallows_a_veto_not_even_in_rdap_enrichment() -> None:
    keys = ProviderKeys(urlscan_api_key=SecretStr("us-key"))

    net = _web_net()
    web = build_registry(keys, transport=net.transport, sleep=Sleeps(), resolve_host=Dns()).get(Platform.WEB)
    assert web is not None
    with observing(Observer(veto=lambda service, paid: paid)), pytest.raises(CallVetoed):
        web.generate("https://example-token.io/landing", CTX)
    assert net.requests == []  # the paid submission never left

    net = _web_net()
    web = build_registry(keys, transport=net.transport, sleep=Sleeps(), resolve_host=Dns()).get(Platform.WEB)
    assert web is not None
    observer = Observer(veto=lambda service, paid: service == "rdap")
    with observing(observer), pytest.raises(CallVetoed):
        web.generate("https://example-token.io/landing", CTX)
    assert [r.url.host for r in net.requests] == ["urlscan.io", "urlscan.io"]
    assert observer.sent() == [("urlscan", True), ("urlscan", True)]


def test_generator_errors_are_unchanged_without_a_veto() -> None:
    net = Internet({"https://api.twitterapi.io/twitter/user/info": httpx.ReadTimeout("slow")})
    x_gen = build_registry(ProviderKeys(twitterapi_io_key=SecretStr("tw-key")), transport=net.transport,
                           sleep=Sleeps()).get(Platform.X)
    assert x_gen is not None
    counter = CountingObserver()
    with observing(counter), pytest.raises(ExternalFetchError) as info:
        x_gen.generate("https://x.com/soldevalice", CTX)
    assert info.value.code is ErrorCode.TIMEOUT and info.value.attempted is True and counter.paid_sent == 1
