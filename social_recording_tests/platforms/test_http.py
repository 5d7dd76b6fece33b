"""The shared HTTP layer: retries (free 3 / paid 1), size cap, redirect auth scoping, secrets."""

from __future__ import annotations

import httpx
import pytest

from social_recording.platforms.base import ErrorCode, ExternalFetchError
from social_recording.platforms.http import MAX_RESPONSE_BYTES, HttpPolicy, HttpResponse, ProviderHttp
from social_recording_tests.platforms.mocks import Recorder, expect_error, respond

KEY = "sk-live-VERYSECRET-123"


def _client(rec: Recorder, policy: HttpPolicy, delays: list[float] | None = None, **kw: object) -> ProviderHttp:
    sleeps = delays if delays is not None else []
    return ProviderHttp(policy, transport=rec.transport, sleep=sleeps.append, **kw)  # type: ignore[arg-type]


def _sequence(*responses: httpx.Response | Exception) -> Recorder:
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        item = queue.pop(0)
        if isinstance(item, Exception):
            raise item
        return item

    return Recorder(handler)


def test_policies() -> None:
    free = HttpPolicy.free("github")
    paid = HttpPolicy.paid_once("apify", connect_timeout=15.0, read_timeout=105.0)
    assert (free.attempts, free.paid, free.backoff_s, free.max_bytes) == (3, False, 0.8, MAX_RESPONSE_BYTES)
    assert (paid.attempts, paid.paid, paid.read_timeout) == (1, True, 105.0)
    with pytest.raises(ValueError, match="attempts=1"):
        HttpPolicy("x", True, 5.0, 5.0, attempts=2)
    with pytest.raises(ValueError, match="attempts"):
        HttpPolicy("x", False, 5.0, 5.0, attempts=0)


def test_free_retries_three_times_with_backoff_then_upstream() -> None:
    rec = _sequence(httpx.Response(503), httpx.Response(502), httpx.Response(500))
    delays: list[float] = []
    http = _client(rec, HttpPolicy.free("github"), delays, auth_hosts=["api.github.com"])
    exc = expect_error(lambda: http.request("GET", "https://api.github.com/x"), ErrorCode.UPSTREAM, attempted=True)
    assert rec.count == 3 and http.requests_made == 3
    assert delays == [0.8, 0.8]
    assert "HTTP 500" in str(exc) and "github" in str(exc)


def test_free_retry_recovers() -> None:
    rec = _sequence(httpx.ConnectError("refused"), httpx.Response(200, json={"ok": True}))
    delays: list[float] = []
    http = _client(rec, HttpPolicy.free("github"), delays, auth_hosts=[])
    resp = http.request("GET", "https://api.github.com/x")
    assert resp.status == 200 and resp.json() == {"ok": True} and resp.requests == 2
    assert delays == [0.8] and rec.count == 2


def test_free_timeouts_end_in_timeout() -> None:
    rec = _sequence(*(httpx.ReadTimeout("slow") for _ in range(3)))
    http = _client(rec, HttpPolicy.free("youtube"), auth_hosts=[])
    expect_error(lambda: http.request("GET", "https://www.googleapis.com/v"), ErrorCode.TIMEOUT, attempted=True)
    assert rec.count == 3


@pytest.mark.parametrize(
    "failure, code",
    [(httpx.Response(503), ErrorCode.UPSTREAM), (httpx.ReadTimeout("slow"), ErrorCode.TIMEOUT),
     (httpx.ConnectError("refused"), ErrorCode.UPSTREAM)],
)
def test_paid_makes_exactly_one_request(failure: httpx.Response | Exception, code: ErrorCode) -> None:
    rec = _sequence(failure, httpx.Response(200))
    delays: list[float] = []
    http = _client(rec, HttpPolicy.paid_once("apify"), delays, auth_hosts=[])
    expect_error(lambda: http.request("POST", "https://api.apify.com/v2/acts/a~b/run", json={}), code, attempted=True)
    assert rec.count == 1 and delays == []


def test_4xx_and_429_are_returned_not_retried() -> None:
    for status in (400, 404, 429, 402):
        rec = _sequence(httpx.Response(status, json={"e": status}))
        http = _client(rec, HttpPolicy.free("github"), auth_hosts=[])
        resp = http.request("GET", "https://api.github.com/x")
        assert resp.status == status and rec.count == 1


def test_size_cap_by_content_length() -> None:
    rec = Recorder(respond(200, b"x" * (MAX_RESPONSE_BYTES + 1)))
    http = _client(rec, HttpPolicy.free("github"), auth_hosts=[])
    exc = expect_error(lambda: http.request("GET", "https://api.github.com/x"), ErrorCode.UPSTREAM, attempted=True)
    assert f"larger than {MAX_RESPONSE_BYTES} bytes" in str(exc)
    assert rec.count == 1  # not a transient failure: no retry


def test_size_cap_while_streaming_without_content_length() -> None:
    def chunks() -> object:
        for _ in range(10):
            yield b"y" * 1000

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=chunks())  # type: ignore[arg-type]

    rec = Recorder(handler)
    policy = HttpPolicy("tiny", False, 1.0, 1.0, attempts=3, max_bytes=4096)
    http = _client(rec, policy, auth_hosts=[])
    exc = expect_error(lambda: http.request("GET", "https://example.com/big"), ErrorCode.UPSTREAM, attempted=True)
    assert "larger than 4096 bytes" in str(exc) and rec.count == 1


def test_body_under_cap_is_read_whole() -> None:
    rec = Recorder(respond(200, b"z" * 4096))
    http = _client(rec, HttpPolicy("tiny", False, 1.0, 1.0, attempts=1, max_bytes=4096), auth_hosts=[])
    assert len(http.request("GET", "https://example.com/ok").body) == 4096


def test_redirect_to_foreign_host_drops_header_and_param_keys() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.provider.com":
            return httpx.Response(302, headers={"location": f"https://evil.example.net/land?key={KEY}&q=1"})
        return httpx.Response(200, json={"landed": True})

    rec = Recorder(handler)
    http = _client(rec, HttpPolicy.free("youtube"), auth_hosts=["api.provider.com"],
                   auth_headers={"X-API-Key": KEY, "Authorization": f"Bearer {KEY}"}, auth_params={"key": KEY})
    resp = http.request("GET", "https://api.provider.com/v1/thing", params={"id": "7"})
    assert resp.status == 200 and resp.json() == {"landed": True}
    first, second = rec.requests
    assert first.headers["x-api-key"] == KEY and first.url.params["key"] == KEY and first.url.params["id"] == "7"
    assert second.url.host == "evil.example.net"
    assert "x-api-key" not in second.headers and "authorization" not in second.headers
    assert "key" not in second.url.params and KEY not in str(second.url) and second.url.params["q"] == "1"
    assert KEY not in resp.url and resp.requests == 2 and http.requests_made == 2


def test_redirect_within_auth_host_keeps_key_but_not_on_https_downgrade() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/a":
            return httpx.Response(301, headers={"location": "/b"})
        if request.url.path == "/b":
            return httpx.Response(307, headers={"location": "http://api.provider.com/c"})
        return httpx.Response(200)

    rec = Recorder(handler)
    http = _client(rec, HttpPolicy.free("p"), auth_hosts=["api.provider.com"], auth_headers={"X-API-Key": KEY})
    http.request("GET", "https://api.provider.com/a")
    assert [r.headers.get("x-api-key") for r in rec.requests] == [KEY, KEY, None]


def test_too_many_redirects_and_bad_schemes() -> None:
    rec = Recorder(lambda r: httpx.Response(302, headers={"location": "https://a.example.com/again"}))
    http = _client(rec, HttpPolicy.free("p"), auth_hosts=[], max_redirects=3)
    expect_error(lambda: http.request("GET", "https://a.example.com/"), ErrorCode.UPSTREAM, attempted=True)
    assert rec.count == 4
    rec2 = Recorder(lambda r: httpx.Response(302, headers={"location": "ftp://files.example.com/x"}))
    http2 = _client(rec2, HttpPolicy.free("p"), auth_hosts=[])
    # a non-http redirect is refused by the redirect guard (never followed, never retried)
    expect_error(lambda: http2.request("GET", "https://a.example.com/"), ErrorCode.UNSAFE_REDIRECT, attempted=True)
    assert rec2.count == 1


def test_post_body_and_303_becomes_get() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(303, headers={"location": "/result"})
        return httpx.Response(200, json=[1])

    rec = Recorder(handler)
    http = _client(rec, HttpPolicy.paid_once("p"), auth_hosts=[])
    assert http.request("POST", "https://a.example.com/run", json={"in": 1}).json() == [1]
    assert [r.method for r in rec.requests] == ["POST", "GET"]
    assert rec.requests[0].content == b'{"in":1}' and rec.requests[1].content == b""


def test_key_never_in_exception_text() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"failed to reach {request.url}", request=request)

    rec = Recorder(handler)
    http = _client(rec, HttpPolicy.free("youtube"), auth_hosts=["www.googleapis.com"],
                   auth_params={"key": KEY}, auth_headers={"Authorization": f"Bearer {KEY}"})
    exc = expect_error(lambda: http.request("GET", "https://www.googleapis.com/youtube/v3/videos"),
                       ErrorCode.UPSTREAM, attempted=True)
    assert KEY in str(rec.requests[0].url)  # the key really was sent...
    for text in (str(exc), repr(exc), repr(http), str(exc.__cause__), str(exc.__context__) if not exc.__suppress_context__ else ""):
        assert KEY not in text  # ...but never shows up in what we raise or print
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)


def test_key_redacted_even_if_a_message_would_carry_it() -> None:
    http = ProviderHttp(HttpPolicy.free("p"), auth_hosts=["h.example.com"], auth_headers={"Authorization": f"Bearer {KEY}"})
    assert KEY not in http._redact(f"oops {KEY} and Bearer {KEY}")


def test_non_http_url_raises_before_any_request() -> None:
    rec = Recorder(respond(200))
    http = _client(rec, HttpPolicy.free("p"), auth_hosts=[])
    expect_error(lambda: http.request("GET", "ftp://files.example.com/x"), ErrorCode.UPSTREAM, attempted=False)
    expect_error(lambda: http.request("GET", "/relative/only"), ErrorCode.UPSTREAM, attempted=False)
    assert rec.count == 0


def test_response_json_malformed_is_upstream() -> None:
    resp = HttpResponse(200, httpx.Headers(), b"{nope", "https://a.example.com", "svc")
    with pytest.raises(ExternalFetchError) as info:
        resp.json()
    assert info.value.code == ErrorCode.UPSTREAM and "malformed JSON from svc" in str(info.value)
    assert HttpResponse(200, httpx.Headers(), "é".encode(), "u").text == "é"


def test_attempted_is_per_call_on_a_shared_client() -> None:
    rec = Recorder(respond(200, b"{}"))
    http = _client(rec, HttpPolicy.free("p"), auth_hosts=[])
    http.request("GET", "https://a.example.com/")
    # A later call that fails before sending must not inherit the earlier call's request.
    expect_error(lambda: http.request("GET", "ftp://files.example.com/x"), ErrorCode.UPSTREAM, attempted=False)
    assert http.requests_made == 1
