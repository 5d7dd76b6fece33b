"""Pydantic documents shared by the store, the engine and the jobs (DESIGN §2).

All datetimes are timezone-aware UTC; backends must return them that way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from social_recording.domain.graph import ObjectKind
from social_recording.domain.status import FetchStatus


def utcnow() -> datetime:
    return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC (pymongo without tz_aware, SQLite text)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class SocialUrl(BaseModel):
    """One `social_urls[]` element: the canonical URL is the match key."""

    model_config = ConfigDict(frozen=True)

    url: str
    status: FetchStatus = FetchStatus.PENDING
    attempted_at: datetime | None = None
    attempts: int = Field(default=0, ge=0)

    @field_validator("attempted_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)


class TokenDoc(BaseModel):
    """A `tokens` document. Its existence means "seen", not "finished" (L-3)."""

    model_config = ConfigDict(frozen=True)

    address: str
    symbol: str | None = None
    image: str | None = None
    first_transfer_at: datetime | None = None
    fingerprints: list[str] = Field(default_factory=list)
    web: dict[str, Any] | None = None
    social_urls: list[SocialUrl] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @field_validator("first_transfer_at", "created_at", "updated_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)

    def element(self, url: str) -> SocialUrl | None:
        for el in self.social_urls:
            if el.url == url:
                return el
        return None


class TokenProfile(BaseModel):
    """What the TokenProfileReader hands the engine: canonical, de-duplicated URLs (DESIGN §3)."""

    model_config = ConfigDict(frozen=True)

    address: str = Field(min_length=1)
    symbol: str | None = None
    image: str | None = None
    first_transfer_at: datetime | None = None
    urls: list[str] = Field(default_factory=list)
    dropped: tuple[str, ...] = ()
    """Raw social values the reader did not turn into a URL, each "field='value': reason" (value
    truncated, secrets masked): so a job can show what was lost instead of only logging it."""


class TokenLink(BaseModel):
    """A `token_links` row: token -> object, per entry URL, with the object's depth in the chain."""

    model_config = ConfigDict(frozen=True)

    token_address: str
    object: ObjectKind
    object_id: str
    entry_url: str
    platform: str
    subtype: str
    link_depth: int = Field(ge=0)
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("created_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return ensure_utc(v)

    def shape(self) -> tuple[str, str, str, str, str, int]:
        """Everything but the token address and creation time: what the equivalence test compares."""
        return (self.object.value, self.object_id, self.entry_url, self.platform, self.subtype, self.link_depth)
