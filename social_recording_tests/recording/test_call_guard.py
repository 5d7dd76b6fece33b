"""The memory of two-step paid calls (recording/call_guard.py): which paid call's record is new
spending (docs/architecture.md, "Spend budgets": "never a poll of a request already paid for").

A resumed call polls a request already paid for: no new spending when its account polls on its paid
client (urlscan). An account that polls on a free client (Apify) sends a paid request under a resumed
call only when the resumed run is gone and a new one starts: that is a new payment, entered if its
answer never comes. The model test cannot tell these apart (its two-step account polls on its paid
client), so they are pinned here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from social_recording.domain.models import OpenCall, PaidRequest
from social_recording.locks.base import Lease
from social_recording.recording.call_guard import StoredPaidRequests
from social_recording.recording.spend_check import POLLS_ON_PAID_CLIENT
from social_recording.store.base import WriteResult

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)
URL = "https://www.tiktok.com/@someone/video/1"


class _Records:
    """The URL state's open call, as the store keeps it: every save applied."""

    def __init__(self) -> None:
        self.saved: list[OpenCall] = []

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> WriteResult:
        self.saved.append(call)
        return WriteResult.APPLIED

    def save_paid_request(self, *args: Any, **kwargs: Any) -> WriteResult:
        return WriteResult.APPLIED


def _resumed_then_paid(provider: str) -> OpenCall:
    """An attempt resumes `provider`'s saved request, then records a paid request of its call."""
    records = _Records()
    requests = StoredPaidRequests(records, URL, "tiktok", Lease("social-url:" + URL, "me", held=True, fence=7),
                                  PaidRequest(provider=provider, request_id="run-1", submitted_at=T0),
                                  clock=lambda: T0 + timedelta(hours=1))
    assert requests.previous(provider, timedelta(days=7)) == "run-1"
    requests.open_call(provider)
    return records.saved[-1]


def test_a_resumed_call_on_an_account_polling_on_a_free_client_pays_anew() -> None:
    """Apify: its reads are free, so a paid request under a resumed call starts a new run (the resumed
    one gone): new spending, entered as spent if it never answers."""
    assert "apify" not in POLLS_ON_PAID_CLIENT
    assert _resumed_then_paid("apify").new_spending is True


@pytest.mark.parametrize("provider", sorted(POLLS_ON_PAID_CLIENT))
def test_a_resumed_call_on_an_account_polling_on_its_paid_client_is_a_poll(provider: str) -> None:
    """urlscan: its paid client polls the request already paid for: no new spending."""
    assert _resumed_then_paid(provider).new_spending is False
