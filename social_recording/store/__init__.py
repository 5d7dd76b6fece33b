"""Persistence: the Store protocol, its two backends, and `open_store(url)`.

Accepted `SOCIAL_RECORDING_STORE_URL` forms:

- `sqlite:///relative/path.db` — relative to the working directory (SQLAlchemy's convention);
- `sqlite:////absolute/path.db` — absolute (four slashes: three, then the path's own `/`);
- `mongodb://[user:pass@]host[:port][,host...]/<db>[?options]` and `mongodb+srv://…/<db>` — the
  database is the URL path and is required;
- `mongomock://<db>` — an in-memory mongomock database shared by this process (tests, demos).

A bad URL raises StoreConfigError naming the variable and the value with any password masked; a
MongoDB server that does not answer within OPEN_TIMEOUT_S raises StoreUnavailableError, likewise.

The MongoDB driver is imported only by a process that opens a Mongo store (`MongoStore` is loaded on
first use): a run on the SQLite store does not carry it (docs/architecture.md, "Run memory").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from social_recording.domain.models import TokenDoc
from social_recording.domain.redaction import cap, scrub
from social_recording.domain.redaction import redact_url as mask_url_password
from social_recording.store.base import (
    Candidate,
    CandidateQuery,
    ElementWrite,
    SchemaVersionError,
    StatusCounts,
    Store,
    StoreConfigError,
    StoreUnavailableError,
    UrlWrite,
    WriteOutcome,
    WriteResult,
)
from social_recording.store.sqlite import SqliteStore

if TYPE_CHECKING:
    from social_recording.store.mongo import MongoStore

__all__ = [
    "Candidate",
    "CandidateQuery",
    "ElementWrite",
    "MongoStore",
    "ParsedStoreUrl",
    "SchemaVersionError",
    "SqliteStore",
    "StatusCounts",
    "Store",
    "StoreConfigError",
    "StoreUnavailableError",
    "TokenDoc",
    "UrlWrite",
    "WriteOutcome",
    "WriteResult",
    "mask_url_password",
    "open_store",
    "parse_store_url",
]

ENV_VAR = "SOCIAL_RECORDING_STORE_URL"

OPEN_TIMEOUT_S = 10.0
"""How long opening a MongoDB store waits for the server to answer: an unreachable or misnamed server
fails a run process at its start with an error naming the URL, not at its first write (pymongo
alone would wait 30 s per operation, then fail with the host only)."""

_MONGO_DB_FORBIDDEN = set('/\\. "$*<>:|?')
_mongomock_client: Any = None

def __getattr__(name: str) -> Any:
    """`MongoStore`, imported (with pymongo) when first asked for."""
    if name == "MongoStore":
        from social_recording.store.mongo import MongoStore

        return MongoStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _bad(url: str, why: str) -> StoreConfigError:
    return StoreConfigError(
        f"{ENV_VAR}={mask_url_password(url)!r} is not a valid store URL: {why}. Expected "
        "'sqlite:///relative/path.db', 'sqlite:////absolute/path.db', 'mongodb://host/dbname', "
        "'mongodb+srv://host/dbname' or 'mongomock://dbname'"
    )

@dataclass(frozen=True)
class ParsedStoreUrl:
    """What a store URL names. `url` is the full connection string for mongodb (keep it secret)."""

    kind: str  # "sqlite" | "mongodb" | "mongomock"
    path: str | None = None
    db_name: str | None = None
    url: str | None = None

    def __repr__(self) -> str:
        shown = None if self.url is None else mask_url_password(self.url)
        return (
            f"ParsedStoreUrl(kind={self.kind!r}, path={self.path!r}, db_name={self.db_name!r}, url={shown!r})"
        )

def _check_db_name(url: str, db: str) -> str:
    if not db:
        raise _bad(url, "the database name is missing (put it in the URL path: .../dbname)")
    bad = sorted(set(db) & _MONGO_DB_FORBIDDEN)
    if bad or len(db) > 63:
        raise _bad(url, f"{db!r} is not a valid MongoDB database name")
    return db

def parse_store_url(url: str) -> ParsedStoreUrl:
    """Validate and split a store URL without connecting to anything."""
    if not isinstance(url, str) or not url.strip():
        raise _bad(str(url), "it is empty")
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise _bad(url, "it has no scheme")
    if scheme == "sqlite":
        if not rest.startswith("/"):
            raise _bad(url, "a SQLite URL needs three slashes: sqlite:///path (four for an absolute path)")
        path = rest[1:]
        if "?" in path or "#" in path:
            raise _bad(url, "SQLite URLs take no query string or fragment")
        if not path or path == ":memory:":
            raise _bad(url, "a SQLite store needs a file path shared by every worker (no in-memory database)")
        return ParsedStoreUrl("sqlite", path=path)
    if scheme in ("mongodb", "mongodb+srv"):
        try:
            parts = urlsplit(url)
            host_part = parts.netloc.rpartition("@")[2]
        except ValueError as exc:
            raise _bad(url, f"it cannot be parsed ({exc.__class__.__name__})") from None
        if not host_part:
            raise _bad(url, "the host is missing")
        db = unquote(parts.path.lstrip("/"))
        return ParsedStoreUrl("mongodb", db_name=_check_db_name(url, db), url=url)
    if scheme == "mongomock":
        db = rest.strip("/")
        return ParsedStoreUrl("mongomock", db_name=_check_db_name(url, db))
    raise _bad(url, f"unknown scheme {scheme!r}")

def _shared_mongomock_client() -> Any:
    """One in-memory 'server' per process, so two open_store calls see the same data."""
    global _mongomock_client
    if _mongomock_client is None:
        try:
            import mongomock
        except ImportError as exc:  # a dev dependency: say so instead of failing obscurely
            raise StoreConfigError(
                f"{ENV_VAR} uses mongomock://, which needs the 'mongomock' package (a dev dependency)"
            ) from exc
        from social_recording.store._mongomock import SerializedMongomockClient

        _mongomock_client = SerializedMongomockClient(mongomock.MongoClient(tz_aware=True))
    return _mongomock_client

def open_store(url: str) -> Store:
    """Open the store a `SOCIAL_RECORDING_STORE_URL` names (see the module docstring)."""
    parsed = parse_store_url(url)
    if parsed.kind == "sqlite":
        assert parsed.path is not None
        return SqliteStore(parsed.path)
    assert parsed.db_name is not None
    import pymongo
    from pymongo import MongoClient
    from pymongo.errors import ConfigurationError, PyMongoError

    from social_recording.store.mongo import MongoStore
    from social_recording.store.mongo.connection import mongo_client

    if parsed.kind == "mongomock":
        return MongoStore(_shared_mongomock_client(), parsed.db_name)
    assert parsed.url is not None
    try:
        client: MongoClient[dict[str, Any]] = mongo_client(parsed.url)
    except (ConfigurationError, ValueError, TypeError) as exc:  # InvalidURI, bad port/options, SRV lookup
        raise _bad(url, f"pymongo rejected it: {scrub(str(exc), url)}") from None
    wait_s = min(OPEN_TIMEOUT_S, client.options.server_selection_timeout)  # a shorter one in the URL wins
    try:
        with pymongo.timeout(wait_s):
            client.admin.command("ping")
    except PyMongoError as exc:
        client.close()
        raise StoreUnavailableError(
            f"{ENV_VAR}={mask_url_password(url)!r}: cannot reach or use the MongoDB server (waited at most "
            f"{wait_s:g} s): {type(exc).__name__}: {cap(scrub(str(exc), url), 300)}"
        ) from None
    return MongoStore(client, parsed.db_name, owns_client=True)
