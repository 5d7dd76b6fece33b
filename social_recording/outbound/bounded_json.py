"""JSON read within the bounds of `outbound.bounds`: a scan of the raw bytes that refuses an over-long
number, an over-long string or too deep a nesting BEFORE any parser sees them, then the parse.

Why a scan of its own: neither parser can be trusted with such input. `json.loads` recurses once
per level (10^5 brackets end in a RecursionError) and makes an int of any length up to Python's
4,300-digit limit; ijson's C parser, which streams the tracker's range answer, fails on a longer
integer inside its own callbacks, and the process can then die later on a segmentation fault. The
scan reads the bytes in chunks as they stream (a string, a number or an escape may be cut anywhere)
and keeps only a few counters; with `bytes` methods and `re` it costs about half of what the parse
itself does (35 ms against 70 ms on a 2.8 MB range answer of 10,000 tokens).
docs/architecture.md, "Bounds of an answer".
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Iterable, Iterator
from typing import Any

from social_recording.outbound.bounds import (
    MAX_DEPTH,
    MAX_EXPONENT_DIGITS,
    MAX_NUMBER_CHARS,
    MAX_STRING_BYTES,
    NotFinite,
    NotUtf8,
    OverLimit,
)

_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
"""The rest of a string up to its closing quote, or up to the chunk's end (or a last lone `\\`)."""
_NUMBER_CHARS = b"-+.0123456789eE"
_NUMBER_SHAPES = bytes(
    0x30 if chr(b).isdigit() and b < 0x80 else 0x65 if b in b"eE" else 0x2B if b in b"+-" else b if b == 0x2E else 0x20
    for b in range(256)
)
"""A number's characters as their kind (digit `0`, exponent `e`, sign `+`, point), anything else a blank."""
_LONG_EXPONENTS = (b"e" + b"0" * (MAX_EXPONENT_DIGITS + 1), b"e+" + b"0" * (MAX_EXPONENT_DIGITS + 1))
_OPEN = ord("[")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_AS_SQUARE = bytes.maketrans(b"{}", b"[]")
_BACKSLASH = ord("\\")


class JsonBounds:
    """The scan, fed one chunk at a time; `feed` raises OutOfBounds at the first bound passed (or
    the first byte that is not UTF-8). It does not check the JSON itself (the parser after it
    does): its counts are exact on JSON, and on anything else they may only stop it later than the
    parser's own error. A chunk costs a few passes of `bytes` methods over it, never a Python step
    per value."""

    def __init__(self) -> None:
        self._in_string = False
        self._escaped = False  # the last chunk ended on a string's lone backslash
        self._string_bytes = 0  # of the string being read: its bytes between the quotes, as sent
        self._number_tail = b""  # the number characters that ended the last chunk, outside a string
        self._depth = 0
        self._utf8 = codecs.getincrementaldecoder("utf-8")()

    def feed(self, chunk: bytes) -> None:
        try:
            self._utf8.decode(chunk)  # strict, and a character may be cut between chunks
        except UnicodeDecodeError:
            raise NotUtf8() from None
        at = self._string_rest(chunk) if self._in_string and chunk else 0
        if at < len(chunk):
            self._outside(chunk[at:], self._number_tail if at == 0 else b"")

    def end(self) -> None:
        """The body ended: a character cut off at its end is not UTF-8 either."""
        try:
            self._utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise NotUtf8() from None

    def _string_rest(self, chunk: bytes) -> int:
        """Where the string the last chunk ended in closes (past its quote), or the chunk's end."""
        at = 1 if self._escaped else 0
        self._escaped = False
        end = _STRING_REST.match(chunk, at).end()  # type: ignore[union-attr]
        self._grow_string(end)
        if end == len(chunk):
            return end
        if chunk[end] == _BACKSLASH:  # a lone backslash ends the chunk: what it escapes comes next
            self._escaped = True
            self._grow_string(1)
            return end + 1
        self._in_string = False  # chunk[end] is the closing quote
        return end + 1

    def _grow_string(self, size: int) -> None:
        self._string_bytes += size
        if self._string_bytes > MAX_STRING_BYTES:
            raise OverLimit("a string", MAX_STRING_BYTES, "bytes")

    def _outside(self, text: bytes, tail: bytes) -> None:
        """`text` starts outside any string. With its escaped backslashes and quotes blanked (same
        length), its quotes alternate: the pieces between them are, in turn, outside and inside a
        string. Strings are measured, the rest is checked for numbers and nesting, and a string left
        open at the end is carried on to the next chunk."""
        pieces = text.replace(b"\\\\", b"__").replace(b'\\"', b"__").split(b'"')
        inside = pieces[1::2]
        ends_inside = len(pieces) % 2 == 0
        if inside:
            if not ends_inside or len(inside) > 1:
                self._string_bytes = 0
                self._grow_string(max(map(len, inside[:-1] if ends_inside else inside)))
            if ends_inside:
                self._in_string, self._string_bytes = True, 0
                self._grow_string(len(inside[-1]))
                self._escaped = inside[-1].endswith(b"\\")  # a lone one: pairs were blanked
        between = tail + b" ".join(pieces[0::2])
        shapes = between.translate(_NUMBER_SHAPES)
        if max(map(len, shapes.split()), default=0) > MAX_NUMBER_CHARS:
            raise OverLimit("a number", MAX_NUMBER_CHARS, "characters")
        if any(long in shapes for long in _LONG_EXPONENTS):
            raise OverLimit("a number's exponent", MAX_EXPONENT_DIGITS, "digits")
        self._number_tail = b"" if ends_inside else between[len(between.rstrip(_NUMBER_CHARS)):]
        self._nest(between.translate(_AS_SQUARE, _NOT_BRACKETS))

    def _nest(self, brackets: bytes) -> None:
        """Follow the depth through `brackets` (the chunk's, in order, all made square). Each round
        of removing the innermost pairs is one `bytes.replace`, one level; only a chunk that may go
        past the bound is walked bracket by bracket."""
        rest, rounds = brackets, 0
        while rounds <= MAX_DEPTH:
            shorter = rest.replace(b"[]", b"")
            if len(shorter) == len(rest):
                break
            rest, rounds = shorter, rounds + 1
        closes = len(rest) - len(rest.lstrip(b"]"))  # what is left of JSON: closers, then openers
        opens = len(rest) - closes
        if self._depth + opens + rounds <= MAX_DEPTH:
            # A closer with nothing open is not JSON: the parser stops there, before anything deeper.
            self._depth = max(0, self._depth - closes) + opens
            return
        for bracket in brackets:
            if bracket == _OPEN:
                self._depth += 1
                if self._depth > MAX_DEPTH:
                    raise OverLimit("nesting", MAX_DEPTH, "levels")
            else:
                self._depth = max(0, self._depth - 1)


def checked_chunks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """`chunks` as they come, each scanned before it is handed on."""
    bounds = JsonBounds()
    for chunk in chunks:
        bounds.feed(chunk)
        yield chunk
    bounds.end()


def finite(value: float) -> float:
    """`value`, or NotFinite."""
    if not math.isfinite(value):
        raise NotFinite()
    return value


def load_json(body: bytes) -> Any:
    """`json.loads(body)` within the bounds: OutOfBounds past them (NaN and Infinity, which
    json.loads would take, are refused too, and so is a body that is not UTF-8); ValueError for what
    is not JSON."""
    bounds = JsonBounds()
    bounds.feed(body)
    bounds.end()
    return json.loads(body, parse_int=_int, parse_float=_float, parse_constant=_constant)


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:  # a body in UTF-16 or UTF-32 hides its numbers from the byte scan
        raise OverLimit("a number", MAX_NUMBER_CHARS, "characters")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise OverLimit("a number", MAX_NUMBER_CHARS, "characters")
    return finite(float(text))


def _constant(name: str) -> Any:
    raise NotFinite()
