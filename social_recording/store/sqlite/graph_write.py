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
    """An object's row values, in the order of `_ids_of`'s insert."""
    return obj.platform.value, obj.platform_key, obj.subtype, json_dumps(object_body(obj)), stamp


_METRICS = "metrics (object, object_id, metric, value, observed_at)"
_FIRST_VALUE_KEPT = "ON CONFLICT (object, object_id, metric) DO NOTHING"
"""A metric's first value is kept: later observations of the same metric are not written."""


ROWS_PER_STATEMENT = 200
"""Rows written by one multi-row insert: far below SQLite's limit on bound values (32,766), and a
graph's rows (a few objects, a few dozen metrics and links) go in one statement."""


def _chunks(rows: Sequence[Sequence[Any]]) -> list[Sequence[Sequence[Any]]]:
    return [rows[i:i + ROWS_PER_STATEMENT] for i in range(0, len(rows), ROWS_PER_STATEMENT)]


def _insert_rows(conn: sqlite3.Connection, into: str, rows: Sequence[Sequence[Any]], then: str = "") -> None:
    """`INSERT INTO {into} VALUES (...), (...) {then}` for all `rows`: statements of many rows each,
    rather than one SQLite step per row as `executemany` runs them."""
    if not rows:
        return
    one = f"({', '.join('?' * len(rows[0]))})"
    for chunk in _chunks(rows):
        conn.execute(f"INSERT INTO {into} VALUES {', '.join([one] * len(chunk))} {then}",
                     [value for row in chunk for value in row])


class GraphWriteMixin(SqliteBase):
    """The object, metric and link writes shared by the URL write and the graph methods."""

    def _upsert_object(self, conn: sqlite3.Connection, kind: ObjectKind, obj: SocialObject, stamp: str) -> str:
        table = object_collection(kind)
        return self._ids_of(conn, table, [_object_row(obj, stamp)])[(table, obj.platform_key)]

    @staticmethod
    def _insert_metrics(
        conn: sqlite3.Connection, kind: ObjectKind, object_id: str, values: Mapping[str, float], stamp: str
    ) -> None:
        _insert_rows(conn, _METRICS, [(ObjectKind(kind).value, object_id, name, value, stamp)
                                      for name, value in values.items()], _FIRST_VALUE_KEPT)

    def _write_graph(
        self, conn: sqlite3.Connection, address: str, url: str, graph: Sequence[_PreparedObject], now: datetime
    ) -> list[TokenLink]:
        """The whole graph in a few statements: each object table's rows in one insert, the metrics in
        one, the links in one. The write lock is held meanwhile, and every statement run (each row of an
        `executemany` too) lets go of the interpreter lock and waits to take it back behind the process's
        other threads (docs/architecture.md, "Per-URL bookkeeping")."""
        ids: dict[tuple[str, str], str] = {}
        for table in dict.fromkeys(p.table for p in graph):
            ids.update(self._ids_of(conn, table, [p.row for p in graph if p.table == table]))
        links: list[TokenLink] = []
        metric_rows: list[tuple[Any, ...]] = []
        for p in graph:
            object_id = ids[(p.table, p.row[1])]
            metric_rows += [(p.planned.kind.value, object_id, name, value, p.row[4])
                            for name, value in p.metrics.items()]
            links.append(TokenLink.stored(p.planned, object_id, address, url, now))
        _insert_rows(conn, _METRICS, metric_rows, _FIRST_VALUE_KEPT)
        self._replace_links(conn, address, url, links)
        return links

    @staticmethod
    def _ids_of(conn: sqlite3.Connection, table: str, rows: Sequence[Sequence[Any]]) -> dict[tuple[str, str], str]:
        """Insert-if-absent of `rows` (in their order, so new ids follow it) and every row's id by
        platform_key: the new ones from the insert itself, the existing ones in one read."""
        ids: dict[tuple[str, str], str] = {}
        for chunk in _chunks(rows):
            inserted = conn.execute(
                f"INSERT INTO {table} (platform, platform_key, subtype, doc, created_at) VALUES "
                + ", ".join(["(?, ?, ?, ?, ?)"] * len(chunk))
                + " ON CONFLICT (platform_key) DO NOTHING RETURNING id, platform_key",
                [value for row in chunk for value in row],
            ).fetchall()
            ids.update({(table, key): str(object_id) for object_id, key in inserted})
            existing = list(dict.fromkeys(row[1] for row in chunk if (table, row[1]) not in ids))
            if existing:
                found = conn.execute(f"SELECT id, platform_key FROM {table} WHERE platform_key IN "
                                     f"({', '.join('?' * len(existing))})", existing).fetchall()
                ids.update({(table, key): str(object_id) for object_id, key in found})
        return ids

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
        _insert_rows(conn, f"token_links ({_LINK_COLS})", [_link_row(link) for link in links])
