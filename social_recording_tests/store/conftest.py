"""The `store` fixture: every contract test runs on SQLite (a real file), on MongoStore over
mongomock, and on MongoStore over the wire: the session's Mongo-protocol server (FerretDB, or the
MongoDB SOCIAL_RECORDING_TEST_MONGO_URL names; see mongo_server.py)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mongomock
import pytest

from social_recording.domain.graph import ObjectKind
from social_recording.store import MongoStore, SqliteStore, Store
from social_recording.store._codec import OBJECT_COLLECTIONS, json_dumps
from social_recording.store._mongomock import SerializedMongomockClient
from social_recording_tests.store._mongo_shape import check_mongomock_writes
from test_support.mongo_server import MongoServer


@dataclass
class Backend:
    name: str
    store: Store
    url: str | None
    """An open_store URL another OS process can open to reach the same data; None for in-process
    backends (mongomock), which run the concurrency tests with threads only."""


BACKENDS = ["sqlite", "mongomock", pytest.param("mongo", marks=pytest.mark.mongo_server)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    db_name = f"sr_test_{uuid.uuid4().hex[:16]}"
    if request.param == "sqlite":
        path = tmp_path / "nested" / "store.db"  # a new file in a directory that does not exist yet
        sqlite_store = SqliteStore(path)
        yield Backend("sqlite", sqlite_store, f"sqlite:///{path}")
        sqlite_store.close()
    elif request.param == "mongomock":
        # What a real server would refuse fails here too (mongomock applies it): see _mongo_shape.py.
        check_mongomock_writes(request.getfixturevalue("monkeypatch"))
        # Per-operation atomicity like a real server (mongomock has none): see store/_mongomock.py.
        mock_client: Any = SerializedMongomockClient(mongomock.MongoClient(tz_aware=True))
        yield Backend("mongomock", MongoStore(mock_client, db_name), None)
        mock_client.drop_database(db_name)
    else:
        server: MongoServer = request.getfixturevalue("mongo_server")
        client: Any = server.client()
        mongo_store = MongoStore(client, db_name)
        try:
            yield Backend("mongo", mongo_store, server.with_db(db_name))
        finally:
            client.drop_database(db_name)
            client.close()


@pytest.fixture()
def store(backend: Backend) -> Store:
    return backend.store


def seed_web_and_fingerprints(
    backend: Backend, address: str, web: dict[str, Any], fingerprints: list[str]
) -> None:
    """Write the fields no Store method writes, straight into the backend (so a test can prove
    the recording writes leave them alone)."""
    store = backend.store
    if isinstance(store, SqliteStore):
        with sqlite3.connect(store.path) as conn:
            cur = conn.execute(
                "UPDATE tokens SET web = ?, fingerprints = ? WHERE address = ?",
                [json_dumps(web), json_dumps(fingerprints), address],
            )
            assert cur.rowcount == 1
        conn.close()
    else:
        assert isinstance(store, MongoStore)
        res = store.db["tokens"].update_one(
            {"address": address}, {"$set": {"web": web, "fingerprints": fingerprints}}
        )
        assert res.matched_count == 1


def stored_row_counts(backend: Backend, address: str) -> tuple[int, int]:
    """(token rows/documents, url rows/elements) physically stored for `address`."""
    store = backend.store
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(store.path)
        try:
            tokens = conn.execute("SELECT COUNT(*) FROM tokens WHERE address = ?", [address]).fetchone()[0]
            urls = conn.execute("SELECT COUNT(*) FROM token_urls WHERE address = ?", [address]).fetchone()[0]
        finally:
            conn.close()
        return int(tokens), int(urls)
    assert isinstance(store, MongoStore)
    tokens = store.db["tokens"].count_documents({"address": address})
    return int(tokens), int(store.db["token_urls"].count_documents({"address": address}))


def stored_object_rows(backend: Backend, kind: ObjectKind) -> int:
    """Objects of `kind` physically stored (rows / documents), not the store's counter of them."""
    store = backend.store
    table = OBJECT_COLLECTIONS[kind.value]
    if isinstance(store, SqliteStore):
        conn = sqlite3.connect(store.path)
        try:
            return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        finally:
            conn.close()
    assert isinstance(store, MongoStore)
    return int(store.db[table].count_documents({}))
