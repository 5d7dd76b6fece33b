"""The client core's parts: retry policies (tenacity, injectable sleep), the capped reader, the
limiter hook (acquire before each request, penalise on a 429 that names a wait), and `Network`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from social_recording.outbound.limits import NO_LIMIT, retry_after_seconds
from social_recording.outbound.network import Network, unwrap
from social_recording.outbound.observe import CallVetoed
from social_recording.outbound.reader import ResponseTooLarge, read_capped
from social_recording.outbound.retry import (
    FREE_PROVIDER,
    PAID_PROVIDER,
    TRACKER,
    RetryPolicy,
    run_with_retries,
)
from social_recording.platforms.base import ExternalFetchError
from social_recording.platforms.http import HttpPolicy, ProviderHttp
from social_recording_tests.flaky import Flaky
from social_recording_tests.outbound._net import Dns, Internet, Sleeps

# ------------------------------------------------------------------ retry



def test_policies_keep_todays_numbers() -> None:
    assert (FREE_PROVIDER.attempts, FREE_PROVIDER.delay_s, FREE_PROVIDER.exponential) == (3, 0.8, False)
    assert PAID_PROVIDER.attempts == 1
    assert (TRACKER.attempts, TRACKER.delay_s, TRACKER.exponential) == (3, 1.0, True)
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


@pytest.mark.parametrize(("policy", "delays"), [(FREE_PROVIDER, [0.8, 0.8]), (TRACKER, [1.0, 2.0])])
def test_waits_go_through_the_given_sleep(policy: RetryPolicy, delays: list[float]) -> None:
    sleeps = Sleeps()
    seen: list[tuple[int, str, float]] = []
    flaky = Flaky([KeyError("a"), KeyError("b")])
    result = run_with_retries(flaky, policy, retry_if=lambda e: isinstance(e, KeyError), sleep=sleeps,
                              on_retry=lambda n, exc, delay: seen.append((n, str(exc), delay)))
    assert result == "ok" and flaky.calls == 3 and sleeps == delays
    assert seen == [(1, "'a'", delays[0]), (2, "'b'", delays[1])]


def test_the_last_exception_is_reraised_unchanged_and_others_are_not_retried() -> None:
    sleeps = Sleeps()
    flaky = Flaky([KeyError("1"), KeyError("2"), KeyError("3"), KeyError("4")])
    with pytest.raises(KeyError, match="3"):
        run_with_retries(flaky, FREE_PROVIDER, retry_if=lambda e: isinstance(e, KeyError), sleep=sleeps)
    assert flaky.calls == 3 and sleeps == [0.8, 0.8]
    other = Flaky([ValueError("no")])
    with pytest.raises(ValueError):
        run_with_retries(other, FREE_PROVIDER, retry_if=lambda e: isinstance(e, KeyError), sleep=sleeps)
    assert other.calls == 1


def test_a_veto_is_never_retried_whatever_the_predicate() -> None:
    flaky = Flaky([CallVetoed("lost the lease")])
    sleeps = Sleeps()
    with pytest.raises(CallVetoed):
        run_with_retries(flaky, FREE_PROVIDER, retry_if=lambda e: True, sleep=sleeps)
    assert flaky.calls == 1 and sleeps == []


def test_paid_policy_never_retries() -> None:
    flaky = Flaky([KeyError("x"), KeyError("y")])
    with pytest.raises(KeyError):
        run_with_retries(flaky, PAID_PROVIDER, retry_if=lambda e: True, sleep=Sleeps())
    assert flaky.calls == 1


# ------------------------------------------------------------------ reader


def _streamed(body: bytes, headers: dict[str, str] | None = None, chunked: bool = False) -> httpx.Response:
    if chunked:
        return httpx.Response(200, content=iter([body[i:i + 100] for i in range(0, len(body), 100)]))
    return httpx.Response(200, content=body, headers=headers)


def test_reader_refuses_by_content_length_before_reading() -> None:
    with pytest.raises(ResponseTooLarge) as info:
        read_capped(_streamed(b"x" * 11), 10)
    assert info.value.declared == 11 and "larger than 10 bytes (Content-Length 11)" in str(info.value)


def test_reader_stops_a_chunked_body_at_the_cap() -> None:
    with pytest.raises(ResponseTooLarge) as info:
        read_capped(_streamed(b"y" * 1000, chunked=True), 250)
    assert info.value.declared is None
    assert read_capped(_streamed(b"z" * 250, chunked=True), 250) == b"z" * 250


# ------------------------------------------------------------------ limiter


class Limiter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float | None]] = []

    def acquire(self, service: str) -> None:
        self.calls.append(("acquire", service, None))

    def penalise(self, service: str, retry_after_s: float) -> None:
        self.calls.append(("penalise", service, retry_after_s))


def test_provider_acquires_before_each_request_and_is_penalised_on_429() -> None:
    answers = iter([httpx.Response(503), httpx.Response(429, headers={"Retry-After": "30"})])
    net = Internet({"https://api.github.com/x": lambda request: next(answers)})
    limiter = Limiter()
    http = ProviderHttp(HttpPolicy.free("github"), auth_hosts=[], transport=net.transport, sleep=Sleeps(),
                        limiter=limiter)
    assert http.get("https://api.github.com/x").status == 429
    assert limiter.calls == [("acquire", "github", None), ("acquire", "github", None), ("penalise", "github", 30.0)]


def test_urlscan_reset_header_and_a_429_without_a_wait() -> None:
    answers = iter([httpx.Response(429, headers={"X-Rate-Limit-Reset-After": "12.5"}), httpx.Response(429)])
    net = Internet({"https://urlscan.io/api/v1/scan/": lambda request: next(answers)})
    limiter = Limiter()
    transport = Network(net.transport, limiter=limiter)  # the limiter can travel with the transport
    http = ProviderHttp(HttpPolicy.paid_once("urlscan"), auth_hosts=[], transport=transport)
    http.post("https://urlscan.io/api/v1/scan/", json={})
    http.post("https://urlscan.io/api/v1/scan/", json={})
    assert limiter.calls == [("acquire", "urlscan", None), ("penalise", "urlscan", 12.5), ("acquire", "urlscan", None)]


def test_a_limiter_that_refuses_stops_the_request_before_it_is_sent() -> None:
    class Closed(Limiter):
        def acquire(self, service: str) -> None:
            raise CallVetoed("budget spent")

    net = Internet({"https://api.github.com/x": httpx.Response(200)})
    http = ProviderHttp(HttpPolicy.free("github"), auth_hosts=[], transport=net.transport, limiter=Closed())
    with pytest.raises(CallVetoed):
        http.get("https://api.github.com/x")
    assert net.requests == []


def test_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    later = (now + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert retry_after_seconds(httpx.Headers({"retry-after": "7"})) == 7.0
    assert retry_after_seconds(httpx.Headers({"retry-after": later}), now=lambda: now) == 90.0
    assert retry_after_seconds(httpx.Headers({"retry-after": "-3"})) == 0.0
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon", "x-rate-limit-reset-after": "4"})) == 4.0
    assert retry_after_seconds(httpx.Headers({"retry-after": "nan"})) is None
    assert retry_after_seconds(httpx.Headers({})) is None


# ------------------------------------------------------------------ network


def test_unwrap_prefers_explicit_then_network_then_defaults() -> None:
    inner = httpx.MockTransport(lambda r: httpx.Response(204))
    dns = Dns()
    limiter = Limiter()
    assert unwrap(Network(inner, resolve_host=dns, limiter=limiter)) == (inner, dns, limiter)
    other = Dns()
    assert unwrap(Network(inner, resolve_host=dns), resolve_host=other)[1] is other
    transport, resolver, lim = unwrap(inner)
    assert transport is inner and lim is NO_LIMIT and resolver.__name__ == "default_resolve_host"  # type: ignore[attr-defined]
    rewrapped = Network(Network(inner, resolve_host=dns), limiter=limiter)
    assert (rewrapped.transport, rewrapped.resolve_host, rewrapped.limiter) == (inner, dns, limiter)


def test_a_network_used_directly_is_a_plain_transport() -> None:
    inner = httpx.MockTransport(lambda r: httpx.Response(204))
    with httpx.Client(transport=Network(inner, resolve_host=Dns())) as client:
        assert client.get("https://example.com/").status_code == 204


def test_a_provider_failure_is_still_an_external_fetch_error() -> None:
    net = Internet({"https://api.github.com/x": httpx.Response(500)})
    http = ProviderHttp(HttpPolicy.free("github"), auth_hosts=[], transport=net.transport, sleep=Sleeps())
    with pytest.raises(ExternalFetchError, match="HTTP 500"):
        http.get("https://api.github.com/x")
