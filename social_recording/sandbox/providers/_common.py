"""What every fake provider shares: the request's ledger description (`Call`), the answer (`Reply`),
the per-target outcome lookup (`Outcomes`) and the provider interface the transport routes to.

A provider answers in two steps so the transport can put its own rules between them: `describe`
names what a request asks (ledger service, subject, the scenario targets behind it) without
touching any state; `answer` builds the reply, consuming the targets' outcomes (`flaky:N` counters).
Between the two the transport applies the scenario's rate limits, so a refused request does not use
up a flaky target's failures.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import httpx

from social_recording.outbound.guard import wire_host
from social_recording.sandbox.ledger import PAID_SERVICES
from social_recording.sandbox.scenario import OutcomeKind, Scenario
from social_recording.sandbox.state import SandboxState
from social_recording.sandbox.subjects import subject_key, target_subjects

SANDBOX_PUBLIC_ADDRESS = "93.184.216.34"
"""The one public address every sandbox host resolves to (the redirect guard's DNS in the sandbox)."""

HTTP_FAILURES = (OutcomeKind.ERROR, OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED)
"""Outcomes a provider answers with an HTTP error status (the first one among a request's targets wins)."""
MISSING = (OutcomeKind.NOT_FOUND, OutcomeKind.BLOCKED)
NO_CALL = ("zero", "none")
"""The Apify routers' kinds that make no request."""


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    chunks: Iterable[bytes] | None = None
    """The body made while it is sent, instead of `body` (a large answer, as a server streams it):
    the sandbox, in the run's own process, then holds no whole answer either."""


@dataclass
class Call:
    """What one request asks: its ledger service and subject, the scenario target behind each item,
    whether the provider bills it (None: the service's default, `PAID_SERVICES`), whether it counts
    against the scenario's rate limit for the service, and what `describe` parsed for `answer`."""

    service: str
    subject: str
    targets: list[str | None] = field(default_factory=list)
    paid: bool | None = None
    rate_counted: bool = True
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def is_paid(self) -> bool:
        return self.service in PAID_SERVICES if self.paid is None else self.paid


@dataclass(frozen=True)
class RateWindow:
    """The fixed window a refused request fell into (for the provider's 429 headers)."""

    limit: int
    per_seconds: float
    reset_at: float
    """Epoch seconds when the window ends."""
    reset_after_s: int
    """Whole seconds until then (at least 1)."""


_JSON_TYPE = "application/json; charset=utf-8"


def _json_text(obj: Any) -> str:
    """How the sandbox writes JSON: compact, UTF-8 as it is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None,
               content_type: str = _JSON_TYPE) -> Reply:
    return Reply(status, _json_text(obj).encode("utf-8"), {"content-type": content_type, **(headers or {})})


def json_items_reply(status: int, key: str, items: Iterable[Any], headers: dict[str, str] | None = None,
                     *, per_chunk: int = 200) -> Reply:
    """`{key: [items...]}` as `json_reply` writes it, each item encoded only when its chunk (of
    `per_chunk` items) is sent."""

    def chunks() -> Iterator[bytes]:
        yield b"{" + _json_text(key).encode("utf-8") + b":["
        batch: list[str] = []
        first = True
        for item in items:
            batch.append(_json_text(item))
            if len(batch) >= per_chunk:
                yield (("" if first else ",") + ",".join(batch)).encode("utf-8")
                batch, first = [], False
        if batch:
            yield (("" if first else ",") + ",".join(batch)).encode("utf-8")
        yield b"]}"

    return Reply(status, headers={"content-type": _JSON_TYPE, **(headers or {})}, chunks=chunks())


def html_reply(status: int, text: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, text.encode("utf-8"), {"content-type": "text/html; charset=utf-8", **(headers or {})})


def body_json(request: httpx.Request) -> Any:
    """The request's JSON body, or None when it has none or it is not JSON."""
    try:
        return json.loads(request.read() or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


def plain_error_page(status: int, reason: str) -> str:
    """The nginx error page t.me (and most sites) send for 5xx / 429."""
    return (f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
            f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


@dataclass(frozen=True)
class FailureLadder:
    """How one provider says the scenario's failures, one table per fake: `error` (and a flaky
    target's failing calls) as its 5xx, `rate_limited` as its 429, `credit_exhausted` as its credit
    answer (402, or the 403/429 a spent quota reads as); a provider without credits answers that as
    its rate limit. `reply` is the one ladder every fake climbs before it answers a target, so the
    order and the fallback are written once (docs/architecture.md, "The sandbox")."""

    error: Callable[[], Reply]
    rate_limited: Callable[[], Reply]
    credit_exhausted: Callable[[], Reply] | None = None

    def reply(self, effect: OutcomeKind | None) -> Reply | None:
        """The failure's reply, or None when `effect` is no HTTP failure (the fake answers it)."""
        if effect is OutcomeKind.ERROR:
            return self.error()
        if effect is OutcomeKind.CREDIT_EXHAUSTED and self.credit_exhausted is not None:
            return self.credit_exhausted()
        if effect in (OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED):
            return self.rate_limited()
        return None


class Outcomes:
    """Which scenario target a request's subject belongs to, and which outcome it meets now.

    The index maps every subject a target's URL makes the real client request (subjects.py) back to
    that target; a subject no target names answers `ok`. `flaky:N` counts every request mapped to the
    target, across processes (the state file)."""

    def __init__(self, scenario: Scenario, state: SandboxState) -> None:
        self.scenario = scenario
        self.state = state
        self._index: dict[str, str] = {}
        for url in scenario.targets:
            for subject in target_subjects(url):
                self._index.setdefault(subject_key(subject), url)

    def target_for(self, subject: str) -> str | None:
        return self._index.get(subject_key(subject))

    def effective(self, target: str | None) -> OutcomeKind:
        """The outcome this request meets; a `flaky:N` target fails its first N requests."""
        outcome = self.scenario.outcome(target)
        if outcome.kind is OutcomeKind.FLAKY:
            calls = self.state.bump(f"flaky:{target}")
            return OutcomeKind.ERROR if calls <= outcome.flaky_calls else OutcomeKind.OK
        return outcome.kind

    def effects(self, targets: Iterable[str | None]) -> list[OutcomeKind]:
        return [self.effective(t) for t in targets]

    @staticmethod
    def http_failure(effects: list[OutcomeKind]) -> OutcomeKind | None:
        return next((e for e in effects if e in HTTP_FAILURES), None)


class Provider(ABC):
    """One fake upstream: which requests it takes, what they ask, how it answers."""

    service: ClassVar[str]
    hosts: ClassVar[frozenset[str]] = frozenset()
    """The hosts it answers (`accepts` may decide otherwise)."""

    def accepts(self, url: httpx.URL) -> bool:
        """Whether this provider answers requests to `url` (by host)."""
        return wire_host(url) in self.hosts

    @abstractmethod
    def describe(self, request: httpx.Request) -> Call:
        """The request's ledger description; no state is touched."""

    @abstractmethod
    def answer(self, request: httpx.Request, call: Call) -> Reply:
        """The reply (outcomes are consumed here)."""

    def too_many_requests(self, request: httpx.Request, window: RateWindow) -> Reply:
        """The provider's 429 once the scenario's rate limit for it is spent (`retry-after` in
        seconds, as every provider sends it); providers with documented extra headers override."""
        return json_reply(429, {"error": "Too Many Requests", "message": "rate limit exceeded"},
                          {"retry-after": str(window.reset_after_s)})


class TargetProvider(Provider, ABC):
    """A provider whose answers depend on the scenario's per-target outcomes (every platform API)."""

    def __init__(self, outcomes: Outcomes) -> None:
        self._outcomes = outcomes
        self._state = outcomes.state
