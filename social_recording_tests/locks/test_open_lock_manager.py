"""open_lock_manager: URL -> backend, no connection at construction, clear errors without passwords."""

from __future__ import annotations

import os
import traceback
from pathlib import Path

import pytest
import redis

from social_recording.locks import (
    LockBackendUnavailable,
    LockConfigError,
    RedisLockManager,
    SqliteLockManager,
    open_lock_manager,
)
from social_recording.locks._urls import mask_url, scrub

SECRET = "hunter2-Very-Secret"


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6390/0",
        "redis://localhost",
        f"redis://:{SECRET}@cache.internal:6379/3",
        f"rediss://app:{SECRET}@cache.internal:6380/1",
        "unix:///var/run/redis/redis.sock?db=2",
        "REDIS://127.0.0.1:6390/0",
        "  redis://127.0.0.1:6390/0\n",
    ],
)
def test_redis_urls_build_a_redis_manager_without_connecting(url: str) -> None:
    manager = open_lock_manager(url)  # nothing listens on these: construction must not connect
    assert isinstance(manager, RedisLockManager)
    assert SECRET not in repr(manager)
    manager.close()


def test_redis_manager_connects_lazily_and_errors_carry_no_password() -> None:
    manager = open_lock_manager(f"redis://:{SECRET}@127.0.0.1:1/0", outage_s=0.5)  # port 1: refused
    with pytest.raises(LockBackendUnavailable) as err, manager.try_hold("social-record:X", ttl=1.0):
        pass
    assert "127.0.0.1:1" in str(err.value)  # the backend is named, its password masked
    assert SECRET not in "".join(traceback.format_exception(err.value))


def test_sqlite_relative_path_follows_sqlalchemy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    manager = open_lock_manager("sqlite:///state/social.db")
    assert isinstance(manager, SqliteLockManager)
    assert manager.path == str(tmp_path / "state" / "social.db")
    assert not (tmp_path / "state").exists()  # nothing touched the disk yet
    with manager.try_hold("social-record:X", ttl=1.0) as lease:  # first use creates dirs + file
        assert lease.held
    assert (tmp_path / "state" / "social.db").is_file()
    manager.close()


def test_sqlite_absolute_path(tmp_path: Path) -> None:
    target = tmp_path / "abs" / "locks.db"
    manager = open_lock_manager(f"sqlite:///{target}")  # tmp_path is absolute -> sqlite:////...
    assert isinstance(manager, SqliteLockManager)
    assert manager.path == str(target)


def test_sqlite_shares_the_store_file_without_owning_it(tmp_path: Path) -> None:
    """The default: the lock table lives in the store's file; other tables are untouched."""
    import sqlite3

    db = tmp_path / "social.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE tokens (address TEXT PRIMARY KEY)")
    conn.execute("INSERT INTO tokens VALUES ('So1')")
    conn.commit()
    manager = open_lock_manager(f"sqlite:///{db}")
    with manager.try_hold("social-record:So1", ttl=1.0) as lease:
        assert lease.held
        assert conn.execute("SELECT address FROM tokens").fetchall() == [("So1",)]
    manager.close()
    conn.close()


@pytest.mark.parametrize(
    "url",
    [
        "localhost:6379",
        f"mongodb://app:{SECRET}@mongo:27017/social",
        f"http://app:{SECRET}@example.com/",
        "sqlite://",
        "sqlite:///",
        "sqlite:///:memory:",
        "sqlite://somehost/locks.db",
        "sqlite:///locks.db?mode=ro",
        "sqlite:///state/",
        f"redis://:{SECRET}@cache:notaport/0",
        f"redis://app:{SECRET}@/0",
        f"redis://:{SECRET}@cache:6379/zero",
        f"redis://:{SECRET}@cache:6379/0?socket_timeout=soon",
        f"redis://cache:6379/0?password={SECRET}&socket_timeout=soon",
        "unix://",
    ],
)
def test_bad_urls_name_the_variable_and_mask_the_password(url: str) -> None:
    with pytest.raises(LockConfigError) as err:
        open_lock_manager(url)
    message = str(err.value)
    assert "SOCIAL_RECORDING_LOCK_URL" in message
    assert isinstance(err.value, ValueError)
    assert SECRET not in "".join(traceback.format_exception(err.value))
    if SECRET in url:
        assert "***" in message  # the value is named, masked
    else:
        assert url.strip() in message


@pytest.mark.parametrize("url", ["", "   "])
def test_empty_url_is_rejected(url: str) -> None:
    with pytest.raises(LockConfigError, match="SOCIAL_RECORDING_LOCK_URL is empty"):
        open_lock_manager(url)


def test_mask_and_scrub() -> None:
    assert mask_url("redis://user:p%40ss:w@h:6379/0") == "redis://user:***@h:6379/0"
    assert mask_url("redis://:pw@h") == "redis://:***@h"
    assert mask_url("redis://h:6379/0?db=1&password=pw") == "redis://h:6379/0?db=1&password=***"
    assert mask_url("redis://h:6379/0") == "redis://h:6379/0"
    assert mask_url("redis://u:SECRET@QA@h:6379/0") == "redis://u:***@h:6379/0"  # unencoded '@' in the password
    assert scrub("failed for p@ss and redis://u:p%40ss@h", "redis://u:p%40ss@h") == "failed for *** and redis://u:***@h"


def test_managers_survive_pickling_to_a_spawned_process(tmp_path: Path) -> None:
    import pickle

    sqlite_manager = pickle.loads(pickle.dumps(SqliteLockManager(tmp_path / "l.db")))
    assert isinstance(sqlite_manager, SqliteLockManager) and sqlite_manager.path == str(tmp_path / "l.db")
    redis_manager = pickle.loads(pickle.dumps(RedisLockManager(f"redis://:{SECRET}@h:6379/0")))
    assert isinstance(redis_manager, RedisLockManager)
    with pytest.raises(TypeError, match="from a URL"):
        pickle.dumps(RedisLockManager(redis.Redis()))


def test_sqlite_manager_rejects_in_memory_paths() -> None:
    for bad in ("", ":memory:", "file::memory:?cache=shared"):
        with pytest.raises(ValueError, match=repr(bad).replace("?", r"\?")):
            SqliteLockManager(bad)
    assert os.path.isabs(SqliteLockManager("x.db").path)
