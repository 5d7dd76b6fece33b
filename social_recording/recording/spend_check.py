"""The spend budget's one check in the recording path: right before a new paid request is sent, the
shared budget is asked (docs/architecture.md, "Spend budgets").

Why an observer around the call's own (`call_guard.LeaseGuard`): only the code that hands a request to
the transport knows it is about to leave, and a request's budget must be taken then — not before
`generate()`, which may need no paid request at all. The budget is asked first, before any record
of the request is made; a poll of a request this call already submitted or resumed (urlscan's result
reads, on the paid client) is not new spending and is never held back. The observer also counts the
new paid requests that left, for the spend ledger line written with the call's outcome. A request
the budget admitted and the call guard then vetoed (the URL lock lost, the call not recordable) is
given back to the budget: nothing left for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from social_recording.domain.spend import BudgetReached
from social_recording.locks.spend_budget import SpendBudgets, SpendCounterUnavailable
from social_recording.outbound.observe import CallVetoed, RequestObserver
from social_recording.platforms.catalogue import CATALOGUE

log = logging.getLogger("social_recording.recording")

POLLS_ON_PAID_CLIENT: frozenset[str] = frozenset(a.name for a in CATALOGUE.accounts() if a.paid_polls)
"""Accounts whose two-step call polls on the paid client: there a paid request made while the call
holds an open request is a poll."""


class SpendHeld(CallVetoed):
    """A new paid request was not sent: its budget is used up (`reached`), or the budget's counter
    could not be asked (`reached` is None). Nothing was sent for it."""

    def __init__(self, detail: str, reached: BudgetReached | None = None) -> None:
        super().__init__(detail)
        self.reached = reached


class SpendGuard:
    """A RequestObserver: asks `budgets` before each new paid request, then hands over to `inner`.

    `holds_open()` says whether the call holds a submitted or resumed paid request (its polls are
    not new spending). `new_paid` counts the new paid requests handed to the transport."""

    def __init__(self, inner: RequestObserver, budgets: SpendBudgets | None, holds_open: Callable[[], bool]) -> None:
        self._inner = inner
        self._budgets = budgets
        self._holds_open = holds_open
        self._lock = threading.Lock()
        self._new = threading.local()
        self.new_paid = 0

    def is_new_spending(self, service: str, paid: bool) -> bool:
        return paid and not (service in POLLS_ON_PAID_CLIENT and self._holds_open())

    def before_request(self, *, service: str, paid: bool) -> None:
        new = self.is_new_spending(service, paid)
        taken_at = None
        if new and self._budgets is not None and self._budgets.bounds(service):
            taken_at = self._budgets.now()
            try:
                reached = self._budgets.take(service, taken_at)
            except SpendCounterUnavailable as exc:
                raise SpendHeld(f"{service}: not sent, {exc}") from None
            if reached is not None:
                raise SpendHeld(str(reached), reached)
        try:
            self._inner.before_request(service=service, paid=paid)
        except CallVetoed:
            if taken_at is not None:
                self._give_back(service, taken_at)
            raise
        self._new.value = new

    def _give_back(self, service: str, taken_at: datetime) -> None:
        """The request was admitted, then vetoed before it left: its slot is the budget's again."""
        assert self._budgets is not None
        try:
            self._budgets.give_back(service, taken_at)
        except SpendCounterUnavailable as exc:  # the slot stays used: the budget errs on spending less
            log.warning("spend budget slot not given back (%s): %s", service, exc)

    def request_sent(self, *, service: str, paid: bool) -> None:
        self._inner.request_sent(service=service, paid=paid)
        if getattr(self._new, "value", False):
            self._new.value = False
            with self._lock:
                self.new_paid += 1
