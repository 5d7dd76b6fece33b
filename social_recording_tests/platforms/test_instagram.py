"""Instagram generator (Apify apify~instagram-scraper): shapes, identity, error items, request counts."""

from __future__ import annotations

import pytest

from social_recording.domain.graph import plan
from social_recording.domain.urls import NonCanonicalUrl, to_canonical
from social_recording.platforms.base import ErrorCode
from social_recording.platforms.instagram import generator as instagram
from social_recording_tests.platforms.mocks import (
    APIFY_FAILURE_CASES,
    APIFY_TOKEN,
    CTX,
    RUN_REQUESTS,
    Handler,
    Recorder,
    apify_generator,
    assert_zero_call,
    expect_error,
    expect_no_call_failure,
    expect_paid_failure,
    fixture_json,
    respond,
    serve,
)

POST = "https://instagram.com/p/C7xYz12AbCd"
REEL = "https://instagram.com/p/C8ReeLAbCdE"  # reels and IGTV have the /p/ form too (its spec.py)
SHARE = "https://instagram.com/share/BAbc123xyz"
PROFILE = "https://instagram.com/pepe2official"
POSTS = [POST, REEL, SHARE]
FETCHABLE = [*POSTS, PROFILE]


def _gen(handler: Handler, token: str | None = APIFY_TOKEN) -> tuple[instagram.InstagramGenerator, Recorder]:
    return apify_generator(instagram.make_generator, instagram.InstagramGenerator, handler, token)


def test_shapes_are_canonical() -> None:
    for url in FETCHABLE:
        assert to_canonical(url) == url


@pytest.mark.parametrize("url", [POST, SHARE])
def test_post_success(url: str) -> None:
    gen, rec = _gen(serve("instagram", "post.json"))
    result = gen.generate(url, CTX)
    assert result.attempted and result.requests == RUN_REQUESTS and rec.count == 1
    assert rec.requests[0].url.path == "/v2/acts/apify~instagram-scraper/runs"
    assert rec.json_body() == {"directUrls": [url], "resultsType": "posts", "resultsLimit": 1}
    assert len(plan(result.graph)) == 1
    (group,) = result.graph.groups
    assert group.content is not None and group.account is not None
    raw = fixture_json("instagram", "post.json")[0]
    assert group.content.platform_key == "instagram:3381234567890123456" and group.content.subtype == "post"
    assert group.account.platform_key == "instagram:58123456789"  # ownerId, not ownerUsername
    assert group.account.fields == {"username": "pepe2official", "fullName": "PEPE 2"}
    assert group.content.media_urls == [raw["displayUrl"]]  # byte-for-byte
    assert group.content.outbound_urls == ["https://pepe2.fun/presale"]
    assert group.content.metrics == {"likes": 512, "comments": 14}


def test_reel_success() -> None:
    """The canonical URL is /p/<code> for a reel too: the subtype comes from `productType: clips`."""
    gen, rec = _gen(serve("instagram", "reel.json"))
    result = gen.generate(REEL, CTX)
    assert rec.json_body() == {"directUrls": [REEL], "resultsType": "posts", "resultsLimit": 1}
    (group,) = result.graph.groups
    raw = fixture_json("instagram", "reel.json")[0]
    assert group.content is not None and group.content.subtype == "reel"
    assert group.content.platform_key == "instagram:3381234567890999999"
    assert group.content.media_urls == [raw["displayUrl"], raw["videoUrl"]]
    assert group.content.metrics["views"] == 40100
    assert rec.count == 1


@pytest.mark.parametrize(
    ("product_type", "subtype"),
    [("clips", "reel"), ("feed", "post"), ("igtv", "post"), ("carousel_container", "post"), (None, "post"), (7, "post")],
)
def test_subtype_comes_from_product_type(product_type: object, subtype: str) -> None:
    item = {**fixture_json("instagram", "reel.json")[0], "productType": product_type}
    gen, _ = _gen(respond(200, [item]))
    (group,) = gen.generate(POST, CTX).graph.groups
    assert group.content is not None and group.content.subtype == subtype


def test_profile_account_only() -> None:
    gen, rec = _gen(serve("instagram", "profile.json"))
    result = gen.generate(PROFILE, CTX)
    assert rec.json_body() == {"directUrls": [PROFILE], "resultsType": "details", "resultsLimit": 1}
    (group,) = result.graph.groups
    raw = fixture_json("instagram", "profile.json")[0]
    assert group.content is None and group.account is not None
    acc = group.account
    assert acc.platform_key == "instagram:58123456789" and acc.subtype == "user"
    assert acc.avatar_url == raw["profilePicUrlHD"]
    assert acc.outbound_urls == ["https://pepe2.fun", "https://linktr.ee/pepe2", "https://docs.pepe2.fun"]
    assert acc.metrics == {"followers": 20300, "following": 3, "posts": 41, "highlights": 2, "igtv_videos": 0}
    assert result.requests == RUN_REQUESTS and len(plan(result.graph)) == 1


@pytest.mark.parametrize(
    "url, subtype",
    [("https://instagram.com/explore/tags/pepe2", "hashtag"), ("https://instagram.com/explore", "page"),
     ("https://instagram.com/explore/search/keyword?q=pepe2", "search"), ("https://instagram.com", "page")],
)
def test_zero_call_shapes(url: str, subtype: str) -> None:
    assert to_canonical(url) == url
    gen, rec = _gen(respond(500), token=None)
    assert_zero_call(gen.generate(url, CTX), rec.count, "instagram", url, subtype)


@pytest.mark.parametrize("url", ["https://instagram.com/stories/pepe2official/3381", "https://instagram.com/accounts/login",
                                 "https://instagram.com/pepe2official/followers/x", "https://instagram.com/share",
                                 "https://instagram.com/developer/docs"])
def test_unrecognised_shapes(url: str) -> None:
    # unsupported, not "not found": nothing was asked, so nothing is known missing
    expect_no_call_failure(*_gen(respond(200, [])), url, ErrorCode.UNSUPPORTED)


@pytest.mark.parametrize(
    "url",
    ["https://www.instagram.com/p/C7xYz12AbCd/?igsh=abc", "https://instagram.com/reel/C8ReeLAbCdE",
     "https://instagram.com/reels/C8ReeLAbCdE", "https://instagram.com/tv/C7xYz12AbCd",
     "https://instagram.com/pepe2official/p/C7xYz12AbCd"],
)
def test_non_canonical_rejected(url: str) -> None:
    gen, rec = _gen(serve("instagram", "post.json"))
    with pytest.raises(NonCanonicalUrl):
        gen.generate(url, CTX)
    assert rec.count == 0


@pytest.mark.parametrize("url", FETCHABLE)
@APIFY_FAILURE_CASES
def test_apify_failures(url: str, name: str, handler: Handler, code: ErrorCode) -> None:
    expect_paid_failure(*_gen(handler), url, code)


@pytest.mark.parametrize("url", FETCHABLE)
@pytest.mark.parametrize(
    "fixture, code",
    [("error_not_found.json", ErrorCode.NOT_FOUND), ("error_private.json", ErrorCode.TARGET_BLOCKED),
     ("error_restricted_page.json", ErrorCode.TARGET_BLOCKED), ("error_unknown.json", ErrorCode.UPSTREAM),
     ("empty.json", ErrorCode.NOT_FOUND)],
)
def test_error_items(url: str, fixture: str, code: ErrorCode) -> None:
    expect_paid_failure(*_gen(serve("instagram", fixture)), url, code)


def test_error_item_with_error_description_only_reading() -> None:
    """The unconfirmed shape, second reading: a generic `error` flag, the meaning in the description."""
    gen, _ = _gen(respond(200, [{"error": True, "errorDescription": "Page not found"}]))
    expect_error(lambda: gen.generate(POST, CTX), ErrorCode.NOT_FOUND, attempted=True)
    gen, _ = _gen(respond(200, [{"error": "error", "errorDescription": "This account is private"}]))
    expect_error(lambda: gen.generate(PROFILE, CTX), ErrorCode.TARGET_BLOCKED, attempted=True)


def test_private_profile_is_blocked() -> None:
    gen, rec = _gen(serve("instagram", "private_profile.json"))
    expect_error(lambda: gen.generate(PROFILE, CTX), ErrorCode.TARGET_BLOCKED, attempted=True)
    assert rec.count == 1


def test_item_without_id_is_not_found() -> None:
    gen, _ = _gen(respond(200, [{"inputUrl": POST}]))
    expect_error(lambda: gen.generate(POST, CTX), ErrorCode.NOT_FOUND, attempted=True)
    expect_error(lambda: gen.generate(PROFILE, CTX), ErrorCode.NOT_FOUND, attempted=True)
