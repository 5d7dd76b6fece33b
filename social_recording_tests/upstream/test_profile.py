"""TokenProfileReader: the single URL entry (seed 003; DESIGN §3): junk, shortlinks, canonical, dedupe."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.models import TokenProfile
from social_recording.domain.urls import to_canonical
from social_recording.upstream.profile import TokenProfileReader
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

    def __init__(self, table: Mapping[str, str] | None = None, broken: set[str] | None = None) -> None:
        self.table = dict(table or {})
        self.broken = broken or set()
        self.calls: list[str] = []

    def resolve(self, url: str) -> str:
        self.calls.append(url)
        if url in self.broken:
            raise ShortlinkError(url, "HTTP 404 at hop 1")
        return self.table.get(url, url)


def read(resolver: FakeResolver | None = None, **fields: Any) -> TokenProfile | None:
    return TokenProfileReader(FakeTracker(info(**fields)), resolver or FakeResolver()).read(ADDRESS)


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
    ("website", "none"),
    ("website", "None"),
    ("website", "null"),
    ("website", "TBA"),
    ("twitter", "tba"),
    ("telegram", "-"),
    ("discord", "N/A"),
    ("discord", "n/a"),
    ("website", ""),
    ("website", "   "),
    ("discord", "0"),
    ("website", "www.alpha.example"),
    ("website", "ftp://alpha.example/"),
    ("website", "javascript:alert(1)"),
    ("website", "https://alpha.example https://beta.example"),
    ("website", "https://alpha.example/a b"),
    ("twitter", "alpha"),
    ("twitter", "@"),
    ("twitter", "@this_handle_is_too_long"),
    ("telegram", "@alpha_chat"),
    ("website", "https://"),
]


@pytest.mark.parametrize("field,value", JUNK)
def test_junk_values_are_dropped_with_a_logged_reason(
    field: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    keep_field, keep = (
        ("telegram", "https://t.me/keep_me") if field == "website" else ("website", "https://keep.example")
    )
    others: dict[str, str | None] = {f: None for f in ("website", "twitter", "telegram", "discord")}
    others[keep_field] = keep
    resolver = FakeResolver()
    with caplog.at_level(logging.INFO, logger=LOGGER):
        profile = read(resolver, **{**others, field: value})
    assert profile is not None
    assert profile.urls == [to_canonical(keep)]
    drops = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == 1
    assert field in drops[0] and repr(value) in drops[0] and ADDRESS in drops[0]


def test_non_string_values_are_dropped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=LOGGER):
        profile = read(discord=0, telegram=["https://t.me/x"], website="https://alpha.example")
    assert profile is not None and profile.urls == ["https://alpha.example"]
    assert sum("dropped" in r.getMessage() for r in caplog.records) == 2


@pytest.mark.parametrize("handle", ["@alpha", "  @Alpha_1  ", "@a"])
def test_bare_twitter_handle_becomes_an_x_profile(handle: str) -> None:
    profile = read(twitter=handle)
    assert profile is not None
    assert profile.urls == [to_canonical(f"https://x.com/{handle.strip()[1:]}")]


def test_duplicates_are_removed_keeping_the_first_position() -> None:
    profile = read(
        website="https://twitter.com/alpha",
        twitter="https://x.com/alpha/",
        telegram="https://mobile.twitter.com/Alpha?s=20",
        discord="@alpha",
    )
    assert profile is not None and profile.urls == ["https://x.com/alpha"]


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
