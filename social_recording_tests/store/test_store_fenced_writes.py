"""Every fenced write refuses a lower fence and changes nothing, on every backend (the `store`
fixture: SQLite, mongomock, the Mongo-protocol server); and a paid call whose answer never came is
entered in the spend ledger once, by the newer holder's write that removes its open call
(docs/architecture.md, "Fencing" and "Spend budgets")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pymongo.errors import AutoReconnect

from social_recording.domain.models import OpenCall, PaidRequest, TokenProfile
from social_recording.domain.spend import SpendLine, SpendRow
from social_recording.domain.status import FetchStatus
from social_recording.recording.store_retry import write_through_outages
from social_recording.store import ElementWrite, MongoStore, Store, UrlWrite, WriteResult
from social_recording.store.base import SpendTotals
from social_recording.store.mongo.schema import URL_STATES
from social_recording_tests.store._seed import url_write
from social_recording_tests.store.conftest import Backend

T0 = datetime(2026, 12, 3, 23, 58, 0, 250000, tzinfo=UTC)
T1 = T0 + timedelta(minutes=1)
T2 = T0 + timedelta(minutes=10)  # the next UTC day
U_X = "https://x.com/i/status/1"
PRICE = 0.00015
HIGH, LOW = 20, 19


def _token(store: Store) -> None:
    store.create_pending_token(TokenProfile(address="A", symbol="C", urls=[U_X]), now=T0)


def _call(fence: int, at: datetime = T1) -> OpenCall:
    return OpenCall(provider="twitterapi", subject=U_X, started_at=at, fence=fence, unit_price_usd=PRICE)


def _paid(write: UrlWrite, n: int = 1) -> UrlWrite:
    return replace(write, spend=SpendLine("twitterapi", "2026-12-03", n, n * PRICE))


def _everything(store: Store) -> tuple[object, ...]:
    return (store.find_element("A", U_X), store.find_url_state(U_X), store.spend_rows("2026-01-01"),
            store.spend_totals())


LOWER_FENCE_WRITES: dict[str, Callable[[Store], object]] = {
    "open call": lambda s: s.save_open_call(U_X, "x", LOW, _call(LOW)),
    "paid request": lambda s: s.save_paid_request(U_X, "x", LOW, PaidRequest(provider="twitterapi", request_id="r",
                                                                             submitted_at=T1)),
    "URL write": lambda s: s.apply_url_write(url_write("A", U_X, LOW, FetchStatus.NOT_FOUND, T1, attempts=2)).result,
    "element write": lambda s: s.apply_url_write(UrlWrite("A", U_X, "x", LOW, T1, ElementWrite(
        FetchStatus.SKIPPED_PAID, 1, T0, T1))).result,
    "spend": lambda s: s.apply_url_write(_paid(url_write("A", U_X, LOW, FetchStatus.OK, T1, attempts=2), 3)).result,
}


@pytest.mark.parametrize("kind", list(LOWER_FENCE_WRITES))
def test_every_fenced_write_refuses_a_lower_fence_and_changes_nothing(store: Store, kind: str) -> None:
    _token(store)
    recorded = _paid(url_write("A", U_X, HIGH, FetchStatus.ERROR, T0))
    assert store.apply_url_write(recorded).result is WriteResult.APPLIED
    assert store.save_open_call(U_X, "x", HIGH, _call(HIGH)) is WriteResult.APPLIED
    before = _everything(store)
    assert LOWER_FENCE_WRITES[kind](store) is WriteResult.FENCED
    assert _everything(store) == before


@pytest.mark.parametrize("kind", ["open call", "paid request"])
def test_a_paid_call_write_refuses_a_lower_fence_left_by_another_tokens_write(store: Store, kind: str) -> None:
    """The URL state's fence alone refuses it: no element of the writer is involved."""
    _token(store)
    assert store.apply_url_write(url_write("A", U_X, HIGH, FetchStatus.ERROR, T0)).result is WriteResult.APPLIED
    before = _everything(store)
    assert LOWER_FENCE_WRITES[kind](store) is WriteResult.FENCED
    assert _everything(store) == before


# ------------------------------------------------------------------------- unanswered paid calls

REMOVALS: dict[str, Callable[[Store, int], WriteResult]] = {
    "another open call over it": lambda s, f: s.save_open_call(U_X, "x", f, _call(f, T2)),
    "a resumed paid request over it": lambda s, f: s.save_paid_request(
        U_X, "x", f, PaidRequest(provider="twitterapi", request_id="r2", submitted_at=T2)),
    "a URL write clearing it": lambda s, f: s.apply_url_write(url_write("A", U_X, f, FetchStatus.ERROR, T2,
                                                                        attempts=2)).result,
}


@pytest.mark.parametrize("how", list(REMOVALS))
def test_a_dead_holders_open_call_is_entered_as_spent_once_by_the_write_that_removes_it(
    store: Store, how: str
) -> None:
    _token(store)
    assert store.save_open_call(U_X, "x", 5, _call(5)) is WriteResult.APPLIED  # its holder died after this
    assert store.spend_rows("2026-01-01") == []
    assert REMOVALS[how](store, 6) is WriteResult.APPLIED
    # On the day it left, at its price, flagged unanswered; the URL state counts it too.
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 1, pytest.approx(PRICE), 1)]
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})
    # Written again (a retried write, the same holder's result), it is not entered twice.
    assert REMOVALS[how](store, 6) is WriteResult.APPLIED
    assert store.apply_url_write(url_write("A", U_X, 6, FetchStatus.ERROR, T2, attempts=3)).result.applied
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})


@pytest.mark.parametrize("how", list(REMOVALS))
def test_a_dead_holders_call_of_two_paid_requests_is_entered_as_both(store: Store, how: str) -> None:
    """A call that reads its answer from two paid requests records its count again before the second
    leaves (the same holder, the same fence, over its own record: nothing entered then); its holder dies,
    and the write that removes its record enters both requests, as billed."""
    _token(store)
    first = _call(5)
    assert store.save_open_call(U_X, "x", 5, first) is WriteResult.APPLIED
    assert store.save_open_call(U_X, "x", 5, first.model_copy(update={"requests": 2})) is WriteResult.APPLIED
    assert store.spend_rows("2026-01-01") == []
    assert REMOVALS[how](store, 6) is WriteResult.APPLIED
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 2, pytest.approx(2 * PRICE), 2)]
    assert store.spend_totals() == SpendTotals({"twitterapi": 2}, {"x": 2})


def test_a_holders_own_result_and_writes_that_keep_or_are_refused_enter_nothing(store: Store) -> None:
    _token(store)
    mine = _call(5)
    assert store.save_open_call(U_X, "x", 5, mine) is WriteResult.APPLIED
    # A zero-call write (no URL state written) leaves the open call where it is.
    assert store.apply_url_write(UrlWrite("A", U_X, "x", 6, T1, ElementWrite(FetchStatus.ERROR, 0, None, T1))).result \
        is WriteResult.APPLIED
    state = store.find_url_state(U_X)
    assert state is not None and state.open_call == mine
    # A newer holder's state write that keeps it (the call may still answer) enters nothing.
    keeps = url_write("A", U_X, 7, FetchStatus.ERROR, T1)
    assert store.apply_url_write(replace(keeps, state=replace(keeps.state, open_call=mine))).result.applied
    # A stale write that would clear it is refused, and enters nothing either.
    assert store.apply_url_write(url_write("A", U_X, 5, FetchStatus.OK, T1)).result is WriteResult.FENCED
    assert store.spend_rows("2026-01-01") == []
    # Its own holder's result closes it with the call's own spend line: one request, answered.
    other = OpenCall(provider="twitterapi", subject=U_X, started_at=T1, fence=8, unit_price_usd=PRICE)
    assert store.save_open_call(U_X, "x", 8, other) is WriteResult.APPLIED  # over `mine`: entered as unanswered
    assert store.apply_url_write(_paid(url_write("A", U_X, 8, FetchStatus.OK, T1, attempts=2))).result.applied
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 2, pytest.approx(2 * PRICE), 1)]
    assert store.spend_totals() == SpendTotals({"twitterapi": 2}, {"x": 2})


def test_a_record_written_over_a_timed_out_call_keeps_it_and_the_write_that_removes_both_enters_each_once(
    store: Store,
) -> None:
    """The next holder's record carries the dead holder's timed-out call (`OpenCall.replaced`) so its
    count outlives that holder too: stored and read back whole, kept by the holder's own saved
    submission, and entered as spent, each call once, by the newer holder's write that removes them."""
    _token(store)
    dead = _call(5)
    assert store.save_open_call(U_X, "x", 5, dead) is WriteResult.APPLIED
    mine = _call(6, T2).model_copy(update={"replaced": dead})
    assert store.save_open_call(U_X, "x", 6, mine) is WriteResult.APPLIED
    state = store.find_url_state(U_X)
    assert state is not None and state.open_call == mine and state.open_call.replaced == dead
    assert store.spend_rows("2026-01-01") == [], "kept in the record: not removed yet"
    request = PaidRequest(provider="twitterapi", request_id="r6", submitted_at=T2)
    assert store.save_paid_request(U_X, "x", 6, request, kept=dead) is WriteResult.APPLIED  # its holder's submission
    state = store.find_url_state(U_X)
    assert state is not None and state.open_call == dead and state.request is not None
    assert store.spend_rows("2026-01-01") == [], "its holder's own record is not another's unanswered call"
    assert store.save_open_call(U_X, "x", 7, mine) is WriteResult.APPLIED  # (a record kept whole: nothing)
    assert store.spend_rows("2026-01-01") == []
    assert store.apply_url_write(url_write("A", U_X, 8, FetchStatus.ERROR, T2, attempts=3)).result.applied
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 1, pytest.approx(PRICE), 1),
                                              SpendRow("twitterapi", "2026-12-04", 1, pytest.approx(PRICE), 1)]
    assert store.spend_totals() == SpendTotals({"twitterapi": 2}, {"x": 2})


def test_a_dead_holders_poll_of_a_paid_request_counts_as_a_call_but_is_not_entered_as_spent(store: Store) -> None:
    """A resumed two-step call polls a request already paid for: its open call (`new_spending` false)
    is stored and read back as such, and the write that removes it enters nothing; the submission's
    own open call beside it (replaced) is entered once."""
    _token(store)
    submitted = _call(5)
    poll = _call(6, T2).model_copy(update={"replaced": submitted, "new_spending": False})
    assert store.save_open_call(U_X, "x", 6, poll) is WriteResult.APPLIED
    state = store.find_url_state(U_X)
    assert state is not None and state.open_call == poll and state.open_call.new_spending is False
    assert state.open_call.replaced is not None and state.open_call.replaced.new_spending is True
    assert store.apply_url_write(url_write("A", U_X, 7, FetchStatus.ERROR, T2, attempts=3)).result.applied
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 1, pytest.approx(PRICE), 1)]
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})


def test_a_saved_submission_enters_its_requests_with_it_and_a_refused_one_enters_nothing(store: Store) -> None:
    """The write that saves a submitted two-step request in place of its holder's open call enters the
    requests that paid for it (its holder may die right after: nobody else could), in the same write;
    one refused by a newer fence enters nothing."""
    _token(store)
    assert store.save_open_call(U_X, "x", 5, _call(5)) is WriteResult.APPLIED
    request = PaidRequest(provider="twitterapi", request_id="r5", submitted_at=T1)
    line = SpendLine("twitterapi", "2026-12-03", 1, PRICE)
    assert store.save_paid_request(U_X, "x", 5, request, spend=line) is WriteResult.APPLIED
    state = store.find_url_state(U_X)
    assert state is not None and state.open_call is None and state.request is not None
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 1, pytest.approx(PRICE))]
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})
    assert store.save_paid_request(U_X, "x", 4, request, spend=line) is WriteResult.FENCED
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})


class _AckLostOnce:
    """A Mongo database whose URL states' first `find_one_and_update` is applied by the server and its
    acknowledgement lost on the way back (the connection dropped)."""

    def __init__(self, db: Any) -> None:
        self._db, self.lost = db, 0

    def __getitem__(self, name: str) -> Any:
        coll = self._db[name]
        if name != URL_STATES or self.lost:
            return coll
        outer = self

        class Collection:
            def __getattr__(self, attr: str) -> Any:
                return getattr(coll, attr)

            def find_one_and_update(self, *args: Any, **kwargs: Any) -> Any:
                coll.find_one_and_update(*args, **kwargs)
                outer.lost += 1
                raise AutoReconnect("connection closed before the reply")

        return Collection()


@pytest.mark.parametrize("backend", ["mongomock", pytest.param("mongo", marks=pytest.mark.mongo_server)],
                         indirect=True)
def test_a_saved_submission_repeated_after_its_acknowledgement_was_lost_is_entered_once(backend: Backend) -> None:
    """Without multi-document transactions, the Mongo store saves a submission, then enters its
    requests. When the server applied the save but the reply was lost, the engine repeats the save
    (write_through_outages): the repeat must not move the state's count again, and must enter the
    ledger's line the failed save never reached."""
    store = backend.store
    assert isinstance(store, MongoStore)
    _token(store)
    assert store.save_open_call(U_X, "x", 5, _call(5)) is WriteResult.APPLIED
    request = PaidRequest(provider="twitterapi", request_id="r5", submitted_at=T1)
    line = SpendLine("twitterapi", "2026-12-03", 1, PRICE)
    flaky = _AckLostOnce(store.db)
    store.db = flaky
    assert write_through_outages(lambda: store.save_paid_request(U_X, "x", 5, request, spend=line),
                                 what="paid_request", url=U_X, retry_s=30, sleep=lambda s: None) is WriteResult.APPLIED
    assert flaky.lost == 1
    state = store.find_url_state(U_X)
    assert state is not None and state.request == request and state.open_call is None
    assert store.spend_rows("2026-01-01") == [SpendRow("twitterapi", "2026-12-03", 1, pytest.approx(PRICE))]
    assert store.spend_totals() == SpendTotals({"twitterapi": 1}, {"x": 1})
