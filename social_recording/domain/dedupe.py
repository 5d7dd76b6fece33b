"""The dedupe decision, pure: given what is known about a URL across every token, reuse or fetch.

Reuse when the URL's last answer is reusable (ok, not_found, blocked, invalid) and was obtained within
the TTL (an answer with no call behind it — a URL shape that needs no fetch — has no anchor and stays
reusable). The hit names one source token whose links are copied (never every holder's: copying all
of them multiplies links with every reuse). Telegram never hits: its key, the username, can be given
away and taken by someone else, so an old answer may describe another channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.models import UrlState
from social_recording.domain.status import REUSABLE, FetchStatus
from social_recording.domain.urls import Platform

DEDUPE_TTL = timedelta(days=14)
"""A code constant, not a setting: changing it changes what "the same answer" means for every run."""


@dataclass(frozen=True)
class DedupeHit:
    status: FetchStatus
    source_token: str | None
    """Whose links stand for the answer (None for answers without links: not_found, blocked, invalid)."""
    anchor: datetime | None


def decide(platform: Platform, state: UrlState | None, now: datetime, ttl: timedelta = DEDUPE_TTL) -> DedupeHit | None:
    """A hit, or None (a miss: fetch)."""
    if platform is Platform.TELEGRAM or state is None or state.status not in REUSABLE:
        return None
    if state.attempted_at is not None and now - state.attempted_at >= ttl:
        return None
    if state.status is FetchStatus.OK and not state.source_token:
        return None  # nobody's links to copy: fetch rather than record ok without a graph
    source = state.source_token if state.status is FetchStatus.OK else None
    return DedupeHit(status=state.status, source_token=source, anchor=state.attempted_at)
