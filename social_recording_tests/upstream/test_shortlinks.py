"""ShortlinkResolver: hops, HEAD/GET fallback, Location handling and the SSRF guard."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence

import httpx
import pytest

from social_recording.domain.urls import is_shortlink
from social_recording.upstream.shortlinks import (
    ShortlinkError,
    ShortlinkResolver,
    blocked_reason,
    default_resolve_host,
    literal_ip,
)

PUBLIC = "104.244.42.1"
Answer = httpx.Response | Exception | Mapping[str, httpx.Response | Exception]


def redirect(location: str, status: int = 301) -> httpx.Response:
    return httpx.Response(status, headers={"Location": location})


class Web:
    """A fake internet: url -> answer (or per-method answers); records (method, url) of every request."""

    def __init__(self, routes: Mapping[str, Answer]) -> None:
        self.routes = dict(routes)
        self.requests: list[tuple[str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        self.requests.append((request.method, url))
        answer = self.routes.get(url, httpx.Response(404))
        if isinstance(answer, Mapping):
            answer = answer.get(request.method, httpx.Response(405))
        if isinstance(answer, Exception):
            raise answer
        return answer


class Dns:
    def __init__(
        self, table: Mapping[str, Sequence[str]] | None = None, default: Sequence[str] = (PUBLIC,)
    ) -> None:
        self.table = dict(table or {})
        self.default = list(default)
        self.asked: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.asked.append(host)
        answer = self.table.get(host, self.default)
        if isinstance(answer, Exception):
            raise answer
        return answer


def make(
    routes: Mapping[str, Answer], dns: Callable[[str], Sequence[str]] | None = None
) -> tuple[ShortlinkResolver, Web]:
    web = Web(routes)
    return ShortlinkResolver(transport=httpx.MockTransport(web), resolve_host=dns or Dns()), web


def test_fixture_hosts_are_known_shorteners() -> None:
    assert is_shortlink("https://t.co/abc")
    assert is_shortlink("https://bit.ly/abc")
    assert not is_shortlink("https://example.com/abc")


# ------------------------------------------------------------------ the happy paths


def test_non_shortlink_is_returned_unchanged_without_request() -> None:
    dns = Dns()
    resolver, web = make({}, dns)
    raw = "https://WWW.Example.com/page?utm_source=x#top"
    assert resolver.resolve(raw) == raw
    assert web.requests == [] and dns.asked == []


def test_one_hop_returns_the_location_as_is_not_canonical() -> None:
    target = "https://twitter.com/alpha/status/123?s=20&t=abc"
    resolver, web = make({"https://t.co/abc": redirect(target)})
    assert resolver.resolve("https://t.co/abc") == target
    assert web.requests == [("HEAD", "https://t.co/abc")]


def test_chain_of_shorteners_is_followed_to_the_first_non_shortlink() -> None:
    resolver, web = make(
        {
            "https://bit.ly/a": redirect("https://t.co/b", 302),
            "https://t.co/b": redirect("https://www.example.com/landing?ref=1", 307),
        }
    )
    assert resolver.resolve("https://bit.ly/a") == "https://www.example.com/landing?ref=1"
    assert [u for _, u in web.requests] == ["https://bit.ly/a", "https://t.co/b"]


def test_three_hops_allowed_a_fourth_is_an_error() -> None:
    three = {
        "https://t.co/1": redirect("https://t.co/2"),
        "https://t.co/2": redirect("https://t.co/3"),
        "https://t.co/3": redirect("https://example.com/end"),
    }
    resolver, web = make(three)
    assert resolver.resolve("https://t.co/1") == "https://example.com/end"
    assert len(web.requests) == 3

    four = {
        **three,
        "https://t.co/3": redirect("https://t.co/4"),
        "https://t.co/4": redirect("https://example.com/end"),
    }
    resolver, web = make(four)
    with pytest.raises(ShortlinkError, match="more than 3 redirects") as info:
        resolver.resolve("https://t.co/1")
    assert "https://t.co/1" in str(info.value)
    assert [u for _, u in web.requests] == ["https://t.co/1", "https://t.co/2", "https://t.co/3"]


@pytest.mark.parametrize(
    "routes",
    [
        {"https://t.co/a": redirect("https://t.co/a")},
        {"https://t.co/a": redirect("https://bit.ly/b"), "https://bit.ly/b": redirect("https://T.CO/a")},
    ],
)
def test_redirect_loop_is_an_error(routes: Mapping[str, Answer]) -> None:
    resolver, _ = make(routes)
    with pytest.raises(ShortlinkError, match="redirect loop") as info:
        resolver.resolve("https://t.co/a")
    assert "https://t.co/a" in str(info.value)


@pytest.mark.parametrize("head_status", [405, 400, 403, 200])
def test_head_not_redirecting_falls_back_to_get(head_status: int) -> None:
    resolver, web = make(
        {"https://bit.ly/x": {"HEAD": httpx.Response(head_status), "GET": redirect("https://example.com/x")}}
    )
    assert resolver.resolve("https://bit.ly/x") == "https://example.com/x"
    assert web.requests == [("HEAD", "https://bit.ly/x"), ("GET", "https://bit.ly/x")]


def test_get_body_is_never_read() -> None:
    class Endless(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            raise AssertionError("the GET body must not be read")

    resolver, _ = make(
        {"https://bit.ly/x": {"HEAD": httpx.Response(405), "GET": httpx.Response(200, stream=Endless())}}
    )
    assert resolver.resolve("https://bit.ly/x") == "https://bit.ly/x"


def test_final_non_redirect_page_returns_that_url() -> None:
    resolver, _ = make(
        {
            "https://t.co/a": redirect("https://bit.ly/b"),
            "https://bit.ly/b": {"HEAD": httpx.Response(200), "GET": httpx.Response(200, text="<html>")},
        }
    )
    assert resolver.resolve("https://t.co/a") == "https://bit.ly/b"


def test_relative_locations_are_resolved_against_the_current_url() -> None:
    resolver, web = make(
        {
            "https://bit.ly/a/b": redirect("../c?x=1"),
            "https://bit.ly/c?x=1": redirect("//example.com/final"),
        }
    )
    assert resolver.resolve("https://bit.ly/a/b") == "https://example.com/final"
    assert [u for _, u in web.requests] == ["https://bit.ly/a/b", "https://bit.ly/c?x=1"]


# ------------------------------------------------------------------ failures


def test_404_at_first_hop_is_an_error() -> None:
    resolver, web = make({"https://t.co/gone": httpx.Response(404)})
    with pytest.raises(ShortlinkError, match="404") as info:
        resolver.resolve("https://t.co/gone")
    assert "https://t.co/gone" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert web.requests == [("HEAD", "https://t.co/gone"), ("GET", "https://t.co/gone")]


def test_5xx_and_redirect_without_location_are_errors() -> None:
    resolver, _ = make({"https://t.co/a": httpx.Response(502)})
    with pytest.raises(ShortlinkError, match="502"):
        resolver.resolve("https://t.co/a")
    resolver, _ = make({"https://t.co/a": httpx.Response(302)})
    with pytest.raises(ShortlinkError, match="without a Location"):
        resolver.resolve("https://t.co/a")


@pytest.mark.parametrize(
    "error,reason",
    [(httpx.ReadTimeout("slow"), "timed out"), (httpx.ConnectError("refused"), "ConnectError")],
)
def test_transport_failures_are_errors(error: Exception, reason: str) -> None:
    resolver, web = make({"https://t.co/a": error})
    with pytest.raises(ShortlinkError, match=reason):
        resolver.resolve("https://t.co/a")
    assert len(web.requests) == 1  # no retries: a hop has one chance within its timeout


@pytest.mark.parametrize(
    "location",
    [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,<b>x</b>",
        "ftp://example.com/x",
        "gopher://h/x",
    ],
)
def test_non_http_location_is_refused(location: str) -> None:
    resolver, _ = make({"https://t.co/a": redirect(location)})
    with pytest.raises(ShortlinkError, match="scheme") as info:
        resolver.resolve("https://t.co/a")
    assert "https://t.co/a" in str(info.value)


def test_location_with_control_characters_is_refused() -> None:
    resolver, _ = make({"https://t.co/a": redirect("https://example.com/a\tb")})
    with pytest.raises(ShortlinkError, match="control characters"):
        resolver.resolve("https://t.co/a")


# ------------------------------------------------------------------ SSRF


BLOCKED = [
    "127.0.0.1",
    "::1",
    "10.1.2.3",
    "172.16.5.4",
    "192.168.1.1",
    "169.254.169.254",
    "fe80::1",
    "224.0.0.1",
    "240.0.0.1",
    "0.0.0.0",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "fc00::1",
    "100.64.0.1",
    "2002:7f00:1::1",
    "64:ff9b::a00:1",
    "2001:db8::1",
]


@pytest.mark.parametrize("address", BLOCKED)
def test_shortener_host_resolving_to_a_non_public_address_is_refused_before_any_request(address: str) -> None:
    dns = Dns({"t.co": [address]})
    resolver, web = make({"https://t.co/a": redirect("https://example.com/")}, dns)
    with pytest.raises(ShortlinkError, match="refused host 't.co'"):
        resolver.resolve("https://t.co/a")
    assert web.requests == []
    assert dns.asked == ["t.co"]


def test_any_non_public_address_among_several_is_refused() -> None:
    dns = Dns({"t.co": [PUBLIC, "10.0.0.7"]})
    resolver, web = make({"https://t.co/a": redirect("https://example.com/")}, dns)
    with pytest.raises(ShortlinkError, match="10.0.0.7"):
        resolver.resolve("https://t.co/a")
    assert web.requests == []


def test_next_shortener_hop_is_checked_before_its_request() -> None:
    dns = Dns({"bit.ly": ["192.168.0.10"]})
    resolver, web = make(
        {"https://t.co/a": redirect("https://bit.ly/b"), "https://bit.ly/b": redirect("https://e.com")}, dns
    )
    with pytest.raises(ShortlinkError, match="private"):
        resolver.resolve("https://t.co/a")
    assert [u for _, u in web.requests] == ["https://t.co/a"]
    assert dns.asked == ["t.co", "bit.ly"]


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:8080/admin",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "http://0.0.0.0/",
        "http://localhost:6379/",
        "http://redis.localhost/",
    ],
)
def test_literal_ip_or_local_location_is_refused(location: str) -> None:
    resolver, _ = make({"https://t.co/a": redirect(location)})
    with pytest.raises(ShortlinkError, match="refused"):
        resolver.resolve("https://t.co/a")


def test_public_literal_ip_location_is_returned() -> None:
    resolver, _ = make({"https://t.co/a": redirect("http://93.184.216.34/page")})
    assert resolver.resolve("https://t.co/a") == "http://93.184.216.34/page"


def test_final_non_shortlink_host_is_not_resolved() -> None:
    dns = Dns()
    resolver, _ = make({"https://t.co/a": redirect("https://dead-site.example/")}, dns)
    assert resolver.resolve("https://t.co/a") == "https://dead-site.example/"
    assert dns.asked == ["t.co"]


def test_dns_failure_is_an_error() -> None:
    dns = Dns({"t.co": socket.gaierror(-2, "Name or service not known")})  # type: ignore[dict-item]
    resolver, web = make({}, dns)
    with pytest.raises(ShortlinkError, match="cannot resolve host 't.co'"):
        resolver.resolve("https://t.co/a")
    assert web.requests == []


def test_dns_empty_or_junk_answer_is_an_error() -> None:
    resolver, _ = make({}, Dns({"t.co": []}))
    with pytest.raises(ShortlinkError, match="no address"):
        resolver.resolve("https://t.co/a")
    resolver, _ = make({}, Dns({"t.co": ["not-an-ip"]}))
    with pytest.raises(ShortlinkError, match="unparseable address"):
        resolver.resolve("https://t.co/a")


@pytest.mark.parametrize("address", BLOCKED)
def test_blocked_reason_names_each_class(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize(
    "address", ["8.8.8.8", PUBLIC, "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_public_addresses_pass(address: str) -> None:
    assert blocked_reason(ipaddress.ip_address(address)) is None


def test_literal_ip_forms() -> None:
    assert literal_ip("127.0.0.1") == ipaddress.ip_address("127.0.0.1")
    assert literal_ip("[::1]") == ipaddress.ip_address("::1")
    assert literal_ip("2130706433") == ipaddress.ip_address("127.0.0.1")
    assert literal_ip("0x7f.1") == ipaddress.ip_address("127.0.0.1")
    assert literal_ip("t.co") is None
    assert literal_ip("cafe.ba") is None


def test_default_resolver_returns_every_address() -> None:
    addresses = default_resolve_host("localhost")
    assert addresses and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def test_constructor_validates_limits() -> None:
    with pytest.raises(ValueError, match="max_hops"):
        ShortlinkResolver(max_hops=0)
    with pytest.raises(ValueError, match="timeout_s"):
        ShortlinkResolver(timeout_s=0)


# ------------------------------------------------------------------ transient or not


@pytest.mark.parametrize(
    ("routes", "dns", "transient"),
    [
        pytest.param({"https://t.co/a": httpx.ReadTimeout("slow")}, None, True, id="timeout"),
        pytest.param({"https://t.co/a": httpx.ConnectError("refused")}, None, True, id="connect-error"),
        pytest.param({"https://t.co/a": httpx.RemoteProtocolError("reset")}, None, True, id="connection-reset"),
        pytest.param({"https://t.co/a": httpx.Response(503)}, None, True, id="http-503"),
        pytest.param({"https://t.co/a": httpx.Response(500)}, None, True, id="http-500"),
        pytest.param({"https://t.co/a": httpx.Response(429)}, None, True, id="http-429"),
        pytest.param({}, Dns({"t.co": socket.gaierror(-3, "Temporary failure")}), True, id="dns-failure"),  # type: ignore[dict-item]
        pytest.param({}, Dns({"t.co": []}), True, id="dns-no-address"),
        pytest.param({"https://t.co/a": httpx.Response(404)}, None, False, id="http-404"),
        pytest.param({"https://t.co/a": httpx.Response(410)}, None, False, id="http-410"),
        pytest.param({"https://t.co/a": httpx.Response(403)}, None, False, id="http-403"),
        pytest.param({"https://t.co/a": httpx.Response(302)}, None, False, id="redirect-without-location"),
        pytest.param({"https://t.co/a": redirect("http://127.0.0.1/")}, None, False, id="private-location"),
        pytest.param({"https://t.co/a": redirect("file:///etc/passwd")}, None, False, id="file-location"),
        pytest.param({"https://t.co/a": redirect("https://bit.ly/b")}, Dns({"bit.ly": ["10.0.0.1"]}), False,
                     id="hop-resolving-private"),
        pytest.param({"https://t.co/a": redirect("https://t.co/a")}, None, False, id="loop"),
        pytest.param({"https://t.co/a": redirect("https://t.co/b"), "https://t.co/b": redirect("https://t.co/c"),
                      "https://t.co/c": redirect("https://t.co/d")}, None, False, id="too-many-hops"),
        pytest.param({"https://t.co/a": redirect("https://example.com/\x01")}, None, False, id="junk-location"),
        pytest.param({}, Dns({"t.co": ["not-an-ip"]}), False, id="junk-dns-answer"),
    ],
)
def test_failures_say_whether_they_are_transient(
    routes: Mapping[str, Answer], dns: Dns | None, transient: bool
) -> None:
    resolver, _ = make(routes, dns)
    with pytest.raises(ShortlinkError) as info:
        resolver.resolve("https://t.co/a")
    assert info.value.transient is transient, str(info.value)


def test_transient_defaults_to_false() -> None:
    assert ShortlinkError("https://t.co/a", "why").transient is False
