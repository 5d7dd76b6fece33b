"""The Store protocol: everything DESIGN §4–§7 needs from persistence, in one small surface.

Two backends implement it (sqlite.py, mongo.py) and pass one contract suite.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenDoc, TokenLink, TokenProfile
from social_recording.domain.status import FetchStatus


class StoreConfigError(ValueError):
    """A bad SOCIAL_RECORDING_STORE_URL (the message names the variable, never a password)."""


@runtime_checkable
class Store(Protocol):
    def find_token(self, address: str) -> TokenDoc | None:
        """The whole token document, or None."""
        ...

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        """Which of `addresses` already have a document: one indexed `$in` query (seed 004 §1.4)."""
        ...

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """Insert a token whose every URL is `pending` (L-3). Insert-only: returns False, and changes
        nothing, when the address exists."""
        ...

    def record_url_result(
        self, address: str, url: str, status: FetchStatus, attempted_at: datetime | None
    ) -> bool:
        """Partial update of one `social_urls` element (H-015): set status; when `attempted_at` is given
        also set it and increment `attempts`. Never touches other elements, fingerprints or web.
        Returns False when no such (token, url) element exists."""
        ...

    def find_tokens_by_url_statuses(
        self,
        statuses: Collection[FetchStatus],
        addresses: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[TokenDoc]:
        """Tokens holding at least one element whose status is in `statuses` (indexed `$in`),
        optionally only among `addresses`; ordered by address for determinism."""
        ...

    def find_tokens_by_social_urls(self, urls: Sequence[str]) -> list[TokenDoc]:
        """Tokens holding any of `urls` (indexed on social_urls.url). Projection: only `address` and
        `social_urls` are filled; elements are not filtered (the caller picks them)."""
        ...

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """Atomic insert-if-absent by `platform_key` (unique per collection); returns the row id.
        An existing row is never overwritten (seed 002 §7, R-009)."""
        ...

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        """One stored object as a plain dict (id under "id"), or None."""
        ...

    def count_objects(self, kind: ObjectKind) -> int: ...

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        """First point only per (object, metric): `$setOnInsert` semantics."""
        ...

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]: ...

    def delete_links(self, token_address: str, entry_url: str) -> int:
        """Delete this token's links for one entry URL; returns how many."""
        ...

    def append_links(self, links: Sequence[TokenLink]) -> None: ...

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        """This token's links for one entry URL, ordered by (link_depth, object, object_id)."""
        ...

    def close(self) -> None: ...
