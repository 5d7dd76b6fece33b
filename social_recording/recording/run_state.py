"""Per-run state shared by every URL of one run (thread-safe): what the run was asked to do, spending
switches, the per-provider call bounds, and streamed counters (nothing grows with the run)."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.url_machine import RunIntent, Why
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.outcomes import UrlOutcome, Written

log = logging.getLogger("social_recording.recording")


@dataclass(frozen=True)
class RunSummary:
    """The counters of one run, as a plain value: what a report (run metadata, asset observations)
    reads once the run's URLs are done. Every URL the run touched is counted, whatever path led
    to it."""

    urls: int = 0
    """URL outcomes counted (every recording, and every URL left alone with a reason)."""
    by_status: dict[str, int] = field(default_factory=dict)
    """Outcome status -> URLs: a stored FetchStatus, or an engine outcome such as `locked`."""
    converged: int = 0
    """URLs that reached an absorbing status they did not have before."""
    attempted: int = 0
    """URLs for which a request really left (calls made)."""
    reused: int = 0
    """URLs answered by the dedupe gate, without a call."""
    paid_requests: int = 0
    """Requests sent to paid providers (each one billed)."""
    lost: int = 0
    """URLs whose lock was reported lost."""
    budget_held: int = 0
    """URLs whose paid request the spend budget held back (`skipped_paid`, docs/architecture.md,
    "Spend budgets")."""
    engine_failures: int = 0
    """URLs that ended in a defect of ours (nothing written)."""
    written: dict[Written, int] = field(default_factory=dict)
    """The store's collections the run wrote to, with how many URL recordings wrote to each."""


class RunListener(Protocol):
    """Told about a run as it goes (a Dagster stage's run log, for instance): called from the
    workers' threads, once per URL outcome, after the run's counters have it."""

    def noted(self, outcome: UrlOutcome) -> None: ...

    def interrupted(self, message: str) -> None:
        """The run was interrupted (terminated, Ctrl-C); `message` says what it leaves."""


class RunState:
    """Shared by the workers of one run.

    Exhaustion is per provider account and run-scoped on purpose: once an account says its credit
    or quota is gone, the rest of this run's calls to that account are skipped without a call, and
    the other accounts' calls go on (their credit is their own); a process-wide switch would have no
    way back (docs/architecture.md, "Recording one URL"). `min_interval` is the back-off this run applies when another holder of a URL called it
    recently (the live path uses the default; a retry run its own `min_interval_minutes`).
    `calls` bounds the run's concurrent provider calls per provider (recording/concurrency.py).
    `request` is what the run was asked to do (the state machine's event): set by the use case that
    starts the run; a run recorded without one is a live run that started at its first URL.
    `listener`, when given, hears of every URL outcome and of an interruption.
    """

    def __init__(
        self,
        min_interval: timedelta = DEFAULT_MIN_INTERVAL,
        *,
        calls: CallSlots | None = None,
        request: RunIntent | None = None,
        listener: RunListener | None = None,
    ) -> None:
        if min_interval < timedelta(0):
            raise ValueError(f"min_interval must be >= 0, got {min_interval!r}")
        self.min_interval = min_interval
        self.calls = calls if calls is not None else CallSlots()
        self._listener = listener
        self._lock = threading.Lock()
        self._request = request
        self._exhausted_accounts: set[str] = set()
        self._read_nothing: set[str] = set()
        self._statuses: Counter[str] = Counter()
        self._attempted = 0
        self._reused = 0
        self._paid_requests = 0
        self._budget_held = 0
        self._lost = 0
        self._engine_failures = 0
        self._converged = 0
        self._urls = 0
        self._written: Counter[Written] = Counter()

    def limit_calls(self, provider_concurrency: Mapping[str, int] | None) -> None:
        """Use these per-provider bounds (a job's config; unnamed providers keep their default).
        Only before the run records anything: slots already handed out belong to the old bounds."""
        if self.urls:
            raise RuntimeError("limit_calls must be called before the run records any URL")
        self.calls = CallSlots(provider_concurrency, per_token=self.calls.per_token)

    def ask(self, request: RunIntent) -> None:
        """Say what the run was asked to do, before it records anything."""
        with self._lock:
            if self._urls:
                raise RuntimeError("a run's request is set before the run records any URL")
            self._request = request

    def request_or_live(self, now: datetime) -> RunIntent:
        """The run's request; a run started without one is a live run that started now."""
        with self._lock:
            if self._request is None:
                self._request = RunIntent(Why.LIVE, since=now)
            return self._request

    def mark_exhausted(self, account: str) -> None:
        """A provider account said its credit / quota is gone: this run makes no further call to it
        (a paid account's URLs end `skipped_paid`, a free one's `error`); other accounts go on."""
        with self._lock:
            self._exhausted_accounts.add(account)

    def exhausted(self, account: str) -> bool:
        """Whether `account` said its credit or quota is gone earlier in this run."""
        with self._lock:
            return account in self._exhausted_accounts

    def note_read_nothing(self, url: str) -> None:
        """This run's call of `url` read nothing: its other holders in this run adopt that instead of
        calling again (docs/architecture.md, "The per-URL state machine")."""
        with self._lock:
            self._read_nothing.add(url)

    def read_nothing(self, url: str) -> bool:
        with self._lock:
            return url in self._read_nothing

    def note_paid_requests(self, n: int) -> None:
        with self._lock:
            self._paid_requests += n

    def note_budget_held(self) -> None:
        """One more URL whose paid request the spend budget held back."""
        with self._lock:
            self._budget_held += 1

    @property
    def budget_held(self) -> int:
        with self._lock:
            return self._budget_held

    def interrupted(self, message: str) -> None:
        """The run was interrupted (terminated, Ctrl-C): say what it leaves, to the listener, or
        else through the engine's logger."""
        if self._listener is not None:
            self._listener.interrupted(message)
        else:
            log.warning(message)

    def note(self, outcome: UrlOutcome) -> None:
        with self._lock:
            self._urls += 1
            self._statuses[str(outcome.status)] += 1
            self._attempted += int(outcome.attempted)
            self._reused += int(outcome.reused)
            self._lost += int(outcome.lease_lost or str(outcome.status) == "lost")
            self._engine_failures += int(outcome.engine_failure)
            self._converged += int(outcome.converged)
            self._written.update(outcome.written)
        if self._listener is not None:
            self._listener.noted(outcome)

    def status_counts(self) -> dict[str, int]:
        with self._lock:
            return dict(self._statuses)

    @property
    def urls(self) -> int:
        with self._lock:
            return self._urls

    @property
    def attempted(self) -> int:
        with self._lock:
            return self._attempted

    @property
    def reused(self) -> int:
        with self._lock:
            return self._reused

    @property
    def paid_requests(self) -> int:
        with self._lock:
            return self._paid_requests

    @property
    def lost(self) -> int:
        with self._lock:
            return self._lost

    @property
    def engine_failures(self) -> int:
        with self._lock:
            return self._engine_failures

    @property
    def converged(self) -> int:
        with self._lock:
            return self._converged

    def summary(self) -> RunSummary:
        """The counters as they stand, in one consistent snapshot."""
        with self._lock:
            return RunSummary(
                urls=self._urls,
                by_status=dict(sorted(self._statuses.items())),
                converged=self._converged,
                attempted=self._attempted,
                reused=self._reused,
                paid_requests=self._paid_requests,
                lost=self._lost,
                budget_held=self._budget_held,
                engine_failures=self._engine_failures,
                written=dict(self._written),
            )
