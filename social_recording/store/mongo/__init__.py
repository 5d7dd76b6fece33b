"""MongoStore: the production backend, on pymongo; one mixin per capability of the Store protocol
(store/base.py) over one database handle (connection.py), the collections in schema.py.

Every write is an atomic single-document operation; none replaces a whole document. Tokens, objects
and metrics are `$setOnInsert` upserts behind unique indexes; fenced writes are conditional updates
whose filter carries the fence (`fence <= mine`), never read-then-write (url_write.py gives the order
of one recording's writes).

The store depends only on what MongoDB and FerretDB (the server the tests run it on) share, and
checks rather than assumes its indexes: docs/architecture.md, "Mongo-protocol servers".
"""

from __future__ import annotations

from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.counts import CountsMixin
from social_recording.store.mongo.graph import GraphMixin
from social_recording.store.mongo.indexes import IndexesMixin
from social_recording.store.mongo.migrations import MigrationsMixin
from social_recording.store.mongo.queries import QUERIES, MongoQuery, element_filter, state_filter
from social_recording.store.mongo.schema import (
    COUNTS_DOC,
    INDEXES,
    META,
    NEVER,
    SCHEMA_VERSION,
    STORE_COUNTS,
    IndexConflictError,
)
from social_recording.store.mongo.selection import SelectionMixin
from social_recording.store.mongo.tokens import TokensMixin
from social_recording.store.mongo.url_states import UrlStatesMixin
from social_recording.store.mongo.url_write import UrlWriteMixin

__all__ = [
    "COUNTS_DOC",
    "INDEXES",
    "META",
    "NEVER",
    "QUERIES",
    "SCHEMA_VERSION",
    "STORE_COUNTS",
    "IndexConflictError",
    "MongoQuery",
    "MongoStore",
    "element_filter",
    "state_filter",
]


class MongoStore(MigrationsMixin, IndexesMixin, TokensMixin, UrlWriteMixin, SelectionMixin, CountsMixin, GraphMixin,
                 UrlStatesMixin, MongoConnection):
    """The Store protocol on one MongoDB database.

    `client` is a connection URL (the store then owns and closes its own `MongoClient`) or an
    existing client, e.g. `mongomock.MongoClient(tz_aware=True)` in tests (left open on close()
    unless `owns_client=True`).
    """
