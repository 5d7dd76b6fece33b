"""The graph writer: the one place where a generator's graph, or a reused answer, becomes rows.

`plan()` validates the graph first, so a broken one (SocialContractError) leaves the store untouched.
`record()` hands the store one fenced unit: objects (atomic upsert by platform_key, never overwritten),
first metrics, the token's links for this URL replaced (delete-then-append: a retry of a half-written
URL never duplicates links), the URL's state and the element. Writes are idempotent: repeating one
produces the same rows, which is what lets a write that meets an unavailable store be repeated
(recording/store_retry.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime

from social_recording.domain.bounds import at_least
from social_recording.domain.graph import PlannedLink, SocialGraph, plan, planned_links
from social_recording.domain.spend import SpendLine
from social_recording.domain.url_machine import NextState
from social_recording.recording.store_retry import WRITE_RETRY_S, write_through_outages
from social_recording.store.base import ElementWrite, UrlWrite, UrlWriteStore, WriteOutcome


class GraphWriter:
    """Plans graphs and applies one recording of one (token, URL) under its URL lock's fence."""

    def __init__(
        self, store: UrlWriteStore, *, retry_s: float = WRITE_RETRY_S, sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`sleep` and `monotonic` wait a store outage out (a test's own clock: no real wait)."""
        self._store = store
        self._retry_s = at_least("retry_s", retry_s, 0, "seconds")
        self._sleep = sleep
        self._monotonic = monotonic

    @property
    def retry_s(self) -> float:
        """How long a write is repeated through a store outage (every write of a recording alike)."""
        return self._retry_s

    @staticmethod
    def plan(graph: SocialGraph) -> list[PlannedLink]:
        """The links the graph yields (raises SocialContractError on a broken graph)."""
        return planned_links(plan(graph))

    def record(
        self,
        *,
        address: str,
        url: str,
        platform: str,
        fence: int,
        now: datetime,
        element: ElementWrite,
        expect_version: int,
        state: NextState | None = None,
        graph_links: list[PlannedLink] | None = None,
        copy_links_from: str | None = None,
        spend: SpendLine | None = None,
    ) -> WriteOutcome:
        """Apply one recording; refused (nothing changed) when a newer holder wrote, the element is ok,
        or the URL state moved on from `expect_version` (STALE: the caller reads it again).

        The reuse path (`copy_links_from`) copies ONE source token's links for the URL, so it yields
        exactly the rows the generator path would, token address aside.
        """
        write = UrlWrite(
            address=address,
            url=url,
            platform=platform,
            fence=fence,
            now=now,
            element=element,
            expect_version=expect_version,
            state=state,
            graph_links=graph_links,
            copy_links_from=copy_links_from,
            spend=spend,
        )
        return write_through_outages(lambda: self._store.apply_url_write(write), what="recording", url=url,
                                     monotonic=self._monotonic, retry_s=self._retry_s, sleep=self._sleep)
