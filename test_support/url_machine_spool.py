"""The answer spool in the model of the per-URL rules (test_support/url_machine_model.py): a paid answer
the store could not take waits in the spool, and the URL's next recording writes it first, for the token
that paid (docs/architecture.md, "No payment without a record").

The rule drives a paid call whose result write the store refuses (a store gone, past any retry), with the
spool writable or not, and, when spooled, a next recording the store may refuse again (deferred), then one
it takes, by the paying token or another holder, a moment, an open call's timeout or a window later. It
checks what the docs promise, not how the engine does it: only an answer is spooled, whole, for the token
that paid; a refused replay keeps the file and sends nothing; the replay is written before any request of
its recording leaves, for the paying token, as the call it was (one more call, dated at that call), and it
closes that call's own record; within the window nothing is paid for the URL again; an unwritable spool
loses the answer, and its open call counts as one failed call. The spend ledger against the bill across it
is the machine's own invariant.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.models import SocialUrl, as_stored
from social_recording.domain.url_machine import Why
from social_recording.domain.urls import Platform
from social_recording.recording.answer_spool import AnswerSpool, SpooledAnswer
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome
from social_recording.store.base import UrlWrite, WriteOutcome

if TYPE_CHECKING:
    from test_support.url_machine_model import World


class StoreGone(OSError):
    """The model's store refusing a URL write for good (gone, not busy: no write retry repeats it)."""

    def __init__(self) -> None:
        super().__init__(errno.EIO, "the model's store is gone")


class ModelSpool(AnswerSpool):
    """The engine's spool on the model's disk; while `broken`, it cannot be written either (its directory
    lies under a file, as a second disk gone)."""

    broken = False

    def put(self, answer: SpooledAnswer) -> bool:
        if not self.broken:
            return super().put(answer)
        blocker = self.directory.parent / "spool-disk-gone"
        blocker.touch()
        kept, self.directory = self.directory, blocker / "spool"
        try:
            return super().put(answer)
        finally:
            self.directory = kept


class StoreAway(sqlite3.OperationalError):
    """The model's store unavailable for now (as SQLite says it: busy, or its disk full): a write retry
    repeats it."""


REFUSALS: dict[str, Callable[[], Exception]] = {
    "gone": StoreGone,
    "busy past the bound": lambda: StoreAway("database is locked"),
    "full past the bound": lambda: StoreAway("database or disk is full"),
}
"""How the store refuses a result: gone (no repeat), or unavailable (busy, its disk full, as SQLite raises
them) for longer than the write's repeats last (docs/architecture.md, "Fencing": past the bound the URL
fails as attempted)."""


@contextmanager
def refusing(store: Any, world: World, url: str, when: Callable[[], bool],
             refusal: str = "gone") -> Iterator[list[UrlWrite]]:
    """The store refuses the first write of `url`'s result made while `when()`, and its every repeat
    (raising REFUSALS[refusal], before changing anything); the refused writes are yielded."""
    refused: list[UrlWrite] = []
    real = store.apply_url_write

    def apply(write: UrlWrite) -> WriteOutcome:
        if write.url == url and ((not refused and when()) or (refused and write is refused[0])):
            if not refused:
                refused.append(write)
            world.read_versions.pop(url, None)  # the write never reached the store's conditional check
            raise REFUSALS[refusal]()
        out: WriteOutcome = real(write)
        return out

    store.apply_url_write = apply
    try:
        yield refused
    finally:
        del store.apply_url_write


@contextmanager
def watching(store: Any, url: str, seen: Callable[[UrlWrite, WriteOutcome], None]) -> Iterator[None]:
    """`seen` is told each write of `url` and its outcome, right after the store applied or refused it."""
    real = store.apply_url_write

    def apply(write: UrlWrite) -> WriteOutcome:
        out: WriteOutcome = real(write)
        if write.url == url:
            seen(write, out)
        return out

    store.apply_url_write = apply
    try:
        yield
    finally:
        del store.apply_url_write


@dataclass
class _Kept:
    """The world's bookkeeping of one URL before a call, put back when its answer is lost."""

    streak: int | None
    budget_streak: int | None
    in_the_answers_instant: int | None
    tied: bool | None
    given: list[Any]
    open_request: Any
    last_recorded_call: Any

    @classmethod
    def of(cls, w: World, url: str) -> _Kept:
        return cls(w.streak.get(url), w.budget_streak.get(url), w.in_the_answers_instant.get(url), w.tied.get(url),
                   list(w.given.get(url, [])), w.open_request.get(url), w.last_recorded_call.get(url))

    def put_back(self, w: World, url: str) -> None:
        for field, value in (("streak", self.streak), ("budget_streak", self.budget_streak),
                             ("in_the_answers_instant", self.in_the_answers_instant), ("tied", self.tied),
                             ("open_request", self.open_request), ("last_recorded_call", self.last_recorded_call)):
            target = getattr(w, field)
            if value is None:
                target.pop(url, None)
            else:
                target[url] = value
        w.given[url] = self.given


SPOOLED_ANSWERS = ("ok", "not_found", "blocked", "ok in two requests")
SPOOLS = ("writable", "writable", "unwritable")
REPLAYS = ("the store takes it", "the store still refuses, then takes it")
REPLAYED_BY = ("the token that paid", "another holder", "a new holder")
BUDGETS = ("lifted", "lifted", "as set")
"""The paid accounts' budgets are small: a busy example has them used up, and nothing is called."""
REPLAYED_LATER = (timedelta(seconds=1), timedelta(minutes=6), timedelta(days=15))
"""When the next recording comes: within the call's open-call timeout, past it, past the reuse window."""


class SpoolRules:
    """The spool's rule, mixed into UrlRules (whose store, world, clock and engines it drives)."""

    spool: ModelSpool
    store: Any
    world: World
    clock: Any
    engines: Any
    tokens: list[str]

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), answer=st.sampled_from(SPOOLED_ANSWERS), spool=st.sampled_from(SPOOLS),
          replay=st.sampled_from(REPLAYS), by=st.sampled_from(REPLAYED_BY), later=st.sampled_from(REPLAYED_LATER),
          budgets=st.sampled_from(BUDGETS), paid=st.sampled_from((True, True, False)),
          refusal=st.sampled_from(tuple(REFUSALS)))
    def a_paid_answer_the_store_cannot_take(self, data: st.DataObject, answer: str, spool: str, replay: str, by: str,
                                            later: timedelta, budgets: str, paid: bool, refusal: str = "gone") -> None:
        """A holder's paid call answers and the store refuses its result write for good: the answer waits
        in the spool (or is lost, the spool unwritable too) and the URL's next recording writes it first
        (docs/architecture.md, "No payment without a record"), whether that run may pay or not. The spend
        budgets are lifted, or hold."""
        m: Any = self
        kept_budgets = m.spend.budgets
        if budgets == "lifted":  # as while a stable world converges: the model counts no budget then
            m.spend.budgets, self.world.budgeted = {}, False
        try:
            self._a_refused_answer(data, answer, spool, replay, by, later, paid, refusal)
        finally:
            m.spend.budgets, self.world.budgeted = kept_budgets, True

    def _a_paid_call(self, data: st.DataObject) -> tuple[str, str] | None:
        """A token's element of a paid URL, with the clock where a live run calls it: a callable one, else
        a new holder's (its token not recorded yet), past the window's answer if need be."""
        from test_support.url_machine_model import DEDUPE_TTL, POOL, TICK, _paid

        m: Any = self
        picked: tuple[str, str] | None = m._paid_and_callable(data, (Platform.X, Platform.WEB))
        if picked is not None:
            return picked
        url = data.draw(st.sampled_from([u for u in POOL if _paid(u)]))
        when = m._callable_at(SocialUrl(url=url))
        state = self.store.find_url_state(url)
        if when is None and state is not None and state.answered_at is not None:
            self.clock.set(max(self.clock(), state.answered_at + DEDUPE_TTL + TICK))
            when = m._callable_at(SocialUrl(url=url))
        if when is None:
            return None
        self.clock.set(max(self.clock(), when))
        m.new_token([url])
        return self.tokens[-1], url

    def _record(self, address: str, url: str, paid: bool = True) -> UrlOutcome:
        """A live run of `address` records `url` (paid calls on or off): a token not recorded yet is created
        and recorded whole (its one URL), as the live path does."""
        m: Any = self
        run = m._run(Why.LIVE)
        if self.store.find_element(address, url) is not None:
            return self.engines[paid].recorder.record_url((address, address), url, run)  # type: ignore[no-any-return]
        out = self.engines[paid].processor.record(address, address, run)
        m._check_token_outcome(out)
        mine = [o for o in out.urls if isinstance(o, UrlOutcome) and o.url == url]
        assert mine, f"{address}'s first recording did not record {url}: {out!r}"
        return mine[0]

    def _a_refused_answer(self, data: st.DataObject, answer: str, spool: str, replay: str, by: str,
                          later: timedelta, paid: bool, refusal: str = "gone") -> None:
        """The rule's body: the call whose result the store refuses, what it left, then the replays."""
        from test_support.url_machine_model import STATS

        m: Any = self
        picked = self._a_paid_call(data)
        STATS["spool: the rule drawn"] += 1
        if picked is None:
            return
        address, url = picked
        w = self.world
        w.answers[url] = answer
        kept, submissions = _Kept.of(w, url), w.submissions
        received = w.last_request.get(url)
        started = self.clock()
        self.spool.broken = spool == "unwritable"
        try:
            with m.doing("live"), refusing(self.store, w, url, lambda: w.last_request.get(url) != received,
                                                refusal) as refused:
                outcome = self._record(address, url)
        finally:
            self.spool.broken = False
        STATS[f"spool: a call ended {outcome.status}, its write {'refused' if refused else 'not refused'}"] += 1
        if not refused:  # no request left, or no result to write: nothing refused
            return
        given = w.given.get(url, [])
        answered = len(given) > len(kept.given) and given[-1][2]
        spooled = self.spool.find(url)
        v = w.violations
        if outcome.status is not EngineOutcome.FAILED or not outcome.attempted:
            v.append(f"{url}: the store refused the result of a call, yet the URL ends {outcome.status} "
                     f"(attempted: {outcome.attempted}), not a failed, attempted one")
        held = self.store.find_url_state(url)
        own = None if held is None or held.open_call is None or held.open_call.started_at < as_stored(started) else (
            held.open_call)  # the record this call made before it left (a two-step one's was replaced by its request)
        if not answered or spool == "unwritable":
            if spooled is not None:
                v.append(f"{url}: {'a failed call' if not answered else 'an answer the spool could not take'} "
                         f"left a spooled answer {spooled!r}")
            STATS["spool: a paid answer lost (the spool unwritable too)"] += int(answered)
            self._unwritten(url, given[-1][0] if answered else w.last_failed.get(url), kept, own,
                            answered=answered, fresh=w.submissions > submissions)
            return
        at, status = given[-1][0], given[-1][1]
        if spooled is None or spooled.address != address or spooled.status is not status or not (
                started <= spooled.called_at <= at):
            v.append(f"{url}: the answer {status.value} paid by {address} at {at} (its recording from {started}) "
                     f"was spooled as {spooled!r}")
            return
        STATS["spool: a paid answer spooled"] += 1
        holders = {a: self.store.find_element(a, url) for a in self.tokens}
        if replay == "the store still refuses, then takes it":
            self._refused_again(url, data, holders, held, refusal)
        self.clock.set(max(self.clock(), at + later))
        if by == "a new holder":
            m.new_token([url])
        candidates = [a for a in self.tokens if self.store.find_element(a, url) is not None and (
            by == "another holder" and a != address or by != "another holder")]
        holder = (address if by == "the token that paid" else self.tokens[-1] if by == "a new holder"
                  else data.draw(st.sampled_from(candidates)) if candidates else address)
        self._replayed(url, holder, spooled, holders[address], held, own, later, paid)

    def _unwritten(self, url: str, at: datetime | None, kept: _Kept, own: Any, *, answered: bool, fresh: bool) -> None:
        """The call's result never reached the store (a failed call, or an answer the spool could not take
        either): the world had it recorded, so the URL's bookkeeping is put back; what stays is the call's
        own record, counted as one failed call once it times out (a one-step call, a resumed poll), or a
        fresh two-step submission, saved, which the next holder polls."""
        w = self.world
        still_open = w.open_request.get(url)
        kept.put_back(w, url)
        if not answered:  # a failed call closes no request
            if still_open is None:
                w.open_request.pop(url, None)
            else:
                w.open_request[url] = still_open
        elif fresh:
            state = self.store.find_url_state(url)
            if state is None or state.request is None:
                w.violations.append(f"{url}: its paid submission's answer was lost, and the submission is not "
                                    f"kept to poll ({state!r})")
            else:
                w.open_request[url] = state.request.submitted_at
        if own is not None and at is not None:
            w.failed(url, at, budgeted=True)

    def _refused_again(self, url: str, data: st.DataObject, holders: dict[str, Any], held: Any,
                       refusal: str = "gone") -> None:
        """The next recording meets the store still refusing: the spooled answer stays, nothing is sent,
        nothing changes."""
        from test_support.url_machine_model import STATS

        m: Any = self
        w = self.world
        holder = data.draw(st.sampled_from([a for a, el in holders.items() if el is not None]))
        self.clock.advance(timedelta(minutes=1))
        last = w.last_request.get(url)
        with m.doing("live") as op, refusing(self.store, w, url, lambda: True, refusal) as refused:
            outcome = self._record(holder, url)
            sent = op.paid_sent
        STATS["spool: a replay the store refused again"] += int(bool(refused))
        after = {a: self.store.find_element(a, url) for a in holders}
        if (not refused or outcome.status is not EngineOutcome.DEFERRED or sent or w.last_request.get(url) != last
                or self.spool.find(url) is None or self.store.find_url_state(url) != held or after != holders):
            w.violations.append(f"{url}: recorded by {holder} while its spooled answer waits and the store still "
                                f"refuses: {outcome.status} ({outcome.detail}); {sent} paid request(s) sent, "
                                f"the spool holds {self.spool.find(url)!r}; the state was {held!r}, is "
                                f"{self.store.find_url_state(url)!r}")

    def _replayed(self, url: str, holder: str, spooled: SpooledAnswer, paid_el: Any, held: Any, own: Any,
                  later: timedelta, paid: bool) -> None:
        """The next recording writes the spooled answer first: for the token that paid, before any request
        leaves, as the call it was (one more call, dated at that call, the URL's last one), closing the
        call's own record; the spool is emptied; within the window nothing is paid for the URL again."""
        from test_support.url_machine_model import DEDUPE_TTL, STATS, _carried, _ms

        m: Any = self
        w = self.world
        last = w.last_request.get(url)
        first: list[tuple[UrlWrite, WriteOutcome, Any, Any, Any]] = []

        def seen(write: UrlWrite, out: WriteOutcome) -> None:
            if not first:
                first.append((write, out, self.store.find_url_state(url),
                              self.store.find_element(spooled.address, url), w.last_request.get(url)))

        with m.doing("live") as op, watching(self.store, url, seen):
            outcome = self._record(holder, url, paid)
            sent = op.paid_sent
        STATS["spool: a spooled answer written by the next recording"] += 1
        v = w.violations
        if self.spool.find(url) is not None:
            v.append(f"{url}: its spooled answer is still in the spool after {holder}'s recording ({outcome.detail})")
        if not first:
            v.append(f"{url}: {holder}'s recording wrote nothing while an answer waited in the spool ({outcome.detail})")
            return
        write, out, state, el, received = first[0]
        said = f"{url}: the spooled answer {spooled.status.value} paid by {spooled.address} at {spooled.called_at}"
        if write.address != spooled.address or not out.result.applied:
            v.append(f"{said}: the first write of {holder}'s recording is {write.address}'s, {out.result.value}")
            return
        if received != last:
            v.append(f"{said}: a request left (at {received}) before it was written")
        called_at = _ms(spooled.called_at)
        if el is None or (el.attempts, _ms(el.attempted_at)) != (paid_el.attempts + 1, called_at):
            v.append(f"{said}: the paying element holds (calls, last call) "
                     f"{None if el is None else (el.attempts, el.attempted_at)}, it held {paid_el.attempts} before: "
                     f"one more call, made at {called_at}")
        if state is None or state.attempts < (0 if held is None else held.attempts) + 1 or (
                _ms(state.attempted_at) != called_at):
            v.append(f"{said}: the URL state holds {state!r} after it (before: {held!r}): one more call, the last "
                     f"at {called_at}")
        if own is not None and state is not None and own in _carried(state.open_call):
            v.append(f"{said}: its own call's record {own!r} stays open after it")
        if later < DEDUPE_TTL and sent:
            v.append(f"{said}: {sent} paid request(s) sent by {holder}'s recording {later} later, in the answer's window")
