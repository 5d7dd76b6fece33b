"""open_store(url): the accepted URL forms, clear errors that never show a password, and old or newer
files met on open."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.store import (
    MongoStore,
    SchemaVersionError,
    SqliteStore,
    StoreConfigError,
    mask_url_password,
    open_store,
    parse_store_url,
)
from social_recording.store.sqlite import SCHEMA_VERSION

SECRET = "hunter2"


def test_sqlite_relative_path_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///data/new/store.db")  # parent dirs do not exist yet
    try:
        assert isinstance(store, SqliteStore)
        store.create_pending_token(TokenProfile(address="M", urls=[]))
    finally:
        store.close()
    assert (tmp_path / "data" / "new" / "store.db").is_file()


def test_sqlite_absolute_path_takes_four_slashes(tmp_path: Path) -> None:
    target = tmp_path / "abs" / "store.db"
    url = f"sqlite:///{target}"
    assert url.startswith("sqlite:////")
    first = open_store(url)
    first.create_pending_token(TokenProfile(address="M", symbol="S", urls=["https://x.com/a"]))
    first.close()
    second = open_store(url)  # schema creation is idempotent; data survives
    try:
        doc = second.find_token("M")
        assert doc is not None and doc.symbol == "S"
    finally:
        second.close()
    assert target.is_file()


def test_sqlite_file_is_in_wal_mode(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'w.db'}")
    store.close()
    conn = sqlite3.connect(tmp_path / "w.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_mongomock_url_opens_one_shared_in_memory_database() -> None:
    a = open_store("mongomock://sr_open_store_test")
    b = open_store("mongomock://sr_open_store_test")
    assert isinstance(a, MongoStore) and isinstance(b, MongoStore)
    try:
        a.create_pending_token(TokenProfile(address="Shared", urls=[]))
        assert b.find_existing_addresses(["Shared"]) == {"Shared"}
    finally:
        a.db.client.drop_database("sr_open_store_test")


def test_mongodb_urls_name_their_database_without_connecting() -> None:
    p = parse_store_url(f"mongodb+srv://app:{SECRET}@cluster0.example.net/social?retryWrites=true")
    assert (p.kind, p.db_name) == ("mongodb", "social")
    assert SECRET not in repr(p)
    p2 = parse_store_url("mongodb://h1:27017,h2:27017/social_db?replicaSet=rs0")
    assert (p2.kind, p2.db_name) == ("mongodb", "social_db")


@pytest.mark.parametrize(
    "url, why",
    [
        (f"mongodb://admin:{SECRET}@db.example:27017", "database name is missing"),
        (f"mongodb://admin:{SECRET}@db.example:27017/", "database name is missing"),
        (f"mongodb+srv://admin:{SECRET}@cluster.example.net", "database name is missing"),
        (f"mongodb://admin:{SECRET}@db.example/bad.name", "not a valid MongoDB database name"),
        (f"mongodb://admin:{SECRET}@db.example:notaport/db", "pymongo rejected it"),
        (f"mongodb://admin:{SECRET}@/db", "host is missing"),
        (f"postgres://admin:{SECRET}@db.example/db", "unknown scheme 'postgres'"),
        ("sqlite://", "three slashes"),
        ("sqlite:///", "file path"),
        ("sqlite:///:memory:", "file path"),
        ("sqlite:///a.db?mode=ro", "no query string"),
        ("mongomock://", "database name is missing"),
        ("just-a-path.db", "no scheme"),
        ("", "empty"),
    ],
)
def test_bad_url_names_the_variable_and_hides_the_password(url: str, why: str) -> None:
    with pytest.raises(StoreConfigError) as info:
        open_store(url)
    message = str(info.value)
    assert "SOCIAL_RECORDING_STORE_URL" in message
    assert why in message
    assert SECRET not in message
    assert SECRET not in repr(info.value)
    if url:
        assert mask_url_password(url) in message  # the offending value, masked
    assert isinstance(info.value, ValueError)


def test_mask_url_password() -> None:
    assert mask_url_password(f"mongodb://u:{SECRET}@h/db") == "mongodb://u:***@h/db"
    assert mask_url_password(f"mongodb://u:p@ss{SECRET}@h/db") == "mongodb://u:***@h/db"
    assert mask_url_password("mongodb://h/db") == "mongodb://h/db"
    assert mask_url_password("sqlite:////tmp/x.db") == "sqlite:////tmp/x.db"


def test_sqlite_store_refuses_an_in_memory_database() -> None:
    with pytest.raises(ValueError, match="memory"):
        SqliteStore(":memory:")


def test_closed_sqlite_store_says_so(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "c.db")
    store.close()
    with pytest.raises(RuntimeError, match="closed"):
        store.find_token("M")


def test_open_store_upgrades_an_old_sqlite_file(tmp_path: Path) -> None:
    from social_recording_tests.store.test_store_migrations import make_v1_sqlite

    make_v1_sqlite(tmp_path / "old.db")
    store = open_store(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        assert isinstance(store, SqliteStore) and store.schema_version() == SCHEMA_VERSION
        doc = store.find_token("TokA")
        assert doc is not None and doc.social_urls[0].status == FetchStatus.OK
    finally:
        store.close()


def test_open_store_refuses_a_newer_sqlite_file_as_such(tmp_path: Path) -> None:
    """A file from a newer release is not a configuration mistake: the error says what it is."""
    path = tmp_path / "future.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(SchemaVersionError, match="upgrade social_recording"):
        open_store(f"sqlite:///{path}")


def _open_together(path: Path, n: int) -> tuple[list[SqliteStore], list[BaseException]]:
    go = threading.Event()
    errors: list[BaseException] = []
    stores: list[SqliteStore] = []

    def open_it() -> None:
        try:
            go.wait(30)
            stores.append(SqliteStore(path))
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(n)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(60)
    return stores, errors


def test_workers_opening_a_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """The first open converts the file to WAL; SQLite refuses a concurrent conversion at once instead
    of waiting, so every opener must ride that out (many rounds: the race is short)."""
    for round_ in range(40):
        stores, errors = _open_together(tmp_path / f"new{round_}.db", 6)
        for store in stores:
            store.close()
        assert not errors, (round_, errors)
        assert len(stores) == 6
