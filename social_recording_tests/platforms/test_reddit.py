"""Reddit generator (Apify trudax~reddit-scraper-lite): shapes, identity, failures, request counts."""

from __future__ import annotations

import pytest

from social_recording.domain.graph import plan
from social_recording.domain.urls import NonCanonicalUrl, to_canonical
from social_recording.platforms.base import ErrorCode
from social_recording.platforms.reddit import generator as reddit
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

POST = "https://reddit.com/comments/1d2x3y4"  # the one canonical post form (its spec.py)
SHARE = "https://reddit.com/r/cryptocurrency/s/AbCdEf12"
REDDIT_SHORT = "https://redd.it/1d2x3y4"
SUB = "https://reddit.com/r/cryptocurrency"
SUB_TOP = "https://reddit.com/r/cryptocurrency/top"
USER = "https://reddit.com/user/moon_farmer"
POSTS = [POST, SHARE, REDDIT_SHORT]
FETCHABLE = [*POSTS, SUB, SUB_TOP, USER]


def _gen(handler: Handler, token: str | None = APIFY_TOKEN) -> tuple[reddit.RedditGenerator, Recorder]:
    return apify_generator(reddit.make_generator, reddit.RedditGenerator, handler, token)


def test_shapes_are_canonical() -> None:
    for url in FETCHABLE:
        assert to_canonical(url) == url


@pytest.mark.parametrize("url", POSTS)
def test_post_success(url: str) -> None:
    gen, rec = _gen(serve("reddit", "post.json"))
    result = gen.generate(url, CTX)
    assert result.attempted and result.requests == RUN_REQUESTS and rec.count == 1
    assert rec.requests[0].url.path == "/v2/acts/trudax~reddit-scraper-lite/runs"
    assert rec.json_body() == {"startUrls": [{"url": url}], "maxItems": 1, "skipComments": True}
    assert len(plan(result.graph)) == 1
    (group,) = result.graph.groups
    assert group.content is not None and group.account is not None and group.venue is not None
    raw = fixture_json("reddit", "post.json")[0]
    assert group.content.platform_key == "reddit:t3_1d2x3y4" and group.content.subtype == "post"
    assert group.account.platform_key == "reddit-user:moon_farmer" and group.account.subtype == "user"
    assert group.venue.platform_key == "reddit-sub:cryptocurrency" and group.venue.subtype == "subreddit"
    assert group.content.media_urls == [raw["imageUrls"][0], raw["thumbnailUrl"]]
    assert group.content.outbound_urls == ["https://pepe2.fun/whitepaper.pdf", "https://pepe2.fun"]
    assert group.content.metrics == {"upvotes": 230, "comments": 57, "upvote_ratio": 0.87}


def test_deleted_author_gives_no_account() -> None:
    gen, _ = _gen(serve("reddit", "post_deleted_author.json"))
    (group,) = gen.generate(POST, CTX).graph.groups
    assert group.account is None and group.content is not None and group.venue is not None


@pytest.mark.parametrize("url", [SUB, SUB_TOP])
def test_subreddit_venue_only(url: str) -> None:
    gen, rec = _gen(serve("reddit", "community.json"))
    result = gen.generate(url, CTX)
    (group,) = result.graph.groups
    raw = fixture_json("reddit", "community.json")[0]
    assert group.content is None and group.account is None and group.venue is not None
    assert group.venue.platform_key == "reddit-sub:cryptocurrency"  # same key a post's venue gets
    assert group.venue.icon_url == raw["headerImage"]
    assert group.venue.metrics == {"members": 9100000}
    assert group.venue.outbound_urls == ["https://reddit.com/r/cryptocurrency/wiki/rules"]
    assert rec.json_body()["startUrls"] == [{"url": url}] and result.requests == RUN_REQUESTS


def test_subreddit_from_a_post_item_when_no_community_item() -> None:
    gen, _ = _gen(serve("reddit", "post.json"))
    (group,) = gen.generate(SUB, CTX).graph.groups
    assert group.venue is not None and group.venue.platform_key == "reddit-sub:cryptocurrency"
    assert group.content is None


def test_user_account_only() -> None:
    gen, rec = _gen(serve("reddit", "user.json"))
    result = gen.generate(USER, CTX)
    (group,) = result.graph.groups
    raw = fixture_json("reddit", "user.json")[0]
    assert group.account is not None and group.content is None and group.venue is None
    assert group.account.platform_key == "reddit-user:moon_farmer"
    assert group.account.avatar_url == raw["userIcon"]  # byte-for-byte, &amp; and all
    assert group.account.metrics == {"post_karma": 1520, "comment_karma": 8830}
    assert group.account.outbound_urls == ["https://pepe2.fun"]
    assert rec.count == 1 and len(plan(result.graph)) == 1


def test_user_from_a_post_item_when_no_user_item() -> None:
    gen, _ = _gen(serve("reddit", "post.json"))
    (group,) = gen.generate(USER, CTX).graph.groups
    assert group.account is not None and group.account.platform_key == "reddit-user:moon_farmer"


def test_wrong_item_kind_is_not_found() -> None:
    gen, _ = _gen(serve("reddit", "community.json"))
    expect_error(lambda: gen.generate(POST, CTX), ErrorCode.NOT_FOUND, attempted=True)
    expect_error(lambda: gen.generate(USER, CTX), ErrorCode.NOT_FOUND, attempted=True)
    gen, _ = _gen(serve("reddit", "user.json"))
    expect_error(lambda: gen.generate(SUB, CTX), ErrorCode.NOT_FOUND, attempted=True)


@pytest.mark.parametrize(
    "url, subtype",
    [("https://reddit.com/search?q=pepe2", "search"), ("https://reddit.com/r/cryptocurrency/search?q=pepe2", "search"),
     ("https://reddit.com", "page")],
)
def test_zero_call_shapes(url: str, subtype: str) -> None:
    assert to_canonical(url) == url
    gen, rec = _gen(respond(500), token=None)
    assert_zero_call(gen.generate(url, CTX), rec.count, "reddit", url, subtype)


@pytest.mark.parametrize("url", ["https://reddit.com/r/cryptocurrency/wiki/rules", "https://reddit.com/settings",
                                 "https://reddit.com/user/moon_farmer/saved", "https://reddit.com/r/cryptocurrency/comments",
                                 "https://reddit.com/comments/not_an_id"])
def test_unrecognised_shapes(url: str) -> None:
    # unsupported, not "not found": nothing was asked, so nothing is known missing
    expect_no_call_failure(*_gen(respond(200, [])), url, ErrorCode.UNSUPPORTED)


@pytest.mark.parametrize(
    "url",
    ["https://old.reddit.com/r/CryptoCurrency/comments/1d2x3y4/pepe2_is_live/",
     # the subreddit, the slug and a comment id are decoration of the post id: they fold away
     "https://reddit.com/r/cryptocurrency/comments/1d2x3y4",
     "https://reddit.com/r/cryptocurrency/comments/1d2x3y4/pepe2_is_live/l5abcde",
     "https://reddit.com/comments/1d2x3y4/pepe2_is_live"],
)
def test_non_canonical_rejected(url: str) -> None:
    gen, rec = _gen(serve("reddit", "post.json"))
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
    [("error_private.json", ErrorCode.TARGET_BLOCKED), ("empty.json", ErrorCode.NOT_FOUND)],
)
def test_blocked_and_not_found(url: str, fixture: str, code: ErrorCode) -> None:
    expect_paid_failure(*_gen(serve("reddit", fixture)), url, code)


def test_unknown_error_item_is_upstream() -> None:
    gen, _ = _gen(respond(200, [{"url": SUB, "error": "scraper crashed"}]))
    expect_error(lambda: gen.generate(SUB, CTX), ErrorCode.UPSTREAM, attempted=True)


def test_missing_token() -> None:
    gen, rec = _gen(respond(200, []), token=None)
    expect_error(lambda: gen.generate(POST, CTX), ErrorCode.UPSTREAM, attempted=False)
    assert rec.count == 0
