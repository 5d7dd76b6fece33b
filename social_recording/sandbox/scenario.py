"""The sandbox scenario file: tokens as the tracker sees them, shortlink
redirects, per-target outcomes and per-service rate limits. Strict on purpose: a typo or an outcome
the provider could not express (`unservable_reason`, asked of each platform's fake) fails at load
time naming the file and the field, instead of quietly answering something else
(docs/architecture.md, "The sandbox")."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from social_recording.domain.models import ensure_utc
from social_recording.domain.urls import parse_canonical, to_canonical
from social_recording.sandbox.ledger import SERVICES
from social_recording.sandbox.subjects import platform_fake, target_subjects

DEMO_SCENARIO_PATH: Path = Path(__file__).resolve().parent / "scenarios" / "demo.json"
"""The bundled demo scenario (shipped as package data)."""


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and every bad field."""


class OutcomeKind(StrEnum):
    OK = "ok"
    NOT_FOUND = "not_found"
    BLOCKED = "blocked"
    ERROR = "error"
    FLAKY = "flaky"
    INVALID = "invalid"
    RATE_LIMITED = "rate_limited"
    CREDIT_EXHAUSTED = "credit_exhausted"


_FLAKY_RE = re.compile(r"^flaky:([0-9]{1,6})$")
_OUTCOME_HELP = "ok, not_found, blocked, error, flaky:N (N >= 1), invalid, rate_limited, credit_exhausted"


@dataclass(frozen=True)
class ScriptedOutcome:
    """What the sandbox answers for one target. `flaky_calls` is N of `flaky:N` (0 otherwise)."""

    kind: OutcomeKind
    flaky_calls: int = 0

    @classmethod
    def parse(cls, text: object) -> ScriptedOutcome:
        if isinstance(text, ScriptedOutcome):
            return text
        if not isinstance(text, str):
            raise ValueError(f"outcome must be a string, got {text!r}")
        value = text.strip()
        match = _FLAKY_RE.match(value)
        if match:
            n = int(match.group(1))
            if n < 1:
                raise ValueError(f"unknown outcome {text!r}: flaky needs N >= 1 (expected one of {_OUTCOME_HELP})")
            return cls(OutcomeKind.FLAKY, n)
        if value == OutcomeKind.FLAKY.value or value not in {k.value for k in OutcomeKind}:
            raise ValueError(f"unknown outcome {text!r} (expected one of {_OUTCOME_HELP})")
        return cls(OutcomeKind(value))

    def __str__(self) -> str:
        return f"flaky:{self.flaky_calls}" if self.kind is OutcomeKind.FLAKY else self.kind.value


OK = ScriptedOutcome(OutcomeKind.OK)

RawValue = str | int | float | bool | None
"""A social field exactly as the tracker may send it (junk included: "TBA", "-", 0, …)."""


class ScenarioToken(BaseModel):
    """One token of the tracker's view. Dates are ISO-8601 with an explicit UTC offset (e.g. `Z`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = Field(min_length=1)
    symbol: str | None = None
    name: str | None = None
    image_url: str | None = None
    investor_count: int = Field(ge=0)
    first_transfer_at: datetime
    last_transfer_at: datetime
    website: RawValue = None
    twitter: RawValue = None
    telegram: RawValue = None
    discord: RawValue = None

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        if v != v.strip() or not v.strip():
            raise ValueError(f"address must be a non-blank string without surrounding spaces, got {v!r}")
        return v

    @field_validator("first_transfer_at", "last_transfer_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        if v.tzinfo is None:
            raise ValueError(f"datetime {v.isoformat()!r} has no UTC offset; write it as e.g. 2026-11-01T10:00:00Z")
        return ensure_utc(v)

    @field_validator("investor_count", mode="before")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError("investor_count must be an integer, not a boolean")
        return v

    @model_validator(mode="after")
    def _order(self) -> ScenarioToken:
        if self.first_transfer_at > self.last_transfer_at:
            raise ValueError(
                f"first_transfer_at {self.first_transfer_at.isoformat()} is after "
                f"last_transfer_at {self.last_transfer_at.isoformat()}"
            )
        return self

    def social_values(self) -> dict[str, RawValue]:
        """The four raw social fields, in the tracker's order."""
        return {"website": self.website, "twitter": self.twitter, "telegram": self.telegram, "discord": self.discord}


class TargetSpec(BaseModel):
    """The outcome of one canonical target URL, and its latency (None: the scenario default)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    outcome: ScriptedOutcome = OK
    latency_ms: int | None = Field(default=None, ge=0)
    held_while: str | None = Field(default=None, min_length=1)
    """A file's path: while it exists, the answer waits (after the latency), as a provider that has
    the request and has not answered yet; removing the file releases every waiting answer. A test
    that needs calls still under way at a point of its own holds them so, whatever the machine's
    speed, instead of guessing a latency."""

    @field_validator("outcome", mode="before")
    @classmethod
    def _outcome(cls, v: Any) -> ScriptedOutcome:
        return ScriptedOutcome.parse(v)

    @field_serializer("outcome")
    def _dump_outcome(self, v: ScriptedOutcome) -> str:
        return str(v)


class RateLimit(BaseModel):
    """At most `requests` requests to a service per fixed window of `per_seconds` (windows start at
    multiples of `per_seconds` since the epoch, as urlscan's reset at the full minute); past it the
    sandbox answers the provider's 429. Counted across processes (the state file)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = Field(ge=1, strict=True)
    per_seconds: float = Field(gt=0, le=86_400)

    @field_validator("per_seconds", mode="before")
    @classmethod
    def _number(cls, v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"per_seconds must be a number of seconds, got {v!r}")
        return v


class Scenario(BaseModel):
    """A whole scenario file. Unknown top-level fields are rejected (typos)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: list[ScenarioToken] = Field(default_factory=list)
    redirects: dict[str, str] = Field(default_factory=dict)
    targets: dict[str, TargetSpec] = Field(default_factory=dict)
    default_latency_ms: int = Field(default=0, ge=0)
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)

    @field_validator("rate_limits", mode="before")
    @classmethod
    def _services(cls, v: Any) -> Any:
        if isinstance(v, dict):
            unknown = sorted(str(k) for k in v if k not in SERVICES)
            if unknown:
                raise ValueError(
                    f"unknown service(s) {', '.join(repr(k) for k in unknown)} in rate_limits "
                    f"(expected one of {', '.join(sorted(SERVICES))})"
                )
        return v

    @field_validator("redirects")
    @classmethod
    def _redirects(cls, v: dict[str, str]) -> dict[str, str]:
        for short, location in v.items():
            if not re.match(r"^https?://[^/\s]+", short, re.IGNORECASE):
                raise ValueError(f"redirect key {short!r} is not an http(s) URL")
            if not isinstance(location, str) or not location.strip():
                raise ValueError(f"redirect {short!r} has an empty location")
        return v

    @field_validator("targets")
    @classmethod
    def _canonical_keys(cls, v: dict[str, TargetSpec]) -> dict[str, TargetSpec]:
        for key in v:
            try:
                canonical = to_canonical(key)
            except ValueError as exc:
                raise ValueError(f"target key {key!r} is not a URL to_canonical accepts: {exc}") from None
            if canonical != key:
                raise ValueError(
                    f"target key {key!r} is not canonical (to_canonical gives {canonical!r}); "
                    "targets are matched on canonical URLs only"
                )
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        seen: set[str] = set()
        for token in self.tokens:
            if token.address in seen:
                raise ValueError(f"duplicate token address {token.address!r}")
            seen.add(token.address)
        # Two targets asking the provider the same thing (x.com/i/status/1 and x.com/i/status/1/foo)
        # must not disagree: the sandbox could not tell which one a request came from.
        owner: dict[str, str] = {}
        for url, spec in self.targets.items():
            for subject in target_subjects(url):
                key = subject.casefold()
                other = owner.get(key)
                if other is not None and self.targets[other].outcome != spec.outcome:
                    raise ValueError(
                        f"targets {other!r} and {url!r} both mean provider subject {subject!r} "
                        f"but have different outcomes ({self.targets[other].outcome} vs {spec.outcome})"
                    )
                owner.setdefault(key, url)
        return self

    def token(self, address: str) -> ScenarioToken | None:
        for token in self.tokens:
            if token.address == address:
                return token
        return None

    def latency_ms(self, target: str | None) -> int:
        spec = self.targets.get(target) if target is not None else None
        if spec is not None and spec.latency_ms is not None:
            return spec.latency_ms
        return self.default_latency_ms

    def held_while(self, target: str | None) -> str | None:
        spec = self.targets.get(target) if target is not None else None
        return spec.held_while if spec is not None else None

    def outcome(self, target: str | None) -> ScriptedOutcome:
        spec = self.targets.get(target) if target is not None else None
        return spec.outcome if spec is not None else OK


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif out and ("." in part or "/" in part or ":" in part):
            out += f"[{part!r}]"  # a URL key: brackets, so its dots are not read as nesting
        else:
            out += f".{part}" if out else part
    return out or "<root>"


def format_validation_error(source: str, exc: ValidationError) -> str:
    lines = [f"{source}: invalid scenario ({exc.error_count()} problem(s)):"]
    for err in exc.errors():
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        elif isinstance(err.get("input"), str | int | float | bool) and err["type"] != "missing":
            msg = f"{msg} (got {err['input']!r})"  # pydantic's own messages do not name the value
        lines.append(f"  {_loc(tuple(err['loc']))}: {msg}")
    return "\n".join(lines)


INVALID_UNSERVABLE = (
    "only an X tweet's quote chain can carry a payload that breaks the graph contract; every other "
    "provider answers `invalid` as ok. Put `invalid` on an X tweet (https://x.com/i/status/<id>)"
)
"""Why `invalid` cannot be served on any target but an X tweet (the fakes say it too)."""


def unservable_reason(target: str, outcome: ScriptedOutcome | OutcomeKind) -> str | None:
    """Why the sandbox cannot serve `outcome` for canonical `target` the way the provider's real API
    would (it would silently answer something else), and what to use instead; None when it can.
    Each platform's fake says what its provider cannot express (`unservable`). A key that is not
    canonical returns None: the target-key check reports it."""
    kind = outcome.kind if isinstance(outcome, ScriptedOutcome) else outcome
    if kind is OutcomeKind.OK:
        return None
    try:
        parsed = parse_canonical(target)
    except ValueError:
        return None
    if not target_subjects(target):
        return (
            "no provider request is ever made for this URL (an invite, a page the generators answer "
            "without a call, or a platform without a generator), so the outcome would never be served; "
            "remove the target"
        )
    fake = platform_fake(parsed.platform)
    if kind is OutcomeKind.INVALID and not getattr(fake, "SERVES_INVALID", False):
        return INVALID_UNSERVABLE
    unservable = getattr(fake, "unservable", None)
    return None if unservable is None else unservable(kind, parsed)  # type: ignore[no-any-return]


def unservable_problems(scenario: Scenario) -> list[str]:
    """One "targets[<url>].outcome: …" line per target whose outcome the sandbox cannot serve."""
    problems: list[str] = []
    for url, spec in scenario.targets.items():
        reason = unservable_reason(url, spec.outcome)
        if reason is not None:
            problems.append(
                f"{_loc(('targets', url, 'outcome'))}: outcome {str(spec.outcome)!r} cannot be served "
                f"for {url!r}: {reason}"
            )
    return problems


def parse_scenario(data: Any, *, source: str = "<scenario>", servable_only: bool = False) -> Scenario:
    """Validate already-parsed JSON; errors name `source` and each bad field. With `servable_only`,
    also reject outcomes the sandbox cannot serve for their target (`unservable_reason`)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: a scenario must be a JSON object, got {type(data).__name__}")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(source, exc)) from None
    if servable_only:
        problems = unservable_problems(scenario)
        if problems:
            lines = [f"{source}: invalid scenario ({len(problems)} problem(s)):", *(f"  {p}" for p in problems)]
            raise ScenarioError("\n".join(lines))
    return scenario


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario JSON file, outcomes the sandbox cannot serve included. Raises
    ScenarioError naming the file and the bad field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read scenario file: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{p}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    return parse_scenario(data, source=str(p), servable_only=True)
