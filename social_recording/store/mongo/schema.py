"""The Mongo store's collections, indexes and schema version.

Collections: `tokens` (one document per mint address), `token_urls` (one document per element of a
token's `social_urls`, keyed by (address, url)), `url_states` (one per canonical URL: its last answer,
the calls spent on it, an unfinished paid request), `token_links`, `metrics` and the three object
collections. Elements live in their own collection, not in an array inside the token, so that the
retry selection (status, oldest `checked_at` first, limited) and the fenced element write are
single-index, single-document operations; an array element cannot be sorted on or bounded by a
multikey index. The schema version lives in `meta` (migrations.py upgrades an older database).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pymongo import ASCENDING, DESCENDING

from social_recording.store._codec import OBJECT_COLLECTIONS

TOKENS = "tokens"
TOKEN_URLS = "token_urls"
URL_STATES = "url_states"
TOKEN_LINKS = "token_links"
METRICS = "metrics"
META = "meta"
STORE_COUNTS = "store_counts"
SPEND_LEDGER = "spend_ledger"
"""One document per (billing account, UTC day): paid requests and their estimated cost, moved with
`$inc` right after the URL state that counts the same requests (docs/architecture.md, "Spend budgets")."""
COUNTS_DOC = "counts"
"""The counters (`store/counts.py`) are the fields of ONE document in `store_counts`, under `n`: a
write moves all of its counters in one atomic update (an element's status change takes one from a
counter and gives it to another at once) and a read is one document."""

SCHEMA_VERSION = 6

NEVER = datetime(1970, 1, 1, tzinfo=UTC)
"""`checked_at` and `due_at` of an element never recorded: sorts before every real time, so one index
range (`due_at <= due_by`) selects never-recorded and due elements alike, longest due first."""

_FAIR_SORT: list[tuple[str, int]] = [("due_at", ASCENDING), ("address", ASCENDING), ("url", ASCENDING)]
"""Longest due first, never-recorded (`NEVER`) first, ties by address and URL: `_fair_order` as a sort."""
_NEVER_SORT: list[tuple[str, int]] = [("created_at", ASCENDING), ("address", ASCENDING), ("url", ASCENDING)]
"""Never-recorded elements, longest waiting first: by creation, ties by address and URL."""

INDEXES: dict[str, list[tuple[str, list[tuple[str, int]], bool]]] = {
    TOKENS: [
        ("uniq_tokens_address", [("address", ASCENDING)], True),
        ("idx_tokens_fingerprints", [("fingerprints", ASCENDING)], False),
        ("idx_tokens_discovered", [("created_at", DESCENDING)], False),
        ("idx_tokens_unresolved_due", [("unresolved.checked_at", ASCENDING), ("address", ASCENDING)], False),
    ],
    TOKEN_URLS: [
        ("uniq_token_urls_address_url", [("address", ASCENDING), ("url", ASCENDING)], True),
        ("idx_token_urls_url", [("url", ASCENDING), ("address", ASCENDING)], False),
        # (address, url) close both retry indexes, so the fair order is the index order (no in-memory
        # sort, and the limit stops the scan early).
        # Version 6 moved both from `checked_at` to `due_at`: an older store's are rebuilt on opening.
        ("idx_token_urls_due", [("status", ASCENDING), *_FAIR_SORT], False),
        ("idx_token_urls_platform_due", [("status", ASCENDING), ("platform", ASCENDING), ("cause", ASCENDING),
                                         *_FAIR_SORT], False),
        # Never-recorded elements (`checked_at = NEVER`) in the order they wait in (creation, then
        # address and URL): health lists the oldest and counts them up to a bound without sorting
        # any, however many share a creation time; `unsupported` narrowed to a platform has its own.
        ("idx_token_urls_never", [("status", ASCENDING), ("checked_at", ASCENDING), *_NEVER_SORT], False),
        ("idx_token_urls_platform_never", [("status", ASCENDING), ("platform", ASCENDING), ("cause", ASCENDING),
                                           ("checked_at", ASCENDING), *_NEVER_SORT], False),
    ],
    URL_STATES: [("uniq_url_states_url", [("url", ASCENDING)], True)],
    SPEND_LEDGER: [("uniq_spend_ledger_account_day", [("account", ASCENDING), ("day", ASCENDING)], True)],
    TOKEN_LINKS: [
        ("idx_links_token_linked", [("token_address", ASCENDING), ("created_at", ASCENDING)], False),
    ],
    METRICS: [
        (
            "uniq_metrics_object_metric",
            [("object", ASCENDING), ("object_id", ASCENDING), ("metric", ASCENDING)],
            True,
        ),
    ],
    **{
        coll: [(f"uniq_{coll}_platform_key", [("platform_key", ASCENDING)], True)]
        for coll in OBJECT_COLLECTIONS.values()
    },
}
"""(name, keys, unique) per collection; created idempotently when the store opens."""


class IndexConflictError(RuntimeError):
    """The database holds an index that keeps the store from having one it relies on (same name with
    other keys or options, or the same keys without the uniqueness the store needs)."""
