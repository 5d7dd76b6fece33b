"""The Generator protocol: one canonical URL -> a validated social graph, via the platform's API.

`generate()` starts with `parse_canonical` and never fixes its input. It reports `attempted`
(at least one external request made) truthfully, also on failure, through the result or the
raised error (ExternalFetchError / SocialContractError both carry `.attempted`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, SecretStr

from social_recording.domain.graph import SocialGraph
from social_recording.domain.urls import Platform

PAID_PLATFORMS: frozenset[Platform] = frozenset(
    {Platform.X, Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT, Platform.WEB}
)
"""DESIGN §9: paid per call. Free: youtube, github, telegram."""

PROVIDER_OF: dict[Platform, str] = {
    Platform.X: "twitterapi",
    Platform.TIKTOK: "apify",
    Platform.INSTAGRAM: "apify",
    Platform.REDDIT: "apify",
    Platform.YOUTUBE: "youtube",
    Platform.GITHUB: "github",
    Platform.TELEGRAM: "telegram",
    Platform.WEB: "urlscan",
}
"""Which provider account answers a platform: credit / quota exhaustion is a provider's condition."""


class ProviderKeys(BaseModel):
    """Provider credentials (DESIGN §10). Each is sent only to its own provider's host, never logged."""

    twitterapi_io_key: SecretStr | None = None
    apify_token: SecretStr | None = None
    youtube_api_key: SecretStr | None = None
    github_token: SecretStr | None = None
    urlscan_api_key: SecretStr | None = None


class ErrorCode(StrEnum):
    NOT_FOUND = "NOT_FOUND"
    TARGET_BLOCKED = "TARGET_BLOCKED"
    RATE_LIMITED = "RATE_LIMITED"
    CREDIT_EXHAUSTED = "CREDIT_EXHAUSTED"
    TIMEOUT = "TIMEOUT"
    UPSTREAM = "UPSTREAM"


class ExternalFetchError(Exception):
    """A provider call failed. The message never contains a provider key."""

    def __init__(self, code: ErrorCode, message: str, *, attempted: bool = True) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.attempted = attempted


@dataclass(frozen=True)
class GenerateContext:
    """What a generator may know about the token it works for (the retry path reads it from our own
    document, so no upstream call is needed: seed 004 §1.3)."""

    token_address: str
    token_symbol: str | None = None


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
    """Platform -> Generator. A platform absent here (discord) is recorded `unsupported`."""

    generators: dict[Platform, Generator] = field(default_factory=dict)
    paid: frozenset[Platform] = PAID_PLATFORMS

    def get(self, platform: Platform) -> Generator | None:
        return self.generators.get(platform)

    def is_paid(self, platform: Platform) -> bool:
        return platform in self.paid

    def __iter__(self) -> Iterator[Platform]:
        return iter(self.generators)

    @classmethod
    def of(cls, generators: Mapping[Platform, Generator]) -> GeneratorRegistry:
        return cls(dict(generators))
