"""Pydantic documents shared by the store, the engine and the jobs (docs/architecture.md, "Data model").

All datetimes are timezone-aware UTC; backends must return them that way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from social_recording.domain.graph import ObjectKind, PlannedLink
from social_recording.domain.status import Cause, FetchStatus


def utcnow() -> datetime:
    return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Naive datetimes are taken as UTC (pymongo without tz_aware, SQLite text)."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def as_stored(value: datetime) -> datetime:
    """`value` at the resolution every store keeps: milliseconds (BSON datetimes; SQLite keeps more).
    A time not read from the store is floored to it before it is compared with stored ones, so a
    time recorded in the same millisecond still counts as at or after it."""
    return value.replace(microsecond=value.microsecond - value.microsecond % 1000)


class SocialUrl(BaseModel):
    """One `social_urls[]` element: one canonical URL of one token and where recording it stands."""

    model_config = ConfigDict(frozen=True)

    url: str
    status: FetchStatus = FetchStatus.PENDING
    attempted_at: datetime | None = None
    """The last time a call for this URL was really made on this element's behalf (None: never)."""
    attempts: int = Field(default=0, ge=0)
    """Calls made on this element's behalf (a counter; the budget is the URL's failure streak)."""
    checked_at: datetime | None = None
    """The last time anything was recorded for this element, with or without a call (None: never
    processed)."""
    due_at: datetime | None = None
    """When the element is next due for another recording: set by each recording from the back-off
    (`domain/policy.py` `Backoff`), read by the retry selection, the live path, health and `status`
    (None: never recorded, due at once)."""
    cause: Cause | None = None
    """Why the status was set without a call deciding it (see `Cause`); None after a call."""
    detail: str | None = None
    """A short, secret-free reason an operator can act on (the last outcome's detail)."""
    fence: int = Field(default=0, ge=0)
    """The highest fencing token applied to this element (a write with a lower one is refused)."""

    @field_validator("attempted_at", "checked_at", "due_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)

    def due_by(self, moment: datetime) -> bool:
        """True when the element is due at `moment` (never recorded: always)."""
        return self.due_at is None or self.due_at <= moment


class PaidRequest(BaseModel):
    """A two-step paid call in flight for a URL (urlscan scan, Apify run): resumable by a later
    holder while the provider keeps it."""

    model_config = ConfigDict(frozen=True)

    provider: str = Field(min_length=1)
    request_id: str = Field(min_length=1)
    submitted_at: datetime

    @field_validator("submitted_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return ensure_utc(v)


class OpenCall(BaseModel):
    """A paid request about to leave for a URL, recorded before it is sent: until its result is
    written, the URL state says a payment may be on its way. A holder that finds one past its timeout
    counts it as a failed call, so a crash or a store that cannot write costs at most the budget
    (docs/architecture.md, "No payment without a record")."""

    model_config = ConfigDict(frozen=True)

    provider: str = Field(min_length=1)
    subject: str = Field(min_length=1)
    """What the request asks about (the canonical URL being recorded)."""
    started_at: datetime
    fence: int = Field(ge=0)
    """The lease of the holder that opened it: its own result closes it, nobody else's."""
    unit_price_usd: float = Field(default=0.0, ge=0)
    """What the request costs (its account's unit price): a call whose answer never came is entered in
    the spend ledger at this price by the write that removes it (domain/spend.py, `unanswered_lines`)."""
    replaced: OpenCall | None = None
    """An earlier holder's open call, past its timeout and not yet counted, that this record was written
    over: counted (and entered as spent) with this one, first, so a holder that dies before its own
    result is written loses no count. Also what a saved two-step submission leaves in its place."""
    requests: int = Field(default=1, ge=1)
    """The paid requests this call may have sent: a call that reads its answer from several requests
    records their count again before each later one leaves (`call_guard.StoredPaidRequests`), so an
    unanswered call is entered as billed."""
    new_spending: bool = True
    """Whether the call's paid requests are new spending: not a poll of a request already paid for (a
    resumed two-step call on its paid client), which counts as a call but is never entered as spent."""

    @field_validator("started_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return ensure_utc(v)

    def chain(self) -> tuple[OpenCall, ...]:
        """This call and the uncounted ones it replaced, newest first."""
        return (self,) if self.replaced is None else (self, *self.replaced.chain())


class UrlState(BaseModel):
    """What is known about one canonical URL across every token holding it: the best answer of its
    window, the current failure streak, the calls spent, an open paid request. One indexed row per
    URL, so the per-URL rules never load the holders (docs/architecture.md, "The per-URL state
    machine")."""

    model_config = ConfigDict(frozen=True)

    url: str
    platform: str
    status: FetchStatus
    """Where the URL stood for a new holder when this state was written (for operators; the rules read
    the fields below)."""
    answer: FetchStatus | None = None
    """The best answer (ok > not_found > blocked > invalid) of the window; None: no answer yet."""
    answered_at: datetime | None = None
    """The anchor: when the call that produced `answer` was made (None: the answer needed no call)."""
    source_token: str | None = None
    """The token whose links for this URL represent an `ok` answer (copied by the reuse path)."""
    streak: int = Field(default=0, ge=0)
    """Consecutive failed calls since the last answer: `exhausted` once it reaches the budget."""
    attempted_at: datetime | None = None
    """The last call of the URL, whatever it brought back (the back-off counts from it)."""
    attempts: int = Field(default=0, ge=0)
    """Calls made for this URL in all: a counter, never a budget."""
    engine_failures: int = Field(default=0, ge=0)
    """Times our own code failed on this URL before any request (reset by a call)."""
    fence: int = Field(default=0, ge=0)
    request: PaidRequest | None = None
    """A submitted two-step paid call not answered yet: a later holder resumes it."""
    open_call: OpenCall | None = None
    """A paid request recorded before it left, whose result is not written yet."""
    version: int = Field(default=0, ge=0)
    """Incremented by every write: a write applies only to the version its decision read."""
    updated_at: datetime | None = None

    @field_validator("attempted_at", "answered_at", "updated_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)


class UnresolvedValue(BaseModel):
    """A raw tracker value whose shortlink could not be resolved for a transient reason (timeout,
    5xx): kept on the token, outside `social_urls` (which holds canonical URLs only), and resolved
    again by the retry path, so a flaky shortener never costs a token its link."""

    model_config = ConfigDict(frozen=True)

    field: str = Field(min_length=1)
    value: str = Field(min_length=1)
    reason: str = ""
    attempts: int = Field(default=1, ge=0)
    checked_at: datetime | None = None

    @field_validator("checked_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)


class DroppedTrackerValue(BaseModel):
    """A raw tracker value the profile reader refused for good, with the reason (secrets masked)."""

    model_config = ConfigDict(frozen=True)

    field: str
    shown: str
    """The value fit for logs and metadata: secrets masked, truncated, quoted."""
    reason: str
    placeholder: bool = False
    """True for expected noise ("TBA", "-"): logged at INFO, not WARNING."""

    def __str__(self) -> str:
        return f"{self.field}={self.shown}: {self.reason}"


class TokenDoc(BaseModel):
    """A `tokens` document. Its existence means "seen", not "finished"."""

    model_config = ConfigDict(frozen=True)

    address: str
    symbol: str | None = None
    image: str | None = None
    first_transfer_at: datetime | None = None
    fingerprints: list[str] = Field(default_factory=list)
    web: dict[str, Any] | None = None
    social_urls: list[SocialUrl] = Field(default_factory=list)
    unresolved: list[UnresolvedValue] = Field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    fence: int = Field(default=0, ge=0)
    """The highest token-lock fencing token applied to this token's own fields."""

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
    """What the TokenProfileReader hands the engine: canonical, de-duplicated URLs."""

    model_config = ConfigDict(frozen=True)

    address: str = Field(min_length=1)
    symbol: str | None = None
    image: str | None = None
    first_transfer_at: datetime | None = None
    urls: list[str] = Field(default_factory=list)
    dropped: tuple[DroppedTrackerValue, ...] = ()
    """Raw social values the reader refused for good: so a job can show what was lost instead of
    only logging it."""
    unresolved: tuple[UnresolvedValue, ...] = ()
    """Raw values whose resolution failed transiently: stored with the token and tried again."""


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

    @classmethod
    def stored(cls, planned: PlannedLink, object_id: str, token_address: str, entry_url: str, now: datetime) -> TokenLink:
        """The link a planned one becomes once its object is stored as `object_id` (every backend's)."""
        return cls(token_address=token_address, object=planned.kind, object_id=object_id, entry_url=entry_url,
                   platform=planned.obj.platform.value, subtype=planned.obj.subtype, link_depth=planned.depth,
                   created_at=now)

    def shape(self) -> tuple[str, str, str, str, str, int]:
        """Everything but the token address and creation time: what the equivalence test compares."""
        return (self.object.value, self.object_id, self.entry_url, self.platform, self.subtype, self.link_depth)
