"""The streamed `{"data": [...]}` reader gives what `json.loads(body)["data"]` gives, however the body
is cut into chunks, and refuses what it refuses, naming a shape and never a value."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from social_recording.upstream.streamed_items import BadEnvelope, NotJson, iter_data_items

SECRET = "s3cr3t-value-never-in-a-message"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def cut(body: bytes, sizes: list[int]) -> list[bytes]:
    """`body` in chunks of the given sizes (cycled), as a server's chunks may fall anywhere, even
    inside a multi-byte character."""
    chunks, at, i = [], 0, 0
    while at < len(body):
        size = sizes[i % len(sizes)]
        chunks.append(body[at:at + size])
        at, i = at + size, i + 1
    return chunks


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values (a float that is an integer compares as json.loads gives it)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and (a == b if not isinstance(a, list | dict) else json.dumps(a) == json.dumps(b))


@settings(max_examples=300, deadline=None)
@given(items=st.lists(json_values, max_size=8), others=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
       data_first=st.booleans(), sizes=st.lists(st.integers(min_value=1, max_value=17), min_size=1, max_size=4),
       ascii_only=st.booleans(), pretty=st.booleans())
def test_items_are_what_json_loads_gives_whatever_the_chunks(
    items: list[Any], others: dict[str, Any], data_first: bool, sizes: list[int], ascii_only: bool, pretty: bool
) -> None:
    others.pop("data", None)
    envelope = {"data": items, **others} if data_first else {**others, "data": items}
    body = json.dumps(envelope, ensure_ascii=ascii_only, indent=2 if pretty else None).encode("utf-8")
    got = list(iter_data_items(cut(body, sizes)))
    expected = json.loads(body)["data"]
    assert len(got) == len(expected)
    assert all(same(g, e) for g, e in zip(got, expected, strict=True))


def test_a_utf8_byte_order_mark_is_read_as_nothing_as_json_loads_reads_it() -> None:
    body = b"\xef\xbb\xbf" + json.dumps({"data": [1, "\u00e9"]}).encode()
    assert list(iter_data_items(cut(body, [1]))) == [1, "\u00e9"]


@pytest.mark.parametrize(("body", "shape"), [
    (b"[]", "list"),
    (b'"x"', "str"),
    (b"5", "int"),
    (b"null", "NoneType"),
    (b'{"data": {"a": 1}}', "object with keys ['data']"),
    (b'{"items": [1], "total": 1}', "object with keys ['items', 'total']"),
    (b'{"data": [1], "data": [2]}', 'an object with two "data" keys'),
])
def test_another_shape_is_refused_by_its_shape(body: bytes, shape: str) -> None:
    with pytest.raises(BadEnvelope) as raised:
        list(iter_data_items([body]))
    assert str(raised.value) == shape


@pytest.mark.parametrize("body", [
    b"", b"not json", b'{"data": [1, 2', b'{"data": []} trailing', b'{"data": [NaN]}',
    b'{"data": ["' + SECRET.encode() + b'"', b"\xff\xfe{}",
])
def test_what_is_not_one_json_document_is_refused_without_quoting_it(body: bytes) -> None:
    with pytest.raises(NotJson) as raised:
        list(iter_data_items(cut(body, [3])))
    assert SECRET not in str(raised.value) and "right here" not in str(raised.value)


def test_items_come_one_at_a_time_before_the_body_ends() -> None:
    """The reader hands each item on as soon as it is complete: nothing after it has been read yet."""
    read: list[int] = []

    def chunks() -> Any:
        yield b'{"data": ['
        for i in range(3):
            read.append(i)
            yield (b"," if i else b"") + json.dumps({"i": i}).encode()
        yield b"]}"

    seen = []
    for item in iter_data_items(chunks()):
        seen.append((item["i"], list(read)))
    assert [i for i, _ in seen] == [0, 1, 2]
    assert seen[0][1] in ([0], [0, 1])  # at most one chunk read ahead (ijson's lookahead of a value's end)
