"""TikTok generator (Apify clockworks~tiktok-scraper): shapes, identity, failures, request counts."""

from __future__ import annotations

import pytest

from social_recording.domain.graph import plan
from social_recording.domain.urls import NonCanonicalUrl, to_canonical
from social_recording.platforms.base import ErrorCode
from social_recording.platforms.tiktok import generator as tiktok
from social_recording_tests.platforms.mocks import (
    APIFY_429,
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

VIDEO = "https://tiktok.com/@/video/7301234567890123456"  # the one canonical post form (its spec.py)
PHOTO = "https://tiktok.com/@/photo/7301234567890999999"
SHORT_T = "https://tiktok.com/t/ZTRabc123"
SHORT_VM = "https://vm.tiktok.com/ZMabc123"
PROFILE = "https://tiktok.com/@pepe2official"
POSTS = [VIDEO, PHOTO, SHORT_T, SHORT_VM]
FETCHABLE = [*POSTS, PROFILE]


def _gen(handler: Handler, token: str | None = APIFY_TOKEN) -> tuple[tiktok.TikTokGenerator, Recorder]:
    return apify_generator(tiktok.make_generator, tiktok.TikTokGenerator, handler, token)


def test_shapes_are_canonical() -> None:
    for url in FETCHABLE:
        assert to_canonical(url) == url


@pytest.mark.parametrize("url", [VIDEO, SHORT_T, SHORT_VM])
def test_video_success(url: str) -> None:
    gen, rec = _gen(serve("tiktok", "video.json"))
    result = gen.generate(url, CTX)
    assert result.attempted and result.requests == RUN_REQUESTS and rec.count == 1
    assert rec.requests[0].url.path == "/v2/acts/clockworks~tiktok-scraper/runs"
    assert rec.json_body() == {"postURLs": [url]}  # the canonical URL, unchanged
    assert len(plan(result.graph)) == 1
    (group,) = result.graph.groups
    assert group.content is not None and group.account is not None and group.venue is None
    raw = fixture_json("tiktok", "video.json")[0]
    assert group.content.platform_key == "tiktok:7301234567890123456" and group.content.subtype == "video"
    assert group.account.platform_key == "tiktok:6812345678901234567"  # authorMeta.id, not the handle
    assert group.content.media_urls == [raw["mediaUrls"][0], raw["videoMeta"]["coverUrl"]]
    assert group.account.avatar_url == raw["authorMeta"]["avatar"]  # byte-for-byte (signed query kept)
    assert group.content.outbound_urls == ["https://pepe2.fun"]
    assert group.account.outbound_urls == [to_canonical("https://Linktr.ee/Pepe2?utm_source=tt")]
    assert group.content.metrics == {"views": 120000, "likes": 5400, "comments": 210, "shares": 120, "saves": 300}
    assert group.account.metrics["followers"] == 10400


def test_photo_success() -> None:
    gen, rec = _gen(serve("tiktok", "photo.json"))
    result = gen.generate(PHOTO, CTX)
    (group,) = result.graph.groups
    assert group.content is not None and group.content.subtype == "photo"
    assert group.content.platform_key == "tiktok:7301234567890999999"
    assert group.content.media_urls == ["https://p16-sign-va.tiktokcdn.com/obj/photo-cover?x=1"]
    assert rec.count == 1 and len(plan(result.graph)) == 1


def test_shortlink_subtype_comes_from_the_item() -> None:
    gen, _ = _gen(serve("tiktok", "photo.json"))
    (group,) = gen.generate(SHORT_VM, CTX).graph.groups
    assert group.content is not None and group.content.subtype == "photo"


def test_profile_account_only() -> None:
    gen, rec = _gen(serve("tiktok", "profile.json"))
    result = gen.generate(PROFILE, CTX)
    assert rec.json_body() == {"profiles": ["pepe2official"], "resultsPerPage": 1}
    (group,) = result.graph.groups
    assert group.content is None and group.account is not None
    assert group.account.platform_key == "tiktok:6812345678901234567" and group.account.subtype == "user"
    assert result.requests == RUN_REQUESTS and len(plan(result.graph)) == 1


@pytest.mark.parametrize(
    "url, subtype",
    [("https://tiktok.com/tag/pepe2", "hashtag"), ("https://tiktok.com/discover/pepe2-coin", "discover"),
     ("https://tiktok.com/search?q=pepe2", "search"), ("https://tiktok.com/explore", "page"),
     ("https://tiktok.com/foryou", "page"), ("https://tiktok.com", "page")],
)
def test_zero_call_shapes(url: str, subtype: str) -> None:
    assert to_canonical(url) == url
    gen, rec = _gen(respond(500), token=None)
    assert_zero_call(gen.generate(url, CTX), rec.count, "tiktok", url, subtype)


@pytest.mark.parametrize("url", ["https://tiktok.com/@pepe2official/live", "https://tiktok.com/@pepe2official/video/abc",
                                 "https://tiktok.com/@/video/abc", "https://tiktok.com/@", "https://tiktok.com/@/video",
                                 "https://tiktok.com/legal/privacy-policy"])
def test_unrecognised_shapes(url: str) -> None:
    # unsupported, not "not found": nothing was asked, so nothing is known missing
    expect_no_call_failure(*_gen(respond(200, [])), url, ErrorCode.UNSUPPORTED)


@pytest.mark.parametrize(
    "url",
    ["https://www.tiktok.com/@Pepe2official/video/7301234567890123456?is_from_webapp=1",
     # the author's handle in a post URL is decoration: canonical posts are /@/video/<id>
     "https://tiktok.com/@pepe2official/video/7301234567890123456",
     "https://tiktok.com/@pepe2official/photo/7301234567890999999",
     "https://tiktok.com/v/7301234567890123456.html"],
)
def test_non_canonical_rejected(url: str) -> None:
    gen, rec = _gen(serve("tiktok", "video.json"))
    with pytest.raises(NonCanonicalUrl):
        gen.generate(url, CTX)
    assert rec.count == 0


def test_author_comes_from_the_item_not_the_url() -> None:
    gen, _ = _gen(serve("tiktok", "video.json"))
    (group,) = gen.generate(VIDEO, CTX).graph.groups
    assert group.account is not None and group.account.fields["name"] == "pepe2official"


def test_missing_token() -> None:
    gen, rec = _gen(respond(200, []), token=None)
    expect_error(lambda: gen.generate(VIDEO, CTX), ErrorCode.UPSTREAM, attempted=False)
    assert rec.count == 0


@pytest.mark.parametrize("url", FETCHABLE)
@APIFY_FAILURE_CASES
def test_apify_failures(url: str, name: str, handler: Handler, code: ErrorCode) -> None:
    expect_paid_failure(*_gen(handler), url, code)


@pytest.mark.parametrize("url", FETCHABLE)
@pytest.mark.parametrize(
    "fixture, code",
    [("error_item_not_found.json", ErrorCode.NOT_FOUND), ("error_item_unknown.json", ErrorCode.UPSTREAM),
     ("empty.json", ErrorCode.NOT_FOUND)],
)
def test_error_items(url: str, fixture: str, code: ErrorCode) -> None:
    expect_paid_failure(*_gen(serve("tiktok", fixture)), url, code)


@pytest.mark.parametrize("url", POSTS)
def test_post_of_private_account_is_blocked(url: str) -> None:
    gen, rec = _gen(serve("tiktok", "private_post.json"))
    expect_error(lambda: gen.generate(url, CTX), ErrorCode.TARGET_BLOCKED, attempted=True)
    assert rec.count == 1


def test_private_profile_is_blocked() -> None:
    gen, rec = _gen(serve("tiktok", "private_profile.json"))
    expect_error(lambda: gen.generate(PROFILE, CTX), ErrorCode.TARGET_BLOCKED, attempted=True)
    assert rec.count == 1


def test_item_without_any_id_is_not_found() -> None:
    gen, rec = _gen(respond(200, [{"text": "orphan"}]))
    expect_error(lambda: gen.generate(VIDEO, CTX), ErrorCode.NOT_FOUND, attempted=True)
    expect_error(lambda: gen.generate(PROFILE, CTX), ErrorCode.NOT_FOUND, attempted=True)
    assert rec.count == 2


def test_shared_client_reports_each_calls_own_requests() -> None:
    """One ApifyClient serves every generate() call: each result counts only its own request, a later
    failing call is attempted on its own merit, and a zero-call URL after them reports none."""
    answers = iter([serve("tiktok", "video.json"), serve("tiktok", "video.json"), respond(429, APIFY_429)])
    gen, rec = _gen(lambda request: next(answers)(request))
    assert gen.generate(VIDEO, CTX).requests == RUN_REQUESTS
    second = gen.generate(VIDEO, CTX)
    assert second.attempted is True and second.requests == RUN_REQUESTS
    expect_error(lambda: gen.generate(VIDEO, CTX), ErrorCode.RATE_LIMITED, attempted=True)
    zero = gen.generate("https://tiktok.com/tag/pepe2", CTX)
    assert zero.attempted is False and zero.requests == 0
    assert rec.count == 3
