"""Every hot-path statement is built by one function in `QUERIES`; the store runs those same strings
and `explain()` shows SQLite's plan for them, which the index-use test checks. The retry and health
statements are in `queries_selection.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from social_recording.domain.graph import ObjectKind
from social_recording.store._codec import object_collection
from social_recording.store.sqlite.queries_selection import (
    q_count_held_back,
    q_count_waiting,
    q_due_among_addresses,
    q_due_by_status,
    q_due_by_status_platform,
    q_oldest_by_status,
    q_waiting,
)
from social_recording.store.sqlite.sql import Sql, _marks

_TOKEN_COLS = "address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at, fence"
_URL_COLS = "address, url, status, attempted_at, attempts, checked_at, cause, detail, fence, due_at"
_LINK_COLS = "token_address, object, object_id, entry_url, platform, subtype, link_depth, created_at"
_STATE_COLS = (
    "url, platform, status, attempted_at, attempts, source_token, fence, request_provider, request_id, "
    "request_submitted_at, updated_at, answer, answered_at, streak, engine_failures, version, open_call"
)


def q_token_by_address(address: str) -> Sql:
    return f"SELECT {_TOKEN_COLS} FROM tokens WHERE address = ?", [address]


def q_urls_by_address(address: str) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE address = ? ORDER BY position", [address]


def q_holders(url: str, limit: int) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE url = ? ORDER BY address LIMIT ?", [url, limit]


def q_element(address: str, url: str) -> Sql:
    return f"SELECT {_URL_COLS} FROM token_urls WHERE address = ? AND url = ?", [address, url]


def q_existing_addresses(addresses: Sequence[str]) -> Sql:
    return f"SELECT address FROM tokens WHERE address IN ({_marks(len(addresses))})", list(addresses)


def q_url_state(url: str) -> Sql:
    """The dedupe gate and the per-URL budget: one primary-key lookup, whatever the holders."""
    return f"SELECT {_STATE_COLS} FROM url_states WHERE url = ?", [url]


def q_object_id_by_platform_key(kind: ObjectKind | str, platform_key: str) -> Sql:
    return f"SELECT id FROM {object_collection(kind)} WHERE platform_key = ?", [platform_key]


def q_object_by_id(kind: ObjectKind | str, object_id: int) -> Sql:
    return (
        f"SELECT id, platform, platform_key, subtype, doc, created_at FROM {object_collection(kind)} WHERE id = ?",
        [object_id],
    )


def q_metrics_of_object(kind: ObjectKind | str, object_id: str) -> Sql:
    return (
        "SELECT metric, value FROM metrics WHERE object = ? AND object_id = ?",
        [ObjectKind(kind).value, object_id],
    )


def q_links_by_token_entry(token_address: str, entry_url: str) -> Sql:
    """token_address narrows through the (token_address, created_at) prefix."""
    return (
        f"SELECT {_LINK_COLS} FROM token_links WHERE token_address = ? AND entry_url = ? "
        "ORDER BY link_depth, object, object_id",
        [token_address, entry_url],
    )


def q_delete_links(token_address: str, entry_url: str) -> Sql:
    return "DELETE FROM token_links WHERE token_address = ? AND entry_url = ?", [token_address, entry_url]


def q_unresolved_due(checked_before: str, limit: int) -> Sql:
    return (
        "SELECT address, field, value, reason, attempts, checked_at FROM unresolved_values "
        "WHERE checked_at <= ? ORDER BY checked_at, address, field LIMIT ?",
        [checked_before, limit],
    )


QUERIES: dict[str, Callable[..., Sql]] = {
    "token_by_address": q_token_by_address,
    "urls_by_address": q_urls_by_address,
    "element": q_element,
    "holders": q_holders,
    "existing_addresses": q_existing_addresses,
    "url_state": q_url_state,
    "due_by_status": q_due_by_status,
    "due_by_status_platform": q_due_by_status_platform,
    "oldest_by_status": q_oldest_by_status,
    "due_among_addresses": q_due_among_addresses,
    "object_id_by_platform_key": q_object_id_by_platform_key,
    "object_by_id": q_object_by_id,
    "metrics_of_object": q_metrics_of_object,
    "links_by_token_entry": q_links_by_token_entry,
    "delete_links": q_delete_links,
    "unresolved_due": q_unresolved_due,
    "waiting": q_waiting,
    "count_waiting": q_count_waiting,
    "count_held_back": q_count_held_back,
}
"""The hot-path statements, by name; `SqliteStore.explain(name, *params)` plans exactly these."""
