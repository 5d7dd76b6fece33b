"""X generator (twitterapi.io): every URL shape the router sends, every failure, request counts."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.graph import SocialContractError, SocialGraph, plan
from social_recording.domain.urls import Platform, to_canonical
from social_recording.platforms.base import ErrorCode, ExternalFetchError, ProviderKeys
from social_recording.platforms.x import generator as x
from social_recording_tests.platforms.mocks import (
    CTX,
    TWITTERAPI_KEY,
    Handler,
    Recorder,
    expect_error,
    fixture_bytes,
    fixture_json,
    malformed,
    oversized,
    planned_refs,
    read_timeout,
    respond,
    serve,
)

TWEET_URL = "https://x.com/i/status/1790000000000000001"  # the one canonical tweet form (its spec.py)
PROFILE_URL = "https://x.com/soldevalice"
ROOT_ID = "1790000000000000001"


def _gen(handler: Handler, key: str | None = TWITTERAPI_KEY) -> tuple[x.XGenerator, Recorder]:
    rec = Recorder(handler)
    keys = ProviderKeys(twitterapi_io_key=SecretStr(key) if key else None)
    gen = x.make_generator(keys, transport=rec.transport, sleep=lambda s: None)
    assert isinstance(gen, x.XGenerator)
    return gen, rec


# ------------------------------------------------------------------ success


def test_tweet_quote_chain() -> None:
    gen, rec = _gen(serve("x", "tweet_quote_chain.json"))
    result = gen.generate(TWEET_URL, CTX)
    assert result.attempted is True and result.requests == 1 and rec.count == 1
    req = rec.requests[0]
    assert req.method == "GET" and req.url.host == "api.twitterapi.io" and req.url.path == "/twitter/tweets"
    assert req.url.params["tweet_ids"] == ROOT_ID and req.headers["x-api-key"] == TWITTERAPI_KEY

    assert planned_refs(result.graph) == [
        ("tweet:1790000000000000001", 0), ("tweet:1790000000000000002", 1), ("tweet:1790000000000000003", 2)]
    root, q1, q2 = result.graph.groups
    assert (q1.parent_ref, q2.parent_ref) == (root.ref, q1.ref)
    assert root.content is not None and root.account is not None
    assert root.content.platform_key == f"x:{ROOT_ID}" and root.content.subtype == "tweet"
    # account key is the immutable numeric author.id, never the handle
    assert root.account.platform_key == "x:1500000000000000001" and root.account.subtype == "user"
    assert "soldevalice" not in root.account.platform_key.lower()
    assert q1.account is not None and q1.account.platform_key == "x:44196397"
    assert q2.account is not None and q2.account.platform_key == "x:783214"

    raw = fixture_json("x", "tweet_quote_chain.json")["tweets"][0]
    assert root.content.media_urls == [raw["extendedEntities"]["media"][0]["media_url_https"]]
    assert root.account.avatar_url == raw["author"]["profilePicture"]  # byte-for-byte, query included
    assert root.content.outbound_urls == [to_canonical("https://WWW.pepe2.fun/?utm_campaign=launch&ref=abc")]
    assert root.content.outbound_urls == ["https://pepe2.fun?ref=abc"]
    assert root.account.outbound_urls == ["https://alice-project.io"]
    assert q1.content is not None and q1.content.outbound_urls == ["https://docs.example.com/Guide"]
    assert root.content.metrics == {"likes": 10, "retweets": 3, "replies": 2, "quotes": 1, "views": 1200,
                                    "bookmarks": 4}
    assert root.account.metrics["followers"] == 1520
    assert root.content.fields["text"].startswith("launching")


def test_retweet_becomes_child_group() -> None:
    gen, rec = _gen(serve("x", "tweet_retweet.json"))
    result = gen.generate("https://x.com/i/status/1790000000000000010", CTX)
    assert planned_refs(result.graph) == [("tweet:1790000000000000010", 0), ("tweet:1790000000000000011", 1)]
    assert result.graph.groups[1].account is not None
    assert result.graph.groups[1].account.platform_key == "x:44196397"
    assert rec.count == 1


def test_quote_cycle_is_built_faithfully_and_rejected_by_plan() -> None:
    gen, rec = _gen(serve("x", "tweet_quote_cycle.json"))
    with pytest.raises(SocialContractError, match="cycle") as info:
        gen.generate("https://x.com/i/status/1790000000000000021", CTX)
    assert info.value.attempted is True and rec.count == 1
    groups = x.tweet_chain_groups(fixture_json("x", "tweet_quote_cycle.json")["tweets"][0])
    assert [(g.ref, g.parent_ref) for g in groups] == [
        ("tweet:1790000000000000021", "tweet:1790000000000000022"),
        ("tweet:1790000000000000022", "tweet:1790000000000000021"),
    ]
    with pytest.raises(SocialContractError, match="cycle"):
        plan(SocialGraph(groups=groups))


def test_profile_account_only() -> None:
    gen, rec = _gen(serve("x", "user_info.json"))
    result = gen.generate(PROFILE_URL, CTX)
    assert result.attempted and result.requests == 1 and rec.count == 1
    req = rec.requests[0]
    assert req.url.path == "/twitter/user/info" and req.url.params["userName"] == "soldevalice"
    assert len(result.graph.groups) == 1 and len(plan(result.graph)) == 1
    group = result.graph.groups[0]
    assert group.content is None and group.venue is None and group.account is not None
    acc = group.account
    assert acc.platform_key == "x:1500000000000000001"
    assert acc.avatar_url == fixture_json("x", "user_info.json")["data"]["profilePicture"]
    assert acc.outbound_urls == ["https://alice-project.io", "https://docs.alice-project.io/start"]
    assert acc.metrics["statuses"] == 430 and acc.fields["userName"] == "SolDevAlice"


# ------------------------------------------------------------------ zero-call shapes


@pytest.mark.parametrize(
    "url, subtype",
    [
        ("https://x.com/search?q=$SOL", "search"),
        ("https://x.com/intent/tweet?text=gm", "intent"),
        ("https://x.com/intent/follow?screen_name=foo", "intent"),
        ("https://x.com/hashtag/SOL", "hashtag"),
        ("https://x.com/i/communities/1700000000000000000", "community"),
        ("https://x.com/home", "page"),
        ("https://x.com/explore", "page"),
        ("https://x.com/share?text=gm", "intent"),
        ("https://x.com/settings/profile", "page"),
        ("https://x.com/notifications", "page"),
        ("https://x.com/messages", "page"),
    ],
)
def test_zero_call_shapes(url: str, subtype: str) -> None:
    assert to_canonical(url) == url
    gen, rec = _gen(respond(500), key=None)  # no key needed: nothing is fetched
    result = gen.generate(url, CTX)
    assert result.attempted is False and result.requests == 0 and rec.count == 0
    (group,) = result.graph.groups
    assert group.content is not None and group.content.subtype == subtype
    assert group.content.platform_key == f"x:{url}"
    plan(result.graph)


@pytest.mark.parametrize("url", ["https://x.com/soldevalice/lists/123", "https://x.com/i/status/abc", "https://x.com/soldevalice/status",
                                 "https://x.com/some-thing", "https://x.com/status"])
def test_unrecognised_shapes_are_unsupported_without_a_call(url: str) -> None:
    gen, rec = _gen(respond(200, b"{}"))
    expect_error(lambda: gen.generate(url, CTX), ErrorCode.UNSUPPORTED, attempted=False)
    assert rec.count == 0


def test_missing_key_is_upstream_without_a_call() -> None:
    gen, rec = _gen(respond(200), key=None)
    exc = expect_error(lambda: gen.generate(TWEET_URL, CTX), ErrorCode.UPSTREAM, attempted=False)
    assert "TWITTERAPI_IO_KEY" in str(exc) and rec.count == 0


# ------------------------------------------------------------------ failures, both shapes

FETCHABLE = [TWEET_URL, PROFILE_URL]


@pytest.mark.parametrize("url", FETCHABLE)
@pytest.mark.parametrize(
    "handler_factory, code",
    [
        (lambda: serve("x", "error_402.json", 402), ErrorCode.CREDIT_EXHAUSTED),
        (lambda: serve("x", "error_429.json", 429), ErrorCode.RATE_LIMITED),
        (lambda: serve("x", "rate_limited_in_body.json", 200), ErrorCode.RATE_LIMITED),
        (lambda: serve("x", "rate_limited_in_body.json", 400), ErrorCode.RATE_LIMITED),
        (lambda: serve("x", "error_401.json", 401), ErrorCode.UPSTREAM),
        (lambda: serve("x", "error_401.json", 403), ErrorCode.UPSTREAM),
        (lambda: respond(400, {"error": 400, "message": "Bad request"}), ErrorCode.UPSTREAM),
        (lambda: respond(404, b""), ErrorCode.NOT_FOUND),
        (lambda: respond(503, b"upstream down"), ErrorCode.UPSTREAM),
        (read_timeout, ErrorCode.TIMEOUT),
        (malformed, ErrorCode.UPSTREAM),
        (oversized, ErrorCode.UPSTREAM),
        (lambda: respond(200, [1, 2]), ErrorCode.UPSTREAM),
    ],
    ids=["402", "429", "rate-in-200-body", "rate-in-400-body", "401", "403", "400", "404", "503-once",
         "timeout", "malformed", "oversized", "not-an-object"],
)
def test_failures(url: str, handler_factory: object, code: ErrorCode) -> None:
    gen, rec = _gen(handler_factory())  # type: ignore[operator]
    exc = expect_error(lambda: gen.generate(url, CTX), code, attempted=True)
    assert rec.count == 1  # paid: exactly one request, whatever happened
    assert TWITTERAPI_KEY not in str(exc) and TWITTERAPI_KEY not in repr(exc)


@pytest.mark.parametrize("fixture", ["tweet_empty.json", "tweet_status_error.json"])
def test_tweet_not_found(fixture: str) -> None:
    gen, rec = _gen(serve("x", fixture))
    expect_error(lambda: gen.generate(TWEET_URL, CTX), ErrorCode.NOT_FOUND, attempted=True)
    assert rec.count == 1


def test_tweet_response_without_requested_id_is_upstream() -> None:
    gen, rec = _gen(serve("x", "tweet_retweet.json"))
    expect_error(lambda: gen.generate(TWEET_URL, CTX), ErrorCode.UPSTREAM, attempted=True)
    assert rec.count == 1


@pytest.mark.parametrize(
    "fixture, code",
    [("user_suspended.json", ErrorCode.TARGET_BLOCKED), ("user_unavailable_notfound.json", ErrorCode.NOT_FOUND),
     ("user_no_data.json", ErrorCode.NOT_FOUND), ("user_empty_data.json", ErrorCode.NOT_FOUND)],
)
def test_profile_unavailable_and_missing(fixture: str, code: ErrorCode) -> None:
    gen, rec = _gen(serve("x", fixture))
    expect_error(lambda: gen.generate(PROFILE_URL, CTX), code, attempted=True)
    assert rec.count == 1


def test_unknown_unavailable_reason_is_blocked() -> None:
    body = {"data": {"id": "1", "userName": "w", "unavailable": True, "unavailableReason": "Withheld"},
            "status": "success", "msg": "success"}
    gen, _ = _gen(respond(200, body))
    expect_error(lambda: gen.generate(PROFILE_URL, CTX), ErrorCode.TARGET_BLOCKED, attempted=True)


def test_redirect_to_foreign_host_never_carries_the_key() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.twitterapi.io":
            return httpx.Response(302, headers={"location": "https://cdn.elsewhere.example/tweets.json"})
        return httpx.Response(200, content=fixture_bytes("x", "tweet_quote_chain.json"))

    gen, rec = _gen(handler)
    result = gen.generate(TWEET_URL, CTX)
    assert rec.count == 2 and result.requests == 2
    assert rec.requests[0].headers["x-api-key"] == TWITTERAPI_KEY
    assert "x-api-key" not in rec.requests[1].headers
    assert TWITTERAPI_KEY not in str(rec.requests[1].url)


def test_generator_repr_hides_key() -> None:
    gen, _ = _gen(respond(200))
    assert TWITTERAPI_KEY not in repr(gen) and gen.platform is Platform.X


def test_error_messages_are_exceptions_of_the_contract() -> None:
    gen, _ = _gen(serve("x", "error_402.json", 402))
    with pytest.raises(ExternalFetchError) as info:
        gen.generate(PROFILE_URL, CTX)
    assert "twitterapi" in str(info.value) and "402" in str(info.value)
