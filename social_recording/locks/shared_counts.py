"""Where the shared counts live: the rate limiter's windows and the spend budget's counters both sit
on the lock backend that SOCIAL_RECORDING_LOCK_URL names, and both read that URL the same way
(docs/architecture.md, "Provider concurrency and rates").

`sqlite:///path` is the SQLite lock file on this machine; `redis://`, `rediss://` and `unix://` are a
Redis server. Nothing connects here. Each backend says which of its errors mean "did not answer"
(locks/outage.py), and every message shows the URL with its password masked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from social_recording.locks._urls import mask_url, scrub
from social_recording.locks.outage import is_redis_outage
from social_recording.sqlite_file import is_busy

REDIS_SCHEMES = ("redis", "rediss", "unix")
SqliteT = TypeVar("SqliteT")
RedisT = TypeVar("RedisT")


@dataclass(frozen=True)
class CountsBackend:
    """The lock backend read from a lock URL: a SQLite file (`sqlite_path`) or a Redis URL."""

    url: str
    sqlite_path: str | None
    redis_url: str | None

    @property
    def masked(self) -> str:
        return mask_url(self.url)

    @property
    def is_outage(self) -> Callable[[BaseException], bool]:
        return is_busy if self.sqlite_path is not None else is_redis_outage

    def storage(self, on_sqlite: Callable[[str], SqliteT], on_redis: Callable[[str], RedisT]) -> SqliteT | RedisT:
        """The counts' storage on this backend: `on_sqlite(path)` or `on_redis(url)` (neither connects)."""
        if self.sqlite_path is not None:
            return on_sqlite(self.sqlite_path)
        assert self.redis_url is not None
        return on_redis(self.redis_url)

    def describe(self, exc: BaseException) -> str:
        """An error of the backend in words without its password."""
        return scrub(str(exc), self.url)


def counts_backend(lock_url: str, purpose: str) -> CountsBackend:
    """The backend `lock_url` names for `purpose` ("the rate limiter", "the spend budget"); a bad
    URL is a ValueError naming it, masked."""
    if not isinstance(lock_url, str) or "://" not in lock_url:
        raise ValueError(f"{purpose} needs the lock URL (redis://... or sqlite:///path), got {lock_url!r}")
    url = lock_url.strip()
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/") or len(rest) < 2:
            raise ValueError(f"a SQLite lock URL needs a file path (sqlite:///path), got {mask_url(url)!r}")
        return CountsBackend(url, sqlite_path=rest[1:], redis_url=None)
    if scheme in REDIS_SCHEMES:
        return CountsBackend(url, sqlite_path=None, redis_url=f"{scheme}://{rest}")
    raise ValueError(f"unsupported lock URL scheme {scheme!r} for {purpose} ({mask_url(url)})")
