"""The locks' own reply reader (locks/resp.py): a reply split over several reads, a push message before
it, every reply type our scripts and commands get, and a server's error replies as redis-py's
exceptions; a connection that breaks mid-reply is dropped and raised as redis-py's ConnectionError."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from redis._parsers.resp3 import _RESP3Parser
from redis.exceptions import BusyLoadingError, NoScriptError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from social_recording.locks import resp


class _Conn:
    """What `round_trip` uses of a redis-py connection, on one end of a socket pair."""

    health_check_interval = 0

    def __init__(self, sock: socket.socket) -> None:
        self._sock: socket.socket | None = sock
        self._parser = _RESP3Parser(socket_read_size=65536)
        self.disconnected = False

    def connect(self) -> None:
        raise AssertionError("connected already")

    def disconnect(self) -> None:
        self.disconnected = True
        self._sock = None


def _answer(pieces: list[bytes], close: bool = False) -> tuple[_Conn, threading.Thread]:
    """A connection whose server reads the command and answers `pieces`, one write each."""
    ours, theirs = socket.socketpair()
    ours.settimeout(5.0)

    def serve() -> None:
        theirs.recv(65536)
        for piece in pieces:
            theirs.sendall(piece)
            threading.Event().wait(0.01)  # separate reads on our side
        if close:
            theirs.close()

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    return _Conn(ours), server


@pytest.mark.parametrize(("pieces", "expected"), [
    ([b":42\r\n"], 42),
    ([b":4", b"2\r", b"\n"], 42),
    ([b"$5\r\nab", b"cde\r\n"], b"abcde"),
    ([b"$-1\r\n"], None),
    ([b"_\r\n"], None),
    ([b"+OK\r\n"], b"OK"),
    ([b",0.25\r\n"], 0.25),
    ([b"#f\r\n"], False),
    ([b"*3\r\n:1\r\n", b"$1\r\nx\r\n_\r\n"], [1, b"x", None]),
    ([b">2\r\n$10\r\ninvalidate\r\n_\r\n", b":7\r\n"], 7),
    ([b">2\r\n$10\r\ninvalidate\r\n_\r\n:7\r\n"], 7),
])
def test_a_reply_is_read_whole_however_it_arrives(pieces: list[bytes], expected: Any) -> None:
    conn, server = _answer(pieces)
    assert resp.round_trip(conn, b"*1\r\n$4\r\nPING\r\n") == expected
    server.join(5.0)
    assert not conn.disconnected


@pytest.mark.parametrize(("reply", "error"), [
    (b"-NOSCRIPT No matching script. Please use EVAL.\r\n", NoScriptError),
    (b"-ERR wrong number of arguments\r\n", ResponseError),
    (b"-LOADING Redis is loading the dataset in memory\r\n", BusyLoadingError),
])
def test_an_error_reply_is_raised_as_redis_pys_exception_for_it(reply: bytes, error: type[Exception]) -> None:
    conn, server = _answer([reply])
    with pytest.raises(error):
        resp.round_trip(conn, b"*1\r\n$4\r\nPING\r\n")
    server.join(5.0)


def test_a_connection_closed_mid_reply_is_dropped_and_raised_as_a_connection_error() -> None:
    conn, server = _answer([b"$10\r\nabc"], close=True)
    with pytest.raises(RedisConnectionError):
        resp.round_trip(conn, b"*1\r\n$4\r\nPING\r\n")
    server.join(5.0)
    assert conn.disconnected
