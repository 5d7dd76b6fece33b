"""TokenProfileReader: the single URL entry: junk, shortlinks, canonical, dedupe."""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.models import TokenProfile
from social_recording.domain.urls import to_canonical
from social_recording.upstream.profile import PLACEHOLDER_REASON, TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkError, ShortlinkResolver
from social_recording.upstream.tracker import TokenInfo, TrackerClient, TrackerError

LOGGER = "social_recording.upstream.profile"
ADDRESS = "Mint1111"


def info(**fields: Any) -> TokenInfo:
    base: dict[str, Any] = {
        "tokenAddress": ADDRESS,
        "tokenSymbol": "AAA",
        "imageUrl": "https://cdn.example/a.png",
    }
    return TokenInfo.model_validate({**base, **fields})


class FakeTracker:
    def __init__(self, *infos: TokenInfo) -> None:
        self.infos = {i.address: i for i in infos}
        self.asked: list[str] = []

    def token_by_address(self, address: str) -> TokenInfo | None:
        self.asked.append(address)
        return self.infos.get(address)


class FakeResolver:
    """Resolves from a table; raises ShortlinkError for URLs listed as broken; records every call."""

    def __init__(
        self,
        table: Mapping[str, str] | None = None,
        broken: set[str] | None = None,
        flaky: set[str] | None = None,
    ) -> None:
        self.table = dict(table or {})
        self.broken = broken or set()
        self.flaky = flaky or set()
        self.calls: list[str] = []

    def resolve(self, url: str) -> str:
        self.calls.append(url)
        if url in self.broken:
            raise ShortlinkError(url, "HTTP 404 at hop 1")
        if url in self.flaky:
            raise ShortlinkError(url, "HEAD timed out", transient=True)
        return self.table.get(url, url)


def read(resolver: FakeResolver | None = None, **fields: Any) -> TokenProfile | None:
    return TokenProfileReader(FakeTracker(info(**fields)), resolver or FakeResolver()).read(ADDRESS)


def _drops(profile: TokenProfile | None) -> list[str]:
    """The dropped values as the lines an operator sees ("field='value': reason")."""
    assert profile is not None
    return [str(d) for d in profile.dropped]


def test_fields_are_canonicalised_in_field_order() -> None:
    profile = read(
        website="https://www.Alpha.example/?utm_source=tg",
        twitter="https://twitter.com/alpha?s=20",
        telegram="  https://t.me/alpha_chat  ",
        discord="https://discord.gg/abc",
        firstTransferAt="2024-04-30T10:00:00Z",
    )
    assert profile == TokenProfile(
        address=ADDRESS,
        symbol="AAA",
        image="https://cdn.example/a.png",
        first_transfer_at=datetime(2024, 4, 30, 10, tzinfo=UTC),
        urls=[
            to_canonical("https://alpha.example"),
            to_canonical("https://x.com/alpha"),
            to_canonical("https://t.me/alpha_chat"),
            to_canonical("https://discord.gg/abc"),
        ],
    )
    assert profile.urls[:2] == ["https://alpha.example", "https://x.com/alpha"]


def test_image_is_kept_exactly_as_received() -> None:
    image = "https://WWW.cdn.example/a.png?utm_source=x&_t=9"
    profile = read(imageUrl=image, website="https://alpha.example")
    assert profile is not None and profile.image == image


JUNK = [
    ("website", "none", "placeholder value"),
    ("website", "None", "placeholder value"),
    ("website", "null", "placeholder value"),
    ("website", "TBA", "placeholder value"),
    ("twitter", "tba", "placeholder value"),
    ("telegram", "-", "placeholder value"),
    ("discord", "N/A", "placeholder value"),
    ("discord", "n/a", "placeholder value"),
    ("website", "", "placeholder value"),
    ("website", "   ", "placeholder value"),
    ("discord", "0", "placeholder value"),
    ("website", "ftp://alpha.example/", "scheme 'ftp'"),
    ("website", "javascript:alert(1)", "scheme 'javascript'"),
    ("website", "https:/alpha.example", "malformed https URL"),
    ("telegram", "tg://resolve?domain=alpha", "scheme 'tg'"),
    ("website", "me@alpha.example", "e-mail address"),
    ("website", "mailto:me@alpha.example", "e-mail address"),
    ("website", "https://alpha.example https://beta.example", "contains whitespace"),
    ("website", "https://alpha.example/a b", "contains whitespace"),
    ("website", "alpha", "does not start with a host name"),
    ("website", "v1.0", "does not start with a host name"),
    ("website", "localhost/admin", "does not start with a host name"),
    ("website", "192.168.1.1/admin", "does not start with a host name"),
    ("website", "//", "without a host name"),
    ("website", "//nohost/x", "without a host name"),
    ("website", "alpha.", "does not start with a host name"),
    ("website", "-alpha.example", "does not start with a host name"),
    ("twitter", "alpha", "not an X handle"),
    ("twitter", "@", "not a valid X handle"),
    ("twitter", "@this_handle_is_too_long", "not a valid X handle"),
    ("twitter", "@bad-handle", "not a valid X handle"),
    ("telegram", "@abcd", "not a valid Telegram username"),
    ("telegram", "@" + "a" * 33, "not a valid Telegram username"),
    ("telegram", "@bad-name", "not a valid Telegram username"),
    ("telegram", "alpha_chat", "does not start with a host name"),
    ("discord", "abc", "not a Discord invite"),
    ("discord", "@alpha", "names no site in the discord field"),
    ("website", "@alpha", "names no site in the website field"),
    ("website", "https://", "not canonicalisable"),
]


def _others(field: str) -> tuple[dict[str, str | None], str]:
    keep_field, keep = (
        ("telegram", "https://t.me/keep_me") if field == "website" else ("website", "https://keep.example")
    )
    others: dict[str, str | None] = {f: None for f in ("website", "twitter", "telegram", "discord")}
    others[keep_field] = keep
    return others, keep


@pytest.mark.parametrize("field,value,reason", JUNK)
def test_junk_values_are_dropped_with_a_warning_and_listed(
    field: str, value: str, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    others, keep = _others(field)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        profile = read(FakeResolver(), **{**others, field: value})
    assert profile is not None
    assert profile.urls == [to_canonical(keep)]
    drops = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == 1
    message = drops[0].getMessage()
    # a mere placeholder is expected noise (INFO); anything that looked like a link is a WARNING
    expected_level = logging.INFO if reason == PLACEHOLDER_REASON else logging.WARNING
    assert drops[0].levelno == expected_level and drops[0].name == LOGGER
    assert field in message and repr(value) in message and ADDRESS in message and reason in message
    assert len(_drops(profile)) == 1
    assert _drops(profile)[0].startswith(f"{field}={value!r}: ") and reason in _drops(profile)[0]


SCHEMELESS = [
    ("website", "www.qa-noscheme.io", "https://qa-noscheme.io"),
    ("website", "WWW.Alpha.Example/docs/?utm_source=tg", "https://alpha.example/docs"),
    ("website", "alpha.example:8443/app", "https://alpha.example:8443/app"),
    ("website", "alpha.example?ref=1", "https://alpha.example?ref=1"),
    ("website", "münchen.de", "https://münchen.de"),
    ("website", "xn--mnchen-3ya.de/shop", "https://xn--mnchen-3ya.de/shop"),
    ("website", "//alpha.example/docs", "https://alpha.example/docs"),
    ("website", "github.com/qa/repo", "https://github.com/qa/repo"),
    ("telegram", "telegram.me/qa_shared", "https://t.me/qa_shared"),
    ("telegram", "t.me/qa_shared", "https://t.me/qa_shared"),
    ("twitter", "x.com/qauser", "https://x.com/qauser"),
    ("twitter", "twitter.com/QaUser", "https://x.com/qauser"),
    ("discord", "discord.gg/abc", "https://discord.gg/abc"),
    ("discord", "discord.com/invite/abc", "https://discord.gg/abc"),
    ("telegram", "@qachat", "https://t.me/qachat"),
    ("telegram", "  @Qa_Chat_2024  ", "https://t.me/Qa_Chat_2024"),
    ("telegram", "@" + "a" * 32, "https://t.me/" + "a" * 32),
    ("twitter", "@qauser", "https://x.com/qauser"),
]


@pytest.mark.parametrize("field,value,expected", SCHEMELESS)
def test_scheme_less_links_and_handles_are_kept(
    field: str, value: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    resolver = FakeResolver()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(resolver, **{field: value})
    assert profile is not None
    assert profile.urls == [to_canonical(expected)]
    assert _drops(profile) == []
    assert resolver.calls[0].startswith("https://")  # the scheme is added before the resolver sees it
    assert not caplog.records


def test_scheme_less_shortlink_is_resolved() -> None:
    resolver = FakeResolver({"https://bit.ly/site": "https://www.alpha.example/?utm_source=bitly"})
    profile = read(resolver, website="bit.ly/site")
    assert profile is not None and profile.urls == ["https://alpha.example"]
    assert resolver.calls == ["https://bit.ly/site"]


def test_non_string_values_are_dropped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        profile = read(discord=0, telegram=["https://t.me/x"], website="https://alpha.example")
    assert profile is not None and profile.urls == ["https://alpha.example"]
    assert sum("dropped" in r.getMessage() for r in caplog.records) == 2
    assert [d.split("=", 1)[0] for d in _drops(profile)] == ["telegram", "discord"]


@pytest.mark.parametrize("handle", ["@alpha", "  @Alpha_1  ", "@a"])
def test_bare_twitter_handle_becomes_an_x_profile(handle: str) -> None:
    profile = read(twitter=handle)
    assert profile is not None
    assert profile.urls == [to_canonical(f"https://x.com/{handle.strip()[1:]}")]


INTERNAL = [
    ("http://192.168.1.1/admin", "private address 192.168.1.1"),
    ("http://10.0.0.5", "private address 10.0.0.5"),
    ("http://[::1]/", "loopback address ::1"),
    ("http://127.0.0.1:8080", "loopback address 127.0.0.1"),
    ("https://169.254.169.254/latest/meta-data", "address 169.254.169.254"),
    ("http://[::ffff:10.0.0.1]/", "private address 10.0.0.1"),
    ("http://0.0.0.0/", "address 0.0.0.0"),
    ("http://100.64.0.1/", "address 100.64.0.1"),
    ("http://foo.localhost/", "local name"),
]


@pytest.mark.parametrize("value,reason", INTERNAL)
def test_website_on_a_literal_internal_address_is_dropped_without_dns(
    value: str, reason: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_dns(*args: object, **kwargs: object) -> object:
        raise AssertionError("the reader must not resolve host names")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(website=value, telegram="https://t.me/keep_me")
    assert profile is not None
    assert profile.urls == [to_canonical("https://t.me/keep_me")]
    assert len(_drops(profile)) == 1 and reason in _drops(profile)[0]
    assert _drops(profile)[0].startswith(f"website={value!r}: host ")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and reason in warnings[0] and repr(value) in warnings[0]


def test_public_literal_ip_website_is_kept() -> None:
    profile = read(website="http://8.8.8.8/status")
    assert profile is not None and profile.urls == [to_canonical("https://8.8.8.8/status")]


def test_shortlink_resolving_to_an_internal_address_is_dropped() -> None:
    resolver = FakeResolver({"https://bit.ly/in": "http://10.1.2.3/admin"})
    profile = read(resolver, website="https://bit.ly/in")
    assert profile is not None and profile.urls == []
    assert len(_drops(profile)) == 1 and "private address 10.1.2.3" in _drops(profile)[0]


def test_dropped_values_are_masked_and_truncated(caplog: pytest.LogCaptureFixture) -> None:
    resolver = FakeResolver(broken={"https://t.co/x?token=SeCrEt3"})
    long_value = "https://alpha.example/" + "a" * 500 + " tail"
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(
            resolver,
            website="https://alpha.example/x?api_key=SeCrEt1&page=2 more",
            twitter="https://t.co/x?token=SeCrEt3",
            telegram="ftp://user:SeCrEt2@files.example/",
            discord=long_value,
        )
    assert profile is not None and profile.urls == [] and len(_drops(profile)) == 4
    text = "\n".join([*_drops(profile), *(r.getMessage() for r in caplog.records)])
    for secret in ("SeCrEt1", "SeCrEt2", "SeCrEt3"):
        assert secret not in text
    assert "api_key=***&page=2" in _drops(profile)[0]
    assert "404" in _drops(profile)[1]
    assert "ftp://user:***@files.example/" in _drops(profile)[2]
    assert len(_drops(profile)[3]) < 250 and "tail" not in _drops(profile)[3]
    assert len(caplog.records) == 4


def test_duplicates_are_removed_keeping_the_first_position() -> None:
    profile = read(
        website="https://twitter.com/alpha",
        twitter="https://x.com/alpha/",
        telegram="https://mobile.twitter.com/Alpha?s=20",
        discord="x.com/ALPHA",
    )
    assert profile is not None and profile.urls == ["https://x.com/alpha"]
    assert _drops(profile) == []  # a duplicate is not a lost link


def test_shortlink_is_resolved_then_canonicalised() -> None:
    resolver = FakeResolver({"https://t.co/abc": "https://www.twitter.com/alpha/status/42?s=20&utm_source=x"})
    profile = read(resolver, twitter="https://t.co/abc", website="https://alpha.example")
    assert profile is not None
    assert profile.urls == ["https://alpha.example", to_canonical("https://x.com/alpha/status/42")]
    assert resolver.calls == ["https://alpha.example", "https://t.co/abc"]


def test_resolved_shortlink_duplicating_another_field_is_removed() -> None:
    resolver = FakeResolver({"https://bit.ly/site": "https://www.alpha.example/?utm_source=bitly"})
    profile = read(resolver, website="https://alpha.example/", twitter="https://bit.ly/site")
    assert profile is not None
    assert profile.urls == ["https://alpha.example"]


def test_failing_shortlink_drops_only_that_url(caplog: pytest.LogCaptureFixture) -> None:
    resolver = FakeResolver(broken={"https://t.co/dead"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(
            resolver,
            website="https://alpha.example",
            twitter="https://t.co/dead",
            telegram="https://t.me/alpha_chat",
        )
    assert profile is not None
    assert profile.urls == ["https://alpha.example", to_canonical("https://t.me/alpha_chat")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "https://t.co/dead" in warnings[0] and "404" in warnings[0]
    assert len(_drops(profile)) == 1 and _drops(profile)[0].startswith("twitter='https://t.co/dead': ")


def test_a_transient_shortlink_failure_keeps_the_value_for_a_later_retry(caplog: pytest.LogCaptureFixture) -> None:
    """A timeout or 5xx at the shortener is no reason to lose the link for good (the token is never
    read from the tracker again once stored): the raw value is kept as unresolved, not dropped."""
    resolver = FakeResolver(flaky={"https://t.co/slow"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(resolver, website="https://alpha.example", twitter="https://t.co/slow")
    assert profile is not None and profile.urls == ["https://alpha.example"]
    assert _drops(profile) == []
    assert [(v.field, v.value, v.attempts) for v in profile.unresolved] == [("twitter", "https://t.co/slow", 1)]
    assert "timed out" in profile.unresolved[0].reason and profile.unresolved[0].checked_at is not None
    assert any("kept for a later retry" in r.getMessage() for r in caplog.records)
    reader = TokenProfileReader(FakeTracker(), FakeResolver({"https://t.co/slow": "https://x.com/alpha"}))
    assert reader.resolve_value("twitter", "https://t.co/slow") == "https://x.com/alpha"


def test_uncanonicalisable_resolution_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    resolver = FakeResolver({"https://t.co/x": "https://"})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        profile = read(resolver, twitter="https://t.co/x", website="https://alpha.example")
    assert profile is not None and profile.urls == ["https://alpha.example"]
    assert any("not canonicalisable" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("image", [None, "", "   ", "null", "none"])
def test_token_without_image_is_not_recorded(image: str | None, caplog: pytest.LogCaptureFixture) -> None:
    resolver = FakeResolver()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        profile = read(resolver, imageUrl=image, website="https://alpha.example")
    assert profile is None
    assert resolver.calls == []  # no shortlink request is spent on a token we will not record
    assert any("no image" in r.getMessage() for r in caplog.records)


def test_unknown_token_is_none(caplog: pytest.LogCaptureFixture) -> None:
    tracker = FakeTracker()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert TokenProfileReader(tracker, FakeResolver()).read("Nope") is None
    assert tracker.asked == ["Nope"]
    assert any("Nope" in r.getMessage() and "unknown" in r.getMessage() for r in caplog.records)


def test_token_without_links_has_an_empty_profile() -> None:
    profile = read()
    assert profile is not None and profile.urls == [] and profile.symbol == "AAA"


def test_read_info_needs_no_tracker_call() -> None:
    tracker = FakeTracker()
    profile = TokenProfileReader(tracker, FakeResolver()).read_info(info(twitter="@alpha"))
    assert profile is not None and profile.urls == ["https://x.com/alpha"]
    assert tracker.asked == []


# ------------------------------------------------------------------ wired to the real clients


def test_real_clients_end_to_end() -> None:
    def tracker_api(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "data": [
                    {
                        "tokenAddress": ADDRESS,
                        "tokenSymbol": "AAA",
                        "imageUrl": "https://cdn.example/a.png",
                        "website": "https://bit.ly/alpha-site",
                        "twitter": "https://t.co/gone",
                        "telegram": "TBA",
                        "discord": "https://discord.gg/abc",
                    }
                ]
            },
        )

    def web(request: httpx.Request) -> httpx.Response:
        if str(request.url) == "https://bit.ly/alpha-site":
            return httpx.Response(301, headers={"Location": "https://www.alpha.example/home/?utm_campaign=x"})
        return httpx.Response(404)

    tracker = TrackerClient(
        "https://tracker.example", SecretStr("k"), ["g"], transport=httpx.MockTransport(tracker_api)
    )
    resolver = ShortlinkResolver(
        transport=httpx.MockTransport(web), resolve_host=lambda host: ["104.244.42.1"]
    )
    profile = TokenProfileReader(tracker, resolver).read(ADDRESS)
    assert profile is not None
    assert profile.urls == ["https://alpha.example/home", "https://discord.com/invite/abc"]
    assert [d.split("=", 1)[0] for d in _drops(profile)] == ["twitter", "telegram"]
    assert "404" in _drops(profile)[0] and _drops(profile)[1] == "telegram='TBA': placeholder value"


def test_tracker_failure_propagates() -> None:
    tracker = TrackerClient(
        "https://tracker.example",
        SecretStr("k"),
        ["g"],
        transport=httpx.MockTransport(lambda r: httpx.Response(503)),
        sleep=lambda s: None,
    )
    with pytest.raises(TrackerError, match="503"):
        TokenProfileReader(tracker, FakeResolver()).read(ADDRESS)
