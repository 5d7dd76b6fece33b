"""The retry selection: which elements the retry job processes next, and the sensor's view of it.

One function builds the query for both, so the job and the sensor can never disagree about what is
due. The rules (docs/architecture.md, "Retry selection"):

- oldest first, by the element's last recording (never-recorded elements first), and only past the
  back-off measured from that recording: a backlog of k x limit elements drains in k runs, each
  element once, and a URL that cannot change keeps no other from being reached;
- with the default statuses, an element whose outcome cannot change under the current configuration
  is not a candidate: `skipped_paid` only when paid calls are on, `unsupported` only for platforms
  that have a usable generator now and only when the lack of one was the cause (a URL shape no
  generator can read waits for a code change). Naming statuses explicitly selects them regardless;
- `ok` can never be selected.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.policy import due_by
from social_recording.domain.status import FetchStatus, parse_status
from social_recording.domain.urls import Platform
from social_recording.store.base import Candidate, CandidateQuery, SelectionStore

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
"""The most URLs one retry run may take: a run's spend and duration stay bounded (each URL may be one
paid call), and the hourly schedule takes what is left. The original system's bound, kept."""


def parse_retry_statuses(statuses: Collection[FetchStatus | str]) -> frozenset[FetchStatus]:
    """Validate a retry's `statuses` (names or FetchStatus). `ok` is rejected: re-opening a success
    breaks convergence and pays again for an answer we have; unknown names are rejected too."""
    if isinstance(statuses, str) or not isinstance(statuses, Collection):
        raise ValueError(f"statuses must be a list of status names, got {statuses!r}")
    parsed = set()
    for s in statuses:
        if not isinstance(s, str):
            raise ValueError(f"statuses must be status names, got {s!r}")
        parsed.add(parse_status(s))
    if not parsed:
        raise ValueError("statuses must name at least one status; leave it out for the default selection")
    if FetchStatus.OK in parsed:
        raise ValueError(
            "statuses must not contain 'ok': ok is absorbing and never re-opened (a retry would pay again for "
            f"an answer already recorded); got {sorted(str(s) for s in parsed)}"
        )
    return frozenset(parsed)


def default_statuses(*, enable_paid: bool, usable_platforms: Collection[Platform]) -> frozenset[FetchStatus]:
    """What the default selection may reopen under this configuration."""
    wanted = {FetchStatus.ERROR, FetchStatus.PENDING}
    if enable_paid:
        wanted.add(FetchStatus.SKIPPED_PAID)
    if usable_platforms:
        wanted.add(FetchStatus.UNSUPPORTED)
    return frozenset(wanted)


_SHOWN_ORDER = (FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.SKIPPED_PAID, FetchStatus.UNSUPPORTED)


def describe_default(*, enable_paid: bool, usable_platforms: Collection[Platform]) -> str:
    """What the default selection takes under this configuration, in words, from `default_statuses`
    and the narrowing `retry_query` applies (for logs, the sensor and the status command)."""
    wanted = default_statuses(enable_paid=enable_paid, usable_platforms=usable_platforms)
    parts = []
    for status in _SHOWN_ORDER:
        if status not in wanted:
            continue
        if status is FetchStatus.UNSUPPORTED:
            names = ", ".join(sorted(p.value for p in usable_platforms))
            parts.append(f"unsupported for want of a generator that now exists ({names})")
        else:
            parts.append(status.value)
    left = []
    if FetchStatus.SKIPPED_PAID not in wanted:
        left.append("skipped_paid: paid calls are off")
    if FetchStatus.UNSUPPORTED not in wanted:
        left.append("unsupported: no platform has a usable generator")
    return ", ".join(parts) + "".join(f"; not {why}" for why in left)


def describe_named(statuses: Collection[FetchStatus]) -> str:
    """Statuses a run named, taken as named."""
    return ", ".join(sorted(s.value for s in statuses)) + " (as named)"


def by_status(candidates: Collection[Candidate]) -> dict[str, int]:
    """How many of the selected elements hold each status (what a run really takes)."""
    counts: dict[str, int] = {}
    for c in candidates:
        counts[c.status.value] = counts.get(c.status.value, 0) + 1
    return dict(sorted(counts.items()))


def retry_query(
    *,
    now: datetime,
    min_interval: timedelta,
    limit: int = DEFAULT_LIMIT,
    statuses: Collection[FetchStatus | str] | None = None,
    addresses: Sequence[str] | None = None,
    enable_paid: bool,
    usable_platforms: Collection[Platform],
) -> CandidateQuery:
    """The CandidateQuery of a retry run (or of the sensor looking ahead at one).

    `statuses=None` is the default selection (only what can change now); explicit statuses are
    taken as named (ok refused)."""
    if min_interval < timedelta(0):
        raise ValueError(f"min_interval must be >= 0, got {min_interval!r}")
    if statuses is None:
        wanted = default_statuses(enable_paid=enable_paid, usable_platforms=usable_platforms)
        unsupported: frozenset[str] | None = frozenset(p.value for p in usable_platforms)
    else:
        wanted = parse_retry_statuses(statuses)
        unsupported = None
    among = None if not addresses else tuple(dict.fromkeys(addresses))
    return CandidateQuery(wanted, due_by(now, min_interval), limit, among, unsupported)


@dataclass(frozen=True)
class CandidateSet:
    """What one selection returned, with a fingerprint that changes whenever the set changes (a
    processed element is recorded again, so its `checked_at` moves)."""

    query: CandidateQuery
    candidates: tuple[Candidate, ...]

    @property
    def digest(self) -> str:
        payload = [(c.address, c.url, c.status.value, c.checked_at.isoformat() if c.checked_at else None)
                   for c in self.candidates]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.candidates)


def select(store: SelectionStore, query: CandidateQuery) -> CandidateSet:
    return CandidateSet(query, tuple(store.select_candidates(query)))
