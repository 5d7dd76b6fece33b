"""The Mongo store's database handle, the base of its capability mixins: the client (its own or one
lent to it), the database, whose datetimes decode tz-aware whatever the client's `tz_aware` setting,
the one way a read is run (`_find`, which `explain` plans), and the health counters' moves: one `$inc`
of the `store_counts` document right after each write, by what that write reports it did (an upsert's
insert, a delete's count, the element's status before its update): docs/architecture.md, "Health
figures".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pymongo
from pymongo import MongoClient
from pymongo.errors import DuplicateKeyError, PyMongoError

from social_recording.store.mongo.queries import QUERIES, MongoQuery, _plan_stages
from social_recording.store.mongo.schema import COUNTS_DOC, STORE_COUNTS

log = logging.getLogger("social_recording.store")

SOCKET_TIMEOUT_S = 30.0
"""How long one request waits for the server's reply before the driver drops that connection with a
NetworkTimeout, which a store write repeats as transient (docs/architecture.md, "Backend outages").
pymongo's own default is to wait forever: a server that takes a request and never answers would hang
the run. A `socketTimeoutMS` in the store URL wins."""

SCHEMA_WORK_TIMEOUT_S = 3600.0
"""The bound of the index builds and migrations run at open, which may visit every document."""


def mongo_client(url: str, **options: Any) -> MongoClient[dict[str, Any]]:
    """A client for the store URL: tz-aware datetimes, and `SOCKET_TIMEOUT_S` unless the URL sets one."""
    named = {key.lower() for key in parse_qs(urlsplit(url).query)}
    if "sockettimeoutms" not in named:
        options.setdefault("socketTimeoutMS", int(SOCKET_TIMEOUT_S * 1000))
    return MongoClient(url, tz_aware=True, **options)


class MongoConnection:
    """One MongoDB database and what every capability of the store uses on it."""

    _client: Any
    _owns_client: bool
    db_name: str
    db: Any

    def __init__(self, client: str | Any, db_name: str, *, owns_client: bool | None = None) -> None:
        if not db_name:
            raise ValueError("MongoStore needs a database name")
        if isinstance(client, str):
            self._client = mongo_client(client)
        else:
            self._client = client
        self._owns_client = isinstance(client, str) if owns_client is None else owns_client
        self.db_name = db_name
        # Every datetime read back is tz-aware whatever the client's own `tz_aware` says (a naive one
        # compared with now() raises): the database handle decodes them so, nested ones included.
        self.db = self._client.get_database(
            db_name, codec_options=self._client.codec_options.with_options(tz_aware=True)
        )
        try:
            with pymongo.timeout(SCHEMA_WORK_TIMEOUT_S):  # longer than one request's SOCKET_TIMEOUT_S
                self._ensure_indexes()
                self._migrate()
        except BaseException:
            self.close()  # do not leak the connection pool of a store that never opened
            raise

    def _ensure_indexes(self) -> None:
        """Make and check the store's indexes (indexes.py)."""
        raise NotImplementedError

    def _migrate(self) -> None:
        """Upgrade the database to `SCHEMA_VERSION` (migrations.py)."""
        raise NotImplementedError

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def _find(self, q: MongoQuery) -> Any:
        cursor = self.db[q.collection].find(q.filter, q.projection)
        if q.sort:
            cursor = cursor.sort(q.sort)
        if q.limit is not None:
            cursor = cursor.limit(q.limit)
        return cursor

    def explain(self, query_name: str, *params: Any) -> list[str]:
        """Stage names of the winning plan of the named hot-path read (needs a server)."""
        try:
            build = QUERIES[query_name]
        except KeyError:
            raise ValueError(f"unknown query {query_name!r}; expected one of {sorted(QUERIES)}") from None
        planner = self._find(build(*params)).explain().get("queryPlanner", {})
        return list(_plan_stages(planner.get("winningPlan", planner.get("Plan", {}))))

    def _count(self, deltas: Mapping[str, int]) -> None:
        """Move the counters by what a write just did, in one atomic update of the counters' document:
        `$inc` is applied by the server, so racing writers in any number of processes each add their
        own change (docs/architecture.md, "Health figures"). Counters the server does not take (it
        went away mid-write) are left to the hourly recount: a recorded result is never failed, nor
        its write repeated, for a figure."""
        try:
            self._inc(deltas)
        except PyMongoError as exc:
            log.warning("store counters not moved (%s: %s): %s; the hourly recount repairs them",
                        type(exc).__name__, exc, dict(deltas))

    def _inc(self, deltas: Mapping[str, int]) -> None:
        moves = {f"n.{key}": int(d) for key, d in sorted(deltas.items()) if d}
        if not moves:
            return
        coll = self.db[STORE_COUNTS]
        try:
            coll.update_one({"_id": COUNTS_DOC}, {"$inc": moves}, upsert=True)
        except DuplicateKeyError:  # the counters' first upsert lost a race to another writer's
            coll.update_one({"_id": COUNTS_DOC}, {"$inc": moves})

    def _counter_values(self) -> dict[str, int]:
        doc = self.db[STORE_COUNTS].find_one({"_id": COUNTS_DOC}) or {}
        return {key: int(n) for key, n in (doc.get("n") or {}).items()}

    def _counter(self, key: str) -> int:
        return self._counter_values().get(key, 0)

    def __repr__(self) -> str:
        return f"MongoStore(db={self.db_name!r})"
