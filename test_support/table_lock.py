"""A lock on one table of a deployment's instance database: holds a daemon at its next write there, so
that a test kills it at a known point (a killed process's waiting statement is dropped with it)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import psycopg2

from test_support.rehearsal import postgres_password


def instance_db_params(pg_env: Mapping[str, str]) -> dict[str, Any]:
    """How to reach a deployment's instance database as its Dagster role (which owns its tables)."""
    return {
        "host": pg_env["DAGSTER_POSTGRES_HOST"], "port": int(pg_env["DAGSTER_POSTGRES_PORT"]),
        "user": pg_env["DAGSTER_POSTGRES_USER"], "password": postgres_password(pg_env),
        "dbname": pg_env["DAGSTER_POSTGRES_DB"], "connect_timeout": 5,
    }


class TableLock:
    """An EXCLUSIVE lock on one table of the rehearsal's instance database (reads go on, writes wait)."""

    def __init__(self, pg_env: Mapping[str, str], table: str) -> None:
        self._params = instance_db_params(pg_env)
        self.table = table
        self._holder = psycopg2.connect(**self._params)
        self._holder.cursor().execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")  # noqa: S608 (our constant)

    def _admin(self) -> Any:
        conn = psycopg2.connect(**self._params)
        conn.autocommit = True
        return conn

    def waiters(self) -> list[int]:
        """Backends waiting for this lock (the writers it holds back)."""
        conn = self._admin()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT pid FROM pg_locks WHERE relation = %s::regclass AND NOT granted", (self.table,))
                return [row[0] for row in cur.fetchall()]
        finally:
            conn.close()

    def drop_waiters(self) -> None:
        """End the waiting statements: their process was killed, so they must never run."""
        conn = self._admin()
        try:
            with conn.cursor() as cur:
                for pid in self.waiters():
                    cur.execute("SELECT pg_terminate_backend(%s)", (pid,))
        finally:
            conn.close()

    def release(self) -> None:
        with contextlib.suppress(psycopg2.Error):
            self._holder.rollback()
            self._holder.close()
