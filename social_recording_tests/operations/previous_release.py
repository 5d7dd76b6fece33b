"""The stores as the previous release left them, built from the current ones.

The store: a MongoDB store at schema version 3 — the same collections without the health counters
(`store_counts`, which version 4 added and builds from a recount) and without the spend ledger
(version 5, nothing to rewrite): what a release before the counters wrote, so the upgrade crosses
two versions, as one that skipped a release does. Dropping that collection and recording version 3
in `meta` leaves exactly that; the migration must rebuild the counters from the data.

Dagster's instance: the previous release ran the same Dagster, so its schema is the current one;
`dagster instance migrate` is given real work by removing the markers of Dagster's data migrations
(`secondary_indexes`), as an instance made before them has none: the tool rebuilds those indexes
from the runs it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import psycopg2
from dagster._core.storage.runs.migration import REQUIRED_DATA_MIGRATIONS
from pymongo import MongoClient

from social_recording.store import parse_store_url
from social_recording.store.mongo import META, STORE_COUNTS

PREVIOUS_MONGO_SCHEMA = 3
"""Before the counters: the migration has a step that rewrites data to take."""


def store_to_previous_schema(store_url: str) -> None:
    parsed = parse_store_url(store_url)
    client: MongoClient[dict[str, object]] = MongoClient(parsed.url, tz_aware=True)
    try:
        db = client.get_database(parsed.db_name)
        db.drop_collection(STORE_COUNTS)
        db[META].update_one({"_id": "schema"}, {"$set": {"version": PREVIOUS_MONGO_SCHEMA}}, upsert=True)
    finally:
        client.close()


def postgres_connection(pg_env: Mapping[str, str]) -> object:
    password = pg_env.get("DAGSTER_POSTGRES_PASSWORD", "")
    if pg_env.get("DAGSTER_POSTGRES_PASSWORD_FILE"):
        password = Path(pg_env["DAGSTER_POSTGRES_PASSWORD_FILE"]).read_text().strip()
    conn = psycopg2.connect(host=pg_env["DAGSTER_POSTGRES_HOST"], port=pg_env["DAGSTER_POSTGRES_PORT"],
                            user=pg_env["DAGSTER_POSTGRES_USER"], password=password,
                            dbname=pg_env["DAGSTER_POSTGRES_DB"], connect_timeout=5)
    conn.autocommit = True
    return conn


def data_migration_markers(pg_env: Mapping[str, str]) -> set[str]:
    conn = postgres_connection(pg_env)
    try:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT name FROM secondary_indexes WHERE migration_completed IS NOT NULL")
            return {name for (name,) in cur.fetchall()} & set(REQUIRED_DATA_MIGRATIONS)
    finally:
        conn.close()  # type: ignore[attr-defined]


def instance_before_data_migrations(pg_env: Mapping[str, str]) -> set[str]:
    """Remove the markers of Dagster's required data migrations; the names removed."""
    removed = data_migration_markers(pg_env)
    conn = postgres_connection(pg_env)
    try:
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("DELETE FROM secondary_indexes WHERE name = ANY(%s)", (sorted(removed),))
    finally:
        conn.close()  # type: ignore[attr-defined]
    return removed
