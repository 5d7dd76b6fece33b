"""Tokens: the row, its URL elements (`token_urls`, in position order) and its unresolved raw values,
written together; resolved values become elements under the token's fence.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from social_recording.domain.models import SocialUrl, TokenDoc, TokenProfile, UnresolvedValue, utcnow
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import (
    dt_to_text,
    json_loads,
    opt_dt_from_text,
    opt_dt_to_text,
    platform_or_none,
    unique_urls,
)
from social_recording.store.base import WriteResult
from social_recording.store.sqlite.connection import SqliteBase
from social_recording.store.sqlite.queries import q_existing_addresses, q_token_by_address, q_urls_by_address
from social_recording.store.sqlite.rows import _checked_dt, _checked_text, _url_from_row
from social_recording.store.sqlite.schema import NEVER
from social_recording.store.sqlite.sql import _chunks, _dedup
from social_recording.store.write_refusal import fence_refusal


class TokenMixin(SqliteBase):
    """TokenStore (store/base.py), and the tokens sharing a fingerprint."""

    def _token_from_rows(
        self, row: Sequence[Any], urls: list[SocialUrl], unresolved: list[UnresolvedValue]
    ) -> TokenDoc:
        address, symbol, image, first_transfer_at, fingerprints, web, created_at, updated_at, fence = row
        return TokenDoc(
            address=address,
            symbol=symbol,
            image=image,
            first_transfer_at=opt_dt_from_text(first_transfer_at),
            fingerprints=json_loads(fingerprints) or [],
            web=json_loads(web),
            social_urls=urls,
            unresolved=unresolved,
            created_at=opt_dt_from_text(created_at),
            updated_at=opt_dt_from_text(updated_at),
            fence=fence,
        )

    @staticmethod
    def _unresolved_of(conn: sqlite3.Connection, address: str) -> list[UnresolvedValue]:
        rows = conn.execute(
            "SELECT field, value, reason, attempts, checked_at FROM unresolved_values WHERE address = ? "
            "ORDER BY field",
            [address],
        ).fetchall()
        return [
            UnresolvedValue(field=f, value=v, reason=r, attempts=a, checked_at=_checked_dt(c))
            for f, v, r, a, c in rows
        ]

    def find_token(self, address: str) -> TokenDoc | None:
        with self._read() as conn:
            row = conn.execute(*q_token_by_address(address)).fetchone()
            if row is None:
                return None
            urls = [_url_from_row(r) for r in conn.execute(*q_urls_by_address(address))]
            unresolved = self._unresolved_of(conn, address)
        return self._token_from_rows(row, urls, unresolved)

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        wanted = _dedup(addresses)
        found: set[str] = set()
        if not wanted:
            return found
        conn = self._conn()
        for chunk in _chunks(wanted):
            found.update(row[0] for row in conn.execute(*q_existing_addresses(chunk)))
        return found

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """Insert-only. The row, its pending url rows and its unresolved values commit together."""
        urls = unique_urls(profile.urls, profile.address)
        stamp = dt_to_text(now or utcnow())
        with self._write() as conn:
            cur = conn.execute(
                "INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, "
                "created_at, updated_at, fence) VALUES (?, ?, ?, ?, '[]', NULL, ?, ?, 0) "
                "ON CONFLICT (address) DO NOTHING",
                [
                    profile.address,
                    profile.symbol,
                    profile.image,
                    opt_dt_to_text(profile.first_transfer_at),
                    stamp,
                    stamp,
                ],
            )
            if cur.rowcount != 1:
                return False
            conn.executemany(
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                "checked_at, fence, created_at) VALUES (?, ?, ?, NULL, 0, ?, ?, ?, 0, ?)",
                [
                    (profile.address, url, FetchStatus.PENDING.value, i, platform_or_none(url), NEVER, stamp)
                    for i, url in enumerate(urls)
                ],
            )
            conn.executemany(
                "INSERT INTO unresolved_values (address, field, value, reason, attempts, checked_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (address, field) DO NOTHING",
                [
                    (profile.address, v.field, v.value, v.reason, v.attempts, _checked_text(v.checked_at))
                    for v in profile.unresolved
                ],
            )
        return True

    def addresses_with_fingerprint(self, fingerprint: str, limit: int = 100) -> list[str]:
        """The tokens carrying `fingerprint` (by the fingerprints index), in address order."""
        return [row[0] for row in self._conn().execute(
            "SELECT address FROM token_fingerprints WHERE fingerprint = ? ORDER BY address LIMIT ?",
            [fingerprint, limit])]

    def _token_fence_refusal(self, conn: sqlite3.Connection, address: str, fence: int) -> WriteResult | None:
        row = conn.execute("SELECT fence FROM tokens WHERE address = ?", [address]).fetchone()
        if row is None:
            return WriteResult.NO_ELEMENT
        refused = fence_refusal(row[0], fence)
        if refused is not None:
            return refused.result
        conn.execute("UPDATE tokens SET fence = ? WHERE address = ?", [fence, address])
        return None

    def add_resolved_url(self, address: str, field: str, url: str, fence: int, now: datetime) -> WriteResult:
        stamp = dt_to_text(now)
        with self._write() as conn:
            refused = self._token_fence_refusal(conn, address, fence)
            if refused is not None:
                return refused
            position = conn.execute(
                "SELECT coalesce(max(position), -1) + 1 FROM token_urls WHERE address = ?", [address]
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                "checked_at, fence, created_at) VALUES (?, ?, ?, NULL, 0, ?, ?, ?, 0, ?) "
                "ON CONFLICT (address, url) DO NOTHING",
                [address, url, FetchStatus.PENDING.value, position, platform_or_none(url), NEVER, stamp],
            )
            conn.execute("DELETE FROM unresolved_values WHERE address = ? AND field = ?", [address, field])
            conn.execute("UPDATE tokens SET updated_at = ? WHERE address = ?", [stamp, address])
        return WriteResult.APPLIED

    def update_unresolved(
        self, address: str, value: UnresolvedValue, fence: int, *, drop: bool = False
    ) -> WriteResult:
        with self._write() as conn:
            refused = self._token_fence_refusal(conn, address, fence)
            if refused is not None:
                return refused
            if drop:
                conn.execute("DELETE FROM unresolved_values WHERE address = ? AND field = ?", [address, value.field])
            else:
                conn.execute(
                    "INSERT INTO unresolved_values (address, field, value, reason, attempts, checked_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (address, field) DO UPDATE SET value = excluded.value, "
                    "reason = excluded.reason, attempts = excluded.attempts, checked_at = excluded.checked_at",
                    [address, value.field, value.value, value.reason, value.attempts,
                     _checked_text(value.checked_at)],
                )
        return WriteResult.APPLIED
