"""The bounds scan (docs/architecture.md, "Bounds of an answer") measures what a plain reading of the
JSON measures, however the body is cut into chunks: the longest number, the longest string and the
deepest nesting, and refuses exactly past the bounds; `load_json` refuses what is not finite."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from social_recording.outbound.bounded_json import JsonBounds, load_json
from social_recording.outbound.bounds import (
    MAX_DEPTH,
    MAX_EXPONENT_DIGITS,
    MAX_NUMBER_CHARS,
    MAX_STRING_BYTES,
    NotFinite,
    NotUtf8,
    OutOfBounds,
    OverLimit,
)

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def measured(body: bytes) -> tuple[int, int, int, bool]:
    """(longest number, longest string as sent, deepest nesting, an over-long exponent), read plainly."""
    strings = [len(m.group()) - 2 for m in _STRING.finditer(body)]  # between the quotes, as sent
    outside = _STRING.sub(b" ", body)
    numbers = re.findall(rb"[-+.0-9eE]+", outside)
    depth = deepest = 0
    for byte in outside:
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    exponent = re.search(rb"[eE][-+]?[0-9]{%d}" % (MAX_EXPONENT_DIGITS + 1), outside) is not None
    return max(map(len, numbers), default=0), max(strings, default=0), deepest, exponent


def scanned(body: bytes, sizes: list[int]) -> OutOfBounds | None:
    """The scan's verdict on `body` fed in chunks of `sizes` (cycled; scaled up for a long body)."""
    if len(body) > 10_000:
        sizes = [size * 4_099 for size in sizes]
    bounds = JsonBounds()
    at, i = 0, 0
    try:
        while at < len(body):
            bounds.feed(body[at:at + sizes[i % len(sizes)]])
            at, i = at + sizes[i % len(sizes)], i + 1
        bounds.end()
    except OutOfBounds as exc:
        return exc
    return None


_leaves = st.one_of(
    st.integers(-(10 ** 120), 10 ** 120).map(str), st.just("1e99999"), st.just("-2.5E+12345"),
    st.text(alphabet='ab"\\\u00e9{}[]', max_size=30).map(json.dumps),
    st.integers(MAX_STRING_BYTES - 3, MAX_STRING_BYTES + 3).map(lambda n: '"' + "x" * n + '"'),
    st.sampled_from(["true", "false", "null", "0.5", "1e3"]),
)


def _nested(depth: int, leaf: str, objects: bool) -> str:
    return ('{"k":' * depth + leaf + "}" * depth) if objects else ("[" * depth + leaf + "]" * depth)


documents = st.builds(
    lambda leaves, depth, objects: _nested(depth, "[" + ",".join(leaves) + "]", objects),
    st.lists(_leaves, min_size=1, max_size=5), st.integers(0, MAX_DEPTH + 3), st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(document=documents, sizes=st.lists(st.integers(1, 64), min_size=1, max_size=4) | st.just([1 << 30]))
def test_the_scan_refuses_exactly_past_the_bounds_wherever_the_chunks_are_cut(document: str, sizes: list[int]) -> None:
    body = document.encode()
    number, string, depth, exponent = measured(body)
    refused = scanned(body, sizes)
    over = number > MAX_NUMBER_CHARS or string > MAX_STRING_BYTES or depth > MAX_DEPTH or exponent
    assert (refused is not None) == over, (number, string, depth, exponent, refused)
    if isinstance(refused, OverLimit):
        assert refused.limit in (MAX_NUMBER_CHARS, MAX_STRING_BYTES, MAX_DEPTH, MAX_EXPONENT_DIGITS)


@pytest.mark.parametrize("body", [b"[NaN]", b"[Infinity]", b"[-Infinity]", b"[1e999]", b'{"a": -1E400}'])
def test_load_json_refuses_what_is_not_a_finite_number(body: bytes) -> None:
    with pytest.raises(NotFinite, match="not finite"):
        load_json(body)


@pytest.mark.parametrize("body", [b'["\xed\xa0\x80"]', b'["\xff"]', b'["\xc3'])
def test_text_that_is_not_utf8_is_refused_before_any_parser(body: bytes) -> None:
    with pytest.raises(NotUtf8):
        load_json(body)
    with pytest.raises(NotUtf8):  # a character cut between chunks is still read whole
        bounds = JsonBounds()
        for byte in body:
            bounds.feed(bytes([byte]))
        bounds.end()


def test_a_character_cut_between_chunks_is_utf8() -> None:
    body = '["\u00e9\u20ac\U0001f600"]'.encode()
    bounds = JsonBounds()
    for byte in body:
        bounds.feed(bytes([byte]))
    bounds.end()


def test_the_error_names_the_bound_and_never_the_value() -> None:
    with pytest.raises(OverLimit) as raised:
        load_json(b"[" + b"31415" * 1000 + b"]")
    assert str(raised.value) == f"a number over the limit of {MAX_NUMBER_CHARS} characters"
