"""The dedupe decision (seed 002 §5.3), pure: given every token's element for one URL, reuse or fetch.

candidates = elements with status in REUSABLE; status = ok if any ok, else not_found;
anchor = max non-null attempted_at among candidates of that status;
reuse when there is no anchor (zero-call results, G-4) or now - anchor < TTL.
The source token is the anchor's owner (one token only: link explosion, seed 002 §10).
Telegram never hits: its key (the username) is mutable (U-4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.models import SocialUrl
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform

DEDUPE_TTL = timedelta(days=14)
"""A code constant, not a setting (seed 002 U-8)."""


@dataclass(frozen=True)
class DedupeHit:
    status: FetchStatus
    source_token: str
    anchor: datetime | None


def decide(
    platform: Platform,
    candidates: Iterable[tuple[str, SocialUrl]],
    now: datetime,
    ttl: timedelta = DEDUPE_TTL,
) -> DedupeHit | None:
    """Return a hit naming one source token, or None (a miss: fetch).

    `candidates` are (token_address, element) pairs whose element.url is the URL being looked up.
    Ties (no anchor, or equal anchors) pick the smallest address, so the choice is deterministic.
    """
    if platform is Platform.TELEGRAM:
        return None
    pairs = list(candidates)
    oks = [(a, e) for a, e in pairs if e.status is FetchStatus.OK]
    chosen = oks or [(a, e) for a, e in pairs if e.status is FetchStatus.NOT_FOUND]
    if not chosen:
        return None
    status = FetchStatus.OK if oks else FetchStatus.NOT_FOUND
    anchored = [(a, e) for a, e in chosen if e.attempted_at is not None]
    if not anchored:
        source = min(a for a, _ in chosen)
        return DedupeHit(status=status, source_token=source, anchor=None)
    anchor = max(e.attempted_at for _, e in anchored if e.attempted_at is not None)
    if now - anchor >= ttl:
        return None
    source = min(a for a, e in anchored if e.attempted_at == anchor)
    return DedupeHit(status=status, source_token=source, anchor=anchor)
