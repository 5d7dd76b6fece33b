"""Which store errors mean "the store is unavailable for now" (worth repeating the same write) rather
than a fault: SQLite busy past its timeout (another writer held the file), a MongoDB connection lost,
a failover or a timeout, or a write the server labels retryable."""

from __future__ import annotations

from pymongo.errors import ConnectionFailure, PyMongoError

from social_recording.sqlite_file import is_busy


def is_transient(exc: BaseException) -> bool:
    """Whether repeating the same store call later may succeed."""
    if is_busy(exc):
        return True
    if isinstance(exc, ConnectionFailure):  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError
        return True
    if isinstance(exc, PyMongoError):  # e.g. a write the server labels retryable (NotWritablePrimary)
        return exc.has_error_label("RetryableWriteError") or exc.has_error_label("TransientTransactionError")
    return False
