"""What every statement builder shares: the statement type, IN-lists of bounded size, and the table of
each object kind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

Sql = tuple[str, list[Any]]

_CHUNK = 500
"""Bound on `?` per IN-list (SQLite's variable limit is far higher; this keeps statements small)."""


def _marks(n: int) -> str:
    if n < 1:
        raise ValueError("an IN-list needs at least one value")
    return ",".join("?" * n)


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(values), _CHUNK):
        yield values[i : i + _CHUNK]


def _dedup(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))
