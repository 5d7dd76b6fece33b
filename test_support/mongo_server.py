"""Which Mongo-protocol server the tests talk to: a real MongoDB when SOCIAL_RECORDING_TEST_MONGO_URL
names one (`make test-mongo`), else a FerretDB the session starts (ferretdb_server.py).

Tests that need the server take the `mongo_server` fixture (or the `mongo_server_url` one), or carry
the `mongo_server` mark (a store backend parameter); the root conftest marks the former too, so
`pytest -m mongo_server` selects every one. Without any server they fail, naming what to do (never
skipped or deselected); `make test` builds FerretDB when it is missing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pymongo import MongoClient

from test_support.ferretdb_server import find_binary, is_ferretdb

MONGO_URL_ENV = "SOCIAL_RECORDING_TEST_MONGO_URL"
SOCKET_TIMEOUT_MS = 300_000
"""Far above any one call of a test on a busy machine, far below CI's limit."""


@dataclass(frozen=True)
class MongoServer:
    url: str
    """`mongodb://host:port/` (options kept, no database): `with_db` names one."""
    ferretdb: bool
    """FerretDB rather than MongoDB: the tests of its known differences expect them (ferretdb_differences.py)."""

    def with_db(self, db_name: str) -> str:
        return mongo_url_with_db(self.url, db_name)

    def client(self, **options: Any) -> MongoClient[dict[str, Any]]:
        """A test's own client. Its socket timeout turns a server that stops answering (seen once with
        FerretDB at load 11: a `drop_database` waited 20 minutes) into a failure naming the call."""
        defaults = {"tz_aware": True, "serverSelectionTimeoutMS": 10_000, "socketTimeoutMS": SOCKET_TIMEOUT_MS}
        return MongoClient(self.url, **{**defaults, **options})

    @contextmanager
    def prefixed_client(self) -> Iterator[PrefixedClient]:
        """A client whose databases are this test's own; every one of them is dropped afterwards."""
        client = self.client()
        prefixed = PrefixedClient(client, f"sr_test_{uuid.uuid4().hex[:10]}_")
        try:
            yield prefixed
        finally:
            try:
                for name in client.list_database_names():
                    if name.startswith(prefixed.prefix):
                        client.drop_database(name)
            finally:
                client.close()

    @contextmanager
    def scratch_db(self) -> Iterator[str]:
        """A fresh database name, dropped afterwards."""
        name = f"sr_test_{uuid.uuid4().hex[:16]}"
        try:
            yield name
        finally:
            client = self.client()
            try:
                client.drop_database(name)
            finally:
                client.close()


class PrefixedClient:
    """A pymongo client whose database `name` is `prefix + name` on the server: tests that name their
    databases ("old", "legacy") share one server without meeting each other's data."""

    def __init__(self, client: MongoClient[dict[str, Any]], prefix: str) -> None:
        self._client = client
        self.prefix = prefix

    def __getitem__(self, name: str) -> Any:
        return self._client[self.prefix + name]

    def get_database(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._client.get_database(self.prefix + name, *args, **kwargs)

    def drop_database(self, name: str) -> None:
        self._client.drop_database(self.prefix + name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def mongo_url_with_db(base: str, db_name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, "/" + db_name, parts.query, parts.fragment))


def server_available() -> bool:
    """Whether this session can reach a Mongo-protocol server (raises when SOCIAL_RECORDING_TEST_FERRETDB
    names a binary that is not there: whoever set it expects the Mongo tests to run)."""
    return bool(os.environ.get(MONGO_URL_ENV)) or find_binary() is not None


def describe(client: MongoClient[dict[str, Any]], url: str) -> MongoServer:
    return MongoServer(url, is_ferretdb(client))
