"""The items of a `{"data": [...]}` answer, parsed one at a time while the body streams.

Why: a tracker range answer carries a whole window's tokens (every field of each). Read whole and
parsed with `json.loads`, a window of 10,000 tokens held the body, a dict per item and a model per
item at once, about 2 KB per token, while the run needs an address and a symbol of the few it keeps
(docs/architecture.md, "Run memory"). Here each item is built alone from the stream's events
(ijson's C parser) and handed on; nothing of the body is kept.

Only the top-level object's `data` array is read; the object's other keys are skipped. What
`json.loads` would refuse (not JSON, trailing garbage, a cut-off body) raises `NotJson`; JSON of
another shape raises `BadEnvelope` naming the shape, never a value. Every chunk passes the bounds
scan before the C parser reads it (`outbound.bounded_json`): an over-long number, string or nesting
raises `OutOfBounds` naming the bound, and so does a number that is not finite (1e999).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

import ijson

from social_recording.outbound.bounded_json import checked_chunks, finite
from social_recording.outbound.bounds import NotUtf8


class NotJson(ValueError):
    """The body is not one JSON document."""


class BadEnvelope(ValueError):
    """The body is JSON but not `{"data": [...]}`; the message is its shape (a type, or the object's
    first keys), never a value."""


_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})
_BOM = b"\xef\xbb\xbf"


class _ChunkReader:
    """A file-like `read` over the body's chunks (what ijson reads from)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self._rest = b""
        self._started = False

    def read(self, size: int = -1) -> bytes:
        while not self._rest:
            chunk = next(self._chunks, None)
            if chunk is None:
                return b""
            self._rest = chunk
        if not self._started:  # json.loads reads a UTF-8 byte order mark as nothing; so do we
            while len(self._rest) < len(_BOM) and _BOM.startswith(self._rest):
                more = next(self._chunks, None)
                if more is None:
                    break
                self._rest += more
            self._started = True
            self._rest = self._rest.removeprefix(_BOM)
            return self.read(size)
        if size < 0 or size >= len(self._rest):
            out, self._rest = self._rest, b""
        else:
            out, self._rest = self._rest[:size], self._rest[size:]
        return out


def iter_data_items(chunks: Iterable[bytes]) -> Iterator[Any]:
    """Each item of the body's top-level `data` array, as `json.loads` would give it, in order.
    Raises NotJson or BadEnvelope; the items before the fault were already given."""
    keys: list[str] = []
    depth = 0  # containers open outside the data array's items
    key: str | None = None
    data_seen = False
    try:
        events = _events(chunks)  # ijson's C parser reads its first chunk at once
        for event, value in events:
            if depth == 0:
                if event != "start_map":
                    raise BadEnvelope("list" if event == "start_array" else type(_value(event, value, events)).__name__)
                depth = 1
            elif depth == 1 and event == "map_key":
                key = value
                keys.append(value)
            elif depth == 1 and event == "end_map":
                depth = 0
            elif depth == 1 and key == "data" and event == "start_array":
                if data_seen:
                    raise BadEnvelope('an object with two "data" keys')
                data_seen = True
                yield from _items(events)
            elif event in _OPENS:
                depth += 1
            elif event in _CLOSES:
                depth -= 1
    except (ijson.JSONError, NotUtf8):
        raise NotJson("not one JSON document") from None  # ijson's message quotes the body: not kept
    if not data_seen:
        raise BadEnvelope(f"object with keys {sorted(keys)[:10]}")


def _events(chunks: Iterable[bytes]) -> Iterator[tuple[str, Any]]:
    """(event, value) of the body, as ijson's C parser reads it, each chunk scanned for the bounds
    first: the C parser never sees an integer it would fail to make."""
    return ijson.basic_parse(_ChunkReader(checked_chunks(chunks)))  # type: ignore[no-any-return]


def _items(events: Iterator[tuple[str, Any]]) -> Iterator[Any]:
    """The items of an array whose `start_array` was just read, up to its `end_array`."""
    for event, value in events:
        if event == "end_array":
            return
        yield _value(event, value, events)


def _value(event: str, value: Any, events: Iterator[tuple[str, Any]]) -> Any:
    """The value that starts with (event, value), its container's events read from `events`. A
    non-integer number is a float, as `json.loads` gives it (ijson gives a Decimal; its float option
    would refuse an integer beyond 64 bits, which json.loads takes); one beyond a float's range is
    refused (NotFinite). Nesting is within the scan's bound, so the recursion is too."""
    if event == "start_map":
        obj: dict[str, Any] = {}
        for inner, key in events:
            if inner == "end_map":
                return obj
            obj[key] = _value(*next(events), events)
    elif event == "start_array":
        items: list[Any] = []
        for inner, got in events:
            if inner == "end_array":
                return items
            items.append(_value(inner, got, events))
    elif event == "number" and isinstance(value, Decimal):
        return finite(float(value))
    return value
