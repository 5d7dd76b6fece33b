"""The shared Apify client: request shape, timeouts, token scoping, status mapping."""

from __future__ import annotations

import httpx
import pytest
from pydantic import SecretStr

from social_recording.platforms import apify
from social_recording.platforms.base import ErrorCode
from social_recording_tests.platforms.mocks import (
    APIFY_TOKEN,
    Recorder,
    apify_failures,
    expect_error,
    respond,
)


def _client(handler: object, token: str | None = APIFY_TOKEN) -> tuple[apify.ApifyClient, Recorder]:
    rec = Recorder(handler)  # type: ignore[arg-type]
    client = apify.ApifyClient(SecretStr(token) if token else None, transport=rec.transport, sleep=lambda s: None)
    return client, rec


def test_request_shape_and_timeouts() -> None:
    client, rec = _client(respond(200, [{"id": "1"}, {"id": "2"}]))
    run = client.run(apify.TIKTOK_ACTOR, {"postURLs": ["https://tiktok.com/@/video/1"]})
    assert [i["id"] for i in run.items] == ["1", "2"] and run.requests == 1
    (req,) = rec.requests
    assert req.method == "POST"
    assert str(req.url).startswith("https://api.apify.com/v2/acts/clockworks~tiktok-scraper/run-sync-get-dataset-items?")
    assert req.url.params["timeout"] == str(apify.ACTOR_TIMEOUT_S)
    assert req.headers["authorization"] == f"Bearer {APIFY_TOKEN}"
    assert req.headers["content-type"] == "application/json"
    assert rec.json_body() == {"postURLs": ["https://tiktok.com/@/video/1"]}
    # the actor's own timeout stays below our read timeout (seed 000 §6.1: 90 s + 15 s)
    policy = apify.apify_policy()
    assert apify.ACTOR_TIMEOUT_S < policy.read_timeout == 105.0 and policy.connect_timeout == 15.0
    assert policy.paid and policy.attempts == 1
    with pytest.raises(ValueError, match="below"):
        apify.ApifyClient(SecretStr("t"), actor_timeout_s=200)


@pytest.mark.parametrize("name, handler, code", apify_failures(), ids=[f[0] for f in apify_failures()])
def test_status_mapping(name: str, handler: object, code: ErrorCode) -> None:
    client, rec = _client(handler)
    if code == ErrorCode.NOT_FOUND:  # an empty dataset is a valid answer for the client itself
        assert client.run(apify.REDDIT_ACTOR, {}).items == []
        assert rec.count == 1
        return
    exc = expect_error(lambda: client.run(apify.REDDIT_ACTOR, {}), code, attempted=True)
    assert rec.count == 1
    assert APIFY_TOKEN not in str(exc) and APIFY_TOKEN not in repr(exc)


def test_missing_token_makes_no_request() -> None:
    client, rec = _client(respond(200, []), token=None)
    exc = expect_error(lambda: client.run(apify.TIKTOK_ACTOR, {}), ErrorCode.UPSTREAM, attempted=False)
    assert "APIFY_TOKEN" in str(exc) and rec.count == 0


def test_redirect_to_foreign_host_drops_authorization() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.apify.com":
            return httpx.Response(307, headers={"location": "https://storage.example.org/items.json"})
        return httpx.Response(200, json=[{"id": "9"}])

    client, rec = _client(handler)
    assert client.run(apify.TIKTOK_ACTOR, {"a": 1}).items == [{"id": "9"}]
    assert rec.requests[0].headers["authorization"] == f"Bearer {APIFY_TOKEN}"
    assert "authorization" not in rec.requests[1].headers
    assert rec.requests[1].method == "POST"  # 307 keeps the method and body
    assert APIFY_TOKEN not in repr(client)


@pytest.mark.parametrize(
    "item, code",
    [
        ({"id": "1"}, None),
        ({"error": None, "id": "1"}, None),
        ({"error": "not_found", "errorDescription": "Page not found"}, ErrorCode.NOT_FOUND),
        ({"error": "Page not found"}, ErrorCode.NOT_FOUND),
        ({"error": "no_items", "errorDescription": "Empty or private data for provided input"}, ErrorCode.NOT_FOUND),
        ({"error": "private"}, ErrorCode.TARGET_BLOCKED),
        ({"error": "restricted_page", "errorDescription": "Page is private or restricted"}, ErrorCode.TARGET_BLOCKED),
        ({"error": True, "errorDescription": "This account is private"}, ErrorCode.TARGET_BLOCKED),
        ({"error": {"type": "x", "message": "profile not found"}}, ErrorCode.NOT_FOUND),
        ({"error": "rate limited by instagram, try later"}, ErrorCode.RATE_LIMITED),
        ({"error": "Login required / blocked by Instagram"}, ErrorCode.UPSTREAM),
        ({"error": "weird_failure"}, ErrorCode.UPSTREAM),
    ],
)
def test_error_item_classification(item: dict[str, object], code: ErrorCode | None) -> None:
    assert apify.error_item_code(item) == code
