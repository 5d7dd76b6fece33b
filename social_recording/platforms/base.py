"""The Generator protocol: one canonical URL -> a validated social graph, via the platform's API.

`generate()` starts with `parse_canonical` and never fixes its input. It reports `attempted`
(at least one external request made) truthfully, also on failure, through the result or the
raised error (ExternalFetchError / SocialContractError both carry `.attempted`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import Protocol, runtime_checkable

from social_recording.domain.graph import SocialGraph
from social_recording.domain.provider_keys import ProviderKeys as ProviderKeys  # its public name here too
from social_recording.domain.urls import Platform
from social_recording.platforms.catalogue import CATALOGUE

PAID_PLATFORMS: frozenset[Platform] = frozenset(d.platform for d in CATALOGUE if d.paid)
"""Paid per call (from the descriptors)."""

PROVIDER_OF: dict[Platform, str] = {d.platform: d.account.name for d in CATALOGUE}
"""Which provider account answers a platform: credit / quota exhaustion is a provider's condition."""


class ErrorCode(StrEnum):
    NOT_FOUND = "NOT_FOUND"
    TARGET_BLOCKED = "TARGET_BLOCKED"
    RATE_LIMITED = "RATE_LIMITED"
    CREDIT_EXHAUSTED = "CREDIT_EXHAUSTED"
    TIMEOUT = "TIMEOUT"
    UPSTREAM = "UPSTREAM"
    UNSUPPORTED = "UNSUPPORTED"
    """The URL's shape names nothing this generator can read (no call made): `unsupported`, never an
    error that would be retried and reopened forever."""
    UNSAFE_REDIRECT = "UNSAFE_REDIRECT"
    """A provider redirected to a non-public address or a non-http scheme: refused, nothing sent there."""
    LIMITER_UNAVAILABLE = "LIMITER_UNAVAILABLE"
    """The shared rate limiter could not be asked (its backend is unreachable): nothing was sent and
    nothing learned, so the URL is left as it was."""


class ExternalFetchError(Exception):
    """A provider call failed. The message never contains a provider key."""

    def __init__(self, code: ErrorCode, message: str, *, attempted: bool = True) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.attempted = attempted


class PaidRequests(Protocol):
    """The memory of two-step paid calls (urlscan scan, Apify run) for the URL being generated.

    A generator that submits a paid request records the provider's id right after submission; a
    later holder of the URL (after a crash, a lost lease) gets it back from `previous` and polls it
    instead of paying for a new submission, as long as the provider still keeps it (`retention`).
    """

    def previous(self, provider: str, retention: timedelta) -> str | None:
        """The id of a request submitted earlier for this URL at `provider`, still within
        `retention` of its submission, or None."""
        ...

    def submitted(self, provider: str, request_id: str) -> None:
        """Record a fresh submission's id before polling it."""
        ...


class NoPaidRequests:
    """No memory: every two-step call submits anew (unit tests, scripts)."""

    def previous(self, provider: str, retention: timedelta) -> str | None:
        return None

    def submitted(self, provider: str, request_id: str) -> None:
        return None


NO_PAID_REQUESTS = NoPaidRequests()


@dataclass(frozen=True)
class GenerateContext:
    """What a generator may know about the token it works for (the retry path reads it from our own
    document, so no upstream call is needed), and where to keep paid request ids (`requests`)."""

    token_address: str
    token_symbol: str | None = None
    requests: PaidRequests = NO_PAID_REQUESTS


@dataclass(frozen=True)
class GenerateResult:
    graph: SocialGraph
    attempted: bool
    requests: int = 0


@runtime_checkable
class Generator(Protocol):
    platform: Platform

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult: ...


@dataclass
class GeneratorRegistry:
    """Platform -> Generator. A platform absent here (no generator), or present but `unavailable` in this
    configuration (its provider key is not set), is recorded `unsupported` with zero calls, and the
    retry job picks it up again only once a generator for it exists."""

    generators: dict[Platform, Generator] = field(default_factory=dict)
    paid: frozenset[Platform] = PAID_PLATFORMS
    unavailable: dict[Platform, str] = field(default_factory=dict)
    """Platform -> why its generator cannot run here (e.g. "YOUTUBE_API_KEY is not set")."""

    def get(self, platform: Platform) -> Generator | None:
        if platform in self.unavailable:
            return None
        return self.generators.get(platform)

    def why_unavailable(self, platform: Platform) -> str:
        """A reason fit for an operator: the missing variable, or that no generator exists."""
        return self.unavailable.get(platform) or f"no generator for {platform.value}"

    def usable_platforms(self) -> frozenset[Platform]:
        """Platforms whose URLs a call could answer now."""
        return frozenset(p for p in self.generators if p not in self.unavailable)

    def is_paid(self, platform: Platform) -> bool:
        return platform in self.paid

    def __iter__(self) -> Iterator[Platform]:
        return iter(self.generators)

    @classmethod
    def of(cls, generators: Mapping[Platform, Generator]) -> GeneratorRegistry:
        return cls(dict(generators))
