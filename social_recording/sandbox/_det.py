"""Deterministic pseudo-random values derived from a seed string (never from the clock or `random`).

Why not `random.Random(seed)`: its algorithms are not promised stable across Python versions, and the
sandbox promises that the same request always gets the same bytes. Every value is a pure function of
(seed, label), so adding a field never shifts the others.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

T = TypeVar("T")

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class Det:
    """Values derived from `seed`: `Det("x-user", "foo").num("followers", 0, 10_000)` never changes."""

    def __init__(self, *seed: str) -> None:
        self._seed = "\x1f".join(seed)

    def _bytes(self, label: str, n: int = 32) -> bytes:
        out = b""
        counter = 0
        while len(out) < n:
            out += hashlib.sha256(f"{self._seed}\x1e{label}\x1e{counter}".encode()).digest()
            counter += 1
        return out[:n]

    def raw(self, label: str) -> int:
        return int.from_bytes(self._bytes(label, 8), "big")

    def num(self, label: str, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return lo + self.raw(label) % (hi - lo + 1)

    def skewed(self, label: str, hi: int) -> int:
        """An integer in [0, hi] skewed towards small values (follower counts, likes)."""
        exponent = self.raw(label + "#magnitude") % len(str(hi))
        top = min(hi, 10 ** (exponent + 1))
        return self.raw(label) % (top + 1)

    def chance(self, label: str, num: int, den: int) -> bool:
        return self.raw(label) % den < num

    def pick(self, label: str, items: Sequence[T]) -> T:
        return items[self.raw(label) % len(items)]

    def digits(self, label: str, n: int) -> str:
        value = int.from_bytes(self._bytes(label, 16), "big")
        text = str(value % (9 * 10 ** (n - 1)) + 10 ** (n - 1))
        return text

    def alnum(self, label: str, n: int, alphabet: str = _B62) -> str:
        data = self._bytes(label, n)
        return "".join(alphabet[b % len(alphabet)] for b in data)

    def b64url(self, label: str, n: int) -> str:
        return self.alnum(label, n, _B64URL)

    def base36(self, label: str, n: int) -> str:
        return self.alnum(label, n, _B36)

    def hexstr(self, label: str, n: int) -> str:
        return self._bytes(label, (n + 1) // 2).hex()[:n]

    def etag(self, label: str = "etag") -> str:
        return base64.urlsafe_b64encode(self._bytes(label, 20)).decode().rstrip("=")

    def date(self, label: str, start: datetime, end: datetime) -> datetime:
        """A second-precision UTC datetime in [start, end]."""
        span = int((end - start).total_seconds())
        return start + timedelta(seconds=self.raw(label) % max(1, span + 1))


EPOCH_START = datetime(2019, 1, 1, tzinfo=UTC)
EPOCH_END = datetime(2026, 10, 25, tzinfo=UTC)
"""Created dates of sandbox objects fall here: before the demo scenario's trading window."""


def iso_ms(value: datetime) -> str:
    """`2024-05-01T10:00:00.000Z` (what JavaScript-backed APIs send)."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_s(value: datetime) -> str:
    """`2024-05-01T10:00:00Z` (Google, GitHub, RDAP)."""
    return value.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def twitter_date(value: datetime) -> str:
    """`Tue Dec 10 07:00:30 +0000 2024` (Twitter's classic format, which twitterapi.io passes on)."""
    return value.astimezone(UTC).strftime("%a %b %d %H:%M:%S +0000 %Y")
