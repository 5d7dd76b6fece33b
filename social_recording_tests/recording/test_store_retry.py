"""Writes under a URL lock are repeated while the store is unavailable, and only then."""

from __future__ import annotations

import errno
import sqlite3
from typing import Any

import pytest
from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure, ServerSelectionTimeoutError

from social_recording.recording.store_retry import write_through_outages
from social_recording.store.transient import is_transient
from social_recording_tests.flaky import Flaky


@pytest.mark.parametrize("exc", [
    sqlite3.OperationalError("database is locked"),
    AutoReconnect("primary stepped down"),
    ServerSelectionTimeoutError("no primary"),
    OperationFailure("not primary", code=10107, details={"errorLabels": ["RetryableWriteError"]}),
    # a full disk: the write was rolled back whole and is taken once space is freed
    sqlite3.OperationalError("database or disk is full"),
    OSError(errno.ENOSPC, "No space left on device"),
    OperationFailure("Out of disk space", code=14031),
])
def test_transient_store_errors(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize("exc", [
    sqlite3.OperationalError("no such table: token_urls"),
    sqlite3.IntegrityError("UNIQUE constraint failed"),
    DuplicateKeyError("E11000"),
    OperationFailure("bad update", code=40),
    ValueError("ours"),
])
def test_faults_are_not_transient(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_a_write_is_repeated_until_the_store_takes_it(caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []
    write = Flaky([sqlite3.OperationalError("database is locked"), AutoReconnect("failover")])
    secret_url = "https://example.com/page?api_key=SECRET123"
    assert write_through_outages(write, what="recording", url=secret_url, retry_s=60, sleep=slept.append) == "ok"
    assert write.calls == 3 and len(slept) == 2
    lines = [r.getMessage() for r in caplog.records if "store_write_retry" in r.getMessage()]
    assert len(lines) == 2 and "OperationalError" in lines[0] and "AutoReconnect" in lines[1]
    assert not any("SECRET123" in line for line in lines)


def test_a_fault_is_not_repeated() -> None:
    write = Flaky([sqlite3.IntegrityError("UNIQUE constraint failed")])
    with pytest.raises(sqlite3.IntegrityError):
        write_through_outages(write, what="recording", url="https://example.com", retry_s=60, sleep=lambda s: None)
    assert write.calls == 1


def test_the_last_transient_error_propagates_once_the_budget_is_spent() -> None:
    write = Flaky([sqlite3.OperationalError("database is locked")] * 50)
    clock: list[float] = []

    def sleep(seconds: Any) -> None:
        clock.append(seconds)

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        write_through_outages(write, what="recording", url="https://example.com", retry_s=0.0, sleep=sleep)
    assert write.calls == 1 and clock == []
