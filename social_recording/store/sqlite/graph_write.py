"""Writing the graph: objects inserted if absent (by platform key), their first metrics, a token's links
from one entry URL replaced. `apply_url_write` does this inside its one transaction, `upsert_object`
and `record_first_metrics` on their own.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import TokenLink
from social_recording.store._codec import checked_metrics, json_dumps, object_body, object_collection
from social_recording.store.sqlite.connection import SqliteBase
from social_recording.store.sqlite.queries import _LINK_COLS, q_delete_links, q_links_by_token_entry
from social_recording.store.sqlite.rows import _link_from_row, _link_row


@dataclass(frozen=True)
class _PreparedObject:
    """One planned link with its object ready for the insert: table, row values, checked metrics."""

    planned: PlannedLink
    table: str
    row: tuple[Any, ...]
    """(platform, platform_key, subtype, doc json, created_at)"""
    metrics: Mapping[str, float]

    @classmethod
    def of(cls, pl: PlannedLink, stamp: str) -> _PreparedObject:
        obj = pl.obj
        return cls(pl, object_collection(pl.kind), _object_row(obj, stamp),
                   checked_metrics(obj.metrics, obj.platform_key) if obj.metrics else {})


def _object_row(obj: SocialObject, stamp: str) -> tuple[Any, ...]:
    """An object's row values, in the order of `_upsert_prepared`'s insert."""
    return obj.platform.value, obj.platform_key, obj.subtype, json_dumps(object_body(obj)), stamp


_INSERT_METRICS = ("INSERT INTO metrics (object, object_id, metric, value, observed_at) VALUES (?, ?, ?, ?, ?) "
                   "ON CONFLICT (object, object_id, metric) DO NOTHING")
"""A metric's first value is kept: later observations of the same metric are not written."""


class GraphWriteMixin(SqliteBase):
    """The object, metric and link writes shared by the URL write and the graph methods."""

    def _upsert_object(self, conn: sqlite3.Connection, kind: ObjectKind, obj: SocialObject, stamp: str) -> str:
        return self._upsert_prepared(conn, object_collection(kind), _object_row(obj, stamp))

    @staticmethod
    def _upsert_prepared(conn: sqlite3.Connection, table: str, row: Sequence[Any]) -> str:
        """Insert-if-absent by platform_key; the new row's id comes back from the insert itself, an
        existing row's from its unique key."""
        inserted = conn.execute(
            f"INSERT INTO {table} (platform, platform_key, subtype, doc, created_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform_key) DO NOTHING RETURNING id",
            row,
        ).fetchone()
        if inserted is not None:
            return str(inserted[0])
        return str(conn.execute(f"SELECT id FROM {table} WHERE platform_key = ?", [row[1]]).fetchone()[0])

    @staticmethod
    def _insert_metrics(
        conn: sqlite3.Connection, kind: ObjectKind, object_id: str, values: Mapping[str, float], stamp: str
    ) -> None:
        conn.executemany(_INSERT_METRICS,
                         [(ObjectKind(kind).value, object_id, name, value, stamp) for name, value in values.items()])

    def _write_graph(
        self, conn: sqlite3.Connection, address: str, url: str, graph: Sequence[_PreparedObject], now: datetime
    ) -> list[TokenLink]:
        links: list[TokenLink] = []
        metric_rows: list[tuple[Any, ...]] = []
        for p in graph:
            object_id = self._upsert_prepared(conn, p.table, p.row)
            metric_rows += [(p.planned.kind.value, object_id, name, value, p.row[4])
                            for name, value in p.metrics.items()]
            links.append(TokenLink.stored(p.planned, object_id, address, url, now))
        if metric_rows:
            conn.executemany(_INSERT_METRICS, metric_rows)
        self._replace_links(conn, address, url, links)
        return links

    def _copy_links(
        self, conn: sqlite3.Connection, address: str, url: str, source: str, now: datetime
    ) -> list[TokenLink]:
        """Copy ONE source token's links (read before anything is deleted: a self-copy is harmless)."""
        rows = conn.execute(*q_links_by_token_entry(source, url)).fetchall()
        links = [
            _link_from_row(r).model_copy(update={"token_address": address, "created_at": now}) for r in rows
        ]
        self._replace_links(conn, address, url, links)
        return links

    @staticmethod
    def _replace_links(conn: sqlite3.Connection, address: str, url: str, links: Sequence[TokenLink]) -> None:
        conn.execute(*q_delete_links(address, url))
        if links:
            conn.executemany(
                f"INSERT INTO token_links ({_LINK_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_link_row(link) for link in links],
            )
