"""The dedupe gate (DESIGN §5, seed 002): has any token already answered this canonical URL?

The decision rules live in the pure `domain.dedupe.decide`; this class only reads the store and
picks, in the app, the elements whose url is the one asked about (a multikey index finds documents,
it does not filter array elements: seed 002 §10). It is called once per URL INSIDE the URL lock
(L-6: a decision made outside the lock is stale), with a one-element list (U-7 kept, L-6).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from social_recording.domain.dedupe import DEDUPE_TTL, DedupeHit, decide
from social_recording.domain.models import SocialUrl
from social_recording.domain.urls import platform_of
from social_recording.recording._text import safe_url
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")


class DedupeGate:
    """`lookup(url, now)` -> a hit naming one source token, or None. Never raises (a failure is a miss)."""

    def __init__(self, store: Store, *, ttl: timedelta = DEDUPE_TTL) -> None:
        self._store = store
        self._ttl = ttl

    def lookup(self, url: str, now: datetime, *, exclude_token: str | None = None) -> DedupeHit | None:
        """`exclude_token` leaves out the asking token's own element: a token never reuses itself
        (a retry that names not_found must really re-check, and copying one's own links is a no-op)."""
        try:
            docs = self._store.find_tokens_by_social_urls([url])
            candidates: list[tuple[str, SocialUrl]] = [
                (doc.address, el)
                for doc in docs
                if doc.address != exclude_token
                for el in doc.social_urls
                if el.url == url
            ]
            return decide(platform_of(url), candidates, now, self._ttl)
        except Exception as exc:  # seed 002 / L-6: the gate never raises; the normal path runs instead
            log.warning("dedupe gate failed, treating as a miss url=%s error=%s", safe_url(url), type(exc).__name__)
            return None
