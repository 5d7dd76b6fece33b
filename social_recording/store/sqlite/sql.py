"""What every statement builder shares: the statement type, IN-lists of bounded size, and the table of
each object kind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from social_recording.domain.graph import ObjectKind
from social_recording.store._codec import OBJECT_COLLECTIONS

Sql = tuple[str, list[Any]]

_CHUNK = 500
"""Bound on `?` per IN-list (SQLite's variable limit is far higher; this keeps statements small)."""


def _marks(n: int) -> str:
    if n < 1:
        raise ValueError("an IN-list needs at least one value")
    return ",".join("?" * n)


def _table(kind: ObjectKind | str) -> str:
    try:
        return OBJECT_COLLECTIONS[ObjectKind(kind).value]
    except ValueError:
        raise ValueError(
            f"unknown object kind {kind!r}; expected one of {sorted(OBJECT_COLLECTIONS)}"
        ) from None


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


def _dedup(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))
