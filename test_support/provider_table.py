"""The model's oracle of the providers' numbers, read from the operator's table (docs/operations.md,
"Providers"): each provider account's documented rates (with its key, and without it when the key is
optional) and its calls at once per run. The model's expectations of the rate limiter and of a run's call
slots come from here, never from the descriptors under test: a descriptor whose number drifts from what
the operator reads is caught by the engine's behaviour against this table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from social_recording.domain.platform import Rate

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_RATE = re.compile(r"([\d,]+)/(second|minute|hour|day)")
_SIDE_BY_SIDE = re.compile(r"recorded side by side \(up to (\d+) at once\)")


@dataclass(frozen=True)
class Documented:
    """One account's row: its platforms, its rates (with the key set), without the key (None: the same),
    and its calls at once per run (None: the account has none of its own, a second account of a row)."""

    platforms: tuple[str, ...]
    rates: tuple[Rate, ...]
    rates_without_key: tuple[Rate, ...] | None
    calls_at_once: int | None


def _rates(text: str) -> tuple[Rate, ...]:
    return tuple(Rate(int(n.replace(",", "")), UNITS[unit]) for n, unit in _RATE.findall(text))


def read_table(text: str) -> dict[str, Documented]:
    """account -> its documented numbers. A row names its platform's accounts, the first one the
    platform's provider (the rate and calls at once are its own); the others are listed with none."""
    block = re.search(r"<!-- providers: generated from the descriptors -->\n(.*?)\n<!-- /providers -->", text, re.S)
    assert block is not None, "docs/operations.md has lost its providers table"
    out: dict[str, Documented] = {}
    for line in block.group(1).splitlines()[2:]:
        platform, accounts, _paid, _key, rate, calls = (c.strip() for c in line.strip().strip("|").split("|"))
        names = [a.strip() for a in accounts.split(",")]
        with_key, _, without = rate.partition("(")
        first = Documented((platform,), _rates(with_key), _rates(without) if "without the key" in without else None,
                           int(calls) if calls.isdigit() else None)
        for i, name in enumerate(names):
            row = first if i == 0 else Documented((platform,), (), None, None)
            known = out.get(name)
            out[name] = row if known is None else Documented(known.platforms + (platform,), *_numbers(known))
    return out


def _numbers(row: Documented) -> tuple[tuple[Rate, ...], tuple[Rate, ...] | None, int | None]:
    return row.rates, row.rates_without_key, row.calls_at_once


def read_side_by_side(text: str) -> int:
    """How many of a token's URLs a run records side by side, as the operator reads it ("Provider
    concurrency and rates": "recorded side by side (up to N at once)")."""
    found = _SIDE_BY_SIDE.findall(re.sub(r"\s+", " ", text))
    assert len(found) == 1, f"docs/operations.md names a token's URLs side by side {len(found)} times, not once"
    return int(found[0])


DOCUMENTED: Mapping[str, Documented] = read_table(OPERATIONS.read_text(encoding="utf-8"))
"""account -> its numbers as docs/operations.md's "Providers" table says them."""


def documented_rates(account: str, keyed: bool) -> tuple[Rate, ...]:
    """The account's documented rates for a deployment with its key set or not (an account the table does
    not list has none)."""
    row = DOCUMENTED.get(account)
    if row is None:
        return ()
    return row.rates if keyed or row.rates_without_key is None else row.rates_without_key


URLS_PER_TOKEN_AT_ONCE = read_side_by_side(OPERATIONS.read_text(encoding="utf-8"))
"""How many of a token's URLs a run records side by side, within the providers' calls at once."""
