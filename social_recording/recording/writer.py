"""The graph writer: the one place where a generator's graph, or a reused answer, becomes rows.

`plan()` validates the graph first, so a broken one (SocialContractError) leaves the store untouched.
`record()` hands the store one fenced unit: objects (atomic upsert by platform_key, never overwritten),
first metrics, the token's links for this URL replaced (delete-then-append: a retry of a half-written
URL never duplicates links), the URL's state and the element. Writes are idempotent: repeating one
produces the same rows.
"""

from __future__ import annotations

from datetime import datetime

from social_recording.domain.graph import PlannedLink, SocialGraph, plan, planned_links
from social_recording.store.base import ElementWrite, Store, UrlStateWrite, UrlWrite, WriteOutcome


class GraphWriter:
    """Plans graphs and applies one recording of one (token, URL) under its URL lock's fence."""

    def __init__(self, store: Store) -> None:
        self._store = store

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
        state: UrlStateWrite | None = None,
        graph_links: list[PlannedLink] | None = None,
        copy_links_from: str | None = None,
    ) -> WriteOutcome:
        """Apply one recording; refused (nothing changed) when a newer holder wrote or the element is ok.

        The reuse path (`copy_links_from`) copies ONE source token's links for the URL, so it yields
        exactly the rows the generator path would, token address aside.
        """
        return self._store.apply_url_write(
            UrlWrite(
                address=address,
                url=url,
                platform=platform,
                fence=fence,
                now=now,
                element=element,
                state=state,
                graph_links=graph_links,
                copy_links_from=copy_links_from,
            )
        )
