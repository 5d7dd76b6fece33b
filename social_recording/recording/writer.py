"""The graph writer (DESIGN §6): the one place where a graph becomes rows and token_links (R-003).

Order matters because there are no multi-document transactions (seed 004 §6.4): objects first
(atomic upsert by platform_key, never overwritten: R-009), then first metrics (`$setOnInsert`),
then the token's links for this entry URL are REPLACED (delete-then-append, H-013). A crash
anywhere leaves a state the next attempt overwrites with the same rows, so writes are idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from social_recording.domain.graph import ObjectKind, SocialGraph, plan, planned_links
from social_recording.domain.models import TokenLink
from social_recording.store.base import Store

Checkpoint = Callable[[], None]
"""Called before the first write and again before the link replacement; raises to stop (the URL lock
was lost: L-6, H-5)."""

_KIND_ORDER = {ObjectKind.ACCOUNT: 0, ObjectKind.VENUE: 1, ObjectKind.CONTENT: 2}


def _noop() -> None:
    return None


class GraphWriter:
    def __init__(self, store: Store) -> None:
        self._store = store

    def write(
        self,
        token_address: str,
        entry_url: str,
        graph: SocialGraph,
        now: datetime,
        *,
        checkpoint: Checkpoint = _noop,
    ) -> list[TokenLink]:
        """Record `graph` for one (token, entry URL); return the links written.

        `plan()` runs first, so a SocialContractError leaves the store untouched (H-009).
        """
        links_plan = planned_links(plan(graph))
        checkpoint()
        object_ids: list[str] = [""] * len(links_plan)
        # Accounts and venues before contents: a reader never sees a content whose author row is missing.
        for i in sorted(range(len(links_plan)), key=lambda i: (_KIND_ORDER[links_plan[i].kind], i)):
            pl = links_plan[i]
            object_ids[i] = self._store.upsert_object(pl.kind, pl.obj, now)
            if pl.obj.metrics:
                self._store.record_first_metrics(pl.kind, object_ids[i], pl.obj.metrics, now)
        links = [
            TokenLink(
                token_address=token_address,
                object=pl.kind,
                object_id=object_ids[i],
                entry_url=entry_url,
                platform=pl.obj.platform.value,
                subtype=pl.obj.subtype,
                link_depth=pl.depth,
                created_at=now,
            )
            for i, pl in enumerate(links_plan)
        ]
        checkpoint()
        self._replace_links(token_address, entry_url, links)
        return links

    def link_existing(
        self,
        token_address: str,
        entry_url: str,
        source_token: str,
        now: datetime,
        *,
        checkpoint: Checkpoint = _noop,
    ) -> list[TokenLink]:
        """The reuse path (seed 002 §11): copy ONE source token's links for `entry_url` (never every
        token's: link explosion, §10), rebound to `token_address` with a fresh created_at, by the same
        delete-then-append as `write` so the reuse path yields exactly the generator path's rows.

        The source links are read before anything is deleted, so even a self-copy is harmless.
        """
        source = self._store.find_links(source_token, entry_url)
        links = [
            TokenLink.model_validate({**link.model_dump(), "token_address": token_address, "created_at": now})
            for link in source
        ]
        checkpoint()
        self._replace_links(token_address, entry_url, links)
        return links

    def _replace_links(self, token_address: str, entry_url: str, links: list[TokenLink]) -> None:
        self._store.delete_links(token_address, entry_url)
        if links:
            self._store.append_links(links)
