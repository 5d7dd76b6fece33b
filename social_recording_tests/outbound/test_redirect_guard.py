"""Every redirect a provider client follows passes the public-address and scheme guard, and no request
ever reaches a refused target: from a provider client, from RDAP inside the web generator, and from
the registry's generators (the guard's resolver is threaded through `build_registry`)."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.outbound.network import Network
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateContext, ProviderKeys
from social_recording.platforms.http import HttpPolicy, ProviderHttp
from social_recording.platforms.registry import build_registry
from social_recording.platforms.web.generator import RDAP_BASE, URLSCAN_BASE, WebGenerator
from social_recording_tests.outbound._net import PUBLIC, Dns, Internet, Sleeps, redirect
from social_recording_tests.platforms.mocks import fixture_response

KEY = "prov-key-SECRET-4242"
START = "https://api.provider.com/v1/thing"
CTX = GenerateContext(token_address="Mint1111")

# (Location, host name that DNS maps to a private address or None)
REFUSED = [
    pytest.param("http://127.0.0.1:8080/admin", None, id="loopback-v4"),
    pytest.param("http://[::1]:6379/", None, id="loopback-v6"),
    pytest.param("http://169.254.169.254/latest/meta-data/", None, id="link-local-metadata"),
    pytest.param("http://10.0.0.1/", None, id="private-10"),
    pytest.param("http://192.168.1.20/router", None, id="private-192.168"),
    pytest.param("http://[::ffff:127.0.0.1]/", None, id="ipv4-mapped-loopback"),
    pytest.param("http://2130706433/", None, id="legacy-int-loopback"),
    pytest.param("http://localhost:6379/", None, id="localhost-name"),
    pytest.param("https://internal.corp.example/secret", "internal.corp.example", id="name-resolving-private"),
    pytest.param("file:///etc/passwd", None, id="file-scheme"),
    pytest.param("gopher://127.0.0.1:6379/_INFO", None, id="gopher-scheme"),
    pytest.param("ftp://files.example.com/x", None, id="ftp-scheme"),
]
_PRIVATE_DNS = {"internal.corp.example": ["10.9.8.7"]}


def _provider(net: Internet, policy: HttpPolicy, dns: Dns, sleeps: Sleeps | None = None) -> ProviderHttp:
    return ProviderHttp(
        policy,
        auth_hosts=["api.provider.com"],
        auth_headers={"X-API-Key": KEY},
        transport=net.transport,
        sleep=sleeps if sleeps is not None else Sleeps(),
        resolve_host=dns,
    )


@pytest.mark.parametrize("policy", [HttpPolicy.free("github"), HttpPolicy.paid_once("twitterapi")],
                         ids=["free", "paid"])
@pytest.mark.parametrize(("location", "private_name"), REFUSED)
def test_provider_redirect_to_a_refused_target_sends_nothing_there(
    location: str, private_name: str | None, policy: HttpPolicy
) -> None:
    net = Internet({START: redirect(location)})
    sleeps = Sleeps()
    http = _provider(net, policy, Dns(_PRIVATE_DNS), sleeps)
    with pytest.raises(ExternalFetchError) as info:
        http.get(START)
    exc = info.value
    assert exc.code is ErrorCode.UNSAFE_REDIRECT and exc.attempted is True
    assert str(exc).startswith(f"UNSAFE_REDIRECT: {policy.service}: refused redirect to ")
    assert KEY not in str(exc)
    # only the provider's own request left; a refusal is not retried (same answer every time)
    assert net.hosts == ["api.provider.com"] and sleeps == [] and http.requests_made == 1
    if private_name is not None:
        assert f"host {private_name!r}" in str(exc) and "10.9.8.7" in str(exc)


def test_a_public_redirect_is_followed_after_its_host_was_checked() -> None:
    net = Internet({START: redirect("https://cdn.example.net/data.json"),
                    "https://cdn.example.net/data.json": httpx.Response(200, json={"ok": 1})})
    dns = Dns()
    http = _provider(net, HttpPolicy.free("github"), dns)
    response = http.get(START)
    assert response.json() == {"ok": 1} and response.requests == 2
    assert net.hosts == ["api.provider.com", "cdn.example.net"]
    assert dns.asked == ["cdn.example.net"]  # the provider's own configured host is not re-checked


def test_every_hop_is_checked_a_later_private_hop_is_refused() -> None:
    net = Internet({START: redirect("https://hop.example.net/1"),
                    "https://hop.example.net/1": redirect("http://10.0.0.9/")})
    http = _provider(net, HttpPolicy.free("github"), Dns())
    with pytest.raises(ExternalFetchError) as info:
        http.get(START)
    assert info.value.code is ErrorCode.UNSAFE_REDIRECT and "private address 10.0.0.9" in str(info.value)
    assert net.hosts == ["api.provider.com", "hop.example.net"]


def test_unresolvable_redirect_host_is_a_transient_failure_not_a_refusal() -> None:
    def no_dns(host: str) -> list[str]:
        raise OSError("temporary failure in name resolution")

    net = Internet({START: redirect("https://gone.example.net/")})
    sleeps = Sleeps()
    http = ProviderHttp(HttpPolicy.free("github"), auth_hosts=[], transport=net.transport, sleep=sleeps,
                        resolve_host=no_dns)
    with pytest.raises(ExternalFetchError) as info:
        http.get(START)
    assert info.value.code is ErrorCode.UPSTREAM and "cannot resolve host 'gone.example.net'" in str(info.value)
    assert net.hosts == ["api.provider.com"] * 3 and sleeps == [0.8, 0.8]


# ------------------------------------------------------------------ RDAP inside the web generator

UUID = "0196d976-07f6-7aae-8a57-aa019145f31c"
RDAP = f"{RDAP_BASE}/domain/example-token.io"


def _web_routes(rdap_answer: httpx.Response) -> Internet:
    return Internet({
        f"{URLSCAN_BASE}/scan/": fixture_response("web", "submit_ok.json"),
        f"{URLSCAN_BASE}/result/{UUID}/": fixture_response("web", "result.json"),
        RDAP: rdap_answer,
    })


@pytest.mark.parametrize(("location", "private_name"), REFUSED)
def test_rdap_refused_redirect_is_recorded_and_never_followed(location: str, private_name: str | None) -> None:
    net = _web_routes(redirect(location))
    # the guard's DNS travels with the transport, as the registry hands it to every generator
    gen = WebGenerator("urlscan-key", transport=Network(net.transport, resolve_host=Dns(_PRIVATE_DNS)),
                       sleep=Sleeps())
    result = gen.generate("https://example-token.io/landing", CTX)
    page = result.graph.groups[0].content
    assert page is not None
    assert page.fields["rdap_status"] == "refused_redirect" and page.fields["registration_date"] is None
    assert set(net.hosts) == {"urlscan.io", "rdap.org"}
    assert net.hosts.count("rdap.org") == 1  # a refusal is not retried either


def test_registry_threads_the_resolver_to_every_generator() -> None:
    """`build_registry(resolve_host=...)`: the web generator's RDAP client asks that DNS."""
    registry_host = "rdap.registry.example"
    net = _web_routes(redirect(f"https://{registry_host}/domain/example-token.io"))
    keys = ProviderKeys(urlscan_api_key=SecretStr("urlscan-key"))

    private = Dns({registry_host: ["192.168.7.7"]})
    web = build_registry(keys, transport=net.transport, sleep=Sleeps(), resolve_host=private).get(Platform.WEB)
    assert web is not None
    page = web.generate("https://example-token.io/landing", CTX).graph.groups[0].content
    assert page is not None and page.fields["rdap_status"] == "refused_redirect"
    assert private.asked == [registry_host] and registry_host not in net.hosts

    net.routes[f"https://{registry_host}/domain/example-token.io"] = fixture_response("web", "rdap.json")
    public = Dns({registry_host: [PUBLIC]})
    web = build_registry(keys, transport=net.transport, sleep=Sleeps(), resolve_host=public).get(Platform.WEB)
    assert web is not None
    page = web.generate("https://example-token.io/landing", CTX).graph.groups[0].content
    assert page is not None and page.fields["rdap_status"] == "ok"
    assert public.asked == [registry_host] and net.hosts[-1] == registry_host
