"""Which store errors mean "the store is unavailable for now" (worth repeating the same write) rather
than a fault: SQLite busy past its timeout (another writer held the file), a MongoDB connection lost,
a failover or a timeout, a write the server labels retryable, or a full disk (a write that meets one
is rolled back whole and succeeds once an operator frees space; repeating it for a bounded time
keeps a paid result that would otherwise be bought again)."""

from __future__ import annotations

import errno

from pymongo.errors import ConnectionFailure, OperationFailure, PyMongoError

from social_recording.sqlite_file import is_busy, is_full

MONGO_OUT_OF_DISK_SPACE = 14031
"""MongoDB's error code `OutOfDiskSpace`."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether a store write failed only because its disk is full."""
    if is_full(exc):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return True
    return isinstance(exc, OperationFailure) and exc.code == MONGO_OUT_OF_DISK_SPACE


def is_transient(exc: BaseException) -> bool:
    """Whether repeating the same store call later may succeed."""
    if is_busy(exc) or is_disk_full(exc):
        return True
    if isinstance(exc, ConnectionFailure):  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError
        return True
    if isinstance(exc, PyMongoError):  # e.g. a write the server labels retryable (NotWritablePrimary)
        return exc.has_error_label("RetryableWriteError") or exc.has_error_label("TransientTransactionError")
    return False
