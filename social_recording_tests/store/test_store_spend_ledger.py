"""The spend ledger on every backend: moved by the write that records a call, never by a refused one,
and the same paid requests counted on the URL state (docs/architecture.md, "Spend budgets")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.models import TokenProfile
from social_recording.domain.spend import SpendLine, SpendRow
from social_recording.domain.status import FetchStatus
from social_recording.store import Store, WriteResult
from social_recording.store.base import SpendTotals, UrlWrite
from social_recording_tests.store._seed import next_fence, url_write

T0 = datetime(2026, 12, 3, 23, 59, 0, tzinfo=UTC)
U_X = "https://x.com/i/status/1"
U_X2 = "https://x.com/i/status/2"


def _token(store: Store, address: str, urls: list[str]) -> None:
    store.create_pending_token(TokenProfile(address=address, symbol="C", urls=urls), now=T0)


def _paid(write: UrlWrite, n: int, day: str) -> UrlWrite:
    return replace(write, spend=SpendLine("twitterapi", day, n, n * 0.00015))


def test_the_write_that_records_a_call_moves_the_ledger_and_the_url_state(store: Store) -> None:
    _token(store, "A", [U_X, U_X2])
    first = store.apply_url_write(_paid(url_write("A", U_X, next_fence(), FetchStatus.OK, T0), 1, "2026-12-03"))
    assert first.result is WriteResult.APPLIED
    store.apply_url_write(_paid(url_write("A", U_X2, next_fence(), FetchStatus.ERROR, T0), 2, "2026-12-03"))
    later = T0 + timedelta(minutes=2)
    state = store.find_url_state(U_X2)
    assert state is not None
    again = replace(url_write("A", U_X2, next_fence(), FetchStatus.ERROR, later, attempts=2),
                    expect_version=state.version)
    store.apply_url_write(_paid(again, 1, "2026-12-04"))
    rows = store.spend_rows("2026-12-01")
    assert [(r.account, r.day, r.requests) for r in rows] == [("twitterapi", "2026-12-03", 3),
                                                              ("twitterapi", "2026-12-04", 1)]
    assert rows[0].cost_usd == pytest.approx(3 * 0.00015)
    assert store.spend_rows("2026-12-04") == [SpendRow("twitterapi", "2026-12-04", 1, pytest.approx(0.00015))]
    assert store.spend_totals() == SpendTotals({"twitterapi": 4}, {"x": 4})


def test_a_refused_write_moves_neither(store: Store) -> None:
    _token(store, "A", [U_X])
    older = next_fence()  # a holder overtaken by `newer`
    newer = next_fence()
    store.apply_url_write(url_write("A", U_X, newer, FetchStatus.ERROR, T0))
    refused = store.apply_url_write(_paid(url_write("A", U_X, older, FetchStatus.OK, T0), 1, "2026-12-03"))
    assert refused.result is WriteResult.FENCED
    stale = store.apply_url_write(replace(_paid(url_write("A", U_X, next_fence(), FetchStatus.OK, T0), 1,
                                                "2026-12-03"), expect_version=99))
    assert stale.result is WriteResult.STALE
    assert store.spend_rows("2026-01-01") == []
    assert store.spend_totals() == SpendTotals({}, {})


def test_a_spend_line_goes_with_a_url_state() -> None:
    write = url_write("A", U_X, 1, FetchStatus.OK, T0, with_state=False)
    with pytest.raises(ValueError, match="spend line"):
        _paid(write, 1, "2026-12-03")
