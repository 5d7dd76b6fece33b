"""The tokens' fingerprints are indexed on both stores (the Mongo store's multikey index; a side table
kept by triggers on SQLite): finding the tokens that share one reads the index, and the index follows
every write of the fingerprints, a token's removal included."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from social_recording.domain.models import TokenProfile
from social_recording.store.sqlite import SqliteStore
from social_recording_tests.store.conftest import Backend, seed_web_and_fingerprints

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def test_tokens_sharing_a_fingerprint_are_found_by_it(backend: Backend) -> None:
    store: Any = backend.store
    for address in ("C", "A", "B"):
        assert store.create_pending_token(TokenProfile(address=address, urls=[]), T0)
    seed_web_and_fingerprints(backend, "A", {}, ["deployer:x", "img:1"])
    seed_web_and_fingerprints(backend, "C", {}, ["deployer:x"])
    seed_web_and_fingerprints(backend, "B", {}, ["img:2"])
    assert store.addresses_with_fingerprint("deployer:x") == ["A", "C"]
    assert store.addresses_with_fingerprint("img:1") == ["A"]
    seed_web_and_fingerprints(backend, "A", {}, ["img:2"])  # rewritten: the old ones leave the index
    assert store.addresses_with_fingerprint("deployer:x") == ["C"]
    assert store.addresses_with_fingerprint("img:2", limit=1) == ["A"]


def test_the_sqlite_lookup_reads_the_index(tmp_path: Any) -> None:
    store = SqliteStore(tmp_path / "store.db")
    try:
        assert store.create_pending_token(TokenProfile(address="A", urls=[]), T0)
        with sqlite3.connect(store.path) as conn:
            conn.execute("UPDATE tokens SET fingerprints = '[\"deployer:x\"]' WHERE address = 'A'")
            plan = [row[3] for row in conn.execute(
                "EXPLAIN QUERY PLAN SELECT address FROM token_fingerprints WHERE fingerprint = ? ORDER BY address "
                "LIMIT 5", ["deployer:x"])]
            assert any("USING PRIMARY KEY" in line for line in plan), plan
            conn.execute("DELETE FROM tokens WHERE address = 'A'")
        assert store.addresses_with_fingerprint("deployer:x") == []
    finally:
        store.close()
