"""Opening a store written by the previous schema upgrades it in place, once, losing nothing.

SQLite: a file made by the first schema (its DDL is copied here as it shipped, on purpose not
imported: the package may change it) is opened with `SqliteStore`. MongoDB (mongomock, and the
session's server over the wire): a database
whose tokens embed their elements in a `social_urls` array is opened with `MongoStore`. Both must
carry every element over with its old values, build one state per decided URL, mark the elements no
generator could handle so the default retry still reopens them, and do nothing on a second open.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import mongomock
import pytest
from pymongo.errors import DuplicateKeyError

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import UnresolvedValue
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store import (
    CandidateQuery,
    MongoStore,
    SchemaVersionError,
    SqliteStore,
    Store,
    WriteResult,
)
from social_recording.store._mongomock import SerializedMongomockClient
from social_recording.store.base import SpendTotals
from social_recording.store.mongo import SCHEMA_VERSION as MONGO_SCHEMA_VERSION
from social_recording.store.sqlite import MIGRATIONS, SCHEMA_VERSION
from social_recording.store.sqlite.schema import NEVER_INDEX, PLATFORM_NEVER_INDEX
from social_recording_tests.store._mongo_shape import check_mongomock_writes
from social_recording_tests.store._seed import planned, record_call, record_no_call, url_write
from test_support.mongo_server import MongoServer

T0 = datetime(2025, 1, 10, 8, 0, 0, 250000, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
T2 = T0 + timedelta(hours=2)
T3 = T0 + timedelta(hours=3)
CREATED = T0 - timedelta(days=1)

X1 = "https://x.com/i/status/1"
X2 = "https://x.com/i/status/2"
TG = "https://t.me/coin"
WEB = "https://coin.example"
GH = "https://github.com/coin/repo"

# (address, symbol, [(url, status, attempted_at, attempts)]), in element order.
OLD_TOKENS: list[tuple[str, str, list[tuple[str, str, datetime | None, int]]]] = [
    ("TokA", "AAA", [
        (X1, "ok", T1, 1),
        (TG, "not_found", T2, 2),
        (WEB, "pending", None, 0),
        (X2, "exhausted", T3, 2),
    ]),
    ("TokB", "BBB", [
        (TG, "error", T3, 3),
        (X1, "ok", None, 0),  # a reused ok: no call of its own
        (GH, "unsupported", None, 0),
    ]),
    ("TokC", "CCC", [
        (X1, "error", T0, 1),
        (WEB, "skipped_paid", T1, 1),  # an error first, then paid calls were switched off
        (X2, "exhausted", T2, 3),
        (GH, "unsupported", None, 0),
    ]),
    ("TokD", "DDD", [
        (X1, "ok", T0, 1),  # an older call that also answered ok
    ]),
]
OLD_CAUSE = {"unsupported": Cause.NO_GENERATOR, "skipped_paid": Cause.PAID_DISABLED}
"""What the upgrade records as the cause of a status no call decided."""

# url -> (status, attempted_at, attempts, source_token): the best answer among the holders (ok, then
# not_found, ... error), the newest call that gave it, the most calls any holder counted, and for ok
# the holder that made that newest call.
EXPECTED_STATES: dict[str, tuple[FetchStatus, datetime | None, int, str | None]] = {
    X1: (FetchStatus.OK, T1, 1, "TokA"),
    TG: (FetchStatus.NOT_FOUND, T2, 3, None),
    X2: (FetchStatus.EXHAUSTED, T3, 3, None),
}
EXPECTED_MACHINE: dict[str, tuple[FetchStatus | None, datetime | None, int]] = {
    X1: (FetchStatus.OK, T1, 0),
    TG: (FetchStatus.NOT_FOUND, T2, 0),
    X2: (None, None, 3),
}
NO_STATE = (WEB, GH)
"""No call decided these: no holder gave an answer (a skipped or unsupported element is not one)."""


def _txt(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def _check_migrated_elements(store: Store) -> None:
    for address, symbol, elements in OLD_TOKENS:
        doc = store.find_token(address)
        assert doc is not None and doc.symbol == symbol and doc.created_at == CREATED
        assert doc.fence == 0 and doc.unresolved == []
        assert [u.url for u in doc.social_urls] == [e[0] for e in elements]  # order kept
        for (url, status, attempted_at, attempts), el in zip(elements, doc.social_urls, strict=True):
            assert (el.status, el.attempted_at, el.attempts) == (FetchStatus(status), attempted_at, attempts)
            assert el.checked_at == attempted_at  # the last recording we know of: the last call
            # The due time the flat back-off gave it: that recording plus the base interval.
            assert el.due_at == (None if attempted_at is None else attempted_at + DEFAULT_MIN_INTERVAL)
            assert (el.cause, el.detail, el.fence) == (OLD_CAUSE.get(status), None, 0), (address, url)
            assert store.find_element(address, url) == el


def _check_migrated_states(store: Store) -> None:
    for url, (status, attempted_at, attempts, source) in EXPECTED_STATES.items():
        state = store.find_url_state(url)
        assert state is not None, url
        assert (state.status, state.attempted_at, state.attempts, state.source_token) == (
            status, attempted_at, attempts, source,
        ), url
        assert (state.fence, state.request) == (0, None)
        assert state.platform == {X1: "x", TG: "telegram", X2: "x"}[url]
        # The state machine's fields: an answer anchored at its call; a failure's calls as its streak.
        answer, answered_at, streak = EXPECTED_MACHINE[url]
        assert (state.answer, state.answered_at, state.streak, state.engine_failures) == (
            answer, answered_at, streak, 0), url
        assert state.version >= 1
    for url in NO_STATE:
        assert store.find_url_state(url) is None


def _check_retry_after_migration(store: Store) -> None:
    """The default retry selection (statuses that can change, unsupported only where a generator now
    exists and none was the cause) reopens the old unsupported elements; ok stays out."""
    default = CandidateQuery(
        frozenset({FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.SKIPPED_PAID, FetchStatus.UNSUPPORTED}),
        T3 + DEFAULT_MIN_INTERVAL, 50, None, frozenset({"github"}),
    )
    got = [(c.address, c.url, c.status, c.checked_at) for c in store.select_candidates(default)]
    assert got == [
        ("TokA", WEB, FetchStatus.PENDING, None),  # never recorded first, then by address and URL
        ("TokB", GH, FetchStatus.UNSUPPORTED, None),
        ("TokC", GH, FetchStatus.UNSUPPORTED, None),
        ("TokC", X1, FetchStatus.ERROR, T0),
        ("TokC", WEB, FetchStatus.SKIPPED_PAID, T1),
        ("TokB", TG, FetchStatus.ERROR, T3),
    ]
    counts = store.status_counts()
    assert counts.tokens == 4 and counts.urls == 12
    assert counts.by_platform[("github", FetchStatus.UNSUPPORTED)] == 2
    assert counts.by_platform[("x", FetchStatus.OK)] == 3
    assert counts.by_platform[("x", FetchStatus.EXHAUSTED)] == 2


def _check_writes_after_migration(store: Store) -> None:
    """Migrated elements and tokens carry fence 0: the first fenced writes apply."""
    out = store.apply_url_write(url_write("TokB", TG, 1, FetchStatus.NOT_FOUND, T3, attempts=4))
    assert out.result is WriteResult.APPLIED
    state = store.find_url_state(TG)
    assert state is not None and (state.status, state.attempts, state.fence) == (FetchStatus.NOT_FOUND, 4, 1)
    assert store.apply_url_write(url_write("TokB", X1, 2, FetchStatus.ERROR, T3)).result is WriteResult.OK_KEPT
    raw = UnresolvedValue(field="website", value="https://bit.ly/x", reason="timeout", checked_at=T3)
    assert store.update_unresolved("TokA", raw, 1) is WriteResult.APPLIED
    assert store.add_resolved_url("TokA", "website", "https://coin2.example", 2, T3) is WriteResult.APPLIED
    doc = store.find_token("TokA")
    assert doc is not None and doc.fence == 2 and doc.unresolved == []
    assert [u.url for u in doc.social_urls][-1] == "https://coin2.example"


# ----------------------------------------------------------------------------- SQLite

# The first schema, exactly as it shipped (before `PRAGMA user_version` was used).
SQLITE_V1_DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS tokens (
        address TEXT PRIMARY KEY NOT NULL,
        symbol TEXT,
        image TEXT,
        first_transfer_at TEXT,
        fingerprints TEXT NOT NULL DEFAULT '[]',
        web TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS idx_tokens_discovered ON tokens (created_at DESC)",
    """CREATE TABLE IF NOT EXISTS token_urls (
        address TEXT NOT NULL REFERENCES tokens (address) ON DELETE CASCADE,
        url TEXT NOT NULL,
        status TEXT NOT NULL,
        attempted_at TEXT,
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        position INTEGER NOT NULL,
        UNIQUE (address, url)
    )""",
    "CREATE INDEX IF NOT EXISTS idx_token_urls_status ON token_urls (status, address)",
    "CREATE INDEX IF NOT EXISTS idx_token_urls_url ON token_urls (url, address)",
    *(
        f"""CREATE TABLE IF NOT EXISTS {table} (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL,
        platform_key TEXT NOT NULL UNIQUE,
        subtype TEXT NOT NULL,
        doc TEXT NOT NULL,
        created_at TEXT NOT NULL
    )"""
        for table in ("contents", "accounts", "venues")
    ),
    """CREATE TABLE IF NOT EXISTS metrics (
        object TEXT NOT NULL,
        object_id TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL NOT NULL,
        observed_at TEXT NOT NULL,
        PRIMARY KEY (object, object_id, metric)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS token_links (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        token_address TEXT NOT NULL,
        object TEXT NOT NULL,
        object_id TEXT NOT NULL,
        entry_url TEXT NOT NULL,
        platform TEXT NOT NULL,
        subtype TEXT NOT NULL,
        link_depth INTEGER NOT NULL CHECK (link_depth >= 0),
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS idx_links_token_linked ON token_links (token_address, created_at)",
)


def make_v1_sqlite(path: Path, user_version: int = 0) -> None:
    """A file as the first schema's code left it, with OLD_TOKENS, one object, a metric and a link."""
    conn = sqlite3.connect(path)
    try:
        for stmt in SQLITE_V1_DDL:
            conn.execute(stmt)
        for address, symbol, elements in OLD_TOKENS:
            conn.execute(
                "INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, created_at, "
                "updated_at) VALUES (?, ?, NULL, NULL, '[\"favicon:1\"]', NULL, ?, ?)",
                [address, symbol, _txt(CREATED), _txt(T3)],
            )
            conn.executemany(
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(address, url, status, _txt(at), n, i) for i, (url, status, at, n) in enumerate(elements)],
            )
        conn.execute(
            "INSERT INTO contents (platform, platform_key, subtype, doc, created_at) VALUES ('x', 'tweet:1', "
            "'tweet', '{\"fields\": {\"text\": \"gm\"}}', ?)",
            [_txt(T1)],
        )
        conn.execute("INSERT INTO metrics VALUES ('content', '1', 'likes', 5.0, ?)", [_txt(T1)])
        conn.execute(
            "INSERT INTO token_links (token_address, object, object_id, entry_url, platform, subtype, link_depth, "
            "created_at) VALUES ('TokA', 'content', '1', ?, 'x', 'tweet', 0, ?)",
            [X1, _txt(T1)],
        )
        conn.execute(f"PRAGMA user_version = {user_version}")
        conn.commit()
    finally:
        conn.close()


def dump(path: Path) -> dict[str, Any]:
    """Every table's rows and the schema, for 'nothing changed' comparisons."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out: dict[str, Any] = {t: sorted(map(repr, conn.execute(f"SELECT * FROM {t}"))) for t in tables}
        out["_schema"] = sorted(map(repr, conn.execute("SELECT type, name, sql FROM sqlite_master")))
        out["_version"] = conn.execute("PRAGMA user_version").fetchone()[0]
        return out
    finally:
        conn.close()


@pytest.fixture(params=[0, 1], ids=["unversioned", "v1"])
def v1_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    make_v1_sqlite(path, request.param)
    return path


@pytest.fixture()
def migrated_sqlite(v1_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(v1_path)
    yield store
    store.close()


def test_sqlite_upgrade_reaches_the_current_version(migrated_sqlite: SqliteStore, v1_path: Path) -> None:
    assert SCHEMA_VERSION == 11
    assert migrated_sqlite.schema_version() == SCHEMA_VERSION
    assert dump(v1_path)["_version"] == SCHEMA_VERSION
    # v11: never-recorded elements indexed in the fair order, with one index for a platform's.
    with sqlite3.connect(v1_path) as conn:
        never = {name: [c for _, _, c in conn.execute(f"PRAGMA index_info({name})")]
                 for name in ("idx_token_urls_never", "idx_token_urls_platform_never")}
        partial = {name: sql for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE name IN "
                                                           "('idx_token_urls_never', 'idx_token_urls_platform_never')")}
    assert never == {"idx_token_urls_never": NEVER_INDEX.split(", "),
                     "idx_token_urls_platform_never": PLATFORM_NEVER_INDEX.split(", ")}
    assert all(sql.endswith("WHERE checked_at = ''") for sql in partial.values()), partial
    # v6: the spend ledger and the URL states' paid requests, nothing counted before the upgrade.
    assert migrated_sqlite.spend_totals() == SpendTotals({}, {}) and migrated_sqlite.spend_rows("2000-01-01") == []


def test_sqlite_upgrade_keeps_every_element(migrated_sqlite: SqliteStore) -> None:
    _check_migrated_elements(migrated_sqlite)
    doc = migrated_sqlite.find_token("TokA")
    assert doc is not None and doc.fingerprints == ["favicon:1"] and doc.updated_at == T3


def test_sqlite_upgrade_builds_the_url_states(migrated_sqlite: SqliteStore) -> None:
    _check_migrated_states(migrated_sqlite)


def test_sqlite_upgrade_keeps_objects_metrics_and_links(migrated_sqlite: SqliteStore) -> None:
    (link,) = migrated_sqlite.find_links("TokA", X1)
    assert (link.object, link.object_id, link.link_depth, link.created_at) == (ObjectKind.CONTENT, "1", 0, T1)
    row = migrated_sqlite.get_object(ObjectKind.CONTENT, "1")
    assert row is not None and row["fields"] == {"text": "gm"}
    assert migrated_sqlite.find_metrics(ObjectKind.CONTENT, "1") == {"likes": 5.0}
    # The copy path reads the migrated links like any others.
    out = record_no_call(migrated_sqlite, "TokC", X1, FetchStatus.OK, T3, copy_links_from="TokA")
    assert out.result is WriteResult.APPLIED and [lk.object_id for lk in out.links] == ["1"]


def _check_counters_after_migration(store: Store, *, metrics: int) -> None:
    """The health figures' counters are built from what the old store holds."""
    counts = store.counts()
    assert (counts.tokens, sum(counts.by_platform.values())) == (4, 12)
    assert (counts.objects[ObjectKind.CONTENT], counts.metrics, counts.links) == (1, metrics, 1)
    assert store.reconcile_counts().differences == {}


def test_sqlite_upgrade_builds_the_counters(migrated_sqlite: SqliteStore) -> None:
    _check_counters_after_migration(migrated_sqlite, metrics=1)


def test_sqlite_upgrade_from_the_previous_version_builds_the_counters(v1_path: Path) -> None:
    """A file at version 3 (every step before the counters applied, as the previous release left it)."""
    conn = sqlite3.connect(v1_path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for step in MIGRATIONS[:3]:
            step(conn)
        conn.execute("PRAGMA user_version = 3")
        conn.execute("COMMIT")
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'store_counts'").fetchone() is None
    finally:
        conn.close()
    store = SqliteStore(v1_path)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        _check_counters_after_migration(store, metrics=1)
        _check_retry_after_migration(store)
    finally:
        store.close()


def test_sqlite_upgrade_lets_the_default_retry_reopen_unsupported(migrated_sqlite: SqliteStore) -> None:
    _check_retry_after_migration(migrated_sqlite)


def test_sqlite_upgraded_store_takes_fenced_writes(migrated_sqlite: SqliteStore) -> None:
    _check_writes_after_migration(migrated_sqlite)


def test_sqlite_reopening_an_upgraded_file_changes_nothing(v1_path: Path) -> None:
    SqliteStore(v1_path).close()
    first = dump(v1_path)
    SqliteStore(v1_path).close()
    assert dump(v1_path) == first


def test_sqlite_concurrent_openers_upgrade_once(v1_path: Path) -> None:
    errors: list[BaseException] = []
    stores: list[SqliteStore] = []
    go = threading.Event()

    def open_it() -> None:
        try:
            go.wait(30)
            stores.append(SqliteStore(v1_path))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(60)
    assert not errors, errors
    try:
        assert len(stores) == 6
        _check_migrated_elements(stores[0])
        _check_migrated_states(stores[-1])
    finally:
        for s in stores:
            s.close()


def test_a_new_file_starts_at_the_current_version(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "new.db")
    try:
        assert store.schema_version() == SCHEMA_VERSION
    finally:
        store.close()
    before = dump(tmp_path / "new.db")
    SqliteStore(tmp_path / "new.db").close()
    assert dump(tmp_path / "new.db") == before


def test_a_file_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    SqliteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = dump(path)
    with pytest.raises(SchemaVersionError) as info:
        SqliteStore(path)
    message = str(info.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in message and f"this code's {SCHEMA_VERSION}" in message
    assert str(path) in message
    assert dump(path) == before  # nothing touched


# ----------------------------------------------------------------------------- MongoDB (mongomock, wire)

OLD_MONGO_INDEXES = [
    ("uniq_tokens_address", [("address", 1)], True),
    ("idx_tokens_social_url_status", [("social_urls.status", 1)], False),
    ("idx_tokens_social_url_url", [("social_urls.url", 1)], False),
]


def make_v1_mongo(client: Any, db_name: str) -> None:
    """A database as the first schema's code left it: elements embedded in each token, no `meta`."""
    db = client[db_name]
    for name, keys, unique in OLD_MONGO_INDEXES:
        db["tokens"].create_index(keys, name=name, unique=unique)
    for address, symbol, elements in OLD_TOKENS:
        db["tokens"].insert_one({
            "address": address,
            "symbol": symbol,
            "image": None,
            "first_transfer_at": None,
            "fingerprints": ["favicon:1"],
            "web": None,
            "social_urls": [
                {"url": url, "status": status, "attempted_at": at, "attempts": n} for url, status, at, n in elements
            ],
            "created_at": CREATED,
            "updated_at": T3,
        })
    oid = db["contents"].insert_one(
        {"platform": "x", "platform_key": "tweet:1", "subtype": "tweet", "fields": {"text": "gm"}, "created_at": T1}
    ).inserted_id
    db["token_links"].insert_one({
        "token_address": "TokA", "object": "content", "object_id": oid, "entry_url": X1, "platform": "x",
        "subtype": "tweet", "link_depth": 0, "created_at": T1,
    })


def mongo_dump(store: MongoStore) -> dict[str, list[str]]:
    out = {}
    for name in sorted(store.db.list_collection_names()):
        docs = [{k: v for k, v in d.items() if k not in ("_id", "updated_at")} for d in store.db[name].find()]
        out[name] = sorted(map(repr, docs))
    return out


@pytest.fixture(params=["mongomock", pytest.param("mongo", marks=pytest.mark.mongo_server)])
def mongo_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """mongomock, and the session's server over the wire (each test's databases its own)."""
    if request.param == "mongomock":
        check_mongomock_writes(monkeypatch)  # what a real server refuses fails here too
        yield SerializedMongomockClient(mongomock.MongoClient(tz_aware=True))
        return
    server: MongoServer = request.getfixturevalue("mongo_server")
    with server.prefixed_client() as client:
        yield client


@pytest.fixture()
def migrated_mongo(mongo_client: Any) -> MongoStore:
    make_v1_mongo(mongo_client, "old")
    return MongoStore(mongo_client, "old")


def test_mongo_upgrade_moves_elements_out_of_the_tokens(migrated_mongo: MongoStore) -> None:
    db = migrated_mongo.db
    assert db["meta"].find_one({"_id": "schema"})["version"] == MONGO_SCHEMA_VERSION
    assert db["tokens"].count_documents({"social_urls": {"$exists": True}}) == 0
    assert db["token_urls"].count_documents({}) == sum(len(e) for _a, _s, e in OLD_TOKENS)
    _check_migrated_elements(migrated_mongo)
    doc = migrated_mongo.find_token("TokA")
    assert doc is not None and doc.fingerprints == ["favicon:1"] and doc.updated_at == T3


def test_mongo_upgrade_builds_the_url_states(migrated_mongo: MongoStore) -> None:
    _check_migrated_states(migrated_mongo)


def test_mongo_upgrade_drops_the_array_indexes(migrated_mongo: MongoStore) -> None:
    names = set(migrated_mongo.db["tokens"].index_information())
    assert "idx_tokens_social_url_status" not in names and "idx_tokens_social_url_url" not in names
    assert "uniq_tokens_address" in names


def test_mongo_upgrade_keeps_links(migrated_mongo: MongoStore) -> None:
    (link,) = migrated_mongo.find_links("TokA", X1)
    assert (link.object, link.link_depth, link.created_at) == (ObjectKind.CONTENT, 0, T1)
    # A new write replaces the old, fence-less links rather than showing them beside its own.
    record_call(migrated_mongo, "TokA", TG, FetchStatus.OK, T3, links=[planned("tg:1")])
    store_links = migrated_mongo.find_links("TokA", TG)
    assert len(store_links) == 1
    migrated_mongo.apply_url_write(url_write("TokC", X1, 5, FetchStatus.ERROR, T3, links=[planned("x:new")]))
    assert migrated_mongo.find_links("TokA", X1) == [link]


def test_mongo_upgrade_builds_the_counters(migrated_mongo: MongoStore) -> None:
    _check_counters_after_migration(migrated_mongo, metrics=0)


def test_mongo_upgrade_from_the_previous_version_builds_the_counters(migrated_mongo: MongoStore,
                                                                     mongo_client: Any) -> None:
    """A database as the previous release left it: everything but the counters."""
    migrated_mongo.db["store_counts"].drop()
    migrated_mongo.db["meta"].update_one({"_id": "schema"}, {"$set": {"version": 3}})
    again = MongoStore(mongo_client, "old")
    assert again.db["meta"].find_one({"_id": "schema"})["version"] == MONGO_SCHEMA_VERSION
    _check_counters_after_migration(again, metrics=0)


def test_mongo_upgrade_lets_the_default_retry_reopen_unsupported(migrated_mongo: MongoStore) -> None:
    _check_retry_after_migration(migrated_mongo)


def test_mongo_upgraded_store_takes_fenced_writes(migrated_mongo: MongoStore) -> None:
    _check_writes_after_migration(migrated_mongo)


def test_mongo_reopening_an_upgraded_database_changes_nothing(migrated_mongo: MongoStore, mongo_client: Any) -> None:
    before = mongo_dump(migrated_mongo)
    again = MongoStore(mongo_client, "old")
    assert mongo_dump(again) == before
    _check_migrated_elements(again)


def test_mongo_concurrent_openers_upgrade_once(mongo_client: Any) -> None:
    make_v1_mongo(mongo_client, "old")
    errors: list[BaseException] = []
    stores: list[MongoStore] = []
    go = threading.Event()

    def open_it() -> None:
        try:
            go.wait(30)
            stores.append(MongoStore(mongo_client, "old"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(stores) == 6
    db = stores[0].db
    assert db["token_urls"].count_documents({}) == sum(len(e) for _a, _s, e in OLD_TOKENS)
    assert db["url_states"].count_documents({}) == len(EXPECTED_STATES)
    _check_migrated_elements(stores[0])
    _check_migrated_states(stores[-1])


def test_mongo_openers_racing_to_record_the_version_both_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two openers upsert the `meta` version document at once: the loser's insert meets the winner's
    `_id` (FerretDB reports the duplicate key; MongoDB retries such an upsert itself). It must then
    raise the version, not fail the open."""
    client = mongomock.MongoClient(tz_aware=True)
    make_v1_mongo(client, "old")
    real = mongomock.Collection.update_one
    raced: list[bool] = []

    def update_one(self: Any, flt: Any, update: Any, upsert: bool = False, **kwargs: Any) -> Any:
        if self.name == "meta" and upsert and not raced:
            raced.append(True)  # the other opener's upsert lands first
            real(self, {"_id": "schema"}, {"$max": {"version": 1}}, upsert=True)
            raise DuplicateKeyError("E11000 duplicate key error collection: old.meta")
        return real(self, flt, update, upsert=upsert, **kwargs)

    monkeypatch.setattr(mongomock.Collection, "update_one", update_one)
    store = MongoStore(client, "old")
    assert raced
    assert store.db["meta"].find_one({"_id": "schema"})["version"] == MONGO_SCHEMA_VERSION


def test_mongo_upgrade_reads_an_element_without_a_status_as_pending(mongo_client: Any) -> None:
    make_v1_mongo(mongo_client, "old")
    mongo_client["old"]["tokens"].update_one(
        {"address": "TokA"}, {"$push": {"social_urls": {"url": "https://nostatus.example", "attempts": 0}}}
    )
    store = MongoStore(mongo_client, "old")
    element = store.find_element("TokA", "https://nostatus.example")
    assert element is not None and element.status is FetchStatus.PENDING
    state = store.find_url_state("https://nostatus.example")
    assert state is None or state.status is FetchStatus.PENDING


def test_a_mongo_database_newer_than_the_code_is_refused(mongo_client: Any) -> None:
    MongoStore(mongo_client, "future")
    newer = MONGO_SCHEMA_VERSION + 1
    mongo_client["future"]["meta"].update_one({"_id": "schema"}, {"$set": {"version": newer}})
    with pytest.raises(SchemaVersionError) as info:
        MongoStore(mongo_client, "future")
    assert f"schema version {newer}" in str(info.value) and f"this code's {MONGO_SCHEMA_VERSION}" in str(info.value)


# ----------------------------------------------------------------------------- v2 -> v3 (the state machine)

V2_STATES = [
    # url, platform, status, attempted_at, attempts, source, request (provider, id, submitted)
    (X1, "x", "ok", T1, 6, "TokA", None),
    (TG, "telegram", "error", T2, 4, None, None),
    (WEB, "web", "error", T3, 2, None, ("urlscan", "scan-1", T2)),
    (X2, "x", "exhausted", T3, 5, None, None),
]
V2_EXPECTED = {
    # url: (answer, answered_at, streak, request id)
    X1: (FetchStatus.OK, T1, 0, None),
    TG: (None, None, 4, None),
    WEB: (None, None, 2, "scan-1"),
    X2: (None, None, 5, None),
}


def test_sqlite_v2_url_states_gain_the_state_machines_fields(tmp_path: Path) -> None:
    """A file of the release before the state machine: its URL states kept the last status and a
    lifetime call count. The upgrade anchors answers at their call and counts a failure's calls as
    its streak; an open paid request is kept."""
    from social_recording.store.sqlite import MIGRATIONS

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:2]:
        step(conn)
    for url, platform, status, at, attempts, source, req in V2_STATES:
        conn.execute(
            "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
            "request_provider, request_id, request_submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
            [url, platform, status, _txt(at), attempts, source, *(req[:2] if req else (None, None)),
             _txt(req[2]) if req else None, _txt(T3)])
    conn.execute("PRAGMA user_version = 2")
    conn.close()

    store = SqliteStore(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        _check_v2_states(store)
    finally:
        store.close()


def test_mongo_v2_url_states_gain_the_state_machines_fields(mongo_client: Any) -> None:
    db = mongo_client["v2"]
    MongoStore(mongo_client, "v2")  # indexes, then pretend the release before wrote the data
    db["meta"].update_one({"_id": "schema"}, {"$set": {"version": 2}})
    for url, platform, status, at, attempts, source, req in V2_STATES:
        db["url_states"].insert_one({
            "url": url, "platform": platform, "status": status, "attempted_at": at, "attempts": attempts,
            "source_token": source, "fence": 0, "updated_at": T3,
            "request": None if req is None else {"provider": req[0], "request_id": req[1], "submitted_at": req[2]},
        })
    store = MongoStore(mongo_client, "v2")
    assert db["meta"].find_one({"_id": "schema"})["version"] == MONGO_SCHEMA_VERSION
    _check_v2_states(store)
    before = mongo_dump(store)
    assert mongo_dump(MongoStore(mongo_client, "v2")) == before  # idempotent


def _check_v2_states(store: Store) -> None:
    for url, (answer, answered_at, streak, request_id) in V2_EXPECTED.items():
        state = store.find_url_state(url)
        assert state is not None, url
        assert (state.answer, state.answered_at, state.streak, state.engine_failures, state.version) == (
            answer, answered_at, streak, 0, 1), url
        assert (None if state.request is None else state.request.request_id) == request_id, url
    # A URL that answered before and failed since is not exhausted by the calls that answered.
    ok = store.find_url_state(X1)
    assert ok is not None and ok.status is FetchStatus.OK and ok.attempts == 6
