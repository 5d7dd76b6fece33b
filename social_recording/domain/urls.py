"""Canonical URLs: transform only at the entry, read everywhere else (seed 003, DESIGN §3).

PLACEHOLDER — being implemented (to_canonical / parse_canonical / platform_of).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Platform(StrEnum):
    X = "x"
    TIKTOK = "tiktok"
    INSTAGRAM = "instagram"
    REDDIT = "reddit"
    YOUTUBE = "youtube"
    GITHUB = "github"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    WEB = "web"


class NonCanonicalUrl(ValueError):
    """A URL that is not in canonical form reached a reader: a bug upstream of the reader."""


@dataclass(frozen=True)
class CanonicalUrl:
    """A parsed canonical URL."""

    url: str
    host: str
    path: str
    query: tuple[tuple[str, str], ...]
    platform: Platform

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(s for s in self.path.split("/") if s)


def to_canonical(raw: str) -> str:
    raise NotImplementedError


def parse_canonical(url: str) -> CanonicalUrl:
    raise NotImplementedError


def platform_of(url: str) -> Platform:
    raise NotImplementedError
