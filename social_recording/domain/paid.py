"""Paid once per subject: when a repeated paid request is a payment made twice (the first promise).

A request for a subject that has not been answered yet (its earlier requests failed transiently) is
a retry within the URL's call budget; one for a subject answered less than the dedupe TTL before is
a payment for an answer we already had. The rule is folded one request at a time, in arrival order
(`PaidSubject.add`), so a tally of a whole ledger and one kept up to date line by line
(docs/architecture.md, "Health") decide alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.models import ensure_utc

NOT_AN_ANSWER = frozenset({402, 429})
"""HTTP statuses (beside every 5xx) of a paid request that did not answer the question: no credit,
slow down. Asking again after one of these spends the URL's retry budget; it does not pay twice for
an answer."""


def is_answer(http_status: int) -> bool:
    """True when a provider's reply answered the question (found, missing, refused...)."""
    return http_status < 500 and http_status not in NOT_AN_ANSWER


class PaidRequestLine(Protocol):
    """One request a (fake) provider received, as its ledger records it."""

    @property
    def ts(self) -> datetime: ...
    @property
    def service(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def paid(self) -> bool: ...


class RequestKind(StrEnum):
    FIRST = "first"
    RETRY = "retry"
    """After transient failures only, or after an answer older than the TTL: the budget, not waste."""
    AGAIN = "again"
    """After an answer younger than the TTL: a payment made twice."""


@dataclass
class PaidSubject:
    """What the requests so far say about one paid (service, subject)."""

    requests: int = 0
    answered_at: datetime | None = None
    paid_again: int = 0

    def add(self, ts: datetime, http_status: int, answer_ttl: timedelta = DEDUPE_TTL) -> RequestKind:
        """Count one more request (in arrival order) and say what it was."""
        ts = ensure_utc(ts)
        kind = RequestKind.FIRST
        if self.requests:
            if self.answered_at is not None and ts - self.answered_at < answer_ttl:
                kind = RequestKind.AGAIN
                self.paid_again += 1
            else:
                kind = RequestKind.RETRY
        self.requests += 1
        if is_answer(http_status):
            self.answered_at = ts
        return kind


def counts_as_paid(line: PaidRequestLine, second_steps: tuple[str, ...]) -> bool:
    """Paid, and not the second step of a two-step call (a poll of a scan already paid for)."""
    return line.paid and not line.subject.startswith(second_steps)


@dataclass(frozen=True)
class PaidLedgerFigures:
    """Paid requests against the distinct (service, subject) pairs they were for."""

    paid_requests: int
    distinct_subjects: int
    retries_after_failure: int = 0
    repeated: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(service, subject) -> requests in all, for subjects paid for again after an answer."""

    @property
    def after_answer(self) -> int:
        """Requests that paid again for an answer already received."""
        return self.paid_requests - self.retries_after_failure - self.distinct_subjects


def paid_ledger_figures(
    lines: Iterable[PaidRequestLine], *, second_steps: tuple[str, ...] = (), answer_ttl: timedelta = DEDUPE_TTL
) -> PaidLedgerFigures:
    """Fold a whole ledger (in arrival order). `second_steps` are subject prefixes of the second step
    of a two-step paid call: never a repeat. An answer older than `answer_ttl` is due for a fresh
    call (the dedupe gate's rule), so asking again then is no waste."""
    subjects: dict[tuple[str, str], PaidSubject] = {}
    requests = retries = 0
    for line in lines:
        if not counts_as_paid(line, second_steps):
            continue
        subject = subjects.setdefault((line.service, line.subject), PaidSubject())
        requests += 1
        retries += subject.add(line.ts, line.status, answer_ttl) is RequestKind.RETRY
    repeated = {key: s.requests for key, s in sorted(subjects.items()) if s.paid_again}
    return PaidLedgerFigures(requests, len(subjects), retries, repeated)
