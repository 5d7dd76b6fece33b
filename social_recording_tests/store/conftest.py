"""The `store` fixture: every contract test runs on SQLite (a real file), on MongoStore over
mongomock, and on MongoStore over a real server when SOCIAL_RECORDING_TEST_MONGO_URL is set.

MongoDB cannot be installed on the CI machines, so the real-server variant is only *collected* when
the variable is set (the pytest header says whether it is on); nothing is skipped."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import mongomock
import pytest
from pymongo import MongoClient

from social_recording.store import MongoStore, SqliteStore, Store
from social_recording.store._codec import json_dumps
from social_recording.store._mongomock import SerializedMongomockClient
from social_recording_tests.store._mongo_shape import check_mongomock_writes

MONGO_URL_ENV = "SOCIAL_RECORDING_TEST_MONGO_URL"


@dataclass
class Backend:
    name: str
    store: Store
    url: str | None
    """An open_store URL another OS process can open to reach the same data; None for in-process
    backends (mongomock), which run the concurrency tests with threads only."""


def mongo_url_with_db(base: str, db_name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, "/" + db_name, parts.query, parts.fragment))


REAL_MONGO = bool(os.environ.get(MONGO_URL_ENV))
BACKENDS = ["sqlite", "mongomock", *(["mongo"] if REAL_MONGO else [])]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a real server, leave out (deselect, not skip) the tests that need one."""
    if REAL_MONGO:
        return
    needs_server = [i for i in items if "real_mongo_store" in getattr(i, "fixturenames", ())]
    if needs_server:
        config.hook.pytest_deselected(items=needs_server)
        items[:] = [i for i in items if i not in needs_server]


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
        base = os.environ[MONGO_URL_ENV]
        client: Any = MongoClient(base, tz_aware=True, serverSelectionTimeoutMS=10_000)
        mongo_store = MongoStore(client, db_name)
        try:
            yield Backend("mongo", mongo_store, mongo_url_with_db(base, db_name))
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
