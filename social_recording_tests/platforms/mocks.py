"""Test support for the platform generator tests: fixtures on disk served through httpx.MockTransport,
with every request recorded (method, URL, headers, body) so tests can count calls and inspect keys.

Two transports: `Recorder` answers every request with one handler (a paid provider makes one call per
URL, so one answer is all a test needs); `ScriptedProvider` routes (method, host, path) to answers
consumed in order (the last one repeats), for flows of several requests (redirects, polls, retries).
`Sleeps` records the delays a generator asks for: tests never really sleep.

Both transports are `Network`s whose DNS answers one public address for every host (`public_dns`),
as the sandbox's does: the mock internet has no private hosts unless a test says so, and the redirect
guard never asks the real resolver.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from pydantic import SecretStr

from social_recording.domain.graph import SocialGraph, plan
from social_recording.outbound.network import Network
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    Generator,
    ProviderKeys,
)

PLATFORMS_DIR = Path(__file__).resolve().parents[2] / "social_recording" / "platforms"
"""A platform's fixtures live in its folder: `social_recording/platforms/<p>/fixtures/`."""
MINT = "So11111111111111111111111111111111111111112"
CTX = GenerateContext(token_address=MINT, token_symbol="PEPE2")
OVERSIZED = 5 * 1024 * 1024 + 1

PUBLIC_ADDRESS = "93.184.216.34"

Handler = Callable[[httpx.Request], httpx.Response]
Answer = httpx.Response | Exception | Handler


def fixture_bytes(platform: str, name: str) -> bytes:
    return (PLATFORMS_DIR / platform / "fixtures" / name).read_bytes()


def fixture_json(platform: str, name: str) -> Any:
    return json.loads(fixture_bytes(platform, name))


# ---------------------------------------------------------------- transports


def public_dns(host: str) -> list[str]:
    """The mock internet's DNS: every host name is one public address."""
    return [PUBLIC_ADDRESS]


class Recorder:
    """A MockTransport whose handler records every request before answering it."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self.requests: list[httpx.Request] = []
        self.penalties = Penalties()
        self.transport = Network(httpx.MockTransport(self._handle), resolve_host=public_dns, limiter=self.penalties)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        return self._handler(request)

    @property
    def count(self) -> int:
        return len(self.requests)

    def json_body(self, i: int = 0) -> Any:
        return json.loads(self.requests[i].content)


class ScriptedProvider:
    """Routes (method, host, path) to a list of answers consumed in order; the last one repeats."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self._routes: dict[tuple[str, str, str], list[Answer]] = {}
        self._served: dict[tuple[str, str, str], int] = {}

    def on(self, method: str, url: str, *answers: Answer) -> ScriptedProvider:
        parsed = httpx.URL(url)
        self._routes[(method.upper(), parsed.host, parsed.path)] = list(answers)
        return self

    @property
    def transport(self) -> Network:
        return Network(httpx.MockTransport(self._handle), resolve_host=public_dns)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        key = (request.method, request.url.host, request.url.path)
        answers = self._routes.get(key)
        if not answers:
            raise AssertionError(f"unexpected request {request.method} {request.url}")
        index = self._served.get(key, 0)
        self._served[key] = index + 1
        answer = answers[min(index, len(answers) - 1)]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(request)
        return answer

    def count(self, host: str | None = None, path: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if (host is None or r.url.host == host) and (path is None or r.url.path == path)
        )


class Penalties:
    """A limiter that lets every request go and records each wait a provider's answer asked for,
    with the epoch second it was asked at (service, wait, asked_at)."""

    def __init__(self) -> None:
        self.waits: list[tuple[str, float, float]] = []

    def acquire(self, service: str) -> None:
        return None

    def penalise(self, service: str, retry_after_s: float) -> None:
        self.waits.append((service, retry_after_s, time.time()))


class Sleeps:
    """A `sleep` that records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


# ---------------------------------------------------------------- answers


def respond(status: int = 200, body: bytes | str | Any = b"", headers: dict[str, str] | None = None) -> Handler:
    """A handler that always answers the same thing (bytes as-is, str encoded, anything else as JSON)."""
    if isinstance(body, bytes):
        content = body
    elif isinstance(body, str):
        content = body.encode()
    else:
        content = json.dumps(body).encode()
    hdrs = {"content-type": "application/json", **(headers or {})}
    return lambda request: httpx.Response(status, content=content, headers=hdrs)


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def fixture_response(
    platform: str, name: str, status: int = 200, headers: dict[str, str] | None = None
) -> httpx.Response:
    content_type = "text/html; charset=utf-8" if name.endswith(".html") else "application/json"
    return httpx.Response(
        status,
        content=fixture_bytes(platform, name),
        headers={"content-type": content_type, **(headers or {})},
    )


def serve(platform: str, name: str, status: int = 200) -> Handler:
    return respond(status, fixture_bytes(platform, name))


def read_timeout() -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    return handler


def oversized(nbytes: int = OVERSIZED, content_type: str = "application/json") -> Handler:
    """A body over the size cap (`nbytes` + 2 bytes) that would be valid JSON if it were read: only the
    cap can reject it (Content-Length is set by httpx, the layer rejects it before reading)."""
    return respond(200, b"[" + b" " * nbytes + b"]", headers={"content-type": content_type})


def malformed() -> Handler:
    return respond(200, b'{"tweets": [ this is not json')


# ---------------------------------------------------------------- assertions


def expect_error(call: Callable[[], Any], code: ErrorCode, *, attempted: bool) -> ExternalFetchError:
    try:
        call()
    except ExternalFetchError as exc:
        assert exc.code == code, f"expected {code}, got {exc.code}: {exc}"
        assert exc.attempted is attempted, f"attempted={exc.attempted} for {exc}"
        return exc
    raise AssertionError(f"expected ExternalFetchError({code}) but nothing was raised")


def generate_error(
    gen: Generator, url: str, ctx: GenerateContext, *, secret: str | None = None
) -> ExternalFetchError:
    """The ExternalFetchError `gen.generate(url)` raises, checked never to carry `secret`."""
    with pytest.raises(ExternalFetchError) as info:
        gen.generate(url, ctx)
    if secret is not None:
        assert secret not in str(info.value)
    return info.value


def planned_refs(graph: SocialGraph) -> list[tuple[str, int]]:
    return [(pg.group.ref, pg.depth) for pg in plan(graph)]


# ---------------------------------------------------------------- Apify


RUN_REQUESTS = 3
"""Requests of an Apify run that succeeds at its first status read: the start, one status read, the
dataset read."""


class ApifyScript:
    """What a fake Apify answers through its asynchronous run API: the run start (`start`, default a
    201 run), each status read (`statuses`, consumed in order, the last one repeating; or a `status`
    handler), and the dataset read (`items`). A script is data: every test builds its own `ApifyApi`
    from it, so parametrized cases never share recorded requests."""

    def __init__(self, items: Handler | None = None, *, start: Handler | None = None,
                 statuses: tuple[str, ...] = ("SUCCEEDED",), status: Handler | None = None) -> None:
        self.items = items or respond(200, [])
        self.start = start
        self.statuses = statuses
        self.status = status


class ApifyApi(Recorder):
    """A fake of Apify's run API for generator tests (see ApifyScript). Every request is recorded;
    `count` is the number of run starts, the billed requests (status and dataset reads are free)."""

    RUN_ID = "RunSandbox0000001"
    DATASET_ID = "SetSandbox0000001"

    def __init__(self, script: ApifyScript) -> None:
        self.script = script
        self._reads = 0
        super().__init__(self._route)

    def _route(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.url.host != "api.apify.com":  # where a dataset read was redirected
            return self.script.items(request)
        if request.method == "POST" and path.startswith("/v2/acts/") and path.endswith("/runs"):
            if self.script.start is not None:
                return self.script.start(request)
            return httpx.Response(201, json={"data": self.run_object("READY")})
        if path.startswith("/v2/actor-runs/"):
            if self.script.status is not None:
                return self.script.status(request)
            status = self.script.statuses[min(self._reads, len(self.script.statuses) - 1)]
            self._reads += 1
            return httpx.Response(200, json={"data": self.run_object(status)})
        if path == f"/v2/datasets/{self.DATASET_ID}/items":
            return self.script.items(request)
        return httpx.Response(404, json={"error": {"type": "page-not-found", "message": path}})

    @classmethod
    def run_object(cls, status: str) -> dict[str, Any]:
        return {"id": cls.RUN_ID, "actId": "ActSandbox0000001", "status": status,
                "defaultDatasetId": cls.DATASET_ID, "defaultKeyValueStoreId": "KvsSandbox0000001"}

    def starts(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.method == "POST"]

    @property
    def count(self) -> int:
        return len(self.starts())


# Apify API error envelopes, as documented by Apify (`{"error": {"type", "message"}}`).
APIFY_402 = {"error": {"type": "not-enough-usage-to-run-paid-actor",
                       "message": "You do not have enough usage left to run this paid Actor."}}
APIFY_403_HARD_LIMIT = {"error": {"type": "platform-feature-disabled",
                                  "message": "Monthly usage hard limit exceeded"}}
APIFY_403_OTHER = {"error": {"type": "insufficient-permissions",
                             "message": "Insufficient permissions for the Actor."}}
APIFY_429 = {"error": {"type": "rate-limit-exceeded", "message": "You have exceeded the rate limit."}}
APIFY_404 = {"error": {"type": "record-not-found", "message": "Actor was not found"}}
APIFY_TOKEN = "apify_api_SeCrEtToKeN0123456789"
TWITTERAPI_KEY = "twitterapi-SeCrEt-KeY-0123456789"


def apify_failures() -> list[tuple[str, ApifyScript, ErrorCode]]:
    """Failures every Apify-backed generator must map the same way (one billed run start each,
    never repeated)."""
    return [
        # the start (billed) is refused or fails: nothing to read
        ("402", ApifyScript(start=respond(402, APIFY_402)), ErrorCode.CREDIT_EXHAUSTED),
        ("403-hard-limit", ApifyScript(start=respond(403, APIFY_403_HARD_LIMIT)), ErrorCode.CREDIT_EXHAUSTED),
        ("403-other", ApifyScript(start=respond(403, APIFY_403_OTHER)), ErrorCode.UPSTREAM),
        ("429", ApifyScript(start=respond(429, APIFY_429)), ErrorCode.RATE_LIMITED),
        ("404-actor", ApifyScript(start=respond(404, APIFY_404)), ErrorCode.UPSTREAM),
        ("503-once", ApifyScript(start=respond(503, b"<html>bad gateway</html>")), ErrorCode.UPSTREAM),
        ("start-read-timeout", ApifyScript(start=read_timeout()), ErrorCode.TIMEOUT),
        ("malformed-run", ApifyScript(start=respond(201, {"data": {"status": "READY"}})), ErrorCode.UPSTREAM),
        # the run ends badly
        ("run-timed-out", ApifyScript(statuses=("RUNNING", "TIMED-OUT")), ErrorCode.TIMEOUT),
        ("run-failed", ApifyScript(statuses=("FAILED",)), ErrorCode.UPSTREAM),
        ("run-aborted", ApifyScript(statuses=("RUNNING", "ABORTED")), ErrorCode.UPSTREAM),
        ("still-running", ApifyScript(statuses=("READY", "RUNNING")), ErrorCode.TIMEOUT),
        ("status-429", ApifyScript(status=respond(429, APIFY_429)), ErrorCode.RATE_LIMITED),
        ("status-503", ApifyScript(status=respond(503, b"busy")), ErrorCode.UPSTREAM),
        # the dataset cannot be read
        ("malformed", ApifyScript(respond(200, b'[{"id": "1", ')), ErrorCode.UPSTREAM),
        ("oversized", ApifyScript(oversized()), ErrorCode.UPSTREAM),
        ("object-not-array", ApifyScript(respond(200, {"items": []})), ErrorCode.UPSTREAM),
        ("non-object-item", ApifyScript(respond(200, ["just a string"])), ErrorCode.UPSTREAM),
        ("items-read-timeout", ApifyScript(read_timeout()), ErrorCode.TIMEOUT),
        ("empty", ApifyScript(respond(200, [])), ErrorCode.NOT_FOUND),
    ]


APIFY_FAILURE_CASES = pytest.mark.parametrize(
    "name, handler, code", apify_failures(), ids=[f[0] for f in apify_failures()]
)
"""The shared Apify failure table as a parametrize mark (every Apify-backed generator x every URL)."""


# ---------------------------------------------------------------- building generators

G = TypeVar("G")
MakeGenerator = Callable[..., Generator]


def provider_keys(**secrets: str | None) -> ProviderKeys:
    """ProviderKeys with the given fields set (a None / empty value leaves the key unset)."""
    return ProviderKeys(**{name: SecretStr(value) if value else None for name, value in secrets.items()})


def apify_generator(
    make_generator: MakeGenerator, cls: type[G], handler: Handler | ApifyScript, token: str | None = APIFY_TOKEN
) -> tuple[G, ApifyApi]:
    """An Apify-backed generator built by its module's `make_generator` on a fake Apify (never
    sleeping), checked to be a `cls`. A bare `handler` answers the dataset read of a run that
    succeeds at once."""
    rec = ApifyApi(handler if isinstance(handler, ApifyScript) else ApifyScript(handler))
    gen = make_generator(provider_keys(apify_token=token), transport=rec.transport, sleep=lambda s: None)
    assert isinstance(gen, cls)
    return gen, rec


def scripted_generator(
    make_generator: MakeGenerator, provider: ScriptedProvider, sleeps: Sleeps | None = None, **secrets: str | None
) -> Generator:
    """A generator built by its module's `make_generator` on `provider`'s transport, with `secrets`
    as its ProviderKeys and recorded (never real) sleeps."""
    return make_generator(provider_keys(**secrets), transport=provider.transport, sleep=sleeps or Sleeps())


# ---------------------------------------------------------------- shared checks


def expect_paid_failure(gen: Generator, rec: Recorder, url: str, code: ErrorCode) -> ExternalFetchError:
    """`gen.generate(url)` fails with `code` after exactly one paid request (a fake Apify counts run
    starts), attempted, and the error never shows the Apify token."""
    exc = expect_error(lambda: gen.generate(url, CTX), code, attempted=True)
    assert rec.count == 1
    assert APIFY_TOKEN not in str(exc) and APIFY_TOKEN not in repr(exc)
    return exc


def expect_no_call_failure(gen: Generator, rec: Recorder, url: str, code: ErrorCode) -> ExternalFetchError:
    """`gen.generate(url)` fails with `code` decided without a request (attempted=False)."""
    exc = expect_error(lambda: gen.generate(url, CTX), code, attempted=False)
    assert rec.count == 0
    return exc


def assert_zero_call(result: GenerateResult, requests_seen: int, platform: str, url: str, subtype: str) -> None:
    """A zero-call URL (nothing to fetch): no request, attempted False, one content object of `subtype`
    keyed by the URL itself, and a graph plan() accepts."""
    assert requests_seen == 0
    assert result.attempted is False and result.requests == 0
    plan(result.graph)
    (group,) = result.graph.groups
    content = group.content
    assert content is not None and content.subtype == subtype
    assert content.platform_key == f"{platform}:{url}"
