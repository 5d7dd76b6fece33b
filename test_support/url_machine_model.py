"""The model of the per-URL rules: Hypothesis drives the real engine (a real SQLite store, the
real SQLite lock manager, the real recorder, the retry selection and the live and reconcile paths)
through interleavings and months of clock, with providers whose answers the test chooses, and checks
the three promises as invariants after every step (docs/architecture.md, "The per-URL state machine").
Beside the promises it checks each rule: every decision and every next state the engine computes
against the state machine's tables (test_support/url_machine_table.py, one line per row), and what
the store holds after every write against that write and the back-off table; the rules the engine
judged by against the model's own numbers (its budget, back-off, window, open-call timeout), with which
the tables are read. Its clock lands exactly on the URL's boundaries (the reuse window, the streak's
expiry, the open call's timeout, the due times) and one tick past them, in a run that may have started
before, and stands still while two holders act in one instant; holders die after the spend admission,
the open call, the paid submission or the answer, or lose their URL lock right before a request; our
rate limiter may be down before a call's first request or after one; paid accounts have day budgets
(and month budgets, on the machine whose live path runs every 30 minutes), and the two-step one polls
on its paid client. Every fenced write is checked against the store's refusal table ("Fencing"), and
stale ones are attempted (a lower fence, an old version, onto `ok`, a late holder inside a Mongo write
or at its claim of the element), and every applied write leaves the URL state's fence at least its own;
a retry's selection against its interval's due-by. A paid call's result write the store refuses for good
drives the answer spool (test_support/url_machine_spool.py: spooled or lost, a replay refused again, then
written first by the next recording, for the token that paid, as the call it was). The retry use case
(test_support/url_machine_retry.py): raw values kept on tokens, tried by each retry when due, oldest
first within its limit, counted, dropped or resolved into a URL that run records; every decision made
for its run's request (a retry's as of its selection, its named statuses), each selected element
judged as selected, a retry building its own run with its interval. The same machine
runs on the Mongo store's code over mongomock, and over the wire (fewer examples: every step is round
trips).

Size: `SOCIAL_RECORDING_MODEL_EXAMPLES` x `SOCIAL_RECORDING_MODEL_STEPS` (CI: 200 x 40, derandomized;
`python bench/model_test.py` runs it longer), `SOCIAL_RECORDING_MODEL_MONGOMOCK_EXAMPLES` (CI: 40) and
`SOCIAL_RECORDING_MODEL_MONGO_EXAMPLES` over the wire (CI: 8). Every counterexample it found is a named
test in test_url_machine_regressions.py; every mutant of test_support/mutants.py must fail it alone.

The tests that run it are social_recording_tests/recording/test_url_machine_model.py; it lives here
because `bench/model_test.py` runs it too (longer, on new examples).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

from bson import ObjectId
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from pymongo.errors import AutoReconnect, DuplicateKeyError

from social_recording.domain.graph import SocialContractError
from social_recording.domain.models import OpenCall, PaidRequest, TokenLink, as_stored
from social_recording.domain.policy import Backoff
from social_recording.domain.spend import DAY, MONTH, SpendLine, day_key
from social_recording.domain.status import ABSORBING, REUSABLE, Cause, FetchStatus
from social_recording.domain.url_machine import (
    Act,
    NextState,
    Result,
    Rules,
    RunIntent,
    Why,
    fresh_answer,
    live_streak,
)
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks.base import Lease
from social_recording.locks.spend_budget import SpendBudgets, SqliteSpendCounters
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.outbound import observe
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    GeneratorRegistry,
)
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording import attempt as attempt_module
from social_recording.recording.call_guard import UNIT_PRICES
from social_recording.recording.candidates import retry_query
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.engine import Engine, build_engine
from social_recording.recording.outcomes import EngineOutcome, TokenStatus, UrlOutcome
from social_recording.recording.retry import REMAINING_PROBE
from social_recording.recording.run_state import RunState
from social_recording.recording.spend_check import SpendHeld
from social_recording.store.base import ElementWrite, Store, UrlWrite, WriteOutcome, WriteResult
from social_recording.store.mongo import MongoStore
from social_recording.store.mongo.schema import TOKEN_LINKS, TOKEN_URLS, URL_STATES
from social_recording.store.sqlite import SqliteStore
from test_support import url_machine_table as table
from test_support.engine_fakes import (
    T0,
    FakeProfiles,
    FakeTracker,
    RangeItem,
    StepClock,
)
from test_support.mongo_server import MongoServer
from test_support.url_machine_entry16 import Entry16Rules
from test_support.url_machine_expiry import ExpiryRules
from test_support.url_machine_feed import FeedRules
from test_support.url_machine_graph import BROKEN, GraphRules, graph_answer
from test_support.url_machine_health import HealthRules
from test_support.url_machine_http import HttpRules
from test_support.url_machine_lease import LeaseRules
from test_support.url_machine_locks import LockRules, model_timings
from test_support.url_machine_locks15 import Locks15Rules
from test_support.url_machine_locks16 import Locks16Rules
from test_support.url_machine_mongo15 import Mongo15Rules
from test_support.url_machine_outages import OutageRules
from test_support.url_machine_outbound import OutboundRules
from test_support.url_machine_outbound15 import Outbound15Rules
from test_support.url_machine_outbound16 import Outbound16Rules
from test_support.url_machine_rates import RateRules
from test_support.url_machine_retry import RetryRules, counted_converged_unchanged
from test_support.url_machine_runs15 import Runs15Rules
from test_support.url_machine_runs16 import Runs16Rules
from test_support.url_machine_settings import SettingsRules
from test_support.url_machine_spend import SpendRules
from test_support.url_machine_spool import ModelSpool, SpoolRules, StoreAway, StoreGone
from test_support.url_machine_stored import StoredRules
from test_support.url_machine_stores import StoreRules
from test_support.url_machine_stores16 import Stores16Rules
from test_support.url_machine_tokens import TokenRules
from test_support.wrapped_locks import WrappedLocks

ACCOUNTS = {p: CATALOGUE[p].account.name for p in (Platform.X, Platform.WEB)}
"""The paid accounts the model's providers are billed under, as the catalogue names them (the spend
ledger's keys). The two-step one polls on its paid client (spend_check.POLLS_ON_PAID_CLIENT): its polls
are paid requests, but not new spending."""
SPEND_PER_DAY = {ACCOUNTS[Platform.X]: 2, ACCOUNTS[Platform.WEB]: 1}
"""The paid accounts' budgets of new paid requests per UTC day: small, so a busy day meets them."""
SPEND_PER_MONTH = {ACCOUNTS[Platform.X]: 5, ACCOUNTS[Platform.WEB]: 3}
"""Their budgets per UTC month, on the machine that sets them: small, so a month of busy days meets them."""
DEDUPE_TTL = timedelta(days=14)
"""The reuse window as docs/architecture.md gives it ("the same answer"): the model's own, not the engine's."""
RETENTION = timedelta(days=7)
"""The two-step paid provider keeps a submitted request this long (like urlscan)."""
OPEN_CALL_TIMEOUT = timedelta(minutes=5)
"""How long an open paid call stays before another holder counts it as failed, as docs/architecture.md
gives it ("Timeouts"): the model's own, not the engine's constant."""
NEVER_REUSED = frozenset({Platform.TELEGRAM})
"""The model's platforms whose answers are never handed to another holder (a key that can change hands)."""


@dataclass(frozen=True)
class Limits:
    """The attempt budget and the growing back-off the engines are built with, small so streaks are
    spent within a few steps."""

    max_attempts: int
    growth: float
    cap_minutes: int

    @property
    def texts(self) -> dict[str, str]:
        """The settings an operator writes for them (test_support/url_machine_settings.py)."""
        return {"max_attempts": str(self.max_attempts), "backoff_growth": str(self.growth),
                "backoff_max_minutes": str(self.cap_minutes)}

    @property
    def expected(self) -> Backoff:
        """The same back-off as the model expects it, from its own numbers: every call and due time is
        checked against it (test_support/url_machine_table.py reads the rules it is given)."""
        return Backoff(base=BACKOFF_BASE, growth=self.growth, cap=timedelta(minutes=self.cap_minutes))


class DefaultCap(Limits):
    """The engines' back-off meets the settings' default maximum (none written); the model expects the
    documented 24 h, written here."""

    @property
    def texts(self) -> dict[str, str]:
        return {"max_attempts": str(self.max_attempts), "backoff_growth": str(self.growth)}


class ProductionDefaults(Limits):
    """The engines are built with the settings' defaults (none written); the model expects the documented
    numbers, written here: 5 calls, a flat 1 h back-off, at most 24 h."""

    @property
    def texts(self) -> dict[str, str]:
        return {}


BACKOFF_BASE = timedelta(minutes=60)
"""The back-off's base as docs/architecture.md gives it ("Back-off: one due time": base 60 min): the
model's own, not the policy's constant (a base the engine judges by otherwise fails at its first decision)."""
LIMITS = Limits(max_attempts=3, growth=2.0, cap_minutes=90)
"""Waits of 1 h, then 1.5 h instead of 2 h: the cap is met within the budget."""
FOUR_ATTEMPTS = DefaultCap(max_attempts=4, growth=10.0, cap_minutes=24 * 60)
"""The steepest growth the settings take: waits of 1 h, 10 h, then the default 24 h instead of 100 h. A
third wait shows the back-off's shape (a linear growth would wait 20 h; with a growth of 2 the two shapes
agree up to the third wait) and meets the default maximum."""
NINE_ATTEMPTS = DefaultCap(max_attempts=9, growth=10.0, cap_minutes=24 * 60)
"""The steepest growth with a budget past seven calls: the seventh failure in a row would wait a million
times the base, and waits the 24 h cap as every wait past it does."""
DEFAULTS = ProductionDefaults(max_attempts=5, growth=1.0, cap_minutes=24 * 60)
"""As a deployment that sets none of them runs."""


def model_rules(platform: Platform, limits: Limits, interval: timedelta) -> Rules:
    """The state machine's rules as the model expects them, from its own numbers alone (its budget,
    back-off, window and open-call timeout, none read off the engine), for a run with `interval`: the
    engine's are compared with them at every decision and merge, so one that judges by another number
    than the configured or documented one fails at once."""
    return Rules(limits.max_attempts, interval, reusable=platform not in NEVER_REUSED, ttl=DEDUPE_TTL,
                 call_timeout=OPEN_CALL_TIMEOUT, backoff=limits.expected)

POOL = (
    "https://x.com/i/status/101",  # paid, one step
    "https://x.com/i/status/102",
    "https://paid-site.example/a",  # paid, two steps: submit (billed), then poll
    "https://youtube.com/watch?v=abcdefghijk",  # free
    "https://t.me/modelchat",  # free, never reused
)
ANSWERS = ("ok", "not_found", "blocked", "5xx", "429", "slow", "bug", "unreadable", "nothing to fetch",
           "ok in two requests", "blocked without a request")
"""What a provider may answer; `bug` is a defect of ours that fails before any request is sent;
`ok in two requests` an answer read from two requests (two new paid requests of a one-step paid call);
`unreadable` a shape the generator cannot read, after its requests left (counted as calls);
`nothing to fetch` an answer decided without a request (the URL names nothing fetchable: `invalid`),
which no call stands behind, so it has no anchor and never expires; `blocked without a request` the
same for a shape that names a private target (an invite link): a better answer without an anchor.
`no credit` (a walk's, not drawn) a failed call after which the account takes no request this run;
`bug after a request` (a walk's, not drawn) a defect of ours once a request left: a failed call;
`bug after the saved request is read` (a walk's) a defect of ours before any request, once the two-step
call read its saved request: an engine failure."""
LIMITER_DOWN = ("before any request", "after a request")
"""When our own rate limiter cannot be asked during a call: before its first request (nothing left:
the URL is left as it was), or after one left (a failed call of the streak)."""
CLOCK_STEPS = (1, 30, 61, 61, 90, 120, 120, 24 * 60, 7 * 24 * 60, 15 * 24 * 60, 30 * 24 * 60)
"""Minutes; past the base back-off (61, 120) more often than the rest, and between it and the doubled one (90)."""
BOUNDARIES = ("the answer expires", "the streak expires", "the open call times out", "it may be called again",
              "an element is due", "the submission's retention ends")
STALE_WRITES = ("with a lower fence", "decided on an old version", "onto an ok element",
                "below the element's fence alone", "onto an ok element, on an old version",
                "onto an ok element, below the state's fence")
"""The last two fail two checks of the refusal table at once: the first that fails is the reason (as
does "onto an ok element, below its fence", a walk's, not drawn)."""
WRITE_MOMENTS = ("before the first write", "before a call's write", "inside the first write", "inside a call's write",
                 "at the claim of the first write", "at the claim of a call's write")
"""When a late holder's write lands in the current holder's: inside it only on a store whose write
reads before its conditional update (Mongo: after it claimed the element; or at the claim, between the
refusal's read and the claim, when the late holder records the same element); elsewhere right before it."""
LATE_BY = (timedelta(0), timedelta(milliseconds=2), timedelta(minutes=1))
"""How long after the current holder's moment the late holder acts: in its very millisecond (the stores
keep the millisecond, so its call and the current holder's are stored as one moment), a few
milliseconds later, or a minute later (a slow call): its later call is then stored as later."""
NAMEABLE = sorted(s.value for s in FetchStatus if s is not FetchStatus.OK)

STATS: Counter[str] = Counter()
"""What the runs did, over every example (bench/model_test.py prints it)."""

EXAMPLES = int(os.environ.get("SOCIAL_RECORDING_MODEL_EXAMPLES", "200"))
STEPS = int(os.environ.get("SOCIAL_RECORDING_MODEL_STEPS", "40"))
MONGO_EXAMPLES = int(os.environ.get("SOCIAL_RECORDING_MODEL_MONGO_EXAMPLES", "8"))
MONGOMOCK_EXAMPLES = int(os.environ.get("SOCIAL_RECORDING_MODEL_MONGOMOCK_EXAMPLES", "40"))
SHRINK = os.environ.get("SOCIAL_RECORDING_MODEL_SHRINK", "1") == "1"
"""Off when only "does it fail" matters (a mutant's run): shrinking a counterexample can take minutes."""
DEATHS = os.environ.get("SOCIAL_RECORDING_MODEL_DEATHS", "1") == "1"
"""Holders die (after the spend admission, after the open call, after the paid submission, after the
answer): on by default, in CI too; `bench/model_test.py --no-deaths` turns it off."""
DEATH_MOMENTS = ("after admission", "after the open call", "after the submission", "after the answer")


class _NoDraws:
    """`named_retry` with interleave "none" draws nothing."""

    def draw(self, strategy: Any) -> Any:
        raise AssertionError("no draw expected")


class HolderDied(BaseException):
    """The holder's process is gone (SIGKILL) at the chosen moment: nothing after it runs or is written.
    A BaseException, so no handler of the engine's takes it for a failure it could record."""


def _to_ms(fields: table.NextUrl) -> table.NextUrl:
    """The fields at the millisecond every store keeps (an answer's time is kept finer on both)."""
    return replace(fields, attempted_at=fields.attempted_at and as_stored(fields.attempted_at),
                   open_call=fields.open_call and fields.open_call.model_copy(
                       update={"started_at": as_stored(fields.open_call.started_at)}))


def _period_end(period: str, at: datetime) -> datetime:
    """When the UTC day or month (a spend budget's period) of `at` ends, the model's own reckoning."""
    day = datetime(at.year, at.month, at.day, tzinfo=UTC) + timedelta(days=1)
    return day if period == DAY else (datetime(at.year, at.month, 1, tzinfo=UTC) + timedelta(days=32)).replace(day=1)


def _platform(url: str) -> Platform:
    return parse_canonical(url).platform


def _paid(url: str) -> bool:
    return _platform(url) in (Platform.X, Platform.WEB)


@dataclass
class Op:
    """The operation the test is driving: what a provider call is allowed to be part of."""

    kind: str
    named: frozenset[FetchStatus] = frozenset()
    selected: dict[tuple[str, str], FetchStatus] = field(default_factory=dict)
    """A retry's selection: (token, URL) -> the status it was selected with."""
    called: set[str] = field(default_factory=set)
    """URLs called during this operation (a named retry re-examines a URL once)."""
    read_nothing: dict[str, int] = field(default_factory=dict)
    """URL -> how many runs this operation had started when its call read nothing: that run never buys
    it again; a run started after (a live tick starts one per token) may."""
    credit_gone: set[str] = field(default_factory=set)
    """Services (paid accounts, free platforms) that said their credit is gone in this operation (one
    run): the run sends them no further request (docs/architecture.md, "credit exhausted")."""
    interval: timedelta = timedelta(minutes=60)
    """The run's interval (a retry's own `min_interval_minutes`; the base otherwise): its "due by"."""
    runs: list[RunState] = field(default_factory=list)
    """The runs of this operation (the holders', late ones included)."""
    paid_sent: int = 0
    """The paid requests that left in this operation, polls of a two-step call included."""
    budget_held: int = 0
    """URLs whose call's first request, a new paid one, a spend budget held back in this operation."""
    died: bool = False
    """A holder died in this operation: its run never counted what it sent."""


@dataclass
class World:
    """The outside world: what each URL's provider answers now, and what it did, kept independently of
    the store (the model the engine is checked against)."""

    limits: Limits = LIMITS
    per_month: Mapping[str, int] = field(default_factory=dict)
    """The paid accounts' budgets per UTC month (none unless the machine sets them)."""
    answers: dict[str, str] = field(default_factory=dict)
    op: Op = field(default_factory=lambda: Op("idle"))
    stale: bool = False
    """A holder whose lease ran out without it knowing is calling (the in-flight window)."""
    violations: list[str] = field(default_factory=list)
    defects: set[tuple[str, str]] = field(default_factory=set)
    """(token, URL) whose call met a defect of ours after a request left: its run reports it failed."""
    budget_streak: dict[str, int] = field(default_factory=dict)
    """Failed calls since the last answer that the budget must bound (not re-examinations an operator
    named, not a late holder's call in flight)."""
    streak: dict[str, int] = field(default_factory=dict)
    """Every failed call since the last answer."""
    peak_streak: dict[str, int] = field(default_factory=dict)
    """The highest `streak` reached during the current step (an element may only become exhausted
    when its URL's streak reached the budget)."""
    given: dict[str, list[tuple[Any, FetchStatus, bool]]] = field(default_factory=dict)
    """Every answer the provider gave, with its time."""
    open_request: dict[str, Any] = field(default_factory=dict)
    """URL -> when its paid request was submitted, until an answer closes it."""
    last_failed: dict[str, Any] = field(default_factory=dict)
    """URL -> when its last failed call was made (an answer in that instant is tied with it)."""
    last_call: dict[str, Any] = field(default_factory=dict)
    """URL -> when its last call that left was made, failed or read nothing: a streak whose last call
    is older than the window has expired (the table's "live streak"; an unreadable answer keeps the
    streak and moves the last call)."""
    last_recorded_call: dict[str, Any] = field(default_factory=dict)
    """URL -> the same, among the calls the engine can have recorded (not a late holder's, whose write
    may be refused): the budget's streak expires a window from it."""
    in_the_answers_instant: dict[str, int] = field(default_factory=dict)
    """URL -> budgeted failed calls made in the very instant of its last answer: the engine may count
    them before that answer (then not at all), the safe side of `after`'s table."""
    tied: dict[str, bool] = field(default_factory=dict)
    """URL -> its last answer came in the instant of a failed call (two holders in one instant)."""
    stale_answer: tuple[str, Any, FetchStatus, bool] | None = None
    """What a late holder's call answered, until its write is known to have landed."""
    stale_written: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(token, URL) -> the `checked_at` a late holder's write left on that element."""
    calls: int = 0
    requests_to: Counter[str] = field(default_factory=Counter)
    """URL -> requests its providers received (a URL state never counts more calls than that)."""
    submissions: int = 0
    budgeted: bool = True
    """The spend budgets hold (lifted while a stable world converges)."""
    spent: Counter[tuple[str, Any]] = field(default_factory=Counter)
    """(account, UTC day) -> new paid requests sent: never past the account's budget."""
    bill: list[tuple[str, datetime, bool]] = field(default_factory=list)
    """Each new paid request sent, budgets lifted or not: (account, when the provider received it, the
    clock stood still then)."""
    on_call: Callable[[str, str], None] | None = None
    """Told (URL, token) at the next provider call, before its request and its paid call's record."""
    dies: str | None = None
    """The moment the holder now calling dies at (one of DEATH_MOMENTS), or None."""
    kept_slots: Counter[tuple[str, Any]] = field(default_factory=Counter)
    """(account, UTC day) -> budget slots admitted to a holder that died before sending (kept: documented)."""
    asked: set[tuple[str, Any]] = field(default_factory=set)
    """(account, UTC day): days a new paid request asked the budget on, and the day after each (a slot
    given back after midnight goes to the day it was taken in)."""
    counter_down: bool = False
    """The spend budget's counter cannot be asked: no new paid request may leave."""
    unconfirmed: bool = False
    """The lock backend no longer confirms the calling holder's lease: it must send no paid request."""
    last_request: dict[str, datetime] = field(default_factory=dict)
    """URL -> when the provider received its last request (any: paid or free, failed or answered)."""
    held: set[str] = field(default_factory=set)
    """URLs whose next call (not a late holder's) our own rate limiter holds before any request leaves."""
    unavailable: Mapping[Platform, str] = field(default_factory=dict)
    """The platforms whose generator cannot run here (the registry's, as the model set them): the only
    ones an element may be recorded `unsupported` for want of a generator."""
    limiter_down: dict[str, str] = field(default_factory=dict)
    """URL -> when (LIMITER_DOWN) our own rate limiter cannot be asked during its next call (not a late holder's)."""
    deferred: set[str] = field(default_factory=set)
    """URLs the current operation left as they were because the rate limiter could not be asked."""
    lease_lost: bool = False
    """The calling holder's URL lock is lost (its lease marked so): no request of any kind may leave."""
    vetoed: bool = False
    """A request of the calling holder was refused since its URL lock was lost."""
    read_versions: dict[str, int] = field(default_factory=dict)
    """URL -> the version of the URL state the engine's last decision or merge of it read (0: none yet),
    until the write carrying it: that write is conditional on exactly this version."""
    unsent: str | None = None
    """A URL whose next first paid request (not a late holder's) fails to connect right after its
    record was made: it never leaves (nothing billed, nothing learned), its budget slot stays taken."""
    unsent_record: OpenCall | None = None
    """The record of that paid request, which its own holder's result must close."""
    on_submit: Callable[[str], None] | None = None
    """Told the URL right before a two-step submission is saved (its paid submit sent): a newer holder
    may take the URL over while the submitting one is paused there."""
    read_request: dict[str, datetime] = field(default_factory=dict)
    """URL -> when its call last read the saved paid request (its provider's retention judged then)."""
    taken_over: set[str] = field(default_factory=set)
    """URLs whose submitting holder a newer holder's write overtook: its submission must be refused and
    its call stop there."""

    @property
    def billed(self) -> Counter[str]:
        """Account -> new paid requests sent, budgets lifted or not: what the provider bills."""
        return Counter(account for account, _, _ in self.bill)

    def die(self, moment: str) -> None:
        if self.dies == moment:
            self.dies = None
            self.op.died = True
            raise HolderDied(moment)

    def failed(self, url: str, now: Any, *, budgeted: bool) -> None:
        """One failed call (a paid one the provider was paid for, whatever came back): the streaks grow,
        after expiring with the window; the budget bounds the calls it counts."""
        self.called(url, now)
        self.last_failed[url] = now
        self.streak[url] = self.streak.get(url, 0) + 1
        self.peak_streak[url] = max(self.peak_streak.get(url, 0), self.counted(url))
        if budgeted:
            self.budget_streak[url] = self.budget_streak.get(url, 0) + 1
            if self.given.get(url) and self.given[url][-1][0] == now:
                self.in_the_answers_instant[url] = self.in_the_answers_instant.get(url, 0) + 1
            if self.budget_streak[url] > self.limits.max_attempts:
                self.violations.append(f"{url}: failed call {self.budget_streak[url]} in one streak "
                                       f"(budget {self.limits.max_attempts})")

    def called(self, url: str, now: Any) -> None:
        """A call left (failed, or read nothing): a streak a window old expired before it, and the
        streak that remains lives a window from this call; the budget's, only from a call the engine
        records (a late holder's write may be refused: the engine never learns of its call)."""
        self.expire(url, now)
        self.last_call[url] = max(now, self.last_call.get(url, now))  # (a late holder's call may be later)
        if not self.stale:
            self.last_recorded_call[url] = max(now, self.last_recorded_call.get(url, now))

    def expire(self, url: str, now: Any) -> None:
        """A streak whose last call is a window old has expired, before a new call counts or moves it."""
        last = self.last_call.get(url)
        # Within a millisecond of the window's end, the budget's count expires (_budget_window_over) and the
        # full count does not (the lenient side for "no more than the provider gave").
        if self._budget_window_over(url, now):
            self.budget_streak[url] = self.in_the_answers_instant[url] = 0
        if last is not None and now - last >= DEDUPE_TTL + timedelta(milliseconds=1):
            STATS["streaks expired"] += int(self.streak.get(url, 0) > 0)
            self.streak[url] = 0

    def _budget_window_over(self, url: str, now: Any) -> bool:
        """The budget's streak expired with the window, counted from the engine's moment of the last
        recorded call, a few ticks before the provider saw it (a dead holder's at its record, to the
        millisecond): a millisecond early, the lenient side for "no call past the budget"."""
        recorded = self.last_recorded_call.get(url)
        return recorded is not None and now - recorded >= DEDUPE_TTL - timedelta(milliseconds=1)

    def budget_streak_at(self, url: str, now: Any) -> int:
        """The failed calls the engine must count at `now`: none once the window after the last recorded
        call has passed (a millisecond early), and not those made in the instant of the last answer (the
        lenient side for "the engine counts every one")."""
        if self._budget_window_over(url, now):
            return 0
        return self.budget_streak.get(url, 0) - self.in_the_answers_instant.get(url, 0)

    def counted(self, url: str) -> int:
        """The failed calls since the last answer the engine may count: a call that failed in the very
        instant of that answer may count after it (the safe side, `after`'s table)."""
        return self.streak.get(url, 0) + int(self.tied.get(url, False))

    def answered(self, url: str, at: Any, status: FetchStatus, *, anchored: bool = True,
                 in_flight: bool = False) -> None:
        """The provider's answer was recorded: the streaks end, an open request is closed. A call that
        failed in the answer's very instant may still count after it (the safe side, `after`'s table).
        One no call stood behind (not `anchored`) holds from its moment on, whatever the window; it has
        no time to tell a failed call `in_flight` (made before it, written after it) from a later one, so
        that call may count after it too."""
        self.tied[url] = self.last_failed.get(url) == at or in_flight
        self.budget_streak[url] = self.streak[url] = self.in_the_answers_instant[url] = 0
        self.open_request.pop(url, None)
        self.given.setdefault(url, []).append((at, status, anchored))

    def admitted(self, account: str, period: str, at: datetime, *, kept: bool = False) -> int:
        """New paid requests of `account` sent in the UTC day or month (`period`) of `at`, and with
        `kept` the slots of holders that died after admission."""
        same = (lambda d: d == at.date()) if period == DAY else (lambda d: (d.year, d.month) == (at.year, at.month))
        counts = self.spent + self.kept_slots if kept else self.spent
        return sum(n for (a, d), n in counts.items() if a == account and same(d))

    def unanchored(self, url: str) -> Any:
        """When the last answer given was, if no call stood behind it (it holds from then on)."""
        last = self.given.get(url, [])[-1:]
        return last[0][0] if last and not last[0][2] else None


class ModelProvider:
    """Every platform's generator: answers what the world says, and checks at the moment of each
    call what the store says the engine may do (it is called under the URL lock)."""

    def __init__(self, world: World, store: Store, clock: Callable[[], datetime]) -> None:
        self.w = world
        self.store = store
        self.clock = clock
        self.lock = threading.Lock()

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        w = self.w
        platform = _platform(url)
        now = self.clock()
        rules = model_rules(platform, w.limits, w.op.interval)
        element = self.store.find_element(ctx.token_address, url)
        assert element is not None
        selected = w.op.selected.get((ctx.token_address, url))
        forced = (w.op.kind == "named_retry" and selected in w.op.named and selected in ABSORBING
                  and element.status is selected and url not in w.op.called)
        self._check_back_off(url, now, rules, forced)
        if url in w.op.called and not w.stale and (state := self.store.find_url_state(url)) is not None and (
                live_streak(state, now, rules)):
            w.violations.append(f"{url} called again for {ctx.token_address} in one run ({w.op.kind}) after its "
                                f"own call failed, at {now}: a run never calls a failing URL twice")
        if w.op.read_nothing.get(url) == len(w.op.runs) and not (forced or w.stale):
            w.violations.append(f"{url} called again for {ctx.token_address} in one run ({w.op.kind}) after "
                                f"its call read nothing")
        if w.on_call is not None:
            hook, w.on_call = w.on_call, None
            hook(url, ctx.token_address)
        state = self.store.find_url_state(url)
        if url in w.held and not w.stale:  # our own rate limiter holds the call: nothing leaves
            w.held.discard(url)
            if platform is Platform.WEB:  # the saved request is read first (found past its retention, or not)
                w.read_request[url] = now
                ctx.requests.previous("model-scan", RETENTION)
            raise ExternalFetchError(ErrorCode.RATE_LIMITED, "our rate limiter would hold it too long")
        if not w.stale and w.limiter_down.get(url) == "before any request":  # nothing left: left as it was
            del w.limiter_down[url]
            w.deferred.add(url)
            raise ExternalFetchError(ErrorCode.LIMITER_UNAVAILABLE, "our rate limiter cannot be asked")
        answer = w.answers.get(url, "ok")
        if answer == "bug":
            raise KeyError("a defect of ours, before any request")
        if answer == "bug after the saved request is read" and platform is Platform.WEB:  # a walk's: an engine failure
            w.read_request[url] = now
            ctx.requests.previous("model-scan", RETENTION)
            raise KeyError("a defect of ours, after the saved request was read, before any request")
        if answer in ("nothing to fetch", "blocked without a request"):  # an answer without a call: no anchor
            status = FetchStatus.INVALID if answer == "nothing to fetch" else FetchStatus.BLOCKED
            if w.stale:
                w.stale_answer = (url, now, status, False)
            else:
                w.answered(url, now, status, anchored=False)
            if status is FetchStatus.BLOCKED:
                raise ExternalFetchError(ErrorCode.TARGET_BLOCKED, "a private target's link", attempted=False)
            raise SocialContractError("nothing fetchable in the url", attempted=False)
        fresh = fresh_answer(state, now, rules)
        excused = w.stale or (forced and (fresh is None or table.rank(fresh[0]) <= table.rank(element.status)))
        if _paid(url) and fresh is not None and not excused:
            w.violations.append(f"{url} paid for {ctx.token_address} ({w.op.kind}) although the window's "
                                f"{fresh[0].value} was fresh")
        try:
            self._send(url, platform, platform is Platform.X)
        except SpendHeld as held:  # the call's first request: the URL is held, nothing left
            w.op.budget_held += held.reached is not None and platform is Platform.X
            raise
        w.op.called.add(url)  # a request left (a paid one the budget held back did not)
        if platform is Platform.X and w.dies == "after the open call":
            w.failed(url, now, budgeted=True)  # paid, its result never known: one failed call once timed out
            w.die("after the open call")
        if not w.stale and w.limiter_down.get(url) == "after a request":  # a request left: a failed call
            del w.limiter_down[url]
            return self._fail(url, ErrorCode.LIMITER_UNAVAILABLE, "our rate limiter cannot be asked", forced)
        if answer == "bug after a request":  # our code fails once a request left: a failed call of the streak
            w.failed(url, now, budgeted=not (forced or w.stale))
            if not w.stale:
                w.defects.add((ctx.token_address, url))
            raise KeyError("a defect of ours, after a request")
        if answer == "ok in two requests" and platform is not Platform.WEB:  # the answer's second page
            record = self.store.find_url_state(url)
            try:
                self._send(url, platform, platform is Platform.X, first=False,
                           own=None if record is None else record.open_call)
            except SpendHeld:  # after this call's first request: a failed call of the streak
                w.failed(url, now, budgeted=not (forced or w.stale))
                raise
        if platform is Platform.WEB:
            w.read_request[url] = now
            rid = ctx.requests.previous("model-scan", RETENTION)
            resumed = rid is not None
            submitted = w.open_request.get(url)
            if rid is not None and submitted is not None and now - submitted >= RETENTION:
                w.violations.append(f"{url}: resumed request {rid} of {submitted}, past the provider's retention")
            if rid is None:
                if answer == "429":
                    return self._fail(url, ErrorCode.RATE_LIMITED, "429 on submit", forced)
                opened = w.open_request.get(url)
                if opened is not None and now - opened < RETENTION and not w.stale:
                    w.violations.append(f"{url}: a second paid submission while the one of {opened} was open")
                try:
                    self._send(url, platform, True)
                except SpendHeld:  # after this call's first request: a failed call of the streak
                    self.w.failed(url, now, budgeted=not (forced or w.stale))
                    raise
                with self.lock:
                    w.submissions += 1
                    rid = f"scan-{w.submissions}"
                if w.dies == "after the open call":  # paid for a request nobody will know the id of
                    w.failed(url, now, budgeted=True)
                    w.die("after the open call")
                if w.on_submit is not None and not w.stale:  # paused here: its call times out, a newer holder counts it
                    paused, w.on_submit = w.on_submit, None
                    w.failed(url, now, budgeted=True)
                    paused(url)
                ctx.requests.submitted("model-scan", rid)
                if url in w.taken_over:
                    w.violations.append(f"{url}: the submission {rid} was saved, or its call went on, after a newer "
                                        f"holder wrote the URL state: its save must be refused and the call stop")
                w.open_request[url] = self._saved_submission(url, rid, now)
                w.die("after the submission")  # saved: the next holder polls it, nothing to count
                self._send(url, platform, True, poll=True, first=False)
            else:  # a resumed request: its poll is the attempt's first paid request, no new spending
                self._send(url, platform, True, poll=True)
        resumed = platform is Platform.WEB and resumed
        if w.dies == "after the answer":
            # The provider answered; nothing was written. A one-step call's record stays: one failed call
            # once timed out. A two-step request stays saved: the next holder polls it again.
            if platform is Platform.X or resumed:  # a resumed request's poll left with its own record
                w.failed(url, now, budgeted=True)
            w.die("after the answer")
        if answer == "unreadable":  # neither an answer nor a failure: the calls count, the streak stays
            w.called(url, now)  # ... and lives a window from this call
            w.op.read_nothing[url] = len(w.op.runs)
            raise ExternalFetchError(ErrorCode.UNSUPPORTED, "a shape this generator cannot read")
        if answer in ("5xx", "429"):
            code = ErrorCode.UPSTREAM if answer == "5xx" else ErrorCode.RATE_LIMITED
            return self._fail(url, code, f"HTTP {answer}", forced)
        if answer == "no credit":  # a failed call; the account makes no further call this run
            w.op.credit_gone.add(ACCOUNTS[platform] if _paid(url) else platform.value)
            return self._fail(url, ErrorCode.CREDIT_EXHAUSTED, "credit exhausted", forced)
        status = {"not_found": FetchStatus.NOT_FOUND, "blocked": FetchStatus.BLOCKED}.get(answer, FetchStatus.OK)
        if answer.startswith(BROKEN):  # a graph breaking the contract, after its request: `invalid`
            status = FetchStatus.INVALID
        if w.stale:  # a late holder's answer counts only if its write lands (no newer holder wrote first)
            w.stale_answer = (url, now, status, True)
        else:
            w.answered(url, now, status)
        if status is FetchStatus.NOT_FOUND:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, "gone")
        if status is FetchStatus.BLOCKED and platform is Platform.WEB:  # the page fetch follows a redirect
            raise ExternalFetchError(ErrorCode.UNSAFE_REDIRECT, "redirected to a non-public address")
        if status is FetchStatus.BLOCKED:
            raise ExternalFetchError(ErrorCode.TARGET_BLOCKED, "private")
        if answer == "slow":
            time.sleep(0.002)
        return GenerateResult(graph_answer(self.w, url), attempted=True, requests=2 if answer == "ok in two requests" else 1)

    def _saved_submission(self, url: str, rid: str, now: datetime) -> datetime:
        """When the engine saved the submission as made (its attempt's moment, a few ticks before the
        provider received it; the millisecond on a store that keeps it): the provider's retention runs
        from then, as the engine reads it back."""
        state = self.store.find_url_state(url)
        saved = None if state is None or state.request is None or state.request.request_id != rid else (
            state.request.submitted_at)
        if saved is None or not now - timedelta(milliseconds=2) <= saved <= now:
            self.w.violations.append(f"{url}: the submission {rid} the provider received at {now} was saved as "
                                     f"{state.request if state is not None else None!r}")
            return now
        return saved

    def _check_back_off(self, url: str, now: datetime, rules: Any, forced: bool) -> None:
        """No call of a failing URL before its back-off (grown with its streak) has passed since its
        last call by the run's "due by", unless an operator named the element or a late holder's call
        is in flight."""
        state = self.store.find_url_state(url)
        if forced or self.w.stale or state is None or state.attempted_at is None:
            return
        streak = live_streak(state, now, rules)
        due = state.attempted_at + table.wait(streak, rules)
        if streak and table.due_by(now, rules.min_interval, rules.backoff) < due:
            self.w.violations.append(f"{url} called at {now} ({self.w.op.kind}) inside its back-off: {streak} failed "
                                     f"call(s) in a row, the last at {state.attempted_at}, due again at {due}")

    def _check_used_up(self, url: str, service: str, reached: Any, asked: datetime) -> None:
        """A budget said "used up": it is the account's own (its period and limit as the model sets
        them), the requests admitted in that period reach it, and it resets when that UTC day or month
        ends (a tick around midnight aside)."""
        own = SPEND_PER_DAY[service] if reached.period == DAY else self.w.per_month.get(service)
        admitted = self.w.admitted(service, reached.period, asked, kept=True)
        start = asked.replace(hour=0, minute=0, second=0, microsecond=0)
        if reached.period != DAY:
            start = start.replace(day=1)
        if reached.limit != own or (admitted < reached.limit and asked - start > timedelta(seconds=1)):
            self.w.violations.append(f"{url}: a new paid {service} request held by a budget of {reached.limit} per "
                                     f"{reached.period} with {admitted} admitted in it; the account's is {own}")
        if reached.resets not in {_period_end(reached.period, at) for at in (asked, asked + timedelta(seconds=1))}:
            self.w.violations.append(f"{url}: a new paid {service} request held by the {reached.period}'s budget "
                                     f"said to reset at {reached.resets}, the {reached.period} of {asked} ends at "
                                     f"{_period_end(reached.period, asked)}")

    def _send(self, url: str, platform: Platform, paid: bool, *, poll: bool = False, first: bool = True,
              own: OpenCall | None = None) -> None:
        """One request to the provider: a `poll` of a submitted or resumed paid request is a paid request
        (on the paid client) but no new spending; `first`: the attempt's first paid request, which
        its own record precedes; `own`: that record, beside which the attempt's later requests go."""
        before = self.store.find_url_state(url) if paid else None
        service = ACCOUNTS[platform] if paid else platform.value
        if paid and not poll:
            asked = self.clock()
            self.w.asked.update({(service, asked.date()), (service, (asked + timedelta(days=1)).date())})
        try:
            observe.before_request(service=service, paid=paid)
        except SpendHeld as held:  # used up, or not asked: as the counter stands
            if (held.reached is None) != self.w.counter_down and paid and not poll:
                self.w.violations.append(f"{url}: a new paid {service} request held as "
                                         f"{'not asked' if held.reached is None else 'used up'} ({held}) while the "
                                         f"spend counter {'could' if not self.w.counter_down else 'could not'} be asked")
            if held.reached is not None and paid and not poll and self.w.budgeted:
                self._check_used_up(url, service, held.reached, asked)
            raise
        except observe.CallVetoed:
            self.w.vetoed = self.w.lease_lost
            raise
        now = self.clock()
        if paid and first and not poll and self.w.unsent == url and not self.w.stale:
            # The connection fails once the record is made: nothing left, the budget's slot stays taken.
            self.w.unsent = None
            state = self.store.find_url_state(url)
            self.w.unsent_record = None if state is None else state.open_call
            if self.w.budgeted:
                self.w.kept_slots[(service, asked.date())] += 1
            raise ExternalFetchError(ErrorCode.UPSTREAM, "the connection failed before the request left",
                                     attempted=False)
        if service in self.w.op.credit_gone and not self.w.stale:
            self.w.violations.append(f"{url}: a {service} request left after {service} said its credit is gone "
                                     f"earlier in this run ({self.w.op.kind})")
        if self.w.lease_lost:
            self.w.violations.append(f"{url}: a {'paid' if paid else 'free'} {service} request left after its "
                                     f"holder's URL lock was lost ({self.w.op.kind})")
        if paid and self.w.unconfirmed:
            self.w.violations.append(f"{url}: a paid {service} request left although the lock backend no "
                                     f"longer confirmed its holder's lease ({self.w.op.kind})")
        if paid and not poll:
            self.w.bill.append((service, now, bool(getattr(self.clock, "frozen", False))))
            if self.w.counter_down and self.w.budgeted:
                self.w.violations.append(f"{url}: a new paid {service} request left although its spend budget "
                                         f"could not be asked ({self.w.op.kind})")
        if paid and not poll and self.w.budgeted:
            day = (service, now.date())
            self.w.spent[day] += 1
            if self.w.spent[day] > SPEND_PER_DAY[service]:
                self.w.violations.append(f"{service}: new paid request {self.w.spent[day]} on {now.date()} "
                                         f"(budget {SPEND_PER_DAY[service]} a day)")
            month = self.w.admitted(service, MONTH, now)
            if service in self.w.per_month and month > self.w.per_month[service]:
                self.w.violations.append(f"{service}: new paid request {month} in {now:%Y-%m} "
                                         f"(budget {self.w.per_month[service]} a month)")
        call = None if before is None else before.open_call
        if paid and first:  # "no payment without a record": this holder's own record is durable before the request leaves
            record = self.store.find_url_state(url)
            if record is None or record.open_call is None or record.open_call == call or (
                    record.open_call.subject, record.open_call.started_at > now) != (url, False):
                self.w.violations.append(f"{url}: a paid {service} request left without its own record "
                                         f"before it (the URL state holds {None if record is None else record.open_call!r})")
            elif record.open_call.unit_price_usd != UNIT_PRICES[service]:
                self.w.violations.append(f"{url}: a paid {service} request's record carries the price "
                                         f"{record.open_call.unit_price_usd}, its account's is {UNIT_PRICES[service]}")
            elif record.open_call.fence != record.fence:  # its holder's: only that holder's result closes it
                self.w.violations.append(f"{url}: a paid {service} request's record carries fence "
                                         f"{record.open_call.fence}, its holder wrote it under fence {record.fence}")
        if call is not None and call != own and now - call.started_at < OPEN_CALL_TIMEOUT:
            self.w.violations.append(f"{url}: paid beside the open call of {call.started_at} (fence {call.fence}) "
                                     f"({self.w.op.kind}, stale holder: {self.w.stale})")
        observe.request_sent(service=service, paid=paid)
        with self.lock:
            self.w.calls += 1
            self.w.requests_to[url] += 1
            self.w.op.paid_sent += int(paid)
            self.w.last_request[url] = max(now, self.w.last_request.get(url, now))

    def _fail(self, url: str, code: ErrorCode, message: str, forced: bool) -> GenerateResult:
        self.w.failed(url, self.clock(), budgeted=not (forced or self.w.stale))
        raise ExternalFetchError(code, message)


class EngineExceptions(logging.Handler):
    """Every exception the engine logged while recording: only the model's own `bug` answer (a
    defect before any request, which the engine must survive and count) is expected; anything else
    raised inside the engine (a rule that raises on a merge, a store call that blows up) is a failure
    of the rules, never excused as "the URL said why"."""

    def __init__(self, world: World) -> None:
        super().__init__(level=logging.ERROR)
        self.world = world

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or isinstance(exc, StoreGone | StoreAway) or (isinstance(exc, KeyError) and "a defect of ours" in str(exc)):
            return
        self.world.violations.append(f"the engine raised {type(exc).__name__}: {exc} ({record.getMessage()[:200]})")


def _counting(real_decide: Callable[..., Any], real_after: Callable[..., Any],
              world: World) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """`decide` and `after` as the recorder calls them, counting which rule fired (bench/model_test.py
    prints the counts: how often each interleaving met each rule), each checked against its table's
    row (test_support/url_machine_table.py)."""

    def judged_by(rules: Rules, url: str, what: str) -> Rules:
        """The numbers the engine judged by are the model's: the configured budget and back-off, the
        run's interval, the documented window and open-call timeout, the platform's reuse. The model's
        are returned: the tables are read with them, not with the engine's."""
        want = model_rules(_platform(url), world.limits, world.op.interval)
        if rules != want:
            world.violations.append(f"{what} {url} ({world.op.kind}) judged by {rules!r}, the model's rules are {want!r}")
        return want

    def decide(state: Any, element: Any, **kw: Any) -> Any:
        rules = judged_by(kw["rules"], element.url, "decide")
        d = real_decide(state, element, **kw)
        world.read_versions[element.url] = 0 if state is None else state.version
        # The run's memory that its own call read nothing holds only URLs whose call in this operation did
        # (the model cannot tell its runs apart, so one it did not remember stands).
        read_nothing = kw.get("read_nothing", False) and element.url in world.op.read_nothing
        want = table.decision(state, element, **{**kw, "rules": rules, "read_nothing": read_nothing})
        counted = None if state is None else table.counted(state, kw["now"], rules)
        if d.act is not Act.LEAVE and (None if d.settled is None else table.stored(d.settled)) != (
                None if counted is None or counted is state else table.stored(counted)):
            world.violations.append(f"decide {element.url} at {kw['now']}: the open call past its timeout is counted as "
                                    f"{d.settled!r}, the open call's table says {counted!r}")
        if (d.cause is Cause.NO_GENERATOR and element.cause is not Cause.NO_GENERATOR
                and _platform(element.url) not in world.unavailable):  # only a missing generator or key
            world.violations.append(f"decide {element.url} at {kw['now']}: {d.act.value} for want of a generator, "
                                    f"but {_platform(element.url).value}'s generator is usable")
        shown = (Act.REUSE, Act.ADOPT, Act.LEAVE)
        if (d.act, d.status if d.act in shown else None) != (want.act, want.status if want.act in shown else None):
            world.violations.append(
                f"decide {element.url} for {element.status.value} at {kw['now']}: {d.act.value} "
                f"{d.status.value if d.status else ''}, but the table's row '{want.row}' says {want.act.value} "
                f"{want.status.value if want.status else ''} (state {state!r})")
        STATS[f"rule: decide {d.act.value}{' forced' if d.forced else ''}"] += 1
        if d.settled is not None:
            STATS["rule: an open call past its timeout counted as a failed call"] += 1
        if "is open since" in d.detail:
            STATS["rule: no payment beside an open call"] += 1
        return d

    def after(state: Any, element: Any, outcome: Any, **kw: Any) -> Any:
        rules = judged_by(kw["rules"], element.url, "after")
        t = real_after(state, element, outcome, **kw)
        world.read_versions[element.url] = 0 if state is None else state.version
        now = kw["now"]
        status, fields, row = table.after(state, element, outcome, address=kw["address"], now=now, rules=rules)
        written = t.state if t.state is not None else (state or table.EMPTY)
        got = (None if t.element is None else t.element.status, None if t.element is None else table.stored(written))
        if got != (status, fields if status is not None else None):
            world.violations.append(f"after {outcome.result.value} of {element.url} at {now}: the engine gives {got}, "
                                    f"the table's row '{row}' says {(status, fields)} (state {state!r})")
        elif (settled := kw["decision"].settled) is not None and t.state is not None and (
                t.state.attempts < settled.attempts + int(outcome.called)):
            world.violations.append(f"after {outcome.result.value} of {element.url}: {t.state.attempts} calls, but the "
                                    f"decision counted a timed-out open call ({settled.attempts}) before this one")
        elif t.state is not None and t.state.status is not table.url_status(t.state, now, rules):
            world.violations.append(f"after {outcome.result.value} of {element.url}: the URL stands at "
                                    f"{t.state.status.value}, the statuses say {table.url_status(t.state, now, rules)}")
        if (t.element is not None and outcome.result is Result.NOT_CALLED and element.status not in ABSORBING
                and (t.element.status, t.element.cause) != (outcome.status, outcome.cause)):
            world.violations.append(f"after not_called of {element.url}: the element takes {t.element.status.value} "
                                    f"({t.element.cause}), the reason says {outcome.status} ({outcome.cause})")
        if (t.element is not None and t.element.cause is Cause.NO_GENERATOR and element.cause is not Cause.NO_GENERATOR
                and _platform(element.url) not in world.unavailable):
            world.violations.append(f"after {outcome.result.value} of {element.url}: recorded for want of a generator, "
                                    f"but {_platform(element.url).value}'s generator is usable")
        if outcome.status is FetchStatus.SKIPPED_PAID and not _paid(element.url):  # "paid calls off" holds paid ones
            world.violations.append(f"after not_called of {element.url}: a free platform's URL skipped as paid "
                                    f"({outcome.cause})")
        # The engine judges the retention at its attempt's instant; a read before that instant was an earlier
        # attempt's, one that ended without this write (lost, deferred or vetoed).
        read = world.read_request.pop(element.url, None)
        if (read is not None and read >= now and state is not None and state.request is not None
                and now - state.request.submitted_at >= RETENTION and not outcome.request_expired):
            world.violations.append(f"after {outcome.result.value} of {element.url}: its call read the saved request "
                                    f"of {state.request.submitted_at} (attempt at {now}, read at {read}), past the provider's retention, and "
                                    f"did not close it")
        if t.element is not None:  # the element's own count: moved only when a request left, to this attempt
            want = (element.attempts + 1, now) if outcome.called else (element.attempts, element.attempted_at)
            if (t.element.attempts, t.element.attempted_at) != want:
                world.violations.append(f"after {outcome.result.value} of {element.url} at {now}: the element's "
                                        f"(attempts, last attempt) are {(t.element.attempts, t.element.attempted_at)}, "
                                        f"the attempt says {want}")
        if state is not None and state.answered_at is not None and state.answered_at > now:
            STATS[f"rule: {outcome.result.value} merged after a later holder's answer"] += 1
        if t.element is not None and "stands" in t.element.detail:
            STATS["rule: the window's better answer stands against this call's"] += 1
        return t

    return decide, after


TICK = timedelta(microseconds=1)


class TickingClock(StepClock):
    """The test's clock: moved by the test, and a microsecond further at every reading, so two
    recordings within one step are still ordered in time, as they are on a real clock; `frozen`
    stands it still (two holders in one instant)."""

    frozen = False

    def __call__(self) -> datetime:
        return super().__call__() if self.frozen else self.advance(TICK)


class StaleLocks(WrappedLocks):
    """The locks of a holder whose lease ran out without it knowing: granted at once (no backend asked),
    with a fencing token just below the current holder's."""

    def __init__(self, fence: int, confirmed: bool = True) -> None:
        super().__init__(None)
        self.fence = fence
        self.confirmed = confirmed
        """False: the backend, asked right before a paid request, says the lease is no longer this holder's."""

    @contextmanager
    def _held(self, key: str, hold: Callable[[], Any]) -> Iterator[Lease]:
        yield Lease(key, "stale-holder", held=True, fence=self.fence, confirm=lambda: self.confirmed)


class LosingLocks(WrappedLocks):
    """The shared locks, whose URL lease the test can mark lost while its holder records (the renewer
    found the key gone): `lose` marks the last lease taken."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.leases: list[Lease] = []
        self.lost = False

    @contextmanager
    def _held(self, key: str, hold: Callable[[], Any]) -> Iterator[Lease]:
        with hold() as lease:
            self.leases.append(lease)
            yield lease

    def lose(self) -> None:
        if self.leases:
            self.leases[-1].mark_lost("the test: the lock backend lost the key")
            self.lost = True


class Interleaving:
    """Mixed into the real store: when armed for a URL, a late holder records that URL for another
    token right before the current holder's write lands (between its decision and its write), or,
    on a store whose write reads before it updates (Mongo), inside the write, between its read and its
    conditional update. Every fenced write is checked against the store's refusal table
    (test_support/url_machine_table.py, "Fencing"), from what the store held right before it."""

    armed: Callable[[UrlWrite], bool] | None = None
    """Told the write it lands before (or inside); returns False to wait for a later write."""
    armed_inside: bool = False
    """The armed late holder acts inside the write, on a store that has such a moment."""
    armed_at_claim: bool = False
    """... or between the write's refusal read and its claim of the element (Mongo)."""
    _at_claim: UrlWrite | None = None
    checked: Callable[[UrlWrite, WriteOutcome], None] | None = None
    """Told every write and its outcome: the model compares what the store then holds with the write."""
    before_open_call: Callable[[], None] | None = None
    ack_lost: bool = False
    claimed_after_commit: bool = False
    """The next URL write on Mongo meets, between its state's commit and its element's update, a newer
    holder's claim of its element (a walk's): the element's update must be refused (fenced)."""
    racing_insert: Callable[[str, int], None] | None = None
    """Told (URL, fence) when a write's upsert of a URL's first state runs (Mongo): another holder inserts
    it first, and the upsert loses the race (a walk's)."""
    _unacked: tuple[tuple[str, str], Any] | None = None
    """The next paid submission saved on a store that acknowledges each write apart (Mongo) is applied,
    and its acknowledgement lost (the connection drops): the engine repeats the save (a walk's)."""
    inside_seam: ClassVar[bool] = False
    element_writes_move_the_version: ClassVar[bool] = False
    """A store whose write is no single transaction (Mongo: the element, then the URL state) moves the
    state's version with an element-only write too, so that a write decided on the state before it, by
    another holder interleaving, is refused as stale ("Recording one URL": conditional on the version read)."""
    _raced: list[Any]
    _entered: Counter[str] | None = None

    @property
    def entered_answered(self) -> Counter[str]:
        """Account -> new paid requests the applied writes entered with the answers or submissions
        they recorded (their spend lines)."""
        if self._entered is None:
            self._entered = Counter()
        return self._entered

    def _fire(self, write: UrlWrite) -> bool:
        hook, self.armed = self.armed, None
        if hook is None:
            return False
        if hook(write) is False:
            self.armed = hook
            return False
        return True

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        self._check_conditional(write)
        if not ((self.armed_inside or self.armed_at_claim) and self.inside_seam):
            self._fire(write)
        element, state = self.find_element(write.address, write.url), self.find_url_state(write.url)  # type: ignore[attr-defined]
        if not hasattr(self, "_raced"):
            self._raced = []
        depth = len(self._raced)
        self._at_claim = write
        out: WriteOutcome = super().apply_url_write(write)  # type: ignore[misc]
        if len(self._raced) > depth:  # a late holder wrote inside this write: what it then met counts
            element, state = self._raced.pop()
        expected = table.refusal(element, state, write.fence, write.expect_version)
        if out.result is not expected and self.violations is not None:
            self.violations.append(f"{write.address} {write.url}: the write with fence {write.fence} on version "
                                   f"{write.expect_version} came back {out.result.value}, the refusal table says "
                                   f"{expected.value} (element {element!r}, state {state!r})")
        if (self.element_writes_move_the_version and out.result.applied and write.state is None and write.expect_version
                and self.violations is not None):
            after = self.find_url_state(write.url)  # type: ignore[attr-defined]
            if after is None or after.version <= write.expect_version:
                self.violations.append(f"{write.address} {write.url}: an element-only write decided on version "
                                       f"{write.expect_version} left the URL state at {after!r}: a write decided "
                                       f"before it would still land")
        if out.result.applied and write.spend is not None:
            self.entered_answered[write.spend.account] += write.spend.requests
        if self.checked is not None:
            self.checked(write, out)
        return out

    def _check_conditional(self, write: UrlWrite) -> None:
        """"Recording one URL": a recording's write is conditional on the version of the URL state its
        decision (or its merge) read, and on there being none when it read none (0), so a state another
        holder wrote meanwhile, the URL's first one included, is never overwritten unseen."""
        read = None if self.read_versions is None else self.read_versions.pop(write.url, None)
        if read is not None and write.expect_version != read and self.violations is not None:
            self.violations.append(f"{write.address} {write.url}: a write decided on version {read} of the URL "
                                   f"state is conditional on {write.expect_version!r}")

    def _inside(self, write: UrlWrite) -> None:
        """The moment between a Mongo write's read and its conditional update."""
        if self.armed_inside and self._fire(write):
            self._raced_by(write)

    def _claiming(self) -> None:
        """The moment between a Mongo write's refusal read and its claim of the element (the write's
        first read only, once it found nothing to refuse)."""
        write, self._at_claim = self._at_claim, None
        if write is not None and self.armed_at_claim and self._fire(write):
            self._raced_by(write)

    def _raced_by(self, write: UrlWrite) -> None:
        self._raced.append((self.find_element(write.address, write.url),  # type: ignore[attr-defined]
                            self.find_url_state(write.url)))  # type: ignore[attr-defined]

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> Any:
        if self.before_open_call is not None:
            self.before_open_call()
        before = self.find_url_state(url)  # type: ignore[attr-defined]
        out = super().save_open_call(url, platform, fence, call)  # type: ignore[misc]
        self._check_fenced(url, out, before, fence, "open call")
        self._read_back(url, out, before, lambda s: s.open_call == call and s.fence == fence, f"the open call {call!r}")
        return out

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest,
                          kept: OpenCall | None = None, spend: Any = None) -> Any:
        before = self.find_url_state(url)  # type: ignore[attr-defined]
        if self._unacked is not None and self._unacked[0] == (url, request.request_id):
            before = self._unacked[1]  # a repeat: checked against the state before the save it repeats
        self._unacked = None
        try:
            out = super().save_paid_request(url, platform, fence, request, kept, spend)  # type: ignore[misc]
        except AutoReconnect:
            self._unacked = ((url, request.request_id), before)
            raise
        if out.applied and spend is not None:
            self.entered_answered[spend.account] += spend.requests
        self._check_fenced(url, out, before, fence, "paid request")
        self._read_back(url, out, before, lambda s: s.open_call == kept and s.fence == fence and s.request is not None and (
            s.request.request_id, as_stored(s.request.submitted_at)) == (request.request_id, as_stored(request.submitted_at)),
            f"the paid request {request!r} (keeping the open call {kept!r})")
        return out

    violations: list[str] | None = None
    read_versions: dict[str, int] | None = None
    """The model's record of the version each URL's last decision or merge read (World.read_versions)."""

    def _check_fenced(self, url: str, out: Any, before: Any, fence: int, what: str) -> None:
        """The URL state's own writes are refused exactly when a larger fence is stored ("Fencing", check 3)."""
        expected = table.state_refusal(before, fence)
        if out.applied != expected.applied and self.violations is not None:
            self.violations.append(f"{url}: the {what} with fence {fence} came back {out}, the refusal table says "
                                   f"{expected.value} (state {before!r})")

    def _read_back(self, url: str, out: Any, before: Any, holds: Callable[[Any], bool], what: str) -> None:
        """What the store holds right after a paid-call write it applied is what the write said, at a
        newer version (a write decided on the state before it must now be refused)."""
        state = self.find_url_state(url)  # type: ignore[attr-defined]
        if out.applied and self.violations is not None and (
                state is None or not holds(state) or state.version <= (0 if before is None else before.version)):
            self.violations.append(f"{url}: the store holds {state!r} after the write of {what} (before it: {before!r})")


class InterleavingStore(Interleaving, SqliteStore):
    pass


class InterleavingMongoStore(Interleaving, MongoStore):
    inside_seam = True
    element_writes_move_the_version = True
    links_claimed_mid_write: bool = False
    """The next write's links meet a newer holder's claim of the element and its links (a walk's)."""

    def _update_state(self, url: str, fence: int, update: Mapping[str, Any], expect_version: int | None,
                      kept: OpenCall | None, unless: Mapping[str, Any] | None = None) -> bool:
        if self.racing_insert is not None and self.find_url_state(url) is None:
            applied = self._losing_the_insert(url, fence, update, expect_version, kept, unless)
        else:
            applied = super()._update_state(url, fence, update, expect_version, kept, unless)  # type: ignore[misc]
        if applied and self.ack_lost and update.get("$set", {}).get("request"):
            self.ack_lost = False
            raise AutoReconnect("the model dropped the connection before the acknowledgement")
        if applied and self.claimed_after_commit and "status" in update.get("$set", {}):
            # A newer holder claims the element this write claimed, between its state and its element.
            self.claimed_after_commit = False
            self.db[TOKEN_URLS].update_many({"url": url, "fence": fence}, {"$set": {"fence": fence + 1}})
            claimed = self.db[TOKEN_URLS].find_one({"url": url, "fence": fence + 1}, {"address": 1})
            if claimed is not None:
                self._raced.append((self.find_element(claimed["address"], url), self.find_url_state(url)))
        return bool(applied)

    def _replace_links(self, address: str, url: str, links: Sequence[TokenLink], fence: int,
                       deltas: Counter[str]) -> ObjectId:
        if not self.links_claimed_mid_write:
            return super()._replace_links(address, url, links, fence, deltas)  # type: ignore[misc, no-any-return]
        # A newer holder claims the element and replaces its links before this write's links land: this
        # write is then refused (fenced) and, "refused, it changes nothing", leaves the newer one's links.
        self.links_claimed_mid_write = False
        self.db[TOKEN_URLS].update_one({"address": address, "url": url}, {"$set": {"fence": fence + 1}})
        super()._replace_links(address, url, links, fence + 1, deltas)  # type: ignore[misc]
        newer = sorted(link.shape() for link in self.find_links(address, url))  # type: ignore[attr-defined]
        self._raced.append((self.find_element(address, url), self.find_url_state(url)))
        write_id = super()._replace_links(address, url, links, fence, deltas)  # type: ignore[misc]
        STATS["newer holders' links mid-write"] += 1
        # What the store keeps, not only what its reads show (they hide an overtaken writer's leftovers).
        stored = sorted(int(d.get("fence", 0)) for d in self.db[TOKEN_LINKS].find(  # type: ignore[attr-defined]
            {"token_address": address, "entry_url": url}, {"fence": 1}))
        held = sorted(link.shape() for link in self.find_links(address, url))  # type: ignore[attr-defined]
        if (held != newer or stored != [fence + 1] * len(newer)) and self.violations is not None:
            self.violations.append(f"{address} {url}: a write with fence {fence}, overtaken by a newer holder's "
                                   f"links, left {held} (stored fences {stored}), the newer holder's are {newer} "
                                   f"(\"Fencing\": refused, it changes nothing)")
        return write_id  # type: ignore[no-any-return]

    def _losing_the_insert(self, url: str, fence: int, update: Mapping[str, Any], expect_version: int | None,
                           kept: OpenCall | None, unless: Mapping[str, Any] | None) -> bool:
        """This write's upsert finds no state, and another holder inserts the URL's first state before
        its own insert: the insert fails on the unique URL, as on a server where both race."""
        racing, self.racing_insert = self.racing_insert, None
        assert racing is not None
        coll = self.db[URL_STATES]
        coll_type = type(getattr(coll, "_target", coll))  # the driver's collection, under any wrapper
        real = coll_type.find_one_and_update

        def raced(coll: Any, flt: Any, upd: Any, *args: Any, **kw: Any) -> Any:
            if kw.get("upsert") and coll.name == URL_STATES:
                setattr(coll_type, "find_one_and_update", real)  # noqa: B010  (once)
                racing(url, fence)
                raise DuplicateKeyError("E11000 duplicate key error: url (the model's racing insert)")
            return real(coll, flt, upd, *args, **kw)

        setattr(coll_type, "find_one_and_update", raced)  # noqa: B010
        try:
            return bool(super()._update_state(url, fence, update, expect_version, kept, unless))  # type: ignore[misc]
        finally:
            setattr(coll_type, "find_one_and_update", real)  # noqa: B010

    def _apply_claimed(self, write: UrlWrite, deltas: Counter[str]) -> WriteOutcome:
        self._inside(write)
        return super()._apply_claimed(write, deltas)  # type: ignore[misc,no-any-return]

    def _refusal(self, address: str, url: str, fence: int, expect_version: int | None = None) -> WriteOutcome | None:
        refused = super()._refusal(address, url, fence, expect_version)  # type: ignore[misc]
        if refused is None:
            self._claiming()
        self._at_claim = None
        return refused  # type: ignore[no-any-return]


def _carried(call: OpenCall | None) -> Iterator[OpenCall]:
    """An open call and every timed-out call it was written over, walked by the model itself."""
    while call is not None:
        yield call
        call = call.replaced


def _submitted(request: PaidRequest | None) -> tuple[str, datetime] | None:
    """A saved paid request as every store keeps it: its id and when it was submitted (the millisecond)."""
    return None if request is None else (request.request_id, as_stored(request.submitted_at))


def _ms(at: datetime | None) -> datetime | None:
    """A time as every store keeps it (the Mongo store, the millisecond)."""
    return None if at is None else as_stored(at)


class UnreachableCounters:
    """The spend budget's counters, which cannot be asked while `down` (a backend past its outage bound)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name in ("take", "give_back", "read") and self.down:
            def unreachable(*_args: Any, **_kw: Any) -> Any:
                raise ConnectionError("the spend counter's backend does not answer")
            return unreachable
        return attr


class UrlRules(Runs16Rules, Outbound16Rules, Outbound15Rules, RetryRules, SpoolRules, FeedRules, SpendRules, HealthRules,
               GraphRules, TokenRules, LockRules,
               OutageRules, RateRules, LeaseRules, ExpiryRules, HttpRules, OutboundRules, SettingsRules,
               StoredRules, StoreRules, Mongo15Rules, Locks15Rules, Runs15Rules, Locks16Rules, Entry16Rules,
               Stores16Rules,
               RuleBasedStateMachine):
    limits: ClassVar[Limits] = LIMITS
    per_month: ClassVar[Mapping[str, int]] = {}
    live_interval: ClassVar[int] = 60
    """Minutes: the live path's and reconcile's interval (the engine's `min_interval`), its "due by"."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="url-model-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        self.store = self._open_store()
        self.locks = self._lock_manager()
        self.clock = TickingClock(T0)
        self.world = World(limits=self.limits, per_month=self.per_month)
        self.fresh_outcome: UrlOutcome | None = None  # what the last new holder's run said of its URL
        self.profiles = FakeProfiles()
        self.tracker = FakeTracker()
        provider = ModelProvider(self.world, self.store, self.clock)
        self.registry = GeneratorRegistry.of({p: provider for p in Platform if p is not Platform.DISCORD})
        self.world.unavailable = self.registry.unavailable
        self.paid = True
        self.counters = UnreachableCounters(self._spend_counters())
        self.deployed = self.deployment_settings()  # as an operator writes them: url_machine_settings.py
        self.spend = SpendBudgets(self.counters, self.deployed.budgets, clock=self.clock, outage_s=0.0,
                                  sleep=lambda _s: None)
        self.spool = ModelSpool(self.dir / "spool")
        self.engines = {paid: self._engine(paid) for paid in (True, False)}
        self.tokens: list[str] = []
        self.ok_seen: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        self.exhausted_seen: dict[tuple[str, str], FetchStatus | None] = {}
        self.streak_at_step_start: dict[str, int] = {}
        self.fences: dict[str, int] = {}
        self.last_calls: dict[str, datetime] = {}
        self.store.checked = self._check_stored
        self.store.violations = self.world.violations
        self.store.read_versions = self.world.read_versions
        self.exceptions = EngineExceptions(self.world)
        logging.getLogger("social_recording").addHandler(self.exceptions)
        self._real = (attempt_module.decide, attempt_module.after)
        attempt_module.decide, attempt_module.after = _counting(*self._real, self.world)
        self.install_retry_checks(STATS)
        self.install_health_checks()
        self.install_token_checks()

    def _engine(self, paid: bool) -> Engine:
        return self._engine_on(self.locks, paid, tracker=self.tracker, timings=model_timings())

    def _engine_on(self, locks: Any, paid: bool, **options: Any) -> Engine:
        """An engine on the model's store, providers, clock and budgets, with this machine's limits,
        under `locks` (the shared ones, or a late or disowned holder's)."""
        return build_engine(self.store, locks, self.registry, self.profiles, enable_paid=paid,
                            max_attempts=self.deployed.max_attempts, clock=self.clock,
                            min_interval=timedelta(minutes=self.live_interval),
                            backoff=self.deployed.backoff, spend_budgets=self.spend, spool=self.spool,
                            recorder_type=self.outage_recorder, **options)

    @property
    def engine(self) -> Engine:
        return self.engines[self.paid]

    def _run(self, why: Why) -> RunState:
        """One token and one URL at a time: the interleavings are the test's own, so a failing
        example replays exactly (the engine's threads would reorder holders between replays). A retry
        runs with its own interval, as the retry job does."""
        run = self.heard_run(lambda heard: RunState(self.world.op.interval, calls=CallSlots(per_token=1),
                                                    request=self.engine.processor.request(why), listener=heard))
        self.world.op.runs.append(run)
        return run

    def _lock_manager(self) -> Any:
        """The lock manager: SQLite's (a variant runs Redis's, test_support/url_machine_redis.py)."""
        return SqliteLockManager(self.dir / "locks.db")

    def _spend_counters(self) -> Any:
        """The spend budget's counters: SQLite's (a variant runs Redis's, test_support/url_machine_redis.py)."""
        return SqliteSpendCounters(self.dir / "spend.db")

    def teardown(self) -> None:
        STATS["examples"] += 1
        STATS["provider calls"] += self.world.calls
        STATS["paid submissions"] += self.world.submissions
        STATS["tokens"] += len(self.tokens)
        logging.getLogger("social_recording").removeHandler(self.exceptions)
        attempt_module.decide, attempt_module.after = self._real
        self.locks.close()
        self._close_store()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _open_store(self) -> Any:
        """The store the engine runs on (an `Interleaving` one)."""
        return InterleavingStore(self.dir / "store.db")

    def _close_store(self) -> None:
        self.store.close()

    @contextmanager
    def doing(self, kind: str, named: frozenset[FetchStatus] = frozenset(), interval: int | None = None) -> Iterator[Op]:
        """The operation `kind` runs with `interval` (minutes; by default the live path's for live and
        reconcile runs, the base for a retry)."""
        if interval is None:
            interval = self.live_interval if kind in ("live", "reconcile") else 60
        STATS[f"op {kind}"] += 1
        op = self.world.op = Op(kind, named, interval=timedelta(minutes=interval))
        self.world.deferred = set()
        try:
            yield op
            counted = sum(run.paid_requests for run in op.runs)
            if not op.died and counted != op.paid_sent:  # a poll on the paid client is a paid request too
                self.world.violations.append(f"{kind}: its runs counted {counted} paid request(s) sent, "
                                             f"{op.paid_sent} left")
            held = sum(run.budget_held for run in op.runs)
            if not op.died and held != op.budget_held:
                self.world.violations.append(f"{kind}: its runs counted {held} URL(s) held by a spend budget, "
                                             f"{op.budget_held} were")
        finally:
            self.world.op = Op("idle")
            self.world.on_call = None
            self.store.armed = None
            self.store.armed_inside = self.store.armed_at_claim = False

    # ------------------------------------------------------------------ rules: the world

    @initialize(holdings=st.lists(st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True),
                                  min_size=2, max_size=4),
                answers=st.dictionaries(st.sampled_from(POOL), st.sampled_from(ANSWERS)))
    def some_tokens_and_answers(self, holdings: list[list[str]], answers: dict[str, str]) -> None:
        self.world.answers.update(answers)
        for urls in holdings:
            self.new_token(urls)

    @rule(urls=st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True))
    def new_token(self, urls: list[str], investors: int = 5) -> None:
        """A token the tracker knows with `investors` AF investors (reconcile's window answers it)."""
        address = f"T{len(self.tokens):03d}"
        self.tokens.append(address)
        self.profiles.add(address, urls)
        self.tracker.items.append(RangeItem(address, address, investors))

    @rule(url=st.sampled_from(POOL), answer=st.sampled_from(ANSWERS))
    def provider_changes(self, url: str, answer: str) -> None:
        self.world.answers[url] = answer

    @rule(url=st.sampled_from(POOL))
    def our_rate_limiter_holds_the_next_call(self, url: str) -> None:
        """Our own rate limiter will hold the URL's next call longer than a recording waits: nothing is
        sent, the element takes the reason's status and cause (the `after` table's no-call row), and a
        saved paid request past its provider's retention is closed all the same. Once: a transient
        hold, so a stable world still converges."""
        self.world.held.add(url)

    @rule(url=st.sampled_from(POOL), when=st.sampled_from(LIMITER_DOWN))
    def our_rate_limiter_cannot_be_asked_at_the_next_call(self, url: str, when: str) -> None:
        """Our own rate limiter's backend will not answer during the URL's next call: before its first
        request, nothing left and the URL is left as it was (the `after` table's "the rate limiter could
        not be asked"); after a request left, the call failed (one more failure of the streak, its paid
        requests entered). Once: a transient outage."""
        self.world.limiter_down[url] = when

    @rule(platform=st.sampled_from(sorted({_platform(u) for u in POOL})))
    def a_providers_key_goes_or_comes_back(self, platform: Platform) -> None:
        """The platform's provider key is unset where the jobs run (its generator unusable: its URLs are
        recorded `unsupported` for want of it, without a call), or set again: the default retry then takes
        those elements again once due (docs/architecture.md, "Retry selection")."""
        if platform in self.registry.unavailable:
            del self.registry.unavailable[platform]
        else:
            self.registry.unavailable[platform] = f"the model's {platform.value} key is not set"

    @rule()
    def toggle_paid(self) -> None:
        self.paid = not self.paid

    @rule(minutes=st.sampled_from(CLOCK_STEPS))
    def clock_moves(self, minutes: int) -> None:
        self.clock.advance(timedelta(minutes=minutes))

    @rule(boundary=st.sampled_from(BOUNDARIES), ticks=st.sampled_from((-1, 0, 1)), data=st.data())
    def clock_reaches_a_boundary(self, boundary: str, ticks: int, data: st.DataObject) -> None:
        """The clock lands exactly on one of a URL's boundaries, or one tick before or past it (its
        answer's reuse window, its streak's expiry, its open call's timeout, when it may be called
        again, when one of its elements is due, when the provider forgets its submitted request), and
        stands there while a holder of the URL records it
        (one of its holders, or a token traded just now). The URL is one that has this boundary ahead."""
        # Read once: the clock moves a tick at every reading, so a due time a tick ahead may be passed
        # by the time it is read again.
        targets = {u: t for u in POOL if (t := self._boundary(u, boundary)) is not None}
        now = self.clock()
        ahead = [u for u, t in targets.items() if t - TICK > now]
        if not ahead:
            return
        url = data.draw(st.sampled_from(ahead))
        target = targets[url]
        STATS[f"clock on a boundary: {boundary}"] += 1
        if data.draw(st.booleans()):
            self.new_token([url])
        holders = [a for a in self.tokens if self.store.find_element(a, url) is not None
                   or url in self.profiles.profiles[a].urls]
        if not holders:
            return
        address = data.draw(st.sampled_from(holders))
        # The run started with the boundary ahead (a live batch that began a minute before, recording
        # tokens since): the rules judge the URL at its recording, not at the run's start.
        started_before = data.draw(st.booleans())
        with self.doing("live"):
            run = None
            if started_before:
                STATS["a run's start before the boundary it records at"] += 1
                self.clock.set(max(self.clock(), target + ticks * TICK - timedelta(minutes=1)))
                run = self._run(Why.LIVE)
            self.clock.set(target + ticks * TICK)
            self.clock.frozen = True
            try:
                self._check_token_outcome(self.engine.processor.record(address, address, run or self._run(Why.LIVE)))
            finally:
                self.clock.frozen = False

    @rule(url=st.sampled_from([u for u in POOL if _platform(u) is not Platform.TELEGRAM]),
          ticks=st.sampled_from((-1, 0, 1)))
    def a_new_holder_as_the_answer_expires(self, url: str, ticks: int) -> None:
        """A token traded just now holds a URL whose answer expires this very tick: one tick before the
        window's end it takes the answer without a call, at the end and after it the answer is gone (the
        decision is checked against the `decide` table's "a fresh answer" row at every call)."""
        state = self.store.find_url_state(url)
        if state is None or state.answer is None or state.answered_at is None:
            return
        target = state.answered_at + self._rules(url).ttl + ticks * TICK
        if target <= self.clock():
            return
        STATS["new holders as the answer expires"] += 1
        self.clock.set(target)
        self.clock.frozen = True
        try:
            self.a_fresh_token_shares_a_url(url)
        finally:
            self.clock.frozen = False
        el = self.store.find_element(self.tokens[-1], url)
        reused = el is not None and el.status is state.answer and el.attempts == 0
        if reused != (ticks < 0 and table.fresh(state, target, self._rules(url)) is not None):
            self.world.violations.append(f"{url}: a new holder at {target} ({ticks:+d} tick from the window's end "
                                         f"{state.answered_at} + {self._rules(url).ttl}) "
                                         f"{'reused' if reused else 'did not reuse'} {state.answer.value}")
        said = self.fresh_outcome  # the run reports the reuse it made, and no call for it
        if said is not None and (said.reused, said.attempted and reused) != (reused, False):
            self.world.violations.append(f"{url}: a new holder {'reused' if reused else 'did not reuse'} "
                                         f"{state.answer.value}, its run reports reused={said.reused}")

    def _boundary(self, url: str, boundary: str) -> datetime | None:
        state = self.store.find_url_state(url)
        lead = self._live_lead  # the moment a live run takes what is then due (or may call again)
        if boundary == "an element is due":
            dues = [el.due_at - lead for a in self.tokens if (el := self.store.find_element(a, url)) and el.due_at]
            later = [d for d in dues if d > self.clock()]
            return min(later) if later else None
        if state is None:
            return None
        rules = self._rules(url)
        if boundary == "the answer expires":
            return None if state.answered_at is None else state.answered_at + rules.ttl
        if boundary == "the streak expires":
            return None if state.attempted_at is None or not state.streak else state.attempted_at + rules.ttl
        if boundary == "the open call times out":
            return None if state.open_call is None else state.open_call.started_at + rules.call_timeout
        if boundary == "the submission's retention ends":  # as the provider keeps it (the model's record)
            return None if state.request is None else self.world.open_request.get(
                url, state.request.submitted_at) + RETENTION
        return None if state.attempted_at is None else state.attempted_at + table.wait(table.live(
            state, self.clock(), rules), rules) - lead

    def _after_the_dead_call(self, state: Any, url: str) -> datetime:
        """The first moment the next holder may call the URL once a dead holder's timed-out call is
        counted (its back-off runs from that call): it counts the call, records its own over it and
        calls, so the dead one's call travels with the new record."""
        rules = self._rules(url)
        far = state.open_call.started_at + rules.call_timeout + TICK
        counted = table.counted(state, far, rules)
        waited = counted.attempted_at + table.wait(table.live(counted, far, rules), rules) + TICK
        return max(far, waited)

    def _callable_at(self, element: Any) -> datetime | None:
        """The first moment (now or later) a live run would call the element's URL, by the table; None
        when it would not then either (an answer, a spent streak)."""
        state, now = self.store.find_url_state(element.url), self.clock()
        rules = self._rules(element.url)
        when = now
        if state is not None and state.attempted_at is not None:
            when = max(when, state.attempted_at + table.wait(table.live(state, now, rules), rules) + TICK)
        if state is not None and state.open_call is not None:
            when = max(when, state.open_call.started_at + rules.call_timeout + TICK)
        act = table.decision(state, element, request=RunIntent(Why.LIVE, when), selected=None, now=when,
                             rules=rules).act
        return when if act in (Act.CALL, Act.RESUME) else None

    def _rules(self, url: str) -> Rules:
        """The rules of a live run of `url`, as the model expects them."""
        return model_rules(_platform(url), self.limits, timedelta(minutes=self.live_interval))

    @property
    def _live_lead(self) -> timedelta:
        """How far ahead of its moment the live path takes what is due (the back-off table's "due by")."""
        return self.limits.expected.base - timedelta(minutes=self.live_interval)

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), interleave=st.sampled_from(("call", "write")))
    def two_holders_in_one_instant(self, data: st.DataObject, interleave: str) -> None:
        """The clock stands still while a live run records a token and another holder acts in its
        middle (at its provider call, or right before its write): both act in the same instant."""
        self.clock.frozen = True
        try:
            self.live_event(data, interleave)
        finally:
            self.clock.frozen = False

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), answer=st.sampled_from(("ok", "not_found", "blocked")))
    def a_failed_call_and_an_answer_in_one_instant(self, data: st.DataObject, answer: str) -> None:
        """A holder's call fails while, in the same instant, another holder's call of the URL answers
        and is written first: the failure still counts (an answer of its very instant counts, the safe
        side)."""
        address = data.draw(st.sampled_from(self.tokens))
        self.new_token(list(self.profiles.profiles[address].urls))  # another holder of its URLs, for the late write
        other = self.tokens[-1]
        with self.doing("live"):  # recorded with paid calls off: its paid URLs wait as skipped_paid, nothing called
            self._check_token_outcome(self.engines[False].processor.record(other, other, self._run(Why.LIVE)))
        before = dict(self.world.answers)
        self.world.answers.update({url: "5xx" for url in POOL})
        self.clock.frozen = True
        try:
            with self.doing("live"):
                self.store.armed = lambda write: self._late_holder(write.address, write.url, write.fence - 1,
                                                                   answer) is None
                self._check_token_outcome(self.engines[True].processor.record(address, address, self._run(Why.LIVE)))
        finally:
            self.clock.frozen = False
            self.world.answers = before

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def the_spend_counter_cannot_be_asked(self, data: st.DataObject) -> None:
        """A holder records a paid URL while the spend budget's counter cannot be asked (its backend is
        down past the outage bound): no new paid request leaves, the URL is left as it was, and a poll
        of a request already paid for still may (docs/architecture.md, "Spend budgets")."""
        paid = [(a, el.url) for a in self.tokens if (doc := self.store.find_token(a))
                for el in doc.social_urls if _paid(el.url) and el.status not in ABSORBING]
        if not paid:
            return
        address, url = data.draw(st.sampled_from(paid))
        STATS["spend counter unreachable"] += 1
        before = self.store.find_element(address, url)
        self.counters.down = self.world.counter_down = True
        try:
            with self.doing("live"):
                self.engines[True].recorder.record_url((address, address), url, self._run(Why.LIVE))
        finally:
            self.counters.down = self.world.counter_down = False
        after = self.store.find_element(address, url)
        if after is not None and after.cause is Cause.SPEND_BUDGET and (before is None or after != before):
            self.world.violations.append(f"{address} {url}: held as if its spend budget were used up "
                                         f"({after.status.value}, {after.detail}) while the budget could not be asked")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def the_lock_backend_disowns_a_holder_before_it_pays(self, data: st.DataObject) -> None:
        """A holder records a paid URL, but right before its paid request the lock backend says the
        lease is no longer its own (it ran out while the holder was paused): nothing paid leaves, and the
        budget slot it took is given back (docs/architecture.md, "Fencing")."""
        paid = [(a, el.url) for a in self.tokens if (doc := self.store.find_token(a))
                for el in doc.social_urls if _paid(el.url) and el.status not in ABSORBING]
        if not paid:
            return
        address, url = data.draw(st.sampled_from(paid))
        state = self.store.find_url_state(url)
        # Its fence is the newest (it took the lock last): above the URL state's and every element's,
        # which a holder that recorded the element without a URL state (no call) may have written alone.
        fences = [state.fence if state else 0, *(el.fence for a in self.tokens
                                                  if (el := self.store.find_element(a, url)) is not None)]
        late = self._engine_on(StaleLocks(max(fences) + 1, confirmed=False), True)
        STATS["holders disowned before paying"] += 1
        self.world.unconfirmed = True
        try:
            with self.doing("live"):
                late.recorder.record_url((address, address), url, self._run(Why.LIVE))
        finally:
            self.world.unconfirmed = False

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def the_url_lock_is_lost_before_a_request(self, data: st.DataObject) -> None:
        """A holder records a URL when it may be called, and right before its first request (free or
        paid) its URL lock is lost (the renewer found the key gone): no request leaves, and nothing is
        written, the URL is left as it was (docs/architecture.md, "Fencing")."""
        candidates = [(a, el) for a in self.tokens if (doc := self.store.find_token(a))
                      for el in doc.social_urls if el.status not in ABSORBING]
        if not candidates:
            return
        address, element = data.draw(st.sampled_from(candidates))
        when = self._callable_at(element)
        if when is None:
            return
        if when > self.clock():
            self.clock.set(when)
        locks = LosingLocks(self.locks)
        STATS["URL locks lost before a request"] += 1

        def lost(_url: str, _address: str) -> None:
            locks.lose()
            self.world.lease_lost = True

        before = (self.store.find_url_state(element.url), self.store.find_element(address, element.url))
        try:
            with self.doing("live"):
                self.world.on_call = lost
                self._engine_on(locks, self.paid).recorder.record_url((address, address), element.url,
                                                                      self._run(Why.LIVE))
        finally:
            vetoed, self.world.lease_lost, self.world.vetoed = self.world.vetoed, False, False
        after = (self.store.find_url_state(element.url), self.store.find_element(address, element.url))
        if vetoed and after != before:
            self.world.violations.append(f"{address} {element.url}: recorded after its URL lock was lost: "
                                         f"{before!r} -> {after!r}")

    def _paid_and_callable(self, data: st.DataObject, platforms: Sequence[Platform]) -> tuple[str, str] | None:
        """A token's element of a paid URL on `platforms`, not absorbing, with the clock moved to when it
        may be called; None when there is none."""
        paid = [(a, el) for a in self.tokens if (doc := self.store.find_token(a))
                for el in doc.social_urls if _paid(el.url) and _platform(el.url) in platforms
                and el.status not in ABSORBING]
        if not paid:
            return None
        address, element = data.draw(st.sampled_from(paid))
        when = self._callable_at(element)
        if when is None:
            return None
        if when > self.clock():
            self.clock.set(when)
        return address, element.url

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def a_paid_request_never_leaves(self, data: st.DataObject) -> None:
        """A holder records a paid URL and makes its call's record, then the connection fails before the
        request leaves: nothing is billed and nothing learned (no failed call: `error`, the streak as it
        was), and its own result closes the record it made, so nobody later counts it as a call whose
        answer never came, nor enters it as spent (docs/architecture.md, "No payment without a record")."""
        picked = self._paid_and_callable(data, (Platform.X,))  # its first request is the paid one
        if picked is None:
            return
        address, url = picked
        w = self.world
        w.unsent, w.unsent_record = url, None
        STATS["paid requests that never left"] += 1
        try:
            with self.doing("live"):
                self.engines[True].recorder.record_url((address, address), url, self._run(Why.LIVE))
        finally:
            w.unsent, record, w.unsent_record = None, w.unsent_record, None
        state = self.store.find_url_state(url)
        if record is not None and state is not None and record in _carried(state.open_call):
            w.violations.append(f"{url}: the record of a paid call that never left stays open after its own "
                                f"holder's result: {state.open_call!r}")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def a_newer_holder_takes_over_a_paused_submission(self, data: st.DataObject) -> None:
        """A holder of a two-step paid URL sends its submission and is paused (SIGSTOP) before saving it,
        past its lease and its call's timeout, its lock backend still answering yes: a newer holder (a
        larger fence) records the URL, counting the paused call as one failed call, and writes the URL
        state. The paused holder wakes: the store refuses its submission, and its call stops there, no
        poll sent, nothing written (docs/architecture.md, "Fencing", "Resumable paid calls")."""
        picked = self._paid_and_callable(data, (Platform.WEB,))
        if picked is None:
            return
        address, url = picked
        fence = self._stored_fence(url) + 1  # the newest holder yet; the shared locks' next one takes more
        w = self.world

        def newer(url: str) -> None:
            state = self.store.find_url_state(url)
            assert state is not None and state.open_call is not None
            self.clock.set(max(self.clock(), state.open_call.started_at + self._rules(url).call_timeout + TICK))
            STATS["newer holders took over a paused submission"] += 1
            op = w.op
            w.op = Op("live", interval=timedelta(minutes=self.live_interval))
            try:  # another process, paid calls on
                self.engines[True].recorder.record_url((address, address), url, self._run(Why.LIVE))
            finally:
                w.op = op
            after = self.store.find_url_state(url)
            if after is not None and after.fence > fence and after.open_call != state.open_call:
                w.taken_over.add(url)
            else:
                w.violations.append(f"{url}: a newer holder past the timeout of the paused call {state.open_call!r} "
                                    f"did not count it: {after!r}")

        w.on_submit = newer
        try:
            with self.doing("live"):
                self._engine_on(StaleLocks(fence), True).recorder.record_url((address, address), url,
                                                                             self._run(Why.LIVE))
        finally:
            w.on_submit = None
            w.taken_over.discard(url)

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def a_paused_holder_records_a_paid_url(self, data: st.DataObject) -> None:
        """A holder paused past its lease wakes and records a paid URL with its old fence, below the one
        the URL state holds, when the URL may be called: the store refuses the record of its paid call,
        so the call does not leave (docs/architecture.md, "No payment without a record"); the provider
        checks that no paid request leaves without its own record, the store that the record was refused."""
        paid = [(a, el) for a in self.tokens if (doc := self.store.find_token(a))
                for el in doc.social_urls if _paid(el.url) and el.status not in ABSORBING]
        if not paid:
            return
        address, element = data.draw(st.sampled_from(paid))
        state = self.store.find_url_state(element.url)
        when = self._callable_at(element)
        if state is None or state.fence < 2 or when is None:
            return
        if when > self.clock():
            self.clock.set(when)
        late = self._engine_on(StaleLocks(state.fence - 1), True)
        STATS["paused holders recorded a paid URL"] += 1
        self.world.stale = True
        try:
            with self.doing("live"):
                late.recorder.record_url((address, address), element.url, self._run(Why.LIVE))
        finally:
            self.world.stale = False
            self.world.stale_answer = None
        if self.store.find_url_state(element.url) != state:
            self.world.violations.append(f"{element.url}: a holder with fence {state.fence - 1} changed the state of "
                                         f"fence {state.fence}: {state!r} -> {self.store.find_url_state(element.url)!r}")

    @rule(url=st.sampled_from(POOL), what=st.sampled_from(("open call", "paid request")))
    def a_paused_holder_wakes(self, url: str, what: str) -> None:
        """A holder paused past its lease (SIGSTOP) wakes and records its paid call or its submission
        with its old fence, below the one the URL state holds: refused, and nothing changes; the
        submission's spend line (its new paid request, on a paid URL) enters nothing (the ledger's
        invariant: the holder that counts its call enters it)."""
        state = self.store.find_url_state(url)
        if state is None or state.fence < 2:
            return
        fence, now = state.fence - 1, self.clock()
        if what == "open call":
            call = OpenCall(provider=_platform(url).value, subject=url, started_at=as_stored(now), fence=fence)
            result = self.store.save_open_call(url, _platform(url).value, fence, call)
        else:
            request = PaidRequest(provider="model-scan", request_id="scan-paused", submitted_at=now)
            account = ACCOUNTS.get(_platform(url))
            spend = None if account is None else SpendLine(account, day_key(now), 1, UNIT_PRICES[account])
            result = self.store.save_paid_request(url, _platform(url).value, fence, request, spend=spend)
        STATS["paused holders woke"] += 1
        after = self.store.find_url_state(url)
        if result.applied or after != state:
            self.world.violations.append(f"{url}: a paused holder's {what} with fence {fence} was taken over the "
                                         f"state's fence {state.fence} ({result}): {state!r} -> {after!r}")

    @rule(data=st.data(), why=st.sampled_from(STALE_WRITES))
    def a_stale_url_write(self, data: st.DataObject, why: str) -> None:
        """A holder's recording lands when it may no longer: its fence is below the one the element or
        the URL state holds (it was paused past its lease), it was decided on a version of the URL
        state another holder has since moved on, or it would replace an `ok` element (a newer holder
        made the element ok). Each is refused by the store's refusal table ("Fencing"; the store
        wrapper checks the result against test_support/url_machine_table.py), and nothing changes."""
        now = self.clock()
        elements = [(a, el) for a in self.tokens if (doc := self.store.find_token(a)) for el in doc.social_urls
                    if (el.status is FetchStatus.OK) == why.startswith("onto an ok element")]
        if not elements:
            return
        address, el = data.draw(st.sampled_from(elements))
        state = self.store.find_url_state(el.url)
        top = max(el.fence, 0 if state is None else state.fence)
        fence, version = top + 1, 0 if state is None else state.version
        if why == "with a lower fence":
            if top < 1:
                return
            fence = top - 1
        elif why == "decided on an old version":
            if state is None or state.version < 1:
                return
            fence, version = top, state.version - 1
        elif why == "below the element's fence alone":  # a newer holder wrote the element, not the URL state
            if state is None or el.fence - 1 < state.fence:
                return
            fence = el.fence - 1
        elif why == "onto an ok element, on an old version":  # refused as ok first (check 2 before check 4)
            if state is None or state.version < 1:
                return
            version = state.version - 1
        elif why == "onto an ok element, below the state's fence":  # refused as ok first (check 2 before check 3)
            if state is None or state.fence - 1 < el.fence:
                return
            fence = state.fence - 1
        elif why == "onto an ok element, below its fence":  # refused as fenced first (check 1 before check 2)
            if el.fence < 1:
                return
            fence = el.fence - 1
        before = (self.store.find_url_state(el.url), self.store.find_element(address, el.url),
                  self.store.spend_totals())
        s = state or table.EMPTY
        nxt = NextState(status=FetchStatus.ERROR, answer=s.answer, answered_at=s.answered_at,
                        source_token=s.source_token, streak=s.streak + 1, attempted_at=now, attempts=s.attempts + 1,
                        engine_failures=0, request=s.request, open_call=s.open_call)
        write = UrlWrite(address=address, url=el.url, platform=_platform(el.url).value, fence=fence, now=now,
                         element=ElementWrite(status=FetchStatus.ERROR, attempts=el.attempts + 1, attempted_at=now,
                                              checked_at=now, detail="a stale holder's write", due_at=now),
                         state=nxt, expect_version=version,
                         spend=SpendLine(ACCOUNTS[_platform(el.url)], day_key(now), 1, UNIT_PRICES[ACCOUNTS[_platform(el.url)]])
                         if _paid(el.url) else None)  # its call's line: the ledger moves only if the write lands
        STATS[f"stale writes {why}"] += 1
        self.world.read_versions.pop(el.url, None)  # decided on `version` on purpose, not on what the engine read
        out = self.store.apply_url_write(write)
        after = (self.store.find_url_state(el.url), self.store.find_element(address, el.url),
                 self.store.spend_totals())
        if out.result is WriteResult.APPLIED or after != before:
            self.world.violations.append(f"{address} {el.url}: a write {why} (fence {fence}, version {version}) was "
                                         f"{out.result.value}: {before!r} -> {after!r}")

    # ------------------------------------------------------------------ rules: the runs

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), interleave=st.sampled_from(("none", "call", "write")))
    def live_event(self, data: st.DataObject, interleave: str) -> None:
        address = data.draw(st.sampled_from(self.tokens))
        before = {el.url: el for el in doc.social_urls} if (doc := self.store.find_token(address)) else {}
        started = self.clock()
        with self.doing("live"):
            self._arm(interleave, data)
            self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))
        if interleave == "none":
            self._check_live_took_only_due(address, before, started)

    def _check_live_took_only_due(self, address: str, before: dict[str, Any], started: datetime) -> None:
        """A live run reopens the token's pending and error elements that are due (by their stored due
        time, at the run's moment: the instant itself counts), and only those: the others are left as
        they were."""
        doc, now = self.store.find_token(address), self.clock()
        interval, backoff = timedelta(minutes=self.live_interval), self.limits.expected
        by_start, by_now = table.due_by(started, interval, backoff), table.due_by(now, interval, backoff)
        for el in doc.social_urls if doc is not None else ():
            was = before.get(el.url)
            if was is None:
                continue
            if (was.status, _ms(was.checked_at)) == (el.status, _ms(el.checked_at)):
                if was.status in (FetchStatus.PENDING, FetchStatus.ERROR) and (
                        was.due_at is None or was.due_at <= by_start) and not (
                        self.world.counter_down or self.world.unconfirmed) and (
                        el.url not in self.world.deferred):  # those leave a URL as it was
                    self.world.violations.append(f"{address} {el.url}: a live run at {started} left it "
                                                 f"{was.status.value}, due at {was.due_at}")
                continue
            if was.status not in (FetchStatus.PENDING, FetchStatus.ERROR) or (
                    was.due_at is not None and was.due_at > by_now):
                self.world.violations.append(f"{address} {el.url}: a live run at {now} recorded it again ("
                                             f"{was.status.value}, due at {was.due_at})")

    @rule(url=st.sampled_from(POOL))
    def a_fresh_token_shares_a_url(self, url: str) -> None:
        """A token traded just now holds a URL others hold: the live run records it at once, whatever
        the URL's state (inside a grown back-off, beside an answer, spent)."""
        self.new_token([url])
        with self.doing("live"):
            outcome = self.engine.processor.record(self.tokens[-1], self.tokens[-1], self._run(Why.LIVE))
            self._check_token_outcome(outcome)
        self.fresh_outcome = next((o for o in outcome.urls if isinstance(o, UrlOutcome) and o.url == url), None)

    @rule(url=st.sampled_from(POOL), first=st.sampled_from(("ok", "not_found")),
          then=st.sampled_from(("not_found", "blocked", "5xx")))
    def the_provider_changes_its_mind_between_two_new_holders(self, url: str, first: str, then: str) -> None:
        """Two tokens traded just now hold the URL, and the provider answers differently in between:
        the second reuses the first's answer within the window, or (a never-reused URL) calls and
        meets a better answer it must not replace."""
        for answer in (first, then):
            self.provider_changes(url, answer)
            self.a_fresh_token_shares_a_url(url)

    @rule(url=st.sampled_from([u for u in POOL if _platform(u) is not Platform.TELEGRAM]))
    def a_better_answer_after_the_window_outranks_the_holders(self, url: str) -> None:
        """The URL's answer expires, the provider now answers `ok`, a token traded just now calls and gets
        it: the holders recorded before hold a worse answer, and an operator names it. The retry takes
        the window's `ok` instead of paying to replace it."""
        state = self.store.find_url_state(url)
        if state is None or state.answer in (None, FetchStatus.OK) or state.answered_at is None:
            return
        held = sorted({el.status.value for a in self.tokens if (el := self.store.find_element(a, url))
                       and el.status in ABSORBING and el.status is not FetchStatus.OK})
        if not held:
            return
        self.clock.set(max(self.clock(), state.answered_at + DEDUPE_TTL + timedelta(minutes=1)))
        self.paid = True
        self.provider_changes(url, "ok")
        self.a_fresh_token_shares_a_url(url)
        STATS["better answers after the window named"] += 1
        self.named_retry(held, 0, "none", _NoDraws())  # type: ignore[arg-type]

    @precondition(lambda self: self.tokens and DEATHS)
    @rule(data=st.data(), moment=st.sampled_from(DEATH_MOMENTS))
    def a_holder_dies(self, data: st.DataObject, moment: str) -> None:
        """A holder's process dies (SIGKILL) at `moment` of recording one URL: after the spend budget
        admitted its paid request, after it recorded the open call and paid, after its paid submission
        was saved, or after the provider answered, before anything else is written. Its locks run out;
        the next holders pay nothing beside its call, and count it once, as one failed call, when its
        result can never come (docs/architecture.md, "No payment without a record")."""
        meets = {"after admission": _paid, "after the open call": _paid, "after the answer": _paid,
                 "after the submission": lambda url: _platform(url) is Platform.WEB}[moment]
        candidates = [(address, el) for address in self.tokens if (doc := self.store.find_token(address))
                      for el in doc.social_urls if el.status not in ABSORBING and meets(el.url)]
        if not candidates:
            return
        address, element = data.draw(st.sampled_from(candidates))
        url, when = element.url, self._callable_at(element)
        if when is None:
            return
        if when > self.clock():
            self.clock.set(when)  # the holder comes when the URL may be called: after its back-off, its open call
        w = self.world
        w.dies = moment

        def admitted() -> None:
            if w.dies == "after admission":
                w.dies = None
                state = self.store.find_url_state(url)
                polls = state is not None and state.request is not None and (
                    self.clock() - state.request.submitted_at < RETENTION)  # a resumed request's poll: no slot
                w.kept_slots[(ACCOUNTS[_platform(url)], self.clock().date())] += int(not polls)  # counted, never sent
                w.op.died = True
                raise HolderDied(moment)

        self.store.before_open_call = admitted
        died = False
        with self.doing("live"):
            try:
                self.engines[True].recorder.record_url((address, address), url, self._run(Why.LIVE))
            except HolderDied:
                died = True
            finally:
                w.dies = None
                self.store.before_open_call = None
        STATS[f"holders died {moment}"] += int(died)
        if died:  # the next holder comes while the dead one's call is open, or exactly as it times out
            ticks = data.draw(st.sampled_from((None, -1, 0, 1, "callable")))
            self._next_holder(url, ticks, data)

    def _next_holder(self, url: str, ticks: int | str | None, data: st.DataObject) -> None:
        """A holder of `url` records it after a holder died with its call open: a token traded just now
        `ticks` from the open call's timeout (frozen there), or one of its holders once it may be called
        ("callable") or a minute later (None)."""
        state = self.store.find_url_state(url)
        target = None if ticks is None or state is None or state.open_call is None else (
            self._after_the_dead_call(state, url) if ticks == "callable" else
            state.open_call.started_at + self._rules(url).call_timeout + int(ticks) * TICK)
        on_time = target is not None and target >= self.clock()  # (a reading moves the clock a tick)
        if on_time and target is not None:
            STATS["next holders as the dead one's call times out"] += 1
            self.clock.set(target)
        else:
            self.clock.advance(timedelta(minutes=1))
        if isinstance(ticks, int):  # a token traded just now: its element is due, so its URL is decided then
            self.new_token([url])
        holders = [a for a in self.tokens if self.store.find_element(a, url) is not None]
        self.clock.frozen = on_time
        try:
            with self.doing("live"):
                nxt = self.tokens[-1] if isinstance(ticks, int) else data.draw(st.sampled_from(holders))
                self._check_token_outcome(self.engine.processor.record(nxt, nxt, self._run(Why.LIVE)))
        finally:
            self.clock.frozen = False

    @precondition(lambda self: self.tokens and DEATHS)
    @rule(data=st.data(), answer=st.sampled_from(("5xx", "unreadable")), later=st.sampled_from(LATE_BY[1:]))
    def a_late_holder_calls_before_a_dead_holders_record(self, data: st.DataObject, answer: str,
                                                         later: timedelta) -> None:
        """A holder decides to call a paid URL; at its call, before its open call is recorded (dated at its
        decision), a late holder calls the URL `later` and writes first (a failure, or a shape nobody can
        read: an answer would make the holder's call a second payment; a one-step URL only: a two-step
        one's would leave a submission the holder never saw); then the holder pays and dies.
        Whoever counts the dead call once it times out keeps the late holder's later call as the URL's
        last one (the open-call table: the last call moves only forward)."""
        def at_the_call(url: str, address: str) -> None:
            state = self.store.find_url_state(url)
            # A two-step URL's late holder would leave a submission the holder never saw. Beside a stored open
            # call the late holder's fence would lie between its holder's and the current one's, which the
            # model cannot pick: the highest stored fence stands for it only where no record carries it.
            if _platform(url) is Platform.X and (state is None or state.open_call is None):
                self._late_holder(address, url, max(1, self._stored_fence(url)), answer, later, paid=True)

        self.world.on_call = at_the_call
        try:
            self.a_holder_dies(data, "after the open call")
        finally:
            self.world.on_call = None

    def _stored_fence(self, url: str) -> int:
        """The highest fence written for `url` (its state's, its elements'): a holder that took its lock
        before the current one had at most this one."""
        state = self.store.find_url_state(url)
        return max([0 if state is None else state.fence,
                    *(el.fence for a in self.tokens if (el := self.store.find_element(a, url)) is not None)])

    @rule(url=st.sampled_from(POOL), data=st.data())
    def two_holders_race_a_urls_first_state(self, url: str, data: st.DataObject) -> None:
        """Two tokens traded just now hold a URL nothing has been recorded for (the first one recorded
        with paid calls off and its platform's key unset: its element waits, the URL has no state). The
        second is recorded, with paid calls on or off, and decides on no state; a late holder (paid calls
        on or off) records the first one and writes the URL's first state right before the second's
        write, or inside it on the Mongo store. The second's write is conditional on there being no state
        (`_check_conditional`), so it is refused as stale and taken anew, never written over the first
        state (the refusal table)."""
        if self.store.find_url_state(url) is not None:
            return
        self.new_token([url])
        first = self.tokens[-1]
        platform, keyed = _platform(url), _platform(url) not in self.registry.unavailable
        self.registry.unavailable[platform] = f"the model's {platform.value} key is not set"
        try:
            with self.doing("live"):
                self._check_token_outcome(self.engines[False].processor.record(first, first, self._run(Why.LIVE)))
        finally:
            if keyed:
                del self.registry.unavailable[platform]
        if self.store.find_url_state(url) is not None:
            return
        self.new_token([url])
        second = self.tokens[-1]
        paid, late_paid = data.draw(st.booleans()), data.draw(st.booleans())
        flip = data.draw(st.sampled_from(ANSWERS))
        at = data.draw(st.sampled_from(("before the first write", "inside the first write")))
        STATS["races of a URL's first state"] += 1
        def late(write: UrlWrite) -> bool:
            self._late_holder(write.address, url, write.fence - 1, flip, paid=late_paid)
            return True

        with self.doing("live"):
            self.store.armed = late
            self.store.armed_inside = at.startswith("inside")
            self._check_token_outcome(self.engines[paid].processor.record(second, second, self._run(Why.LIVE)))

    @precondition(lambda self: self.tokens)
    @rule()
    def reconcile(self) -> None:
        with self.doing("reconcile"):
            window = self.engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=1)
            out = self.engine.reconcile.record_window(window, max_workers=1, run=self._run(Why.RECONCILE))
        for token in out.tokens:
            self._check_token_outcome(token)

    @precondition(lambda self: self.tokens)
    @rule(min_interval=st.sampled_from((0, 60, 120)), interleave=st.sampled_from(("none", "call", "write", "between")),
          data=st.data(), limit=st.sampled_from((50, 1, 2)))
    def default_retry(self, min_interval: int, interleave: str, data: st.DataObject, limit: int = 50) -> None:
        with self.doing("retry", interval=min_interval):
            selection = self.engine.retry.select_due(min_interval_minutes=min_interval, limit=limit)
            self._check_selection(selection, limit=limit)
            self._check_store_takes_the_first(selection)
            self._arm(interleave, data, selection.candidates)
            self.engine.retry.record_selection(selection, max_workers=1, run=self._run(Why.RETRY))

    def retry_among(self, addresses: Sequence[str], min_interval: int, named: Sequence[str] | None = None,
                    limit: int = 50) -> None:
        """A retry among the given tokens only (as a run asked about some tokens selects), of the default
        statuses or those `named`: checked as every selection is (a walk's step, not drawn)."""
        statuses = frozenset(FetchStatus(s) for s in named or ())
        with self.doing("retry" if named is None else "named_retry", statuses, interval=min_interval) as op:
            selection = self.engine.retry.select_due(statuses=None if named is None else list(named),
                                                     token_addresses=list(addresses), limit=limit,
                                                     min_interval_minutes=min_interval)
            self._check_selection(selection, named, limit=limit)
            self._check_store_takes_the_first(selection)
            op.selected = {(c.address, c.url): c.status for c in selection.candidates}
            self.engine.retry.record_selection(selection, max_workers=1, run=self._run(Why.RETRY))

    def _check_store_takes_the_first(self, selection: Any) -> None:
        """The store asked for the same selection limited to one element returns one, the first of the
        retry's own (the longest due, ties by token then URL: "Retry selection"): a store whose query
        stops at its limit stops at the right element. Asked only when two or more are due (one round
        trip less per retry over the wire)."""
        if len(selection.candidates) + selection.remaining < 2:
            return
        query = retry_query(now=selection.selected_at, min_interval=timedelta(minutes=selection.min_interval_minutes),
                            limit=1, statuses=selection.named, addresses=selection.token_addresses,
                            enable_paid=self.paid, usable_platforms=self.registry.usable_platforms())
        got = [(c.address, c.url) for c in self.store.select_candidates(query)]
        first = [(c.address, c.url) for c in selection.candidates[:1]]
        if got != first:
            self.world.violations.append(f"a selection limited to one took {got}; the retry's first is {first}")

    @precondition(lambda self: self.tokens)
    @rule(named=st.one_of(st.lists(st.sampled_from(NAMEABLE), min_size=1, max_size=4, unique=True),
                          st.lists(st.sampled_from(sorted(s.value for s in ABSORBING if s is not FetchStatus.OK)),
                                   min_size=1, max_size=2, unique=True)),
          min_interval=st.sampled_from((0, 60, 120)), interleave=st.sampled_from(("none", "between")), data=st.data())
    def named_retry(self, named: list[str], min_interval: int, interleave: str, data: st.DataObject) -> None:
        statuses = frozenset(FetchStatus(s) for s in named)
        with self.doing("named_retry", statuses, interval=min_interval) as op:
            selection = self.engine.retry.select_due(statuses=named, min_interval_minutes=min_interval)
            self._check_selection(selection, named)
            op.selected = {(c.address, c.url): c.status for c in selection.candidates}
            self._arm(interleave, data, selection.candidates)
            self.engine.retry.record_selection(selection, max_workers=1, run=self._run(Why.RETRY))

    @precondition(lambda self: self.tokens)
    @rule(interleave=st.sampled_from(("none", "between")), data=st.data())
    def operator_re_examines(self, interleave: str, data: st.DataObject) -> None:
        """An operator names statuses the store holds now (what the UI's counts show), so the named
        re-examinations meet answers of the same window, often after the provider changed its mind."""
        held = sorted({el.status.value for address in self.tokens if (doc := self.store.find_token(address))
                       for el in doc.social_urls if el.status is not FetchStatus.OK})
        if not held:
            return
        named = data.draw(st.lists(st.sampled_from(held), min_size=1, max_size=len(held), unique=True))
        self.named_retry(named, 0, interleave, data)

    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def operator_re_examines_an_outranked_answer(self, data: st.DataObject) -> None:
        """An operator names the status of elements whose URL's window now holds a better answer (an
        element recorded before the provider changed its mind): the retry takes the better answer
        instead of paying to replace it."""
        now = self.clock()
        outranked = sorted({el.status.value for address in self.tokens if (doc := self.store.find_token(address))
                            for el in doc.social_urls
                            if el.status in ABSORBING and el.status is not FetchStatus.OK
                            and (fresh := fresh_answer(self.store.find_url_state(el.url), now, self._rules(el.url)))
                            and table.rank(fresh[0]) > table.rank(el.status)})
        if outranked:
            STATS["outranked answers named"] += 1
            self.named_retry(outranked, 0, "none", data)

    def _check_selection(self, selection: Any, named: Sequence[str] | None = None, *, limit: int | None = None) -> None:
        """A retry takes exactly the elements of its statuses due by its moment, moved by its interval
        (the back-off table's "due by", test_support/url_machine_table.py), when all of them fit its
        limit; not checked on paid URLs while paid calls are off. Its statuses are the model's own:
        those named, or by default error and pending, skipped_paid while paid calls are on, and
        unsupported for want of a generator where the platform's generator is usable again (not one
        whose answer could not be read). A retry given a `limit` takes no more than it, and exactly it
        when more elements are due."""
        wanted = set(named) if named is not None else {FetchStatus.ERROR.value, FetchStatus.PENDING.value} | (
            {FetchStatus.SKIPPED_PAID.value} if self.paid else set())

        def taken(el: Any) -> bool:
            if named is None and el.status is FetchStatus.UNSUPPORTED:
                return el.cause is Cause.NO_GENERATOR and _platform(el.url) not in self.registry.unavailable
            return el.status.value in wanted

        for c in selection.candidates:  # never sent, never changed: nothing a retry could change (documented)
            try:
                parse_canonical(c.url)
            except ValueError:
                self.world.violations.append(f"{c.address} {c.url}: a stored non-canonical URL selected by a retry")
        due_by = table.due_by(selection.selected_at, timedelta(minutes=selection.min_interval_minutes),
                              self.limits.expected)
        chosen = {(c.address, c.url) for c in selection.candidates}
        waiting: list[tuple[bool, datetime | None, str, str]] = []
        unsure = False
        held_back = 0
        among = self.tokens if selection.token_addresses is None else [
            a for a in self.tokens if a in selection.token_addresses]
        for address in among:
            doc = self.store.find_token(address)
            for el in doc.social_urls if doc is not None else ():
                if _paid(el.url) and not self.paid:
                    continue
                if not taken(el):
                    if (address, el.url) in chosen:
                        self.world.violations.append(f"{address} {el.url}: {el.status.value} selected by a retry of "
                                                     f"{sorted(wanted)}")
                    continue
                if el.due_at is not None and el.due_at != due_by and abs(el.due_at - due_by) <= timedelta(milliseconds=1):
                    unsure = True
                    continue  # the stores keep the millisecond (due at the very instant: taken)
                due = el.due_at is None or el.due_at <= due_by
                if due:
                    waiting.append((el.due_at is not None, el.due_at, address, el.url))
                else:
                    held_back += 1
                if (address, el.url) in chosen and not due or (due and not selection.remaining
                                                                and (address, el.url) not in chosen):
                    self.world.violations.append(
                        f"{address} {el.url}: due at {el.due_at}, {'selected' if not due else 'not selected'} by a "
                        f"retry at {selection.selected_at} with interval {selection.min_interval_minutes} min "
                        f"(due by {due_by})")
        if limit is not None and (len(chosen) > limit or len(waiting) > limit and len(chosen) != limit):
            self.world.violations.append(f"a retry limited to {limit} took {len(chosen)} of {len(waiting)} due "
                                         f"elements (and more unchecked)" if len(waiting) > limit else
                                         f"a retry limited to {limit} took {len(chosen)} elements")
        if limit is not None and self.paid and not unsure and selection.remaining != len(waiting) - len(chosen):
            self.world.violations.append(f"a retry limited to {limit} took {len(chosen)} of {len(waiting)} due "
                                         f"elements, {selection.remaining} said to remain")
        if selection.token_addresses is not None:
            # A retry among given tokens takes none of another token's elements, and counts as held back
            # (inside their back-off) only the elements of its statuses among them.
            if strays := sorted({c.address for c in selection.candidates} - set(selection.token_addresses)):
                self.world.violations.append(f"a retry among {list(selection.token_addresses)} took elements of {strays}")
            if self.paid and not unsure and min(held_back, REMAINING_PROBE) != selection.held_back:
                self.world.violations.append(f"a retry among {list(selection.token_addresses)} counted "
                                             f"{selection.held_back} elements held back; {held_back} are")
        # Past its limit, a retry takes the longest due first (then by token and URL).
        first = {(a, u) for *_, a, u in sorted(waiting)[:len(chosen)]}
        if selection.remaining and self.paid and not unsure and first != chosen:
            self.world.violations.append(f"a retry limited to {len(chosen)} took {sorted(chosen)}, the longest due "
                                         f"are {sorted(first)}")

    # ------------------------------------------------------------------ interleavings

    def _arm(self, interleave: str, data: st.DataObject, selected: Sequence[Any] = ()) -> None:
        """Another run lands in the middle of this one: at a provider call (a second recorder records
        another token), right before a write (a holder whose lease ran out writes first), or between
        a retry's selection and its recording (a live run, mostly for a token the retry selected)."""
        if interleave == "call":
            other = data.draw(st.sampled_from(self.tokens))
            self.world.on_call = lambda _url, _address: self._second_recorder(other)
        elif interleave == "write":
            flip = data.draw(st.sampled_from(ANSWERS))
            at = data.draw(st.sampled_from(WRITE_MOMENTS))
            later = data.draw(st.sampled_from(LATE_BY))
            calls = self.world.calls

            def late(write: UrlWrite) -> bool:
                if not at.endswith("the first write") and self.world.calls == calls:
                    return False  # waits for the write of a call
                self._late_holder(write.address, write.url, write.fence - 1, flip, later,
                                  own=at.startswith("at the claim"))
                return True

            self.store.armed = late
            self.store.armed_inside = at.startswith("inside")
            self.store.armed_at_claim = at.startswith("at the claim")
        elif interleave == "between":
            chosen = sorted({c.address for c in selected})
            pool = data.draw(st.sampled_from((chosen, self.tokens))) if chosen else self.tokens
            self._second_recorder(data.draw(st.sampled_from(pool)))

    def _second_recorder(self, address: str) -> None:
        STATS["second recorder runs"] += 1
        op = self.world.op
        self.world.op = Op("live", interval=timedelta(minutes=self.live_interval))
        try:
            self._check_token_outcome(self.engine.processor.record(address, address, self._run(Why.LIVE)))
        finally:
            self.world.op = op

    def _late_holder(self, address: str, url: str, fence: int, answer: str, later: timedelta = timedelta(0),
                     paid: bool | None = None, own: bool = False) -> None:
        """A holder whose lease ran out (its `fence` below the current holder's) records `url` for a token
        other than the current holder's `address` (for that very token with `own`: its token lock ran out
        too), `later` than the current holder's moment, with the
        provider now answering `answer` and paid calls on or off as `paid` says (as the machine's, unless
        given: another process's settings), and writes first."""
        holders = [a for a in self.tokens if (a == address) == own and (el := self.store.find_element(a, url))
                   and el.status is not FetchStatus.OK]
        if not holders:
            return
        self.clock.advance(later)
        late = self._engine_on(StaleLocks(fence), self.paid if paid is None else paid)
        STATS["late holder writes"] += 1
        w = self.world
        w.stale = True
        w.stale_answer = None
        before = w.answers.get(url, "ok")
        w.answers[url] = answer  # the provider may have changed its mind in between
        dies, w.dies = w.dies, None  # the current holder may die later; this one does not
        try:
            out = late.recorder.record_url((holders[0], holders[0]), url, self._run(Why.LIVE))
        finally:
            w.stale = False
            w.answers[url] = before
            w.dies = dies
        if isinstance(out.status, FetchStatus):  # the late write landed
            el = self.store.find_element(holders[0], url)
            assert el is not None
            w.stale_written[(holders[0], url)] = el.checked_at
            if w.stale_answer is not None:
                _, at, status, anchored = w.stale_answer
                # The current holder's call of the URL, if one left, is written after this answer.
                w.answered(url, at, status, anchored=anchored, in_flight=not anchored and url in w.op.called)
        w.stale_answer = None

    # ------------------------------------------------------------------ invariants

    def _check_stored(self, write: UrlWrite, out: WriteOutcome) -> None:
        """What the store holds right after a write it applied is what the write said: the URL state's
        fields and status, the element's status, cause and attempts, and its due time by the back-off
        table from this recording (docs/architecture.md, "Back-off: one due time"), and the state's fence at
        least the write's, whatever parts it carried ("Fencing")."""
        if not out.result.applied:
            return
        state, el = self.store.find_url_state(write.url), self.store.find_element(write.address, write.url)
        w = self.world.violations
        if write.state is not None:
            got = _to_ms(table.stored(state)) if state is not None else None
            if got != _to_ms(table.stored(write.state)) or state is None or state.status is not write.state.status:
                w.append(f"{write.url}: the store holds {state!r} after the write of {write.state!r}")
            elif _submitted(state.request) != _submitted(write.state.request):  # carried as submitted, never re-dated
                w.append(f"{write.url}: the store holds the paid request {state.request!r} after the write of "
                         f"{write.state.request!r}")
        if state is not None and state.fence < write.fence:  # "Fencing": no later holder below it may write
            w.append(f"{write.url}: the state's fence is {state.fence} after an applied write with fence {write.fence}")
        timeout = self._rules(write.url).call_timeout
        if state is not None and state.open_call is not None and write.now - state.open_call.started_at >= timeout:
            w.append(f"{write.url}: a recording at {write.now} left the open call of {state.open_call.started_at}, "
                     f"past its timeout, uncounted (the open-call table: counted by the next recording)")
        if el is None:
            w.append(f"{write.address} {write.url}: the element is gone after a write")
            return
        e = write.element
        held = (el.status, el.cause, el.attempts, _ms(el.attempted_at), _ms(el.checked_at), el.fence)
        said = (e.status, e.cause, e.attempts, _ms(e.attempted_at), _ms(e.checked_at), write.fence)
        if held != said:
            w.append(f"{write.address} {write.url}: the store holds {held} after the write of {said} "
                     f"(status, cause, attempts, last attempt, recorded, fence)")
        due = table.element_due(e.checked_at, state, self._rules(write.url))
        if el.due_at is None or as_stored(el.due_at) != as_stored(due):
            w.append(f"{write.address} {write.url}: due at {el.due_at}, the back-off table says {due} "
                     f"(recorded {e.checked_at}, state {state!r})")

    @invariant()
    def a_urls_last_call_never_goes_back(self) -> None:
        """The URL's last call only moves forward (an answer or a timed-out call never dates it back), and
        is never later than the last request the provider received (a recording without a call, or a
        write, never dates it: the engine's moment of a call precedes its request)."""
        seen = self.last_calls
        for url in POOL:
            state = self.store.find_url_state(url)
            at = None if state is None else _ms(state.attempted_at)
            if at is not None and url in seen and at < seen[url]:
                raise AssertionError(f"{url}: its last call went back from {seen[url]} to {at}")
            received = self.world.last_request.get(url)
            if at is not None and (received is None or at > received):
                raise AssertionError(f"{url}: its last call is {at}, the provider's last request came at {received}")
            if at is not None:
                seen[url] = at

    @invariant()
    def a_url_states_fence_never_goes_down(self) -> None:
        for url in POOL:
            state = self.store.find_url_state(url)
            if state is None:
                continue
            seen = self.fences.get(url, 0)
            assert state.fence >= seen, f"{url}: the state's fence went down from {seen} to {state.fence}"
            self.fences[url] = state.fence

    @invariant()
    def a_url_state_written_once_stands_as_the_statuses_say(self) -> None:
        """A URL state written once (its first write: a recording's, or the open call or submission
        recorded before a paid request) stands at what the statuses say at that write: the one record
        of the URL an operator reads, `pending` until a call's result (docs/architecture.md, "Statuses")."""
        for url in POOL:
            state = self.store.find_url_state(url)
            if state is None or state.version != 1 or state.updated_at is None:
                continue
            said = table.url_status(state, state.updated_at, self._rules(url))
            assert state.status is said, f"{url}: its first state stands at {state.status.value}, the statuses say " \
                                         f"{said.value} ({state!r})"

    def _check_token_outcome(self, outcome: Any) -> None:
        """A run that held a token's lock leaves none of its elements pending, unless the URL said why
        (its lock was busy or lost, a backend could not be asked, our own code failed)."""
        for o in outcome.urls:  # our own code failed once a request left: the run says so (a failed URL)
            if (outcome.address, o.url) in self.world.defects and o.status is not EngineOutcome.FAILED:
                self.world.violations.append(f"{o.url}: a defect of ours after a request, reported {o.status}")
        self.world.defects.clear()
        if outcome.status not in (TokenStatus.RECORDED, TokenStatus.UP_TO_DATE):
            return
        excused = {o.url for o in outcome.urls if isinstance(o, UrlOutcome) and isinstance(o.status, EngineOutcome)}
        self.world.violations.extend(counted_converged_unchanged(outcome.urls))
        doc = self.store.find_token(outcome.address)
        assert doc is not None
        left = [el.url for el in doc.social_urls if el.status is FetchStatus.PENDING and el.url not in excused]
        assert not left, f"{outcome.address} left pending after a run that held it: {left}"

    @invariant()
    def nothing_paid_twice_and_no_streak_past_the_budget(self) -> None:
        assert not self.world.violations, self.world.violations

    @invariant()
    def the_budget_counts_each_admitted_request_once(self) -> None:
        """The spend budget's counters hold the new paid requests sent under it, plus the slots of
        holders that died after admission (kept, documented): a request admitted and then not sent by a
        live holder (vetoed) is given back. Summed over the days touched and the day before each, as a
        request admitted a tick before midnight leaves a tick after it."""
        for account in SPEND_PER_DAY:
            expected = {d: n for (a, d), n in (self.world.spent + self.world.kept_slots).items() if a == account}
            days = set(expected) | {d - timedelta(days=1) for d in expected} | {d for a, d in self.world.asked
                                                                               if a == account}
            counted = sum(self.spend.used(account, datetime(d.year, d.month, d.day, 12, tzinfo=T0.tzinfo))["day"]
                          for d in days)
            assert counted == sum(expected.values()), (
                f"{account}: the budget counted {counted} requests, {sum(expected.values())} were admitted "
                f"(sent, or kept by a holder that died after admission) on {sorted(expected.items())}")
            months = {(d.year, d.month) for d in days}
            by_month = sum(self.spend.used(account, datetime(y, m, 15, 12, tzinfo=T0.tzinfo))["month"] for y, m in months)
            assert by_month == sum(expected.values()), (
                f"{account}: the budget's months counted {by_month} requests, {sum(expected.values())} were admitted "
                f"on {sorted(expected.items())}")

    @invariant()
    def the_ledger_holds_the_bill(self) -> None:
        """The spend ledger holds every new paid request the provider billed: those behind recorded
        outcomes, and those whose answer never came once the write removing their open call entered
        them. So what the ledger lacks of the bill is exactly the calls still open on the URL states (a
        dead or paused holder's, each with the paid requests it recorded before sending; a poll of a
        request already paid for is none), never more, never less (docs/architecture.md, "Spend budgets")."""
        totals = self.store.spend_totals()
        ledger = totals.ledger
        for platform, account in ACCOUNTS.items():  # the URL states count what the ledger counts
            assert totals.url_states.get(platform.value, 0) == ledger.get(account, 0), (
                f"{platform.value}: the URL states count {totals.url_states.get(platform.value, 0)} paid request(s), "
                f"the spend ledger {ledger.get(account, 0)}")
        open_calls: Counter[str] = Counter()
        for url in POOL:
            state = self.store.find_url_state(url)
            for call in _carried(None if state is None else state.open_call):
                open_calls[call.provider] += call.requests if call.new_spending else 0
        for account in SPEND_PER_DAY:
            entered, billed, still_open = ledger.get(account, 0), self.world.billed[account], open_calls[account]
            assert entered + still_open == billed, (
                f"{account}: the spend ledger holds {entered} paid request(s) and {still_open} call(s) are still "
                f"open, the provider billed {billed}")
        costs: Counter[str] = Counter()
        unanswered: Counter[str] = Counter()
        for row in self.store.spend_rows("2000-01-01"):
            costs[row.account] += row.cost_usd
            unanswered[row.account] += row.unanswered
        for account in SPEND_PER_DAY:  # each at its account's price
            assert abs(costs[account] - ledger.get(account, 0) * UNIT_PRICES[account]) < 1e-9, (
                f"{account}: the spend ledger's cost is {costs[account]}, {ledger.get(account, 0)} request(s) at "
                f"{UNIT_PRICES[account]}")
            # Those entered with the outcome or submission that answered them are the answered ones; the
            # rest came in as calls whose answer never came (removed open calls).
            answered = self.store.entered_answered[account]
            assert ledger.get(account, 0) - unanswered[account] == answered, (
                f"{account}: the spend ledger holds {ledger.get(account, 0)} request(s), {unanswered[account]} of "
                f"them unanswered, but the applied writes entered {answered} with their answers")

    @invariant()
    def ok_never_changes(self) -> None:
        for address in self.tokens:
            doc = self.store.find_token(address)
            if doc is None:
                continue
            for el in doc.social_urls:
                key = (address, el.url)
                links = [link.shape() for link in self.store.find_links(address, el.url)]
                if key in self.ok_seen:
                    assert el.status is FetchStatus.OK, f"{key} was ok, now {el.status.value}"
                    assert links == self.ok_seen[key], f"{key}: the links of an ok element changed"
                elif el.status is FetchStatus.OK:
                    self.ok_seen[key] = links

    @invariant()
    def holders_recorded_in_one_window_agree(self) -> None:
        now = self.clock()
        for url in POOL:
            if _platform(url) is Platform.TELEGRAM:
                continue  # never reused: each holder keeps its own call's answer
            state = self.store.find_url_state(url)
            if state is None or state.answer is None:
                continue
            if state.answered_at is not None and now - state.answered_at >= DEDUPE_TTL:
                continue
            since = state.answered_at if state.answered_at is not None else self.world.unanchored(url)
            for address in self.tokens:
                el = self.store.find_element(address, url)
                if el is None or el.status not in REUSABLE or el.checked_at is None:
                    continue
                if self.world.stale_written.get((address, url)) == el.checked_at:
                    continue  # a late holder's own answer, written in the in-flight window (documented)
                if since is None or el.checked_at >= since:
                    assert el.status is state.answer, (
                        f"{address} holds {el.status.value} for {url}, recorded {el.checked_at}, but the "
                        f"window's answer since {since} is {state.answer.value}")
                if el.status is FetchStatus.OK and state.answer is FetchStatus.OK:
                    assert self.store.find_links(address, url), f"{address}: ok for {url} without links"

    @invariant()
    def the_windows_best_answer_stands(self) -> None:
        """Every answer the provider gave within the TTL is matched or beaten by the URL's answer."""
        now = self.clock()
        for url, given in self.world.given.items():
            if _platform(url) is Platform.TELEGRAM:
                continue
            # The provider's answer is dated a few ticks after the engine's moment of the call (its anchor):
            # a millisecond's margin, as the clock lands exactly on the window's end.
            recent = [(a, anchored) for t, a, anchored in given if now - t < DEDUPE_TTL - timedelta(milliseconds=1)]
            if not recent:
                continue
            state = self.store.find_url_state(url)
            assert state is not None and state.answer is not None, f"{url}: answered {recent}, no answer kept"
            best = max((a for a, _ in recent), key=table.rank)
            assert table.rank(state.answer) >= table.rank(best), f"{url}: keeps {state.answer.value}, the window had {best.value}"
            # An answer no call stood behind moves no anchor: one a fresh better answer outranked is gone
            # once that answer's window ends.
            assert not any(anchored for _, anchored in recent) or state.answered_at is None or (
                now - state.answered_at < DEDUPE_TTL), (
                f"{url}: answered within the window, but its answer's anchor {state.answered_at} is stale")

    @invariant()
    def the_streak_counts_only_failed_calls_since_the_last_answer(self) -> None:
        """The budget's counter never holds more failures than the provider really gave since its
        last answer (a late holder's refused write may leave it holding fewer), nor fewer than the budget
        counts (a dead holder's call travels with the record written over it until it is counted)."""
        for url in POOL:
            state = self.store.find_url_state(url)
            if state is not None:
                real = self.world.counted(url)
                counts = live_streak(state, self.clock(), self._rules(url))  # a stored streak past the window has expired
                assert counts <= real, f"{url}: streak {counts}, but {real} failed calls since the last answer"
                # ... and never fewer than the budget must count: those it stored, and the paid calls whose
                # holder died with them open, each counted once it times out (the open-call table).
                now, rules = self.clock(), self._rules(url)
                ends = now if state.open_call is None else max(now, state.open_call.started_at + rules.call_timeout)
                will_count = table.live(table.counted(state, ends, rules), now, rules)
                owed = self.world.budget_streak_at(url, now)
                assert will_count >= owed, (
                    f"{url}: the engine counts {will_count} failed call(s) with its open calls counted, but the "
                    f"budget counts {owed} since the last answer (state {state!r})")

    @invariant()
    def exhausted_only_when_a_streak_spent_the_budget(self) -> None:
        for address in self.tokens:
            doc = self.store.find_token(address)
            for el in doc.social_urls if doc is not None else ():
                key = (address, el.url)
                was = self.exhausted_seen.get(key)
                if el.status is FetchStatus.EXHAUSTED and el.cause is None and was is None:
                    peak = max(self.world.peak_streak.get(el.url, 0), self.streak_at_step_start.get(el.url, 0))
                    assert peak >= self.limits.max_attempts, (
                        f"{key} became exhausted with a streak of {peak} failed calls (budget {self.limits.max_attempts})")
                self.exhausted_seen[key] = el.status if el.status is FetchStatus.EXHAUSTED else None
                if was is not None and el.status is not FetchStatus.EXHAUSTED:
                    self.exhausted_seen.pop(key, None)
        self.world.peak_streak = {}
        self.streak_at_step_start = {url: self.world.counted(url) for url in self.world.streak}

    @precondition(lambda self: len(self.tokens) >= 1)
    @rule()
    def a_stable_world_converges(self) -> None:
        """Freeze the world: repeated default retries, each past the longest back-off, end with nothing due."""
        budgets, self.spend.budgets = self.spend.budgets, {}  # the world is stable: no budget holds it back
        self.world.budgeted = False
        for _ in range(self.limits.max_attempts + 3):
            with self.doing("retry"):  # one operation per run
                self.clock.advance(self.limits.expected.cap + timedelta(minutes=1))
                self.engine.retry.record_selection(self.engine.retry.select_due(), max_workers=1,
                                                   run=self._run(Why.RETRY))
        with self.doing("retry"):
            self.clock.advance(self.limits.expected.cap + timedelta(minutes=1))
            left = self.engine.retry.select_due()
        self.spend.budgets, self.world.budgeted = budgets, True
        assert not left.candidates, [(c.address, c.url, c.status.value, c.detail) for c in left.candidates]


UrlRules.TestCase.settings = settings(
    max_examples=EXAMPLES,
    phases=list(Phase) if SHRINK else [Phase.explicit, Phase.reuse, Phase.generate],
    stateful_step_count=STEPS,
    deadline=None,
    derandomize=os.environ.get("SOCIAL_RECORDING_MODEL_SEED") is None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


class UrlRulesOnMongo(UrlRules):
    """The same machine on the Mongo store over the wire: a database of its own per example on the
    session's Mongo-protocol server (the version compare-and-set, the fences and the merges as the
    server applies them)."""

    server: ClassVar[MongoServer | None] = None

    def _open_store(self) -> Any:
        assert self.server is not None, "set UrlRulesOnMongo.server first"
        self._client = self.server.client()
        self._db_name = f"sr_model_{uuid.uuid4().hex[:12]}"
        return InterleavingMongoStore(self._client, self._db_name)

    def _close_store(self) -> None:
        try:
            self._client.drop_database(self._db_name)
        finally:
            self._client.close()


class UrlRulesOnMongomock(UrlRules):
    """The same machine on the Mongo store's code over mongomock, in process (with MongoDB's
    per-operation atomicity, store/_mongomock.py): the Mongo store's own rules (its fences, its
    fields) at the speed of the SQLite runs."""

    def _open_store(self) -> Any:
        import mongomock

        from social_recording.store._mongomock import SerializedMongomockClient

        client: Any = SerializedMongomockClient(mongomock.MongoClient(tz_aware=True))
        return InterleavingMongoStore(client, f"sr_model_{uuid.uuid4().hex[:12]}")


UrlRulesOnMongomock.TestCase.settings = settings(UrlRules.TestCase.settings, max_examples=MONGOMOCK_EXAMPLES)


class UrlRulesFourAttempts(UrlRules):
    """The same machine with a budget of four failed calls and a cap met at the third wait: the
    back-off's shape past its second wait (its growth, its cap) is then seen by a URL still called;
    spend budgets per month beside those per day; and a live path every 30 minutes, which takes what
    is due within them."""

    limits = FOUR_ATTEMPTS
    per_month = SPEND_PER_MONTH
    live_interval = 30


UrlRulesFourAttempts.TestCase.settings = settings(UrlRules.TestCase.settings, max_examples=max(1, EXAMPLES // 2))


class UrlRulesWithDefaults(UrlRules):
    """The same machine with the settings' defaults (a budget of five calls, a flat back-off): the
    numbers a deployment runs with unless it sets them, checked against the documented ones; and spend
    budgets written with different day and month limits (test_support/url_machine_settings.py)."""

    limits = DEFAULTS
    per_month = SPEND_PER_MONTH


UrlRulesWithDefaults.TestCase.settings = settings(UrlRules.TestCase.settings, max_examples=max(1, EXAMPLES // 2))
