"""What happened to one URL and to one token: the result types every layer above the engine reads.

A URL outcome's `status` is the FetchStatus stored for the element when something was recorded, or an
`EngineOutcome` when nothing was (a lock wait ran out, a newer holder won, our own code failed).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import DroppedTrackerValue
from social_recording.domain.status import ABSORBING, FetchStatus
from social_recording.recording._text import safe_url


class EngineOutcome(StrEnum):
    """Outcomes of one URL that are not a stored FetchStatus: nothing was written for the element."""

    LOCKED = "locked"
    """The URL lock wait ran out: the element is left as it was, attempts unchanged."""
    LOST = "lost"
    """The URL lock was no longer ours: before a paid call (nothing sent), or at the write (a newer
    holder had already recorded the URL, so ours was refused). The next run completes the URL."""
    LOCKED_OUT = "locked_out"
    """The token lock is held elsewhere (retry path): skipped, picked up next cycle."""
    INVALID_URL = "invalid_url"
    """The stored URL is not canonical (our bug upstream of the reader): isolated, element untouched."""
    DEFERRED = "deferred"
    """Nothing was sent because a backend needed before the call (the shared rate limiter, the lock
    server) did not answer within its outage bound: nothing learned, the element is left as it was
    for the next run."""
    NO_ELEMENT = "no_element"
    """The token or its element for this URL is not in the store: there is nothing to record against."""
    FAILED = "failed"
    """An unexpected error in our own code or a backend (store, lock): an engine failure. Attempts
    are unchanged unless a request had already left (then it is recorded as an `error` attempt, so
    the back-off holds). The run is marked failed after everything else is recorded."""


OutcomeStatus = FetchStatus | EngineOutcome


class Written(StrEnum):
    """The store's collections a recording wrote to (what a run reports as written, per asset)."""

    TOKEN_URLS = "token_urls"
    """Tokens and their URL elements."""
    CONTENTS = "contents"
    ACCOUNTS = "accounts"
    VENUES = "venues"
    METRICS = "metrics"
    TOKEN_LINKS = "token_links"

    @classmethod
    def of_kind(cls, kind: ObjectKind) -> Written:
        return _OF_KIND[kind]


_OF_KIND = {ObjectKind.CONTENT: Written.CONTENTS, ObjectKind.ACCOUNT: Written.ACCOUNTS,
            ObjectKind.VENUE: Written.VENUES}


@dataclass(frozen=True)
class UrlOutcome:
    """What happened to one URL of one token. `detail` is a short reason, never a secret."""

    token: str
    url: str
    platform: str | None
    status: OutcomeStatus
    attempted: bool
    reused: bool
    waited_ms: float
    took_ms: float
    detail: str = ""
    previous: FetchStatus | None = None
    """The element's status read inside the lock before this invocation (None when not read)."""
    lease_lost: bool = False
    """The URL lease was reported lost during this invocation (written or not)."""
    written: frozenset[Written] = frozenset()
    """The collections this invocation wrote to (empty when nothing was written)."""

    @property
    def recorded(self) -> bool:
        """True when the element's status was written (or already final and deliberately left)."""
        return isinstance(self.status, FetchStatus)

    @property
    def converged(self) -> bool:
        """The element reached an absorbing status it did not have before."""
        return isinstance(self.status, FetchStatus) and self.status in ABSORBING and self.status != self.previous

    @property
    def engine_failure(self) -> bool:
        return self.status is EngineOutcome.FAILED

    def as_row(self) -> dict[str, object]:
        """A flat row for run metadata tables (the URL is made log-safe)."""
        return {
            "token": self.token,
            "url": safe_url(self.url),
            "platform": self.platform or "",
            "status": str(self.status),
            "attempted": self.attempted,
            "reused": self.reused,
            "waited_ms": round(self.waited_ms, 1),
            "took_ms": round(self.took_ms, 1),
            "detail": self.detail,
        }


class TokenStatus(StrEnum):
    RECORDED = "recorded"
    """Targets were handed to the URL recorder; see the per-URL outcomes."""
    UP_TO_DATE = "up_to_date"
    """The token is stored and no URL is due on the live path: nothing to do."""
    LOCKED_OUT = "locked_out"
    """Another worker holds the token lock: returned at once."""
    NO_PROFILE = "no_profile"
    """The tracker has no usable profile (unknown address, or no image): nothing written."""
    MALFORMED = "malformed"
    """The tracker's item for this token could not be read (a junk field): nothing written; the next
    reconcile of its window tries again."""
    LOST = "lost"
    """The token lease was lost between URLs: stopped; the remaining URLs stay for the next run."""
    FAILED = "failed"
    """The upstream read or a backend failed before any URL was recorded."""


@dataclass(frozen=True)
class TokenOutcome:
    address: str
    status: TokenStatus
    urls: tuple[UrlOutcome, ...] = ()
    created: bool = False
    detail: str = ""
    took_ms: float = 0.0
    dropped: tuple[DroppedTrackerValue, ...] = ()
    """Tracker values the profile reader refused for good, for run metadata."""
    unresolved: int = 0
    """Raw values kept for a later resolution (their shortlink failed transiently)."""
