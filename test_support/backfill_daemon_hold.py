"""Holds the backfill daemon's run creation on a deployment's instance database, so that a test, not
the machine's speed, decides who creates a new backfill's first run: the backfill daemon looks every
30 s and backfill_start_sensor every 5 s, and on a busy machine the daemon's look may still come
first. While the hold is on, a trigger makes every insert of a backfill's run that no sensor
requested wait for an advisory lock the hold keeps; the sensor's runs are inserted as usual.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import psycopg2

from test_support.table_lock import instance_db_params

HOLD_KEY = 4_270_001
"""The advisory lock's key (one 32-bit half: pg_locks shows it as objid)."""
_FUNCTION = "test_hold_backfill_daemon_runs"
_CREATE = f"""
CREATE FUNCTION {_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF position('"dagster/backfill"' in NEW.run_body) > 0
            AND position('"dagster/sensor_name"' in NEW.run_body) = 0 THEN
        PERFORM pg_advisory_xact_lock({HOLD_KEY});
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER {_FUNCTION} BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION {_FUNCTION}();
"""
_DROP = f"DROP TRIGGER IF EXISTS {_FUNCTION} ON runs; DROP FUNCTION IF EXISTS {_FUNCTION}();"


class BackfillDaemonHold:
    """On from construction until `release()`: the backfill daemon's run inserts wait (their
    process must be killed, or the hold released, for them to end)."""

    def __init__(self, pg_env: Mapping[str, str]) -> None:
        self._params = instance_db_params(pg_env)
        self._holder = self._admin()
        with self._holder.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s)", (HOLD_KEY,))
            cur.execute(_CREATE)

    def _admin(self) -> Any:
        conn = psycopg2.connect(**self._params)
        conn.autocommit = True
        return conn

    def waiters(self) -> list[int]:
        """Backends held: a backfill daemon's run insert each."""
        with self._holder.cursor() as cur:
            cur.execute("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = %s AND NOT granted"
                        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                        (HOLD_KEY,))
            return [row[0] for row in cur.fetchall()]

    def drop_waiters(self) -> None:
        """End the held inserts: their process was killed, so they must never run."""
        with self._holder.cursor() as cur:
            for pid in self.waiters():
                cur.execute("SELECT pg_terminate_backend(%s)", (pid,))

    def release(self) -> None:
        """Let anything still held go on, then remove the trigger (its removal waits for the inserts
        under way)."""
        with contextlib.suppress(psycopg2.Error), self._holder.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s)", (HOLD_KEY,))
            cur.execute(_DROP)
        with contextlib.suppress(psycopg2.Error):
            self._holder.close()
