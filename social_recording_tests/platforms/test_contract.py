"""The generator contract, run for every platform of the catalogue: one answer read into a graph
plan() accepts, with ids, metric types and links as the graph rules say; each provider failure
(404, 403, 429, 5xx, a timeout, a body that cannot be read) mapped to its ErrorCode with a truthful
`attempted`, within the platform's retry budget (a paid call is made once), and no key in any error.
The platform-specific behaviour lives in each platform's own test module."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import pytest

from social_recording.domain.graph import plan
from social_recording.domain.urls import NonCanonicalUrl, Platform, to_canonical
from social_recording.platforms.base import ErrorCode, Generator
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import generator_factory
from social_recording_tests.platforms.folder_cases import FolderCases, folder_cases
from social_recording_tests.platforms.mocks import CTX, Handler, Recorder, Sleeps, provider_keys

SECRET = "contract-SeCrEt-0123456789"


@dataclass(frozen=True)
class Case:
    platform: Platform
    url: str
    ok: Callable[[], Handler]
    """A fresh handler answering the whole successful flow."""
    is_primary: Callable[[httpx.Request], bool] = lambda request: True
    """The request an injected failure replaces (the billed one for two-step calls)."""
    codes: dict[str, ErrorCode] = field(default_factory=dict)
    """How this provider's failures read, where they differ from the common mapping."""


COMMON = {"404": ErrorCode.NOT_FOUND, "403": ErrorCode.UPSTREAM, "429": ErrorCode.RATE_LIMITED,
          "503": ErrorCode.UPSTREAM, "timeout": ErrorCode.TIMEOUT, "malformed": ErrorCode.UPSTREAM}


def _case(cases: FolderCases) -> Case:
    """A platform's contract case, from its folder: `url`, `answers` (by request path or pattern), and
    where it is a two-step call, the method of the billed request (`primary_method`) and the failures
    that read otherwise there (`codes`: a 404 from an API that takes the target in the body, an actor
    run or a scan, says nothing of the target)."""
    contract = cases.contract or {}
    method = contract.get("primary_method")
    return Case(cases.platform, contract["url"], lambda: cases.handler(contract["answers"]),
                (lambda request: request.method == method) if method else (lambda request: True),
                {failure: ErrorCode(code) for failure, code in contract.get("codes", {}).items()})


CASES = {f.platform: _case(f) for f in folder_cases() if f.contract is not None}
"""Every platform brings its contract case in its folder (`cases.json`, "contract")."""
PLATFORMS = [d.platform for d in CATALOGUE if d.has_generator]


def test_every_platform_with_a_generator_has_a_contract_case() -> None:
    missing = sorted(p.value for p in set(PLATFORMS) - set(CASES))
    assert missing == [], f"no contract case for {missing}: add a \"contract\" to social_recording/platforms/<p>/cases.json"
    assert set(PLATFORMS) == set(CASES) == set(Platform)


def _build(platform: Platform, handler: Handler, sleeps: Sleeps | None = None) -> tuple[Generator, Recorder]:
    recorder = Recorder(handler)
    keys = provider_keys(**{v.lower(): SECRET for v in CATALOGUE.key_variables()})
    generator = generator_factory(CATALOGUE[platform])(keys, transport=recorder.transport, sleep=sleeps or Sleeps())
    return generator, recorder


@pytest.mark.parametrize("platform", PLATFORMS, ids=str)
def test_an_answer_becomes_a_graph_that_keeps_the_rules(platform: Platform) -> None:
    case = CASES[platform]
    generator, recorder = _build(platform, case.ok())
    assert generator.platform is platform and SECRET not in repr(generator)
    result = generator.generate(case.url, CTX)

    assert result.attempted is True and result.requests == recorder.count >= 1
    planned = plan(result.graph)
    assert planned[0].group is result.graph.groups[0] and planned[0].depth == 0
    for group in result.graph.groups:
        for _, obj in group.objects():
            assert obj.platform is platform
            prefix, _, ident = obj.platform_key.partition(":")
            assert prefix.split("-")[0] == platform.value and ident.strip(), obj.platform_key
            assert all(isinstance(v, float) and math.isfinite(v) for v in obj.metrics.values()), obj.metrics
            assert all(to_canonical(u) == u for u in obj.outbound_urls)
            for shown in (*obj.media_urls, obj.avatar_url, obj.icon_url):
                assert shown is None or shown.lower().startswith(("https://", "http://"))
            assert SECRET not in str(obj.model_dump())


FAILURES: dict[str, Callable[[], Handler]] = {
    "404": lambda: (lambda r: httpx.Response(404, json={"message": "Not Found"})),
    "403": lambda: (lambda r: httpx.Response(403, json={"message": "Forbidden"})),
    "429": lambda: (lambda r: httpx.Response(429, json={"message": "Too Many Requests"})),
    "503": lambda: (lambda r: httpx.Response(503, text="<html>Service Unavailable</html>")),
    "timeout": lambda: _timeout,
    "malformed": lambda: (lambda r: httpx.Response(200, content=b'{"items": [ {"id": "1", ')),
}


def _timeout(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


@pytest.mark.parametrize("failure", list(FAILURES))
@pytest.mark.parametrize("platform", PLATFORMS, ids=str)
def test_a_failure_maps_to_its_code_with_a_truthful_attempted_and_no_key(platform: Platform, failure: str) -> None:
    case = CASES[platform]
    ok, bad = case.ok(), FAILURES[failure]()
    sleeps = Sleeps()
    generator, recorder = _build(platform, lambda r: bad(r) if case.is_primary(r) else ok(r), sleeps)
    with pytest.raises(Exception) as info:
        generator.generate(case.url, CTX)
    error = info.value
    expected = {**COMMON, **case.codes}[failure]
    assert getattr(error, "code", None) is expected, f"{platform.value} {failure}: {error!r}"
    assert getattr(error, "attempted", None) is True
    assert SECRET not in str(error) and SECRET not in repr(error)
    primary = [r for r in recorder.requests if case.is_primary(r)]
    retried = failure in ("503", "timeout") and not CATALOGUE[platform].paid
    assert len(primary) == (3 if retried else 1), [str(r.url) for r in recorder.requests]
    if retried:  # free providers: 3 attempts, 0.8 s apart
        assert sleeps.delays[:2] == [0.8, 0.8]


@pytest.mark.parametrize("platform", PLATFORMS, ids=str)
def test_a_url_that_is_not_canonical_or_not_its_own_is_refused_without_a_call(platform: Platform) -> None:
    case = CASES[platform]
    generator, recorder = _build(platform, case.ok())
    with pytest.raises(NonCanonicalUrl):
        generator.generate(case.url.replace("https://", "http://www."), CTX)
    other = "https://github.com/o/r" if platform is not Platform.GITHUB else "https://t.me/somechat"
    with pytest.raises(ValueError, match="generator received a"):
        generator.generate(other, CTX)
    assert recorder.count == 0

