"""deploy/postgres-init/10-dagster-role.sh, run as the compose postgres service runs it (as the
superuser, the password from its secret file), on the local PostgreSQL: Dagster's role owns its
database and nothing else, and no other role may connect to that database. The deployment rehearsal
runs Dagster itself on a role made so (rehearsal.postgres_database)."""

from __future__ import annotations

from typing import Any

import psycopg2
import pytest

from test_support.postgres_server import admin_connection
from test_support.rehearsal import postgres_database, postgres_password

pytestmark = pytest.mark.integration


def _connect(pg_env: dict[str, str], **overrides: Any) -> Any:
    params = {"host": pg_env["DAGSTER_POSTGRES_HOST"], "port": int(pg_env["DAGSTER_POSTGRES_PORT"]),
              "user": pg_env["DAGSTER_POSTGRES_USER"], "password": postgres_password(pg_env),
              "dbname": pg_env["DAGSTER_POSTGRES_DB"], "connect_timeout": 5, **overrides}
    conn = psycopg2.connect(**params)
    conn.autocommit = True
    return conn


def test_dagsters_role_owns_its_database_and_nothing_else() -> None:
    with postgres_database() as pg_env:
        role, database = pg_env["DAGSTER_POSTGRES_USER"], pg_env["DAGSTER_POSTGRES_DB"]
        admin = admin_connection()
        try:
            with admin.cursor() as cur:
                cur.execute("SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls "
                            "FROM pg_roles WHERE rolname = %s", (role,))
                assert cur.fetchone() == (False, False, False, False, False)
                cur.execute("SELECT datname FROM pg_database d JOIN pg_roles r ON d.datdba = r.oid "
                            "WHERE r.rolname = %s", (role,))
                assert cur.fetchall() == [(database,)]
                cur.execute("SELECT has_database_privilege('public', %s, 'CONNECT')", (database,))
                assert cur.fetchone() == (False,)
        finally:
            admin.close()
        conn = _connect(pg_env)  # with the password of its file
        try:
            with conn.cursor() as cur:
                cur.execute("CREATE TABLE probe (id int)")  # what `dagster instance migrate` needs
                cur.execute("DROP TABLE probe")
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(f'CREATE DATABASE "{database}_other"')
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(f'CREATE ROLE "{role}_other"')
        finally:
            conn.close()
