"""Web generator: exactly one paid urlscan submit (never retried), a bounded poll with recorded
(never real) sleeps, RDAP as enrichment that cannot fail an ok scan, the API-Key only to urlscan.io."""

from __future__ import annotations

import httpx
import pytest

from social_recording.domain.graph import ObjectKind, plan, planned_links
from social_recording.domain.urls import Platform
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    Generator,
)
from social_recording.platforms.http import MAX_RESPONSE_BYTES
from social_recording.platforms.web.generator import (
    INITIAL_WAIT_S,
    MAX_POLLS,
    POLL_INTERVAL_S,
    RDAP_BASE,
    URLSCAN_BASE,
    make_generator,
)
from social_recording_tests.platforms.mocks import (
    MINT,
    ScriptedProvider,
    Sleeps,
    fixture_json,
    fixture_response,
    generate_error,
    json_response,
    oversized,
    read_timeout,
    scripted_generator,
)

KEY = "urlscan-test-key-6f1e2d3c"
CTX = GenerateContext(token_address=MINT)
URL = "https://example-token.io/landing"
UUID = "0196d976-07f6-7aae-8a57-aa019145f31c"
SUBMIT = f"{URLSCAN_BASE}/scan/"
RESULT = f"{URLSCAN_BASE}/result/{UUID}/"
RDAP = f"{RDAP_BASE}/domain/example-token.io"
REGISTRY_RDAP = "https://rdap.identitydigital.services/rdap/domain/example-token.io"


def _gen(provider: ScriptedProvider, sleeps: Sleeps | None = None, key: str | None = KEY) -> Generator:
    return scripted_generator(make_generator, provider, sleeps, urlscan_api_key=key)


def _fail(gen: Generator, url: str = URL) -> ExternalFetchError:
    return generate_error(gen, url, CTX, secret=KEY)


def _ok_provider(*result_answers: httpx.Response | Exception) -> ScriptedProvider:
    """Submit ok; the result answers given (default: ready at once); rdap.org redirects to the registry."""
    answers = result_answers or (fixture_response("web", "result.json"),)
    return (
        ScriptedProvider()
        .on("POST", SUBMIT, fixture_response("web", "submit_ok.json"))
        .on("GET", RESULT, *answers)
        .on("GET", RDAP, httpx.Response(302, headers={"location": REGISTRY_RDAP}))
        .on("GET", REGISTRY_RDAP, fixture_response("web", "rdap.json"))
    )


def _submits(provider: ScriptedProvider) -> int:
    return sum(1 for r in provider.requests if r.method == "POST")


# ------------------------------------------------------------------------------------ success


def test_scan_poll_rdap_page_content_keyed_by_the_canonical_url() -> None:
    provider = _ok_provider(
        fixture_response("web", "result_not_ready.json", 404),
        fixture_response("web", "result_not_ready.json", 404),
        fixture_response("web", "result.json"),
    )
    sleeps = Sleeps()
    gen = _gen(provider, sleeps)
    assert gen.platform is Platform.WEB
    result = gen.generate(URL, CTX)

    # 1 paid submit + 3 polls + rdap.org + registry
    assert result.attempted is True and result.requests == 6 and len(provider.requests) == 6
    assert _submits(provider) == 1
    submit = provider.requests[0]
    assert submit.headers["api-key"] == KEY
    assert httpx.Response(200, content=submit.content).json() == {"url": URL, "visibility": "unlisted"}
    assert sleeps.delays == [INITIAL_WAIT_S, POLL_INTERVAL_S, POLL_INTERVAL_S]

    links = planned_links(plan(result.graph))
    assert [(link.kind, link.depth) for link in links] == [(ObjectKind.CONTENT, 0)]
    page = result.graph.groups[0].content
    assert page is not None
    assert page.platform_key == f"web:{URL}"
    assert page.subtype == "page"
    f = page.fields
    assert f["title"] == "Example Token \u2014 the future"
    assert f["domain"] == "app.example-token.io" and f["apex_domain"] == "example-token.io"
    assert f["ip"] == "104.21.12.34" and f["country"] == "US" and f["server"] == "cloudflare"
    assert f["http_status"] == "200"
    assert f["tls_issuer"] == "WE1" and f["tls_valid_days"] == 89.0 and f["tls_age_days"] == 12.0
    assert f["verdict_score"] == 0.0 and f["malicious"] is False
    assert f["registration_date"] == "2025-04-30T11:22:33Z" and f["rdap_status"] == "ok"
    assert f["scan_uuid"] == UUID
    # the screenshot exactly as received; the redirect target is an outbound link (canonical)
    assert page.media_urls == [f"https://urlscan.io/screenshots/{UUID}.png"]
    assert page.icon_url is None
    assert page.outbound_urls == ["https://app.example-token.io/home?ref=scan"]


def test_api_key_only_to_urlscan_never_to_rdap() -> None:
    provider = _ok_provider()
    _gen(provider).generate(URL, CTX)
    for request in provider.requests:
        if request.url.host == "urlscan.io":
            assert request.headers["api-key"] == KEY
        else:
            assert "api-key" not in request.headers
            assert KEY not in str(request.url)
    assert {r.url.host for r in provider.requests} == {
        "urlscan.io",
        "rdap.org",
        "rdap.identitydigital.services",
    }
    assert KEY not in repr(_gen(provider))


@pytest.mark.parametrize(
    ("rdap_answers", "status"),
    [
        ((fixture_response("web", "rdap_not_found.json", 404),), "not_found"),
        ((httpx.Response(503),), "error"),
        ((read_timeout(),), "error"),
        ((httpx.Response(200, content=b"not json"),), "error"),
        (
            (json_response(200, {"events": [{"eventAction": "expiration", "eventDate": "2030-01-01"}]}),),
            "no_registration_event",
        ),
    ],
)
def test_rdap_failure_never_fails_an_ok_scan(
    rdap_answers: tuple[httpx.Response | Exception, ...], status: str
) -> None:
    provider = (
        ScriptedProvider()
        .on("POST", SUBMIT, fixture_response("web", "submit_ok.json"))
        .on("GET", RESULT, fixture_response("web", "result.json"))
        .on("GET", RDAP, *rdap_answers)
    )
    result = _gen(provider).generate(URL, CTX)
    page = result.graph.groups[0].content
    assert page is not None
    assert page.fields["registration_date"] is None
    assert page.fields["rdap_status"] == status
    assert _submits(provider) == 1
    assert result.attempted is True


def test_rdap_free_retries_then_gives_up_quietly() -> None:
    provider = (
        ScriptedProvider()
        .on("POST", SUBMIT, fixture_response("web", "submit_ok.json"))
        .on("GET", RESULT, fixture_response("web", "result.json"))
        .on("GET", RDAP, httpx.Response(503))
    )
    result = _gen(provider).generate(URL, CTX)
    assert provider.count(host="rdap.org") == 3  # free provider: 3 attempts
    assert _submits(provider) == 1 and provider.count(path=f"/api/v1/result/{UUID}/") == 1
    assert result.requests == 5


def test_ip_host_skips_rdap() -> None:
    body = fixture_json("web", "result.json")
    body["task"]["apexDomain"] = "203.0.113.9"
    body["page"]["apexDomain"] = "203.0.113.9"
    provider = (
        ScriptedProvider()
        .on("POST", SUBMIT, fixture_response("web", "submit_ok.json"))
        .on("GET", RESULT, json_response(200, body))
    )
    result = _gen(provider).generate("https://203.0.113.9/login", CTX)
    assert provider.count(host="rdap.org") == 0 and result.requests == 2
    page = result.graph.groups[0].content
    assert page is not None and page.fields["rdap_status"] == "skipped"


# ------------------------------------------------------------------------------------ no call


def test_missing_key_fails_without_a_call() -> None:
    provider = ScriptedProvider()
    err = _fail(_gen(provider, key=None))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is False
    assert "URLSCAN_API_KEY" in str(err)
    assert provider.requests == []


# ------------------------------------------------------------------------------------ submit failures


@pytest.mark.parametrize(
    ("fixture", "code"),
    [
        ("submit_dns_error.json", ErrorCode.NOT_FOUND),
        ("submit_blacklisted.json", ErrorCode.TARGET_BLOCKED),
        ("submit_bad_request.json", ErrorCode.UPSTREAM),
    ],
)
def test_submit_400_mapped_by_message(fixture: str, code: ErrorCode) -> None:
    provider = ScriptedProvider().on("POST", SUBMIT, fixture_response("web", fixture, 400))
    err = _fail(_gen(provider))
    assert err.code is code and err.attempted is True
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"x-rate-limit-window": "minute", "x-rate-limit-remaining": "0"}, ErrorCode.RATE_LIMITED),
        ({}, ErrorCode.RATE_LIMITED),
        ({"x-rate-limit-window": "day", "x-rate-limit-remaining": "0"}, ErrorCode.CREDIT_EXHAUSTED),
    ],
)
def test_submit_429_rate_limited_or_daily_quota_exhausted(headers: dict[str, str], code: ErrorCode) -> None:
    provider = ScriptedProvider().on(
        "POST", SUBMIT, fixture_response("web", "rate_limited.json", 429, headers)
    )
    err = _fail(_gen(provider))
    assert err.code is code and err.attempted is True
    assert len(provider.requests) == 1


def test_submit_402_is_credit_exhausted() -> None:
    provider = ScriptedProvider().on("POST", SUBMIT, json_response(402, {"message": "Payment required"}))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.CREDIT_EXHAUSTED and err.attempted is True


def test_submit_401_bad_key_is_upstream() -> None:
    provider = ScriptedProvider().on(
        "POST", SUBMIT, json_response(401, {"message": "API key invalid", "status": 401})
    )
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True


def test_submit_without_uuid_is_upstream() -> None:
    provider = ScriptedProvider().on("POST", SUBMIT, json_response(200, {"message": "Submission successful"}))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 1


# ------------------------------------------------------------------------------------ poll failures


def test_poll_budget_spent_is_timeout_after_exactly_max_polls() -> None:
    provider = _ok_provider(fixture_response("web", "result_not_ready.json", 404))
    sleeps = Sleeps()
    err = _fail(_gen(provider, sleeps))
    assert err.code is ErrorCode.TIMEOUT and err.attempted is True
    assert _submits(provider) == 1
    assert provider.count(path=f"/api/v1/result/{UUID}/") == MAX_POLLS
    assert sleeps.delays == [INITIAL_WAIT_S] + [POLL_INTERVAL_S] * (MAX_POLLS - 1)
    assert provider.count(host="rdap.org") == 0


def test_slow_poll_counts_as_a_spent_poll_then_ready() -> None:
    provider = _ok_provider(read_timeout(), fixture_response("web", "result.json"))
    result = _gen(provider).generate(URL, CTX)
    assert _submits(provider) == 1
    assert provider.count(path=f"/api/v1/result/{UUID}/") == 2
    assert result.graph.groups[0].content is not None


def test_poll_429_is_rate_limited() -> None:
    provider = _ok_provider(fixture_response("web", "rate_limited.json", 429))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.RATE_LIMITED and err.attempted is True
    assert len(provider.requests) == 2


def test_poll_5xx_is_upstream_and_submit_not_repeated() -> None:
    provider = _ok_provider(httpx.Response(502))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert _submits(provider) == 1 and len(provider.requests) == 2


def test_result_malformed_json_is_upstream() -> None:
    provider = _ok_provider(httpx.Response(200, content=b'{"task": '))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 2


def test_result_oversized_is_upstream() -> None:
    provider = _ok_provider(oversized(MAX_RESPONSE_BYTES + 1))
    err = _fail(_gen(provider))
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert _submits(provider) == 1 and len(provider.requests) == 2


def test_result_redirected_to_a_foreign_host_does_not_carry_the_api_key() -> None:
    cdn = "https://cdn.example.net/results/scan.json"
    provider = _ok_provider(httpx.Response(302, headers={"location": cdn})).on(
        "GET", cdn, fixture_response("web", "result.json")
    )
    result = _gen(provider).generate(URL, CTX)
    assert result.graph.groups[0].content is not None
    (foreign,) = [r for r in provider.requests if r.url.host == "cdn.example.net"]
    assert "api-key" not in foreign.headers
    assert all(r.headers.get("api-key") == KEY for r in provider.requests if r.url.host == "urlscan.io")


# ------------------------------------------------------------------------------------ resumable scans


class _Memory:
    """A PaidRequests recording the order of events against the provider's requests."""

    def __init__(self, provider: ScriptedProvider, previous: str | None = None) -> None:
        self._provider = provider
        self._previous = previous
        self.events: list[str] = []
        self.retentions: list[object] = []

    def _mark(self, event: str) -> None:
        self.events.extend(f"{r.method} {r.url.path}" for r in self._provider.requests[self._seen():])
        self.events.append(event)

    def _seen(self) -> int:
        return sum(1 for e in self.events if e.startswith(("GET", "POST")))

    def previous(self, provider: str, retention: object) -> str | None:
        self._mark(f"previous {provider}")
        self.retentions.append(retention)
        return self._previous

    def submitted(self, provider: str, request_id: str) -> None:
        self._mark(f"submitted {provider} {request_id}")


def test_a_submission_is_recorded_before_the_first_poll() -> None:
    from social_recording.platforms.web.generator import URLSCAN_RETENTION

    provider = _ok_provider(fixture_response("web", "result_not_ready.json", 404), fixture_response("web", "result.json"))
    memory = _Memory(provider)
    _gen(provider).generate(URL, GenerateContext(token_address=MINT, requests=memory))
    assert memory.events == ["previous urlscan", "POST /api/v1/scan/", f"submitted urlscan {UUID}"]
    assert [r.method for r in provider.requests[1:3]] == ["GET", "GET"]  # the polls came after
    assert memory.retentions == [URLSCAN_RETENTION]


def test_a_scan_submitted_earlier_is_polled_without_a_new_submission() -> None:
    provider = _ok_provider(fixture_response("web", "result.json"))
    sleeps = Sleeps()
    memory = _Memory(provider, previous=UUID)
    result = _gen(provider, sleeps).generate(URL, GenerateContext(token_address=MINT, requests=memory))
    assert _submits(provider) == 0  # nothing paid again
    assert result.graph.groups[0].content is not None
    assert result.graph.groups[0].content.fields["scan_uuid"] == UUID
    assert result.attempted is True and result.requests == 3  # the poll and RDAP's two hops
    assert sleeps.delays == []  # a resumed scan is polled at once
    assert not any(e.startswith("submitted") for e in memory.events)


def test_a_resumed_scan_that_never_answers_times_out_without_a_submission() -> None:
    provider = _ok_provider(fixture_response("web", "result_not_ready.json", 404))
    memory = _Memory(provider, previous=UUID)
    gen = _gen(provider)
    with pytest.raises(ExternalFetchError) as info:
        gen.generate(URL, GenerateContext(token_address=MINT, requests=memory))
    assert info.value.code is ErrorCode.TIMEOUT and info.value.attempted is True
    assert _submits(provider) == 0 and len(provider.requests) == MAX_POLLS
