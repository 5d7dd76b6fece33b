"""The social graph's reads and single writes: objects by id, their first metrics, a token's links, and
their counts (read from the counters).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenLink, utcnow
from social_recording.store._codec import checked_metrics, dt_from_text, dt_to_text, json_loads
from social_recording.store.counts import LINKS_KEY, METRICS_KEY, object_key
from social_recording.store.sqlite.graph_write import GraphWriteMixin
from social_recording.store.sqlite.queries import q_links_by_token_entry, q_metrics_of_object, q_object_by_id
from social_recording.store.sqlite.rows import _link_from_row


class GraphMixin(GraphWriteMixin):
    """GraphStore (store/base.py)."""

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """Insert-if-absent by platform_key, then read the id, in one write transaction, so
        concurrent callers all get the one row's id."""
        with self._write() as conn:
            return self._upsert_object(conn, kind, obj, dt_to_text(now or utcnow()))

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        try:
            rowid = int(object_id)
        except (TypeError, ValueError):
            return None
        row = self._conn().execute(*q_object_by_id(kind, rowid)).fetchone()
        if row is None:
            return None
        oid, platform, platform_key, subtype, doc, created_at = row
        return {
            "id": str(oid),
            "platform": platform,
            "platform_key": platform_key,
            "subtype": subtype,
            **json_loads(doc),
            "created_at": dt_from_text(created_at),
        }

    def count_objects(self, kind: ObjectKind) -> int:
        return self._counter(object_key(kind))

    def _counter(self, key: str) -> int:
        row = self._conn().execute("SELECT n FROM store_counts WHERE key = ?", [key]).fetchone()
        return 0 if row is None else int(row[0])

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        values = checked_metrics(metrics, object_id)
        if not values:
            return
        with self._write() as conn:
            self._insert_metrics(conn, kind, object_id, values, dt_to_text(observed_at))

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]:
        return {
            name: float(value) for name, value in self._conn().execute(*q_metrics_of_object(kind, object_id))
        }

    def count_metrics(self) -> int:
        return self._counter(METRICS_KEY)


    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        rows = self._conn().execute(*q_links_by_token_entry(token_address, entry_url)).fetchall()
        return [_link_from_row(r) for r in rows]

    def count_links(self) -> int:
        return self._counter(LINKS_KEY)
