"""The bound a constructor checks on a number it is given (a lock's TTL, a wait, a retry budget):
one rule and one message, "<name> must be >= 0 seconds, got -1.0", so bad input is refused at
construction naming the bad value the same way everywhere. A NaN is refused by every bound."""

from __future__ import annotations

from typing import TypeVar

N = TypeVar("N", int, float)


def at_least(name: str, value: N, floor: N, unit: str = "") -> N:
    """`value` when it is >= `floor`, else a ValueError naming `name` and the value."""
    if not value >= floor:
        raise ValueError(f"{name} must be >= {floor}{_unit(unit)}, got {value!r}")
    return value


def above(name: str, value: N, floor: N, unit: str = "") -> N:
    """`value` when it is > `floor`, else a ValueError naming `name` and the value."""
    if not value > floor:
        raise ValueError(f"{name} must be > {floor}{_unit(unit)}, got {value!r}")
    return value


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""
