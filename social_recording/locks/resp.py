"""One command's round trip on a thread's own Redis connection, its reply read straight off the socket
(docs/architecture.md, "Per-URL bookkeeping").

redis-py's way through one command (its send, its reply reader's buffer object, its parser's walk, the
server's address formatted for an error that is not raised) cost each of a URL's three round trips
~25 us of CPU in place, 40 % of the trip. The replies our scripts and commands get are small: integers,
bulk strings, nil, errors and arrays of them (RESP2 and RESP3 alike, with RESP3's double and boolean).
They are read whole off the socket here. What redis-py decides stays its own: connecting and the
handshake, which exception a server's error reply is (`parse_error`, so an outage is still told apart
from a fault), and dropping a connection that failed mid-command, as its client does. A RESP3 push
message (sent only to a client that subscribed or asked for maintenance events) met before the reply is
read and left.
"""

from __future__ import annotations

import socket
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import InvalidResponse, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

CHUNK = 65536
"""Bytes asked of the socket per read: every reply of ours fits in the first."""


class _Incomplete(Exception):
    """The bytes read so far end inside the reply: read more."""


def round_trip(conn: Any, command: bytes) -> Any:
    """Send `command` (packed) on redis-py's connection `conn`, connecting it first if needed, and
    return its reply; an error reply is raised as redis-py's exception for it. A socket that fails or
    times out is dropped and raised as redis-py's ConnectionError / TimeoutError, which its retry and
    our outage handling know."""
    if conn._sock is None:
        conn.connect()
    elif conn.health_check_interval:
        conn.check_health()
    sock = conn._sock
    try:
        sock.sendall(command)
        reply = _read(sock, conn._parser.parse_error)
    except TimeoutError as exc:  # socket.timeout
        conn.disconnect()
        raise RedisTimeoutError(f"Timeout talking to Redis: {exc}") from exc
    except OSError as exc:
        conn.disconnect()
        raise RedisConnectionError(f"Error talking to Redis: {exc}") from exc
    except BaseException:
        conn.disconnect()
        raise
    if isinstance(reply, ResponseError):
        raise reply
    return reply


def _read(sock: socket.socket, parse_error: Any) -> Any:
    data = b""
    while True:
        more = sock.recv(CHUNK)
        if not more:
            raise RedisConnectionError("Connection closed by server.")
        data += more
        if data[:1] == b":" and data.find(b"\r\n") == len(data) - 2:  # a whole integer: most replies
            return int(data[1:-2])
        while data:
            try:
                reply, end = _parse(data, 0, parse_error)
            except _Incomplete:
                break
            if data[:1] != b">":
                if end != len(data):
                    raise InvalidResponse(f"Protocol Error: {len(data) - end} bytes after the reply")
                return reply
            data = data[end:]  # a push message, not the reply: left


def _parse(data: bytes, at: int, parse_error: Any) -> tuple[Any, int]:
    """The reply starting at `at`, and where the next one starts."""
    eol = data.find(b"\r\n", at)
    if eol < 0:
        raise _Incomplete
    kind, line, after = data[at:at + 1], data[at + 1:eol], eol + 2
    if kind == b":" or kind == b"(":
        return int(line), after
    if kind == b"$" or kind == b"=" or kind == b"!":
        size = int(line)
        if size < 0:
            return None, after
        end = after + size
        if len(data) < end + 2:
            raise _Incomplete
        body = data[after:end]
        if kind == b"!":
            return _error(body, parse_error), end + 2
        return (body[4:] if kind == b"=" else body), end + 2
    if kind == b"*" or kind == b"~" or kind == b">":
        count = int(line)
        if count < 0:
            return None, after
        items = []
        for _ in range(count):
            item, after = _parse(data, after, parse_error)
            items.append(item)
        return items, after
    if kind == b"-":
        return _error(line, parse_error), after
    if kind == b"+":
        return line, after
    if kind == b"_":
        return None, after
    if kind == b",":
        return float(line), after
    if kind == b"#":
        return line == b"t", after
    raise InvalidResponse(f"Protocol Error: {data[at:eol]!r}")


def _error(text: bytes, parse_error: Any) -> Any:
    """redis-py's exception for an error reply: one meaning the server cannot answer (loading, a
    replica) is raised at once, as redis-py does; any other is returned, raised by `round_trip` when
    it is the reply itself."""
    error = parse_error(text.decode("utf-8", errors="replace"))
    if isinstance(error, RedisConnectionError):
        raise error
    return error
