"""The local PostgreSQL the integration tests use: the deployment rehearsal's Dagster storage and
FerretDB's backend each get a database of their own on it, created for them and dropped afterwards.

`.ci/run` installs and starts the server (trust auth for the `postgres` user on loopback);
SOCIAL_RECORDING_TEST_POSTGRES_URL points the tests at another one.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import unquote, urlsplit

import psycopg2
from psycopg2 import sql

POSTGRES_URL_ENV = "SOCIAL_RECORDING_TEST_POSTGRES_URL"
DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
"""The local server `.ci/run` installs and starts (trust auth for local TCP connections)."""


class PostgresUnavailable(RuntimeError):
    """The server cannot be reached; the message says how to provide one."""


def admin_params() -> dict[str, Any]:
    """How to reach the server's maintenance database (from SOCIAL_RECORDING_TEST_POSTGRES_URL)."""
    parts = urlsplit(os.environ.get(POSTGRES_URL_ENV) or DEFAULT_POSTGRES_URL)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 5432,
        "user": unquote(parts.username or "postgres"),
        "password": unquote(parts.password or ""),
        "dbname": unquote(parts.path.lstrip("/")) or "postgres",
        "connect_timeout": 5,
    }


def admin_connection() -> Any:
    """An autocommit connection to the maintenance database."""
    admin = admin_params()
    try:
        conn = psycopg2.connect(**admin)
    except psycopg2.OperationalError as exc:
        raise PostgresUnavailable(
            f"cannot reach PostgreSQL at {admin['host']}:{admin['port']} as {admin['user']} ({exc}); "
            f"install and start it (`.ci/run` does) or set {POSTGRES_URL_ENV}"
        ) from None
    conn.autocommit = True
    return conn


def create_database(name: str) -> None:
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    finally:
        conn.close()


def drop_database(name: str) -> None:
    """Drop it even while clients are still connected (a killed service's connections linger)."""
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        conn.close()


def database_exists(name: str) -> bool:
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            return cur.fetchone() is not None
    finally:
        conn.close()
