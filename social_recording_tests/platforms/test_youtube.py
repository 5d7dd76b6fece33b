"""YouTube generator: every URL shape the router sends, each failure mapped to its ErrorCode with a
truthful `attempted` and an exact request count; the key only ever reaches googleapis."""

from __future__ import annotations

import httpx
import pytest

from social_recording.domain.graph import (
    GraphGroup,
    ObjectKind,
    SocialContractError,
    SocialGraph,
    plan,
    planned_links,
)
from social_recording.domain.urls import Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    Generator,
)
from social_recording.platforms.http import MAX_RESPONSE_BYTES
from social_recording.platforms.youtube.generator import API_BASE, make_generator
from social_recording_tests.platforms.mocks import (
    MINT,
    ScriptedProvider,
    Sleeps,
    assert_zero_call,
    fixture_json,
    fixture_response,
    generate_error,
    json_response,
    oversized,
    scripted_generator,
)

KEY = "AIzaSy-test-key-0123456789"
CTX = GenerateContext(token_address=MINT, token_symbol="TEST")
VIDEOS = f"{API_BASE}/videos"
CHANNELS = f"{API_BASE}/channels"
PLAYLISTS = f"{API_BASE}/playlists"


def _gen(provider: ScriptedProvider, sleeps: Sleeps | None = None, key: str | None = KEY) -> Generator:
    return scripted_generator(make_generator, provider, sleeps, youtube_api_key=key)


def _fail(gen: Generator, url: str) -> ExternalFetchError:
    return generate_error(gen, url, CTX, secret=KEY)


# ------------------------------------------------------------------------------------ success


def test_video_one_call_content_and_channel_venue_keyed_by_immutable_ids() -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, fixture_response("youtube", "video.json"))
    gen = _gen(provider)
    assert gen.platform is Platform.YOUTUBE
    result = gen.generate("https://youtube.com/watch?v=dQw4w9WgXcQ", CTX)

    assert result.attempted is True and result.requests == 1 and len(provider.requests) == 1
    request = provider.requests[0]
    assert request.url.params["id"] == "dQw4w9WgXcQ"
    assert request.url.params["part"] == "snippet,statistics"
    assert request.url.params["key"] == KEY  # the key travels as key= to googleapis only

    links = planned_links(plan(result.graph))
    assert [(link.kind, link.depth) for link in links] == [(ObjectKind.CONTENT, 0), (ObjectKind.VENUE, 0)]
    root = result.graph.groups[0]
    assert root.content is not None and root.venue is not None
    assert root.content.platform_key == "youtube:dQw4w9WgXcQ"
    assert root.content.subtype == "video"
    assert root.content.metrics == {"views": 1612345678.0, "likes": 18234567.0, "comments": 2345678.0}
    # the largest thumbnail, exactly as received (never canonicalised)
    assert root.content.media_urls == [
        "https://i.ytimg.com/vi/dQw4w9WgXcQ/maxresdefault.jpg?sqp=-oaymwEmCIAKENAF&rs=AOn4CLA"
    ]
    # links in the description, canonical; junk (localhost) skipped
    assert root.content.outbound_urls == [
        "https://rickastley.lnk.to/BestOfID",
        "https://x.com/rickastley",
        "https://instagram.com/rickastley",
    ]
    # the venue is the channel, keyed by channelId (immutable), not by its title or handle
    assert root.venue.platform_key == "youtube:UCuAXFkgsw1L7xaCfnd5JJOw"
    assert root.venue.subtype == "channel"
    assert root.venue.fields["title"] == "Rick Astley"


def test_video_without_like_count_records_the_metrics_it_has() -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, fixture_response("youtube", "video_no_likes.json"))
    result = _gen(provider).generate("https://youtube.com/watch?v=aaaaaaaaaaa", CTX)
    content = result.graph.groups[0].content
    assert content is not None
    assert content.metrics == {"views": 42.0}
    assert content.outbound_urls == []


@pytest.mark.parametrize(
    ("url", "param", "value"),
    [
        ("https://youtube.com/channel/UC_x5XG1OV2P6uZZ5FSM9Ttw", "id", "UC_x5XG1OV2P6uZZ5FSM9Ttw"),
        ("https://youtube.com/@googledevelopers", "forHandle", "@googledevelopers"),
        ("https://youtube.com/user/GoogleDevelopers", "forUsername", "GoogleDevelopers"),
    ],
)
def test_channel_shapes_one_call_venue_keyed_by_channel_id(url: str, param: str, value: str) -> None:
    provider = ScriptedProvider().on("GET", CHANNELS, fixture_response("youtube", "channel.json"))
    result = _gen(provider).generate(url, CTX)

    assert result.attempted is True and result.requests == 1
    (request,) = provider.requests
    assert request.url.params[param] == value
    assert request.url.params["part"] == "snippet,statistics"
    plan(result.graph)
    venue = result.graph.groups[0].venue
    assert venue is not None and result.graph.groups[0].content is None
    assert venue.platform_key == "youtube:UC_x5XG1OV2P6uZZ5FSM9Ttw"  # the id, not the handle
    assert venue.metrics == {"subscribers": 2410000.0, "views": 250633712.0, "videos": 6321.0}
    assert venue.avatar_url == "https://yt3.ggpht.com/ytc/AIdro_n=s800-c-k-c0x00ffffff-no-rj"
    assert venue.outbound_urls == ["https://developers.google.com"]
    assert venue.fields["custom_url"] == "@googledevelopers"


def test_hidden_subscriber_count_is_not_recorded_as_a_metric() -> None:
    provider = ScriptedProvider().on("GET", CHANNELS, fixture_response("youtube", "channel_hidden_subs.json"))
    result = _gen(provider).generate("https://youtube.com/channel/UCyyyyyyyyyyyyyyyyyyyyyy", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.metrics == {"views": 10.0, "videos": 1.0}
    assert venue.avatar_url is None


def test_playlist_content_with_channel_venue() -> None:
    provider = ScriptedProvider().on("GET", PLAYLISTS, fixture_response("youtube", "playlist.json"))
    result = _gen(provider).generate(
        "https://youtube.com/playlist?list=PLOU2XLYxmsIIM9h1Ybw2DuRw6o2fkNMeR", CTX
    )
    assert result.requests == 1
    assert provider.requests[0].url.params["id"] == "PLOU2XLYxmsIIM9h1Ybw2DuRw6o2fkNMeR"
    plan(result.graph)
    root = result.graph.groups[0]
    assert root.content is not None and root.venue is not None
    assert root.content.subtype == "playlist"
    assert root.content.metrics == {"items": 128.0}
    assert root.venue.platform_key == "youtube:UC_x5XG1OV2P6uZZ5FSM9Ttw"


@pytest.mark.parametrize(
    ("url", "subtype"),
    [
        ("https://youtube.com/results?search_query=solana+token", "search"),
        ("https://youtube.com/feed/trending", "feed"),
        ("https://youtube.com/hashtag/solana", "hashtag"),
        ("https://youtube.com", "page"),
    ],
)
def test_zero_call_shapes_make_no_request_even_without_a_key(url: str, subtype: str) -> None:
    provider = ScriptedProvider()
    assert_zero_call(_gen(provider, key=None).generate(url, CTX), len(provider.requests), "youtube", url, subtype)


# ------------------------------------------------------------------------------------ no call


@pytest.mark.parametrize("url", ["https://youtube.com/c/GoogleDevelopers", "https://youtube.com/SomeVanity",
                                 "https://youtube.com/watch", "https://youtube.com/playlist"])
def test_custom_urls_have_no_api_lookup_unsupported_without_a_call(url: str) -> None:
    provider = ScriptedProvider()
    err = _fail(_gen(provider), url)
    assert err.code is ErrorCode.UNSUPPORTED and err.attempted is False
    assert provider.requests == []


def test_missing_key_fails_without_a_call() -> None:
    provider = ScriptedProvider()
    err = _fail(_gen(provider, key=None), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is False
    assert "YOUTUBE_API_KEY" in str(err)
    assert provider.requests == []


# ------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("url", "endpoint", "fixture"),
    [
        ("https://youtube.com/watch?v=dQw4w9WgXcQ", VIDEOS, "empty_items.json"),
        ("https://youtube.com/@nobody_here", CHANNELS, "no_items_key.json"),
        ("https://youtube.com/channel/UC_x5XG1OV2P6uZZ5FSM9Ttw", CHANNELS, "empty_items.json"),
    ],
)
def test_missing_or_private_answers_200_without_items_not_found(
    url: str, endpoint: str, fixture: str
) -> None:
    provider = ScriptedProvider().on("GET", endpoint, fixture_response("youtube", fixture))
    err = _fail(_gen(provider), url)
    assert err.code is ErrorCode.NOT_FOUND and err.attempted is True
    assert len(provider.requests) == 1


def test_quota_exceeded_is_credit_exhausted_and_not_retried() -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, fixture_response("youtube", "error_quota.json", 403))
    err = _fail(_gen(provider), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.CREDIT_EXHAUSTED and err.attempted is True
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [(403, fixture_json("youtube", "error_rate.json")), (429, {"error": {"code": 429, "errors": []}})],
)
def test_rate_limit_is_rate_limited(status: int, body: object) -> None:
    provider = ScriptedProvider().on("GET", CHANNELS, json_response(status, body))
    err = _fail(_gen(provider), "https://youtube.com/@googledevelopers")
    assert err.code is ErrorCode.RATE_LIMITED and err.attempted is True
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("status", "fixture"), [(403, "error_forbidden.json"), (400, "error_key_invalid.json")]
)
def test_other_client_errors_are_upstream(status: int, fixture: str) -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, fixture_response("youtube", fixture, status))
    err = _fail(_gen(provider), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 1


def test_persistent_503_is_tried_three_times_with_800ms_backoff() -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, httpx.Response(503))
    sleeps = Sleeps()
    err = _fail(_gen(provider, sleeps), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 3
    assert sleeps.delays == [0.8, 0.8]


def test_flaky_503_then_ok_succeeds_on_the_retry() -> None:
    provider = ScriptedProvider().on(
        "GET", VIDEOS, httpx.Response(503), fixture_response("youtube", "video.json")
    )
    result = _gen(provider).generate("https://youtube.com/watch?v=dQw4w9WgXcQ", CTX)
    assert result.requests == 2 and result.attempted is True


def test_item_without_channel_id_is_upstream() -> None:
    body = fixture_json("youtube", "video.json")
    del body["items"][0]["snippet"]["channelId"]
    provider = ScriptedProvider().on("GET", VIDEOS, json_response(200, body))
    err = _fail(_gen(provider), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True


def test_item_with_empty_id_is_upstream_payload_error() -> None:
    body = fixture_json("youtube", "channel.json")
    body["items"][0]["id"] = ""
    provider = ScriptedProvider().on("GET", CHANNELS, json_response(200, body))
    err = _fail(_gen(provider), "https://youtube.com/@googledevelopers")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert "items.0.id" in str(err)


def test_oversized_body_is_upstream() -> None:
    provider = ScriptedProvider().on("GET", VIDEOS, oversized(MAX_RESPONSE_BYTES + 1))
    err = _fail(_gen(provider), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 1


def test_key_never_reaches_another_host_nor_a_message() -> None:
    """A redirect away from googleapis drops key=; the final answer's failure names no key."""
    provider = (
        ScriptedProvider()
        .on("GET", VIDEOS, httpx.Response(302, headers={"location": "https://elsewhere.example/videos?id=x"}))
        .on("GET", "https://elsewhere.example/videos", httpx.Response(404))
    )
    err = _fail(_gen(provider), "https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert err.code is ErrorCode.NOT_FOUND
    first, second = provider.requests
    assert first.url.host == "www.googleapis.com" and first.url.params["key"] == KEY
    assert second.url.host == "elsewhere.example"
    assert "key" not in second.url.params and KEY not in str(second.url)
    assert KEY not in repr(_gen(provider))


def test_contract_violation_carries_attempted() -> None:
    """A graph that fails plan() surfaces as SocialContractError with attempted=True (the call was made)."""
    with pytest.raises(SocialContractError) as info:
        shaping.finish(SocialGraph(groups=[GraphGroup(ref="root", parent_ref="root")]), requests=1)
    assert info.value.attempted is True
