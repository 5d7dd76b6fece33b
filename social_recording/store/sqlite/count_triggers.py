"""The health figures are counters in `store_counts`, moved by triggers inside the writing transaction
(docs/architecture.md, "Health figures"); `q_recount` builds them (the migration that adds them) and
the hourly recount repairs them with it in one transaction.
"""

from __future__ import annotations

from social_recording.store._codec import OBJECT_COLLECTIONS
from social_recording.store.counts import LINKS_KEY, METRICS_KEY, SEP, TOKENS_KEY, URLS, object_key
from social_recording.store.sqlite.sql import Sql


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _url_key_sql(row: str) -> str:
    """`counts.url_key` in SQL, for the element `row` (new / old in a trigger, a column list in a query)."""
    prefix = f"{row}." if row else ""
    return f"{_literal(URLS + SEP)} || coalesce({prefix}platform, '') || {_literal(SEP)} || {prefix}status"


_COUNTED: tuple[tuple[str, str], ...] = (
    ("tokens", _literal(TOKENS_KEY)),
    *((table, _literal(object_key(kind))) for kind, table in OBJECT_COLLECTIONS.items()),
    ("metrics", _literal(METRICS_KEY)),
    ("token_links", _literal(LINKS_KEY)),
)
"""Tables counted by their number of rows, with their counter's key (as SQL)."""


def _bump(key_sql: str, delta: int) -> str:
    return (f"INSERT INTO store_counts (key, n) VALUES ({key_sql}, {delta}) "
            "ON CONFLICT (key) DO UPDATE SET n = n + excluded.n;")


def _count_triggers() -> list[str]:
    """The counters follow every insert, delete and status change in the writing transaction itself,
    whichever statement makes it (the store's, a migration's, a tool's)."""
    out = [
        f"CREATE TRIGGER counted_token_urls_insert AFTER INSERT ON token_urls BEGIN {_bump(_url_key_sql('new'), 1)} END",
        f"CREATE TRIGGER counted_token_urls_delete AFTER DELETE ON token_urls BEGIN {_bump(_url_key_sql('old'), -1)} END",
        "CREATE TRIGGER counted_token_urls_update AFTER UPDATE OF status, platform ON token_urls "
        "WHEN old.status IS NOT new.status OR old.platform IS NOT new.platform "
        f"BEGIN {_bump(_url_key_sql('old'), -1)} {_bump(_url_key_sql('new'), 1)} END",
    ]
    for table, key in _COUNTED:
        out.append(f"CREATE TRIGGER counted_{table}_insert AFTER INSERT ON {table} BEGIN {_bump(key, 1)} END")
        out.append(f"CREATE TRIGGER counted_{table}_delete AFTER DELETE ON {table} BEGIN {_bump(key, -1)} END")
    return out


def q_recount() -> Sql:
    """Every counter recounted from the rows (the hourly reconciliation, and the upgrade that makes them)."""
    parts = [f"SELECT {_url_key_sql('')}, COUNT(*) FROM token_urls GROUP BY status, platform"]
    parts += [f"SELECT {key}, COUNT(*) FROM {table}" for table, key in _COUNTED]
    return " UNION ALL ".join(parts), []
