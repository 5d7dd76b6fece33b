"""The store's counts, kept where the data is written (docs/architecture.md, "Health figures").

Every run's report stage and the `status` command show how many elements the store holds by platform
and status, and how many tokens, objects, metric points and links. Recounting them costs time in
proportion to the store (a GROUP BY over every element), so each backend keeps one counter per
figure, changed by the very write that changes what it counts; reading them costs the same at 1k
tokens or 10M. The hourly health job recounts everything and repairs the counters that drifted
(`CountDrift`), which is where a counter could only go wrong: a write done by hand, or on MongoDB a
process killed between a write and its counter's `$inc`.

Counters are named by `key`s shared by both backends; this module turns them into figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from social_recording.domain.graph import ObjectKind
from social_recording.domain.status import FetchStatus

SEP = "|"
URLS = "urls"
TOKENS_KEY = "tokens"
METRICS_KEY = "metrics"
LINKS_KEY = "links"
OBJECTS = "objects"
UNKNOWN_PLATFORM = "unknown"
"""How figures name the platform of an element whose URL is not canonical (stored without one)."""


def url_key(platform: str | None, status: str) -> str:
    """The counter of elements of one platform (None: not canonical) and status."""
    return f"{URLS}{SEP}{platform or ''}{SEP}{status}"


def object_key(kind: ObjectKind | str) -> str:
    return f"{OBJECTS}{SEP}{ObjectKind(kind).value}"


def parse_url_key(key: str) -> tuple[str | None, FetchStatus] | None:
    """(platform, None when not canonical; status) of a `url_key`, None for any other counter."""
    head, _, rest = key.partition(SEP)
    if head != URLS:
        return None
    platform, _, status = rest.partition(SEP)
    return platform or None, FetchStatus(status)


@dataclass(frozen=True)
class StoreCounts:
    """What the store holds, from its counters: elements by (platform, status), tokens, objects per
    kind, first metric points and token links."""

    by_platform: Mapping[tuple[str, FetchStatus], int] = field(default_factory=dict)
    tokens: int = 0
    objects: Mapping[ObjectKind, int] = field(default_factory=dict)
    metrics: int = 0
    links: int = 0

    @classmethod
    def of(cls, counters: Iterable[tuple[str, int]]) -> StoreCounts:
        """From (key, count) pairs; zero counters are left out, an unknown key is our bug."""
        by_platform: dict[tuple[str, FetchStatus], int] = {}
        objects = {kind: 0 for kind in ObjectKind}
        scalars = {TOKENS_KEY: 0, METRICS_KEY: 0, LINKS_KEY: 0}
        for key, n in counters:
            head, _, rest = key.partition(SEP)
            if (url := parse_url_key(key)) is not None:
                if n:
                    pair = (url[0] or UNKNOWN_PLATFORM, url[1])
                    by_platform[pair] = by_platform.get(pair, 0) + int(n)
            elif head == OBJECTS:
                objects[ObjectKind(rest)] += int(n)
            elif key in scalars:
                scalars[key] += int(n)
            else:
                raise ValueError(f"unknown store counter {key!r}")
        return cls(by_platform, scalars[TOKENS_KEY], objects, scalars[METRICS_KEY], scalars[LINKS_KEY])


@dataclass(frozen=True)
class CountDrift:
    """One reconciliation of the counters with a full recount: every counter that differed, as
    (kept, recounted), and those left unrepaired because they moved while they were recounted
    (a busy MongoDB; the next reconciliation looks again)."""

    differences: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    unrepaired: frozenset[str] = frozenset()
    recount_seconds: float = 0.0

    @property
    def repaired(self) -> dict[str, tuple[int, int]]:
        return {k: v for k, v in self.differences.items() if k not in self.unrepaired}


def differences(kept: Mapping[str, int], recounted: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """(kept, recounted) for every key where they differ, a missing key counting 0."""
    return {k: (kept.get(k, 0), recounted.get(k, 0)) for k in sorted(set(kept) | set(recounted))
            if kept.get(k, 0) != recounted.get(k, 0)}
