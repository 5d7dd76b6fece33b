"""SqliteStore: the embedded default backend, stdlib sqlite3 on one file.

Safe across threads (one connection per thread) and across OS processes (WAL, a 30 s busy timeout,
`BEGIN IMMEDIATE` for every write so check-then-write never interleaves). The `social_urls` elements
of a token are the child table `token_urls`, and the cross-token state of each URL is `url_states`,
so every hot query (the retry selection, the dedupe gate, one element) rides an index.

One module a concern: the schema and its migrations (`schema.py`, `count_triggers.py`), the
statements (`queries.py`, `queries_selection.py`, `rows.py`), the connections (`connection.py`), and
one mixin per capability of store/base.py (`tokens.py`, `url_write.py`, `selection.py`, `health.py`,
`graph.py`), which `SqliteStore` puts together.
"""

from __future__ import annotations

from social_recording.store.sqlite.connection import SqliteBase
from social_recording.store.sqlite.graph import GraphMixin
from social_recording.store.sqlite.health import HealthMixin, SpendMixin
from social_recording.store.sqlite.queries import QUERIES
from social_recording.store.sqlite.schema import BUSY_TIMEOUT_SECONDS, MIGRATIONS, NEVER, SCHEMA_VERSION
from social_recording.store.sqlite.selection import SelectionMixin
from social_recording.store.sqlite.tokens import TokenMixin
from social_recording.store.sqlite.url_write import UrlWriteMixin

__all__ = ["BUSY_TIMEOUT_SECONDS", "MIGRATIONS", "NEVER", "QUERIES", "SCHEMA_VERSION", "SqliteStore"]


class SqliteStore(TokenMixin, UrlWriteMixin, SelectionMixin, HealthMixin, SpendMixin, GraphMixin, SqliteBase):
    """The Store protocol on one SQLite file; see the module docstring for the concurrency model."""
