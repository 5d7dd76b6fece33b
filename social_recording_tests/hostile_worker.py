"""The process the hostile-input fuzz tests feed (`python -m social_recording_tests.hostile_worker`).

One case per stdin line (JSON: the parser's name and a mutation, see `hostile_input.Mutation`); the
worker applies the mutation to that parser's real answer, runs the parser once and writes one JSON
line: what came out (a value, or the exception's type, error code and message) and whether the
mutated answer was read at all. It keeps running from case to case, as a code server parses answer
after answer: a case that corrupts the process (a segfault) ends it, and the test sees that case fail
with the exit code.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx

from social_recording.domain.graph import SocialContractError
from social_recording.domain.urls import Platform
from social_recording.outbound.network import Network
from social_recording.platforms.base import ExternalFetchError
from social_recording.upstream.shortlinks import ShortlinkError, ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient, TrackerError

RANGE_BODY = json.dumps({"data": [
    {"tokenAddress": "A1", "tokenSymbol": "ONE", "investorCount": 5, "lastTransferAt": "2026-11-10T12:00:00Z"},
    {"tokenAddress": "A2", "tokenSymbol": "TWO", "investorCount": 7, "firstTransferAt": "2026-11-09T00:00:00Z"},
], "total": 2}).encode()
BY_ADDRESS_BODY = json.dumps({"data": [
    {"tokenAddress": "A1", "tokenSymbol": "ONE", "tokenName": "one", "imageUrl": "https://cdn.example.com/1.png",
     "website": "https://one.example", "twitter": "https://x.com/one", "telegram": "https://t.me/one",
     "discord": None, "firstTransferAt": "2026-11-09T00:00:00Z"},
]}).encode()
LOCATION = b"https://example.com/landing?from=t.co"
_STRING_OR_OPEN = re.compile(rb'"(?:[^"\\]|\\.)*"|\{')
"""An object's opening brace, and the strings to skip (a URL template's `{` is not one)."""


def public_dns(host: str) -> list[str]:
    return ["93.184.216.34"]


def mutate(body: bytes, case: dict[str, Any], html: bool = False) -> bytes:
    """`body` with the case's mutation applied (see `hostile_input.Mutation` for the kinds)."""
    kind, at, n = case["kind"], case["at"], case["n"]
    raw = base64.b64decode(case["raw"])
    if kind == "truncate":
        return body[: int(len(body) * at)]
    if kind == "junk":
        return raw
    if kind == "oversize":
        return body + b" " * n
    if kind in ("replace", "long_location"):
        return raw
    if html:
        value = {"long_number": b"9" * n, "exponent": b"9" * n}.get(kind, raw)
        marker = body.find(b'<div class="tgme_page_extra">')
        insert = b'<div class="tgme_page_extra">' + value + b" subscribers</div>"
        if kind == "deep":
            insert = b"<div>" * n + b"</div>" * n
        return body[:marker] + insert + body[marker:] if marker >= 0 else insert + body
    value = {
        "long_number": b"9" * n,
        "exponent": b"1e" + b"9" * n,
        "deep": b"[" * n + b"]" * n,
        "long_string": b'"' + b"s" * n + b'"',
        "bad_utf8": b'"' + raw + b'"',
        "value": raw,
    }[kind]
    opens = [m.start() for m in _STRING_OR_OPEN.finditer(body) if m.group() == b"{"]
    if not opens:
        return value
    where = opens[min(int(at * len(opens)), len(opens) - 1)] + 1
    rest = body[where:].lstrip()
    return body[:where] + b'"zz": ' + value + (b"" if rest.startswith(b"}") else b", ") + rest


class Answers:
    """Answers the `step`-th request with `mutate` of its real answer; counts whether it came."""

    last: Answers | None = None
    """The answers of the case being run (read after it, whatever it raised)."""

    def __init__(self, real: Callable[[httpx.Request], httpx.Response], case: dict[str, Any], html: bool = False):
        self.real, self.case, self.html = real, case, html
        self.seen = 0
        self.mutated = False
        Answers.last = self

    def __call__(self, request: httpx.Request) -> httpx.Response:
        request.read()
        answer = self.real(request)
        step, self.seen = self.seen, self.seen + 1
        if step != self.case["step"] or answer.status_code in (301, 302, 303, 307, 308):
            return answer
        self.mutated = True
        headers = [(k, v) for k, v in answer.headers.multi_items() if k.lower() not in ("content-length", "content-encoding")]
        return httpx.Response(answer.status_code, headers=headers, content=mutate(answer.read(), self.case, self.html))


def tracker(case: dict[str, Any], by_address: bool) -> Any:
    answers = Answers(lambda request: httpx.Response(200, content=BY_ADDRESS_BODY if by_address else RANGE_BODY), case)
    with TrackerClient("http://tracker.internal", None, ["g1"], transport=httpx.MockTransport(answers),
                       sleep=lambda s: None) as client:
        if by_address:
            return client.tokens_by_addresses(["A1", "A2"])
        scan = client.scan_range(datetime(2026, 11, 9, tzinfo=UTC), datetime(2026, 11, 11, tzinfo=UTC),
                                 lambda token: token.address)
        return scan.kept, scan.scanned, len(scan.malformed)


def shortlink(case: dict[str, Any]) -> Any:
    """The resolver's parser is the Location header of a shortener's redirect (no body is read)."""
    answers = Answers(lambda request: httpx.Response(200), case)
    location = mutate(LOCATION, case)

    def handler(request: httpx.Request) -> httpx.Response:
        answers.mutated = True
        return httpx.Response(301, headers=[(b"location", location)])

    with ShortlinkResolver(transport=Network(httpx.MockTransport(handler), resolve_host=public_dns)) as resolver:
        return resolver.resolve("https://t.co/abc123")


def platform(name: str, case: dict[str, Any]) -> Any:
    from social_recording_tests.platforms.test_contract import CASES, _build

    contract = CASES[Platform(name)]
    answers = Answers(contract.ok(), case, html=name == "telegram")
    generator, _ = _build(Platform(name), answers)
    result = generator.generate(contract.url, contract_ctx())
    return f"{result.graph.groups[0].ref} requests={result.requests}"


def contract_ctx() -> Any:
    from social_recording_tests.platforms.mocks import CTX

    return CTX


EXPECTED = (TrackerError, ShortlinkError, ExternalFetchError, SocialContractError)


def run(case: dict[str, Any]) -> dict[str, Any]:
    parser: str = case["parser"]
    Answers.last = None
    out: dict[str, Any]
    try:
        if parser.startswith("tracker_"):
            value = tracker(case, by_address=parser == "tracker_by_address")
        elif parser == "shortlink":
            value = shortlink(case)
        else:
            value = platform(parser.removeprefix("platform_"), case)
        out = {"outcome": "value", "value": repr(value)[:200]}
    except BaseException as exc:  # noqa: BLE001  (the worker reports every exception; the test judges it)
        out = {"outcome": "error", "type": type(exc).__name__, "expected": isinstance(exc, EXPECTED),
               "code": str(getattr(exc, "code", "")), "message": str(exc)[:500]}
    return {**out, "mutated": Answers.last is not None and Answers.last.mutated}


def main() -> None:
    sys.setrecursionlimit(1000)
    for line in sys.stdin:
        sys.stdout.write(json.dumps(run(json.loads(line))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
