"""What real provider answers (other projects' recordings, in each platform's fixtures/) turn into: the shapes our
own fixtures and fakes never sent (a urlscan result without `apexDomain`, a t.me `data:` placeholder
avatar, a `viewCount` sent as a list)."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

from social_recording.domain.graph import SocialObject
from social_recording.domain.urls import Platform
from social_recording.platforms import shaping
from social_recording.platforms.telegram.generator import make_generator as make_telegram
from social_recording.platforms.web.generator import RDAP_BASE, URLSCAN_BASE, registrable_domain
from social_recording.platforms.web.generator import make_generator as make_web
from social_recording.platforms.x.generator import make_generator as make_x
from social_recording_tests.platforms.mocks import CTX, ScriptedProvider, fixture_response, scripted_generator
from social_recording_tests.platforms.real_answers import real_body, real_response


@pytest.mark.parametrize(
    "name, url, apex",
    [
        ("urlscan_result_google_2018.json", "https://google.com", "google.com"),
        ("urlscan_result_wikipedia_2019.json", "https://wikipedia.org", "wikipedia.org"),
        ("urlscan_result_capitalne_failed_2020.json", "https://capitalne.com", "capitalne.com"),
    ],
)
def test_a_urlscan_result_without_apex_domain_still_gets_its_rdap_lookup(name: str, url: str, apex: str) -> None:
    uuid = str(real_body("urlscan_submit_google_2018.json")["uuid"])
    provider = (
        ScriptedProvider()
        .on("POST", f"{URLSCAN_BASE}/scan/", real_response("urlscan_submit_google_2018.json", status=200))
        .on("GET", f"{URLSCAN_BASE}/result/{uuid}/", real_response(name, status=200))
        .on("GET", f"{RDAP_BASE}/domain/{apex}", fixture_response("web", "rdap.json"))
    )
    gen = scripted_generator(make_web, provider, urlscan_api_key="k")
    fields = gen.generate(url, CTX).graph.groups[0].content.fields  # type: ignore[union-attr]
    assert fields["apex_domain"] is None  # as urlscan sent it
    assert fields["rdap_domain"] == apex
    assert fields["rdap_status"] == "ok" and fields["registration_date"]
    assert provider.count(path=f"/domain/{apex}") == 1


def test_registrable_domain_reads_the_bundled_suffix_list_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the public suffix list must not be fetched")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert registrable_domain("www.bbc.co.uk") == "bbc.co.uk"
    assert registrable_domain("a.b.github.io") == "github.io"  # ICANN suffixes: RDAP knows github.io
    assert registrable_domain("xn--ls8h.la") == "xn--ls8h.la"
    assert registrable_domain("192.0.2.7") is None and registrable_domain("localhost") is None


def test_a_telegram_group_whose_avatar_is_an_inline_data_image_stores_no_avatar() -> None:
    provider = ScriptedProvider().on("GET", "https://t.me/v2rayrun", real_response("telegram_v2rayrun.html"))
    gen = scripted_generator(make_telegram, provider)
    venue = gen.generate("https://t.me/v2rayrun", CTX).graph.groups[0].venue
    assert venue is not None and venue.subtype == "group"
    assert venue.metrics == {"members": 1069.0, "online": 17.0}
    assert venue.avatar_url is None


def test_display_urls_are_links_only() -> None:
    obj = SocialObject(platform=Platform.WEB, platform_key="web:k", subtype="page",
                       media_urls=["data:image/png;base64,AAAA", "https://cdn.example/a.png", "javascript:x"],
                       avatar_url="data:image/svg+xml;base64,PHN2Zz4=", icon_url="HTTPS://cdn.example/i.ico")
    assert obj.media_urls == ["https://cdn.example/a.png"]
    assert obj.avatar_url is None and obj.icon_url == "HTTPS://cdn.example/i.ico"


def test_a_view_count_sent_as_a_list_is_read_not_dropped() -> None:
    body = real_body("twitterapi_advanced_search_arcdotfun_2025.json")
    tweet = body["tweets"][0]
    assert tweet["viewCount"] == [0]  # what the provider really sent for this retweet
    envelope = {"tweets": [tweet], "status": "success", "msg": "success"}
    provider = ScriptedProvider().on("GET", "https://api.twitterapi.io/twitter/tweets", httpx.Response(200, json=envelope))
    gen = scripted_generator(make_x, provider, twitterapi_io_key="k")
    graph = gen.generate(f"https://x.com/i/status/{tweet['id']}", CTX).graph
    root = graph.groups[0].content
    assert root is not None and root.metrics["views"] == 0.0
    assert {"likes", "retweets", "replies", "quotes", "bookmarks"} <= set(root.metrics)


def test_a_metric_in_a_shape_without_a_number_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=shaping.__name__):
        got = shaping.metrics({"views": {"count": 3}, "likes": "12", "hidden": None, "shares": [1, 2]})
    assert got == {"likes": 12.0}
    assert "'views' arrived as dict of 1" in caplog.text and "'shares' arrived as list of 2" in caplog.text
    assert "hidden" not in caplog.text
