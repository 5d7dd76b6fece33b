"""The dedupe gate: has any token already answered this canonical URL?

The decision rules live in the pure `domain.dedupe.decide`; the gate reads the URL's one state row
(a single indexed lookup, however many tokens hold the URL). It is asked INSIDE the URL lock: a
decision made outside would be stale by the time the call is made.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from social_recording.domain.dedupe import DEDUPE_TTL, DedupeHit, decide
from social_recording.domain.models import UrlState
from social_recording.domain.urls import Platform, platform_of
from social_recording.recording._text import safe_url
from social_recording.store.base import Store

log = logging.getLogger("social_recording.recording")


class DedupeGate:
    """`lookup(url, now)` -> a hit naming one source token, or None. Never raises (a failure is a miss,
    so the normal path runs instead: a broken gate costs a call, never a wrong answer)."""

    def __init__(self, store: Store, *, ttl: timedelta = DEDUPE_TTL) -> None:
        self._store = store
        self._ttl = ttl

    def state(self, url: str) -> UrlState | None:
        """The URL's state, or None when there is none or it cannot be read."""
        try:
            return self._store.find_url_state(url)
        except Exception as exc:
            log.warning("dedupe gate failed to read url=%s error=%s; treated as a miss", safe_url(url),
                        type(exc).__name__)
            return None

    def lookup(self, url: str, now: datetime, *, state: UrlState | None = None, read: bool = True,
               platform: Platform | None = None) -> DedupeHit | None:
        """Decide on `state` (read here when `read` and none is given); `platform` when the caller
        already parsed the URL."""
        try:
            if state is None and read:
                state = self.state(url)
            return decide(platform or platform_of(url), state, now, self._ttl)
        except Exception as exc:
            log.warning("dedupe gate failed, treating as a miss url=%s error=%s", safe_url(url), type(exc).__name__)
            return None
