"""The Store protocol: everything the use cases need from persistence, in one small surface.

Two backends implement it (sqlite/, mongo/) and pass one contract suite. Writes that happen under
a URL or token lock carry that lock's fencing token, and the store applies them only if no larger
token was applied to the same element before (a conditional update, never read-then-write): a holder
that was paused past its lease, or cut off from the lock server, cannot overwrite what a newer holder
recorded (docs/architecture.md, "Locks and fencing"). Independently of fencing, an `ok` element is
never replaced.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import (
    OpenCall,
    PaidRequest,
    SocialUrl,
    TokenDoc,
    TokenLink,
    TokenProfile,
    UnresolvedValue,
    UrlState,
    ensure_utc,
)
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.spend import SpendLine, SpendRow
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.url_machine import NextState
from social_recording.store.counts import CountDrift, StoreCounts


class StoreConfigError(ValueError):
    """A bad SOCIAL_RECORDING_STORE_URL (the message names the variable, never a password)."""


class StoreUnavailableError(RuntimeError):
    """The store's server cannot be reached (or refuses the credentials) when the store is opened;
    the message names the URL with its password masked."""


class SchemaVersionError(RuntimeError):
    """The database was written by a newer version of this code (it would misread it)."""


class WriteResult(StrEnum):
    """What a fenced write did."""

    APPLIED = "applied"
    FENCED = "fenced"
    """Refused: a write with a larger fencing token was already applied (a newer holder wrote)."""
    OK_KEPT = "ok_kept"
    """Refused: the element is `ok`, which is never replaced."""
    STALE = "stale"
    """Refused: the URL state is no longer the version the decision read (a holder whose lease had
    run out wrote in between): read it again and decide anew (docs/architecture.md, "The per-URL
    state machine")."""
    NO_ELEMENT = "no_element"
    """Refused: no such token / element."""

    @property
    def applied(self) -> bool:
        return self is WriteResult.APPLIED


@dataclass(frozen=True)
class ElementWrite:
    """The element's new values (absolute, decided by the single lock holder, not increments)."""

    status: FetchStatus
    attempts: int
    attempted_at: datetime | None
    checked_at: datetime
    cause: Cause | None = None
    detail: str | None = None
    due_at: datetime | None = None
    """When the element is next due (the back-off policy's answer, which every recording gives)."""

    @property
    def next_due(self) -> datetime:
        """`due_at`, or for a write that does not say (seeding, tools) one base interval after it."""
        return self.checked_at + DEFAULT_MIN_INTERVAL if self.due_at is None else self.due_at


@dataclass(frozen=True)
class UrlWrite:
    """Everything one recording of one (token, URL) writes, applied as one fenced unit.

    `graph_links` (the generator path: objects are upserted by platform_key, first metrics kept, then
    the token's links for this URL replaced) and `copy_links_from` (the reuse path: ONE source token's
    links for this URL copied) are exclusive; with neither, links are left as they are.
    """

    address: str
    url: str
    platform: str
    fence: int
    now: datetime
    element: ElementWrite
    state: NextState | None = None
    graph_links: Sequence[PlannedLink] | None = None
    copy_links_from: str | None = None
    spend: SpendLine | None = None
    """The call's new paid requests: added to the spend ledger (and to the URL state's own count of
    them) by this very write, so the ledger reconciles against the URL states (docs/architecture.md,
    "Spend budgets"). Only with `state`."""
    expect_version: int | None = None
    """The URL state's version the decision was made on (0: there was no state): the write is refused
    as STALE when the state moved on since. None applies it whatever the version (seeding, tools);
    the recorder always passes the version it read."""

    def __post_init__(self) -> None:
        if self.expect_version is not None and self.expect_version < 0:
            raise ValueError(f"expect_version must be >= 0, got {self.expect_version!r}")
        if self.graph_links is not None and self.copy_links_from is not None:
            raise ValueError("a UrlWrite takes graph_links or copy_links_from, not both")
        if self.fence < 1:
            raise ValueError(f"a UrlWrite needs the URL lock's fencing token (>= 1), got {self.fence!r}")
        if self.spend is not None and self.state is None:
            raise ValueError("a UrlWrite's spend line goes with the URL state it is counted on")


@dataclass(frozen=True)
class WriteOutcome:
    result: WriteResult
    links: tuple[TokenLink, ...] = ()
    """The links written (empty when refused or when links were left as they were)."""
    applied_fence: int = 0
    """On FENCED: the larger token found (for the log line)."""


@dataclass(frozen=True)
class SpendTotals:
    """Paid requests as the spend ledger counts them (by billing account) and as the URL states
    written in the same writes count them (by platform)."""

    ledger: Mapping[str, int] = field(default_factory=dict)
    url_states: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class CandidateQuery:
    """The retry selection, pushed into the database: elements with one of `statuses` due by
    `due_by` (their stored `due_at`; never-recorded ones always pass), longest due first, at most
    `limit`. `unsupported_platforms`, when given, narrows `unsupported` elements to those platforms
    and to the cause "no generator" (what a new generator or key can change)."""

    statuses: frozenset[FetchStatus]
    due_by: datetime
    limit: int
    addresses: tuple[str, ...] | None = None
    unsupported_platforms: frozenset[str] | None = None

    @property
    def created_by(self) -> datetime:
        """Never-recorded elements count as due one base interval after their creation (health's
        waiting listing: the selection takes them at once)."""
        return self.due_by - DEFAULT_MIN_INTERVAL

    def __post_init__(self) -> None:
        if not isinstance(self.limit, int) or isinstance(self.limit, bool) or self.limit < 1:
            raise ValueError(f"limit must be an integer >= 1, got {self.limit!r}")
        if FetchStatus.OK in self.statuses:
            raise ValueError("ok elements are never retry candidates")


@dataclass(frozen=True)
class Candidate:
    """One element the retry selection returned."""

    address: str
    url: str
    status: FetchStatus
    attempts: int
    checked_at: datetime | None
    platform: str | None = None
    detail: str | None = None
    due_at: datetime | None = None
    """When it was due (None: never recorded): the selection's order, longest due first."""

    def due_time(self, now: datetime) -> datetime:
        """When the retry job's default selection takes it, as an operator reads it: its due time, or
        `now` when that has passed or it was never recorded."""
        now = ensure_utc(now)
        return now if self.due_at is None else max(now, ensure_utc(self.due_at))


@dataclass(frozen=True)
class StatusCounts:
    """URL elements by (platform, status), and tokens in all."""

    by_platform: Mapping[tuple[str, FetchStatus], int] = field(default_factory=dict)
    tokens: int = 0

    def by_status(self) -> dict[FetchStatus, int]:
        out = {s: 0 for s in FetchStatus}
        for (_platform, status), n in self.by_platform.items():
            out[status] += n
        return out

    @property
    def urls(self) -> int:
        return sum(self.by_platform.values())


@dataclass(frozen=True)
class WaitingElement:
    """One element and how long it has waited: since its last recording, or since its creation when
    it was never recorded (health checks and the status command)."""

    address: str
    url: str
    status: FetchStatus
    attempts: int
    since: datetime
    recorded: bool
    """False: never recorded, `since` is when the element was created."""
    platform: str | None = None
    cause: Cause | None = None
    detail: str | None = None
    due: datetime | None = None
    """Its stored due time (None: never recorded)."""

    @property
    def order(self) -> tuple[datetime, str, str]:
        """Longest due first: a never-recorded element counts as due one base interval after its
        creation (`CandidateQuery.created_by`, the same rule on the query's side)."""
        return (self.since + DEFAULT_MIN_INTERVAL if self.due is None else self.due, self.address, self.url)


@dataclass(frozen=True)
class WaitingElements:
    """How many elements waited past a cutoff (counting stops at a bound), and the longest-waiting."""

    count: int
    capped: bool
    """True when counting stopped at its bound: there are at least `count`."""
    oldest: tuple[WaitingElement, ...] = ()


WAITING_COUNT_BOUND = 10_000
"""Counting past this many elements tells an operator nothing more, and keeps the count's cost
bounded however large a backlog grows."""


class TokenStore(Protocol):
    """Tokens and their raw values: the entry of a token and what its profile could not resolve yet."""

    def find_token(self, address: str) -> TokenDoc | None:
        """The whole token document (elements in their original order), or None."""
        ...

    def find_existing_addresses(self, addresses: Sequence[str]) -> set[str]:
        """Which of `addresses` already have a document: one indexed `$in` query."""
        ...

    def create_pending_token(self, profile: TokenProfile, now: datetime | None = None) -> bool:
        """Insert a token whose every URL is `pending` (and its unresolved raw values). Insert-only:
        returns False, and changes nothing, when the address exists."""
        ...

    def add_resolved_url(self, address: str, field: str, url: str, fence: int, now: datetime) -> WriteResult:
        """A raw value that failed to resolve earlier now resolved to canonical `url`: the URL joins the
        token as a `pending` element (unless the token already holds it) and the raw value is removed,
        in one fenced step (the token lock's fence)."""
        ...

    def update_unresolved(
        self, address: str, value: UnresolvedValue, fence: int, *, drop: bool = False
    ) -> WriteResult:
        """Store a raw value's new attempt count / reason, or drop it for good (`drop=True`)."""
        ...


class UrlWriteStore(Protocol):
    """An element and its URL's cross-token state, and the one fenced write of a recording."""

    def find_element(self, address: str, url: str) -> SocialUrl | None:
        """One element by its key (the recorder's re-read inside the URL lock)."""
        ...

    def find_url_state(self, url: str) -> UrlState | None:
        """The URL's cross-token state: one indexed lookup, whatever the number of holders."""
        ...

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        """Apply one recording of one (token, URL), fenced: refused (changing nothing) when a larger
        fencing token was applied to the element or the URL state, when the element is `ok`, or when
        the URL state is not at `write.expect_version` any more (STALE)."""
        ...


class PaidRequestStore(Protocol):
    """The paid calls on record: a two-step request to resume, a call about to leave."""

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest,
                          kept: OpenCall | None = None, spend: SpendLine | None = None) -> WriteResult:
        """Record a submitted two-step paid request on the URL state (created `pending` if absent),
        fenced like `apply_url_write`, whatever its version (the request is paid for: it must not be
        lost); the version moves on, so the recording that follows reads the state again. The open
        call becomes `kept`: the submission replaces its holder's own record, and keeps the uncounted
        timed-out call that record was written over (`OpenCall.replaced`). `spend`, the submission's
        new paid requests, goes to the ledger with it: the record it replaces no longer could."""
        ...

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> WriteResult:
        """Record a paid call about to leave on the URL state (created `pending` if absent), fenced
        like `apply_url_write`, whatever its version; the version moves on. Durable before it returns:
        the request is sent only after it."""
        ...


class SelectionStore(Protocol):
    """What the retry job takes next, and what waits for the back-off."""

    def select_candidates(self, query: CandidateQuery) -> list[Candidate]:
        """The retry selection (see CandidateQuery): one indexed, limited query per status."""
        ...

    def count_held_back(self, query: CandidateQuery, bound: int) -> int:
        """Elements the selection `query` describes (its statuses, addresses and narrowing of
        `unsupported`) that are not due yet: due after `query.due_by`. Counted up to
        `bound` (what the retry job reports as skipped by the back-off)."""
        ...

    def select_unresolved(self, checked_before: datetime, limit: int) -> list[tuple[str, UnresolvedValue]]:
        """(address, value) pairs due for another resolution, oldest first."""
        ...


class HealthStore(Protocol):
    """The figures health, the run reports and the status command read (from counters, never a scan)."""

    def status_counts(self) -> StatusCounts:
        """URL elements by platform and status, and the number of tokens (health and the UI), from the
        counters (`counts`)."""
        ...

    def counts(self) -> StoreCounts:
        """Every health figure from the store's counters, kept by the writes themselves: a read whose
        cost does not grow with the store (docs/architecture.md, "Health figures")."""
        ...

    def reconcile_counts(self) -> CountDrift:
        """Recount everything the counters count and repair every counter that differs (the hourly
        health job): what differed, as (kept, recounted)."""
        ...

    def oldest_elements(
        self, statuses: Collection[FetchStatus], limit: int, due_by: datetime | None = None
    ) -> list[Candidate]:
        """The longest-waiting elements with one of `statuses` (never-recorded first), for health
        checks and the status command."""
        ...

    def waiting_elements(
        self, query: CandidateQuery, *, canonical_only: bool = True, count_bound: int = WAITING_COUNT_BOUND
    ) -> WaitingElements:
        """Elements the selection `query` describes (its statuses, and its narrowing of `unsupported`
        to platforms whose lack of a generator was the cause) due by `query.due_by`: by their stored
        due time, or by `query.created_by` when they were never recorded (where `select_candidates`
        takes a never-recorded element at once). Counted up
        to `count_bound`, with the `query.limit` longest-waiting. `canonical_only` leaves out elements
        holding a non-canonical URL, as the retry selection does. `query.addresses` must be None: this
        looks at every token."""
        ...

    def find_holders(self, url: str, limit: int) -> list[tuple[str, SocialUrl]]:
        """Up to `limit` tokens holding `url`, by address, with their element (the status command)."""
        ...


class SpendStore(Protocol):
    """The spend ledger, read by the spend budgets' report and the hourly reconciliation."""

    def spend_rows(self, since_day: str) -> list[SpendRow]:
        """The spend ledger's counters of every account from UTC day `since_day` ("2026-12-01") on,
        by account then day."""
        ...

    def spend_totals(self) -> SpendTotals:
        """The ledger's paid requests by account and the URL states' by platform, over all time: the
        two sides the hourly reconciliation compares (read only)."""
        ...


class GraphStore(Protocol):
    """The social graph a recording writes: objects, first metrics, links back to the token."""

    def upsert_object(self, kind: ObjectKind, obj: SocialObject, now: datetime | None = None) -> str:
        """Atomic insert-if-absent by `platform_key` (unique per collection); returns the row id.
        An existing row is never overwritten."""
        ...

    def get_object(self, kind: ObjectKind, object_id: str) -> dict[str, Any] | None:
        """One stored object as a plain dict (id under "id"), or None."""
        ...

    def count_objects(self, kind: ObjectKind) -> int:
        """Objects of `kind` stored (from the counters)."""
        ...

    def record_first_metrics(
        self, kind: ObjectKind, object_id: str, metrics: Mapping[str, float], observed_at: datetime
    ) -> None:
        """First point only per (object, metric): `$setOnInsert` semantics."""
        ...

    def find_metrics(self, kind: ObjectKind, object_id: str) -> dict[str, float]: ...

    def count_metrics(self) -> int:
        """First metric points stored, over every object (from the counters)."""
        ...

    def find_links(self, token_address: str, entry_url: str) -> list[TokenLink]:
        """This token's links for one entry URL, ordered by (link_depth, object, object_id)."""
        ...

    def count_links(self) -> int:
        """Token links stored (from the counters)."""
        ...


@runtime_checkable
class Store(TokenStore, UrlWriteStore, PaidRequestStore, SelectionStore, HealthStore, SpendStore, GraphStore,
            Protocol):
    """A whole store: every capability, and `close`. Backends implement this; a use case asks for the
    capabilities it uses (docs/architecture.md, "Layers")."""

    def close(self) -> None: ...
