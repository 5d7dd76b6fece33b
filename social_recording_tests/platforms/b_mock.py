"""Test support for the youtube / github / telegram / web generator tests (Platforms B).

`ScriptedProvider` is an httpx.MockTransport whose answers are scripted per route and consumed in
order (the last one repeats), recording every request it receives, so a test asserts the exact number
of requests, their hosts and their headers. `Sleeps` records the delays a generator asks for: tests
never really sleep.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

FIXTURES = Path(__file__).parent / "fixtures"

Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]

MINT = "So11111111111111111111111111111111111111112"


def fixture_bytes(platform: str, name: str) -> bytes:
    return (FIXTURES / platform / name).read_bytes()


def fixture_json(platform: str, name: str) -> Any:
    return json.loads(fixture_bytes(platform, name))


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
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self._handle)

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


class Sleeps:
    """A `sleep` that records the delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def read_timeout(message: str = "timed out") -> httpx.ReadTimeout:
    return httpx.ReadTimeout(message)


def oversized(nbytes: int, content_type: str = "application/json") -> httpx.Response:
    """A body one byte over the cap (Content-Length is set by httpx, the layer rejects it)."""
    return httpx.Response(200, content=b" " * nbytes, headers={"content-type": content_type})
