"""The shared Apify client: the asynchronous run flow (start, status reads, dataset read), timeouts,
token scoping, status mapping, and resuming a run an earlier call started."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from pydantic import SecretStr

from social_recording.platforms.apify import client as apify
from social_recording.platforms.base import ErrorCode
from social_recording_tests.platforms.mocks import (
    APIFY_TOKEN,
    RUN_REQUESTS,
    ApifyApi,
    ApifyScript,
    apify_failures,
    expect_error,
    respond,
)

ITEMS = respond(200, [{"id": "1"}, {"id": "2"}])
OLD_RUN = "RunFromEarlier001"


class Memory:
    """A PaidRequests that remembers submissions and logs every call into a shared event list."""

    def __init__(self, events: list[str], previous: str | None = None) -> None:
        self.events = events
        self._previous = previous
        self.retentions: list[timedelta] = []

    def previous(self, provider: str, retention: timedelta) -> str | None:
        self.events.append(f"previous {provider}")
        self.retentions.append(retention)
        return self._previous

    def submitted(self, provider: str, request_id: str) -> None:
        self.events.append(f"submitted {provider} {request_id}")


def _client(script: ApifyScript, token: str | None = APIFY_TOKEN,
            events: list[str] | None = None) -> tuple[apify.ApifyClient, ApifyApi]:
    api = ApifyApi(script)
    if events is not None:
        route = api._route

        def logged(request: httpx.Request) -> httpx.Response:
            events.append(f"{request.method} {request.url.path}")
            return route(request)

        api._handler = logged
    client = apify.ApifyClient(SecretStr(token) if token else None, transport=api.transport, sleep=lambda s: None)
    return client, api


def test_request_shape_and_timeouts() -> None:
    client, api = _client(ApifyScript(ITEMS))
    run = client.run(apify.TIKTOK_ACTOR, {"postURLs": ["https://tiktok.com/@/video/1"]})
    assert [i["id"] for i in run.items] == ["1", "2"] and run.requests == RUN_REQUESTS
    assert run.run_id == ApifyApi.RUN_ID
    start, status, items = api.requests
    assert start.method == "POST" and start.url.path == "/v2/acts/clockworks~tiktok-scraper/runs"
    assert start.url.params["timeout"] == str(apify.ACTOR_TIMEOUT_S)
    assert start.headers["content-type"] == "application/json"
    assert api.json_body() == {"postURLs": ["https://tiktok.com/@/video/1"]}
    assert (status.method, status.url.path) == ("GET", f"/v2/actor-runs/{ApifyApi.RUN_ID}")
    assert status.url.params["waitForFinish"] == "60"
    assert (items.method, items.url.path) == ("GET", f"/v2/datasets/{ApifyApi.DATASET_ID}/items")
    assert dict(items.url.params) == {"clean": "true", "format": "json"}
    for request in api.requests:
        assert request.headers["authorization"] == f"Bearer {APIFY_TOKEN}"
    # the start is billed: one attempt; the reads are free (retried) and outlast a held status read
    start_policy, read_policy = apify.start_policy(), apify.read_policy()
    assert start_policy.paid and start_policy.attempts == 1 and start_policy.connect_timeout == 15.0
    assert not read_policy.paid and read_policy.attempts > 1
    assert read_policy.read_timeout > apify.WAIT_FOR_FINISH_S == 60
    assert apify.ACTOR_TIMEOUT_S < apify.MAX_STATUS_READS * apify.WAIT_FOR_FINISH_S
    with pytest.raises(ValueError, match="wait budget"):
        apify.ApifyClient(SecretStr("t"), actor_timeout_s=200)


def test_status_reads_until_the_run_finished() -> None:
    client, api = _client(ApifyScript(ITEMS, statuses=("READY", "RUNNING", "SUCCEEDED")))
    run = client.run(apify.REDDIT_ACTOR, {})
    assert len(run.items) == 2 and run.requests == 5 and api.count == 1


@pytest.mark.parametrize("name, script, code", apify_failures(), ids=[f[0] for f in apify_failures()])
def test_status_mapping(name: str, script: ApifyScript, code: ErrorCode) -> None:
    client, api = _client(script)
    if code == ErrorCode.NOT_FOUND:  # an empty dataset is a valid answer for the client itself
        assert client.run(apify.REDDIT_ACTOR, {}).items == []
        assert api.count == 1
        return
    exc = expect_error(lambda: client.run(apify.REDDIT_ACTOR, {}), code, attempted=True)
    assert api.count == 1  # the billed start: never repeated, whatever failed after it
    assert APIFY_TOKEN not in str(exc) and APIFY_TOKEN not in repr(exc)


def test_missing_token_makes_no_request() -> None:
    client, api = _client(ApifyScript(ITEMS), token=None)
    exc = expect_error(lambda: client.run(apify.TIKTOK_ACTOR, {}), ErrorCode.UPSTREAM, attempted=False)
    assert "APIFY_TOKEN" in str(exc) and api.requests == []


def test_redirect_to_foreign_host_drops_authorization() -> None:
    def items(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.apify.com":
            return httpx.Response(307, headers={"location": "https://storage.example.org/items.json"})
        return httpx.Response(200, json=[{"id": "9"}])

    client, api = _client(ApifyScript(items))
    assert client.run(apify.TIKTOK_ACTOR, {"a": 1}).items == [{"id": "9"}]
    assert api.requests[2].headers["authorization"] == f"Bearer {APIFY_TOKEN}"
    assert api.requests[3].url.host == "storage.example.org" and "authorization" not in api.requests[3].headers
    assert APIFY_TOKEN not in repr(client)


# ------------------------------------------------------------------ resumable runs


def test_a_start_is_recorded_before_the_first_status_read() -> None:
    events: list[str] = []
    client, _ = _client(ApifyScript(ITEMS), events=events)
    memory = Memory(events)
    client.run(apify.TIKTOK_ACTOR, {"postURLs": ["https://tiktok.com/@/video/1"]}, memory)
    assert events == [
        "previous apify",
        "POST /v2/acts/clockworks~tiktok-scraper/runs",
        f"submitted apify {ApifyApi.RUN_ID}",
        f"GET /v2/actor-runs/{ApifyApi.RUN_ID}",
        f"GET /v2/datasets/{ApifyApi.DATASET_ID}/items",
    ]
    assert memory.retentions == [apify.APIFY_RETENTION] and timedelta(days=7) >= apify.APIFY_RETENTION


def test_a_failed_start_records_nothing() -> None:
    events: list[str] = []
    client, _ = _client(ApifyScript(start=respond(402, {})), events=events)
    expect_error(lambda: client.run(apify.TIKTOK_ACTOR, {}, Memory(events)), ErrorCode.CREDIT_EXHAUSTED,
                 attempted=True)
    assert not any(e.startswith("submitted") for e in events)


def test_a_run_started_earlier_is_resumed_without_a_new_start() -> None:
    events: list[str] = []
    client, api = _client(ApifyScript(ITEMS, statuses=("RUNNING", "SUCCEEDED")), events=events)
    run = client.run(apify.TIKTOK_ACTOR, {"postURLs": ["https://tiktok.com/@/video/1"]}, Memory(events, OLD_RUN))
    assert api.count == 0  # nothing paid
    assert [i["id"] for i in run.items] == ["1", "2"] and run.requests == 3 and run.run_id == ApifyApi.RUN_ID
    assert events[1] == f"GET /v2/actor-runs/{OLD_RUN}" and not any(e.startswith("submitted") for e in events)


def test_a_resumed_run_still_running_times_out_and_stays_resumable() -> None:
    events: list[str] = []
    client, api = _client(ApifyScript(ITEMS, statuses=("RUNNING",)), events=events)
    exc = expect_error(lambda: client.run(apify.TIKTOK_ACTOR, {}, Memory(events, OLD_RUN)), ErrorCode.TIMEOUT,
                       attempted=True)
    assert "resumes" in str(exc) and api.count == 0
    assert events.count(f"GET /v2/actor-runs/{OLD_RUN}") == apify.MAX_STATUS_READS


@pytest.mark.parametrize("old_run", [
    httpx.Response(404, json={"error": {"type": "record-not-found", "message": "Actor run was not found"}}),
    httpx.Response(200, json={"data": ApifyApi.run_object("FAILED")}),
    httpx.Response(200, json={"data": ApifyApi.run_object("TIMED-OUT")}),
], ids=["gone", "failed", "timed-out"])
def test_a_resumed_run_without_a_result_is_replaced_by_one_new_start(old_run: httpx.Response) -> None:
    events: list[str] = []

    def status(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(OLD_RUN):
            return old_run
        return httpx.Response(200, json={"data": ApifyApi.run_object("SUCCEEDED")})

    client, api = _client(ApifyScript(ITEMS, status=status), events=events)
    run = client.run(apify.TIKTOK_ACTOR, {"postURLs": ["https://tiktok.com/@/video/1"]}, Memory(events, OLD_RUN))
    assert api.count == 1 and len(run.items) == 2
    assert f"submitted apify {ApifyApi.RUN_ID}" in events


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
