"""Which store errors mean "the store is unavailable for now" (worth repeating the same write) rather
than a fault: SQLite busy past its timeout (another writer held the file), a MongoDB connection lost,
a failover or a timeout, a write the server labels retryable, or a full disk (a write that meets one
is rolled back whole and succeeds once an operator frees space; repeating it for a bounded time
keeps a paid result that would otherwise be bought again).

pymongo is not imported here: an error can only be one of its errors once a Mongo store has loaded
it, so a process on the SQLite store never carries the driver (docs/architecture.md, "Run memory")."""

from __future__ import annotations

import errno
import sys
from types import ModuleType

from social_recording.sqlite_file import is_busy, is_full

MONGO_OUT_OF_DISK_SPACE = 14031
"""MongoDB's error code `OutOfDiskSpace`."""


def _pymongo_errors() -> ModuleType | None:
    """pymongo's errors module when some store of this process loaded it, else None."""
    return sys.modules.get("pymongo.errors")


def is_disk_full(exc: BaseException) -> bool:
    """Whether a store write failed only because its disk is full."""
    if is_full(exc):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    errors = _pymongo_errors()
    return errors is not None and isinstance(exc, errors.OperationFailure) and exc.code == MONGO_OUT_OF_DISK_SPACE


def is_transient(exc: BaseException) -> bool:
    """Whether repeating the same store call later may succeed."""
    if is_busy(exc) or is_disk_full(exc):
        return True
    errors = _pymongo_errors()
    if errors is None:
        return False
    if isinstance(exc, errors.ConnectionFailure):  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError
        return True
    if isinstance(exc, errors.PyMongoError):  # e.g. a write the server labels retryable (NotWritablePrimary)
        return bool(exc.has_error_label("RetryableWriteError") or exc.has_error_label("TransientTransactionError"))
    return False
