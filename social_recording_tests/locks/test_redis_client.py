"""One Redis pool per process and one connection per thread on it (locks/redis_client.py), as the lock
manager and the rate limiter use it: a thread keeps its connection from command to command, threads
never share one, a finished thread's connection is reused by the next thread, a server that is down
is asked again (not remembered as a broken client), and `close` hangs every connection up."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import redis

from social_recording.locks.redis import RedisLockManager
from social_recording.locks.redis_client import ThreadRedis, packed
from test_support.redis_server import RedisProcess

ECHO = "return ARGV[1]"


def _thread_redis(url: str, name: str = "thread-redis-test") -> ThreadRedis:
    """Its connections carry `name`, so the server's client list shows them apart from others."""
    return ThreadRedis(f"{url}?client_name={name}", {"echo": ECHO})


def _on_thread(fn: object) -> object:
    got: list[object] = []
    t = threading.Thread(target=lambda: got.append(fn()))  # type: ignore[operator]
    t.start()
    t.join(timeout=30)
    return got[0]


def _server_clients(url: str, name: str = "thread-redis-test") -> int:
    admin = redis.Redis.from_url(url)
    try:
        return sum(1 for c in admin.client_list() if c.get("name") == name)
    finally:
        admin.close()


def test_a_thread_keeps_its_connection_and_threads_never_share_one(redis_url: str) -> None:
    conns = _thread_redis(redis_url)
    mine = {conns.client().client_id() for _ in range(5)}
    assert len(mine) == 1
    assert conns.run("echo", [], ["hello"]) == b"hello"
    assert conns.client().client_id() in mine  # the script ran on the same connection

    barrier = threading.Barrier(3)
    ids: list[int] = []

    def other() -> None:
        ids.append(conns.client().client_id())
        barrier.wait(timeout=10)  # all three hold their connections at the same time

    threads = [threading.Thread(target=other) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(set(ids)) == 3 and not set(ids) & mine
    conns.close()


def test_a_finished_threads_connection_goes_back_to_the_pool(redis_url: str) -> None:
    conns = _thread_redis(redis_url)
    first = _on_thread(lambda: conns.client().client_id())
    second = _on_thread(lambda: conns.client().client_id())
    assert first == second  # reused, not a connection per thread ever started
    assert _server_clients(redis_url) == 1
    conns.close()


def test_close_hangs_up_every_connection_and_a_later_command_reconnects(redis_url: str) -> None:
    conns = _thread_redis(redis_url)
    conns.client().ping()
    barrier = threading.Barrier(2)
    done = threading.Event()

    def holder() -> None:
        conns.client().ping()
        barrier.wait(timeout=10)
        done.wait(timeout=30)

    t = threading.Thread(target=holder)
    t.start()
    barrier.wait(timeout=10)
    assert _server_clients(redis_url) == 2
    conns.close()
    assert _server_clients(redis_url) == 0
    done.set()
    t.join(timeout=30)
    assert conns.run("echo", [], ["again"]) == b"again"
    conns.close()


def test_a_server_down_at_the_first_command_is_asked_again_once_it_is_up(tmp_path: Path) -> None:
    server = RedisProcess(tmp_path, appendonly=False)
    conns = _thread_redis(server.url)
    with pytest.raises(redis.exceptions.ConnectionError):
        conns.client()
    server.start()
    try:
        assert conns.run("echo", [], ["up"]) == b"up"
    finally:
        conns.close()
        server.stop()


def test_a_lock_manager_on_a_callers_client_leaves_the_callers_connections_open(redis_url: str) -> None:
    given = redis.Redis.from_url(redis_url, client_name="callers-client")
    given.ping()
    manager = RedisLockManager(given)
    with manager.try_hold("social-record:Given", ttl=5.0) as lease:
        assert lease.held
    manager.close()
    assert given.ping()  # the caller's pool was lent, not closed
    assert _server_clients(redis_url, "callers-client") >= 1
    given.close()


def test_a_connection_the_server_closed_while_idle_is_made_again(redis_url: str) -> None:
    """A server (or a managed Redis) that closes idle clients: a thread's kept connection is gone by
    its next command, which reconnects instead of failing the lock."""
    admin = redis.Redis.from_url(redis_url)
    manager = RedisLockManager(redis_url)
    try:
        with manager.try_hold("social-record:Idle", ttl=5.0) as lease:
            assert lease.held
        kept = manager._redis.client().client_id()
        admin.config_set("timeout", 1)
        time.sleep(2.5)  # the server's idle-client sweep closes this thread's connection
        assert kept not in {int(c["id"]) for c in admin.client_list()}
        with manager.try_hold("social-record:Idle", ttl=5.0) as again:
            assert again.held
        assert manager._redis.client().client_id() != kept
    finally:
        admin.config_set("timeout", 0)
        admin.close()
        manager.close()


def test_a_script_the_server_lost_is_loaded_again(redis_url: str) -> None:
    """A restarted server without persistence, or `SCRIPT FLUSH`, forgets the scripts: the next call
    loads its script and answers, on the same connection."""
    admin = redis.Redis.from_url(redis_url)
    conns = _thread_redis(redis_url)
    try:
        assert conns.run("echo", [], ["first"]) == b"first"
        kept = conns.client().client_id()
        admin.script_flush()
        assert conns.run("echo", [], ["second"]) == b"second"
        assert conns.client().client_id() == kept
    finally:
        conns.close()
        admin.close()


def test_a_scripts_connection_killed_between_calls_is_made_again_within_the_call(redis_url: str) -> None:
    """The pool's retry, as the client gives it: a connection the server dropped is made again and
    the script sent again, so the caller never sees the error of a connection that was already gone."""
    admin = redis.Redis.from_url(redis_url)
    conns = _thread_redis(redis_url)
    try:
        assert conns.run("echo", [], ["before"]) == b"before"
        kept = conns.client().client_id()
        admin.client_kill_filter(_id=kept)
        assert conns.run("echo", [], ["after"]) == b"after"
        assert conns.client().client_id() != kept
    finally:
        conns.close()
        admin.close()


@pytest.mark.parametrize("parts", [
    ("EVALSHA", "0" * 40, 2, "social-url:https://x.com/i/status/42", "social-recording:fence", "host:1:owner", 180000),
    ("EVALSHA", "f" * 40, 1, "social-recording-rate:{github}:pause", 4500, 3600.0, 0.9, -1, 1e-07),
    ("EVALSHA", "a" * 40, 1, "social-url:https://t.me/ünïcødé", ""),
])
def test_a_script_call_is_written_as_redis_py_writes_it(parts: tuple[str | int | float, ...]) -> None:
    """`run` writes its command itself (locks/redis_client.py, `packed`): the same bytes redis-py's
    own packer sends for text, ints and floats."""
    assert packed(parts) == b"".join(redis.connection.Connection().pack_command(*parts))


@pytest.mark.parametrize("bad", [b"raw", True, None, [1]])
def test_an_argument_of_another_type_is_refused_with_its_type_named(bad: object) -> None:
    with pytest.raises(TypeError, match=type(bad).__name__):
        packed(("EVALSHA", "0" * 40, 0, bad))  # type: ignore[arg-type]
