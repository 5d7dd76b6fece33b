"""mongomock with MongoDB's per-operation atomicity, for tests and `mongomock://` demos.

A real server applies each single-document write atomically and checks unique indexes inside it;
mongomock checks the index and then inserts without a lock, so two threads racing an upsert can
both insert. This proxy runs every write method of a collection under one lock (reads pass through:
mongomock's own read/write lock already guards iteration), so the contract suite's thread races
test our code, not mongomock's missing locking.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_WRITES = frozenset({
    "insert_one", "insert_many", "update_one", "update_many", "replace_one", "delete_one", "delete_many",
    "find_one_and_update", "find_one_and_replace", "find_one_and_delete", "bulk_write", "create_index",
    "create_indexes", "drop", "drop_index", "drop_indexes",
})


class _Collection:
    def __init__(self, target: Any, lock: threading.RLock) -> None:
        self._target = target
        self._lock = lock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name not in _WRITES or not callable(attr):
            return attr
        return _locked(attr, self._lock)


class _Database:
    def __init__(self, target: Any, lock: threading.RLock) -> None:
        self._target = target
        self._lock = lock

    def __getitem__(self, name: str) -> _Collection:
        return _Collection(self._target[name], self._lock)

    def get_collection(self, name: str, *args: Any, **kwargs: Any) -> _Collection:
        return _Collection(self._target.get_collection(name, *args, **kwargs), self._lock)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class SerializedMongomockClient:
    """Wraps a `mongomock.MongoClient`; `client[db][collection]` writes are serialised."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.RLock()

    def __getitem__(self, name: str) -> _Database:
        return _Database(self._client[name], self._lock)

    def get_database(self, name: str, *args: Any, **kwargs: Any) -> _Database:
        return _Database(self._client.get_database(name, *args, **kwargs), self._lock)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _locked(fn: Callable[..., Any], lock: threading.RLock) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return fn(*args, **kwargs)

    return call
