"""The health checks' read of waiting elements, described once: the index ranges it reads, how their
count stops at a bound, and how their elements add up to the longest-waiting. Each backend only renders
one range into its own query (docs/architecture.md, "Health figures").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from social_recording.domain.status import FetchStatus
from social_recording.store._codec import waiting_parts
from social_recording.store.base import CandidateQuery, WaitingElement, WaitingElements


@dataclass(frozen=True)
class WaitingRange:
    """Elements of `status` (of `platform` only, when set) that were never recorded and created by
    `cutoff` (`recorded` False), or recorded and due by it: one index range, in the fair order."""

    status: FetchStatus
    platform: str | None
    recorded: bool
    cutoff: datetime


def waiting_ranges(query: CandidateQuery) -> list[WaitingRange]:
    """The ranges a `waiting_elements` query reads: per status (and platform, `waiting_parts`) the
    never-recorded elements by `created_by`, then the recorded ones by `due_by`."""
    cutoffs = {False: query.created_by, True: query.due_by}
    return [WaitingRange(status, platform, recorded, cutoffs[recorded])
            for status, platform in waiting_parts(query.statuses, query.unsupported_platforms)
            for recorded in (False, True)]


def read_waiting(
    query: CandidateQuery,
    count_bound: int,
    count: Callable[[WaitingRange, int], int],
    listed: Callable[[WaitingRange], Iterable[WaitingElement]],
) -> WaitingElements:
    """Every backend's `waiting_elements`: each range counted (`count(range, at_most)`, asking only for
    what is left of the bound) and listed (`listed(range)`, at most `query.limit` each), then added up."""
    check_waiting_query(query, count_bound)
    counted = 0
    found: list[WaitingElement] = []
    for part in waiting_ranges(query):
        if counted < count_bound:
            counted += count(part, count_bound - counted)
        found += listed(part)
    return longest_waiting(found, counted, count_bound, query.limit)


def check_waiting_query(query: CandidateQuery, count_bound: int) -> None:
    """The arguments `waiting_elements` accepts, on every backend."""
    if query.addresses is not None:
        raise ValueError("waiting_elements looks at every token: query.addresses must be None")
    if count_bound < 1:
        raise ValueError(f"count_bound must be >= 1, got {count_bound!r}")


def longest_waiting(elements: Iterable[WaitingElement], count: int, count_bound: int, limit: int) -> WaitingElements:
    """What a store's per-range health reads add up to: `count` (bounded), and the `limit` elements
    that waited longest, each once (a range may list an element twice), ties ordered by (address,
    url) so the answer never depends on the order elements are stored in."""
    unique = {(e.address, e.url): e for e in elements}
    oldest = sorted(unique.values(), key=lambda e: e.order)
    return WaitingElements(min(count, count_bound), count >= count_bound, tuple(oldest[:limit]))
