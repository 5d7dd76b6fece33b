"""The dedupe decision, pure: may another holder take this URL's answer without a call?

An answer (ok, not_found, blocked, invalid) is reused within the TTL of the call that produced it; an
answer no call stood behind (a URL shape that needs no fetch) has no anchor and stays reusable. On
`ok` the hit names one source token whose links are copied, never every holder's (copying all of
them multiplies links with every reuse). docs/architecture.md, "The dedupe gate".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.models import UrlState
from social_recording.domain.status import FetchStatus

DEDUPE_TTL = timedelta(days=14)
"""A code constant, not a setting: changing it changes what "the same answer" means for every run."""


@dataclass(frozen=True)
class DedupeHit:
    status: FetchStatus
    source_token: str | None
    """Whose links stand for the answer (None for answers without links: not_found, blocked, invalid)."""
    anchor: datetime | None


def decide(state: UrlState | None, now: datetime, ttl: timedelta = DEDUPE_TTL) -> DedupeHit | None:
    """A hit, or None (a miss: fetch)."""
    if state is None or state.answer is None:
        return None
    if state.answered_at is not None and now - state.answered_at >= ttl:
        return None
    if state.answer is FetchStatus.OK and not state.source_token:
        return None  # nobody's links to copy: fetch rather than record ok without a graph
    source = state.source_token if state.answer is FetchStatus.OK else None
    return DedupeHit(status=state.answer, source_token=source, anchor=state.answered_at)
