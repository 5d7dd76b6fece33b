"""The statements of the retry selection and of health's waiting elements: each reads one range of an
index of `token_urls`, in the index's order, and stops at its limit or bound (docs/architecture.md,
"Health figures").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from social_recording.domain.status import Cause
from social_recording.store.sqlite.schema import _NEVER_RECORDED, NEVER
from social_recording.store.sqlite.sql import Sql, _marks

_CANDIDATE_COLS = "address, url, status, attempts, checked_at, platform, detail, due_at"


_FAIR_ORDER = "ORDER BY due_at, address, url"
"""Longest due first, never-recorded (`NEVER`) first, ties by address and URL: `_fair_order` in SQL."""


def q_due_by_status(status: str, due_by: str, limit: int) -> Sql:
    """One status of the retry selection: a range of (status, due_at), in index order, limited.
    Elements without a platform hold a non-canonical URL (our bug, isolated by the recorder): a retry
    cannot change them, so they are left to the health checks instead of blocking the queue."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND due_at <= ? "
        f"AND platform IS NOT NULL {_FAIR_ORDER} LIMIT ?",
        [status, due_by, limit],
    )


def q_oldest_by_status(status: str, due_by: str, limit: int) -> Sql:
    """Health: the longest-due elements of one status, non-canonical ones included."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND due_at <= ? {_FAIR_ORDER} LIMIT ?",
        [status, due_by, limit],
    )


def q_due_by_status_platform(status: str, platform: str, due_by: str, limit: int) -> Sql:
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND platform = ? AND cause = ? "
        f"AND due_at <= ? {_FAIR_ORDER} LIMIT ?",
        [status, platform, Cause.NO_GENERATOR.value, due_by, limit],
    )


def q_due_among_addresses(statuses: Sequence[str], addresses: Sequence[str], due_by: str) -> Sql:
    """The retry selection narrowed to a few tokens: their elements by the (address, url) key, then
    filtered. The unary `+` keeps status and due_at out of index choice: without statistics the
    planner would otherwise range over every due element of those statuses instead of a few tokens'."""
    return (
        f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE address IN ({_marks(len(addresses))}) "
        f"AND +status IN ({_marks(len(statuses))}) AND +due_at <= ? AND platform IS NOT NULL",
        [*addresses, *statuses, due_by],
    )


def q_count_held_back(status: str, due_after: str, bound: int, platform: str | None = None) -> Sql:
    """Retry: the elements of one status (and platform, for `unsupported` narrowed to the cause "no
    generator") not due yet, counted up to `bound` along the retry index."""
    if platform is None:
        where, args = "status = ? AND due_at > ?", [status, due_after]
    else:
        where = "status = ? AND platform = ? AND cause = ? AND due_at > ?"
        args = [status, platform, Cause.NO_GENERATOR.value, due_after]
    return _bounded_count(where), [*args, bound]


def q_count_held_back_among(statuses: Sequence[str], addresses: Sequence[str], due_after: str) -> Sql:
    """`q_count_held_back` for a few tokens: their elements by the (address, url) key."""
    return (
        f"SELECT status, platform, cause FROM token_urls WHERE address IN ({_marks(len(addresses))}) "
        f"AND +status IN ({_marks(len(statuses))}) AND +due_at > ? AND platform IS NOT NULL",
        [*addresses, *statuses, due_after],
    )


_WAITING_COLS = "address, url, status, attempts, checked_at, created_at, platform, cause, detail, due_at"


def _waiting_where(
    status: str, since_before: str, *, recorded: bool, platform: str | None, canonical_only: bool
) -> tuple[str, list[Any]]:
    """Elements of one status (and, for `unsupported` narrowed to a platform, that platform with the
    cause "no generator") due by `since_before`: recorded ones by their due time (a (status, due_at)
    range of `idx_token_urls_due`, or `idx_token_urls_platform_due`), never-recorded ones by their
    creation (a (status, created_at) range of the partial index of `checked_at = NEVER`,
    `idx_token_urls_never`, or `idx_token_urls_platform_never`). Each range is in the fair order and
    holds every column the terms name, so a count or a listing stops at its bound whatever the
    range holds."""
    clauses, args = ["status = ?"], [status]
    if platform is not None:
        clauses += ["platform = ?", "cause = ?"]
        args += [platform, Cause.NO_GENERATOR.value]
    elif canonical_only:
        # The unary `+` keeps this term out of index choice: the (status, due_at) range is the
        # narrow one, a (status, platform) range would read every element of the status.
        clauses.append("+platform IS NOT NULL")
    if recorded:
        clauses.append("due_at > ? AND due_at <= ?")
        args += [NEVER, since_before]
    else:
        # NEVER written out, not bound: the planner takes the partial index of never-recorded
        # elements only when the query's terms visibly imply its condition.
        clauses.append(f"{_NEVER_RECORDED} AND created_at <= ?")
        args.append(since_before)
    return " AND ".join(clauses), args


def q_waiting(
    status: str, since_before: str, limit: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> Sql:
    """Health: the longest-waiting elements of one range (see `_waiting_where`), oldest first."""
    where, args = _waiting_where(status, since_before, recorded=recorded, platform=platform,
                                 canonical_only=canonical_only)
    # Both in the full fair order, which is their index's: the LIMIT stops the read, and which of equal
    # times make the limit never depends on the order rows happen to be stored in (a restored store
    # lists what the original did).
    order = "due_at, address, url" if recorded else "created_at, address, url"
    return f"SELECT {_WAITING_COLS} FROM token_urls WHERE {where} ORDER BY {order} LIMIT ?", [*args, limit]


def q_count_waiting(
    status: str, since_before: str, bound: int, recorded: bool, platform: str | None = None,
    canonical_only: bool = True,
) -> Sql:
    """Health: how many elements of one range waited past the cutoff, counting at most `bound`."""
    where, args = _waiting_where(status, since_before, recorded=recorded, platform=platform,
                                 canonical_only=canonical_only)
    return _bounded_count(where), [*args, bound]


def _bounded_count(where: str) -> str:
    """COUNT(*) of the first `?` rows matching `where`: the inner query stops at the bound and reads
    only the index it ranges over when that index holds every column named (health's indexes do)."""
    return f"SELECT COUNT(*) FROM (SELECT 1 FROM token_urls WHERE {where} LIMIT ?)"
