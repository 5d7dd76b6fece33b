"""Distributed locks: `open_lock_manager(url)` picks the backend from the URL scheme.

`redis://`, `rediss://`, `unix://` -> `RedisLockManager` (production); `sqlite:///relative.db` or
`sqlite:////absolute.db` (SQLAlchemy's convention) -> `SqliteLockManager` (the embedded default,
usually the store's own file). Nothing connects here: backends connect on first use.
Locks are not reentrant (see `extender`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from social_recording.locks._urls import mask_url, scrub
from social_recording.locks.base import Lease, LockBackendUnavailable, LockConfigError, LockManager
from social_recording.locks.outage import OUTAGE_S
from social_recording.locks.sqlite import SqliteLockManager

if TYPE_CHECKING:
    from social_recording.locks.redis import RedisLockManager


def __getattr__(name: str) -> Any:
    """`RedisLockManager` is imported on first use: a run process on SQLite locks (the embedded
    default) never pays for importing the Redis client when it starts."""
    if name == "RedisLockManager":
        from social_recording.locks.redis import RedisLockManager

        return RedisLockManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "Lease",
    "LockBackendUnavailable",
    "LockConfigError",
    "LockManager",
    "RedisLockManager",
    "SqliteLockManager",
    "open_lock_manager",
]

ENV_VAR = "SOCIAL_RECORDING_LOCK_URL"
_EXPECTED = (
    "expected redis://[user:password@]host[:port][/db], rediss://..., unix:///path/to/redis.sock, "
    "sqlite:///relative/path.db or sqlite:////absolute/path.db"
)
_REDIS_DB_PATH = re.compile(r"^/?(\d+)?/?$")


def _bad(url: str, reason: str) -> LockConfigError:
    return LockConfigError(f"{ENV_VAR}={mask_url(url)!r} is not a valid lock URL: {reason}; {_EXPECTED}")


def _sqlite_path(url: str) -> str:
    rest = url[len("sqlite:") :]
    if not rest.startswith("///"):
        raise _bad(url, "a SQLite lock URL has no host part and needs a file path (sqlite:///path)")
    path = rest[3:]
    if "?" in path or "#" in path:
        raise _bad(url, "query strings and fragments are not supported for SQLite lock URLs")
    if not path or path in {"/", ":memory:", "/:memory:"} or path.endswith("/"):
        raise _bad(url, "the SQLite path must name a file shared by every process (not empty, not :memory:)")
    return path


def _check_redis(url: str, scheme: str) -> None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a non-numeric or out-of-range port
    except ValueError as exc:
        raise _bad(url, scrub(str(exc), url)) from None
    if scheme == "unix":
        if not parts.path or parts.path == "/":
            raise _bad(url, "a unix:// Redis URL needs the socket path (unix:///path/to/redis.sock)")
        return
    if not parts.hostname:
        raise _bad(url, "the Redis URL has no host")
    if not _REDIS_DB_PATH.match(parts.path):
        raise _bad(url, f"the Redis database must be a number, got path {parts.path!r}")


def open_lock_manager(url: str, *, outage_s: float = OUTAGE_S) -> LockManager:
    """Build the lock manager named by `url` (the value of SOCIAL_RECORDING_LOCK_URL) without connecting.
    `outage_s`: how long a backend that does not answer is waited out (locks/outage.py)."""
    if not isinstance(url, str):
        raise LockConfigError(f"{ENV_VAR} must be a string URL, got {type(url).__name__}")
    url = url.strip()
    if not url:
        raise LockConfigError(f"{ENV_VAR} is empty; {_EXPECTED}")
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise _bad(url, "no scheme")
    if scheme == "sqlite":
        return SqliteLockManager(_sqlite_path(f"sqlite://{rest}"), outage_s=outage_s)
    if scheme in {"redis", "rediss", "unix"}:
        normalised = f"{scheme}://{rest}"
        _check_redis(normalised, scheme)
        from social_recording.locks.redis import RedisLockManager

        try:
            return RedisLockManager(normalised, outage_s=outage_s)
        except ValueError as exc:  # redis-py's own URL checks (query arguments ...)
            raise _bad(url, scrub(str(exc), url)) from None
    raise _bad(url, f"unsupported scheme {scheme!r}")
