"""What the recorder wraps around one `generate()` call: the request observer that counts what really
left and re-checks the URL lock right before each paid request, and the memory of two-step paid calls.

Why the check sits right before the paid send (docs/architecture.md, "Fencing"): a holder can be
paused (GC, swap, SIGSTOP) for longer than its lease at any point; its renewal thread cannot tell it
in time. Asking the lock backend immediately before the request narrows the window in which a
stale holder pays to the time between that answer and the provider receiving the request: a network
hop, or a pause that lands exactly there. No lock closes that window, because the provider does not
take part in our locking; fencing makes sure such a late answer can never overwrite a newer one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from social_recording.domain.models import OpenCall, PaidRequest, as_stored
from social_recording.domain.spend import SpendLine
from social_recording.locks.base import Lease
from social_recording.outbound.observe import CallVetoed
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.spend_check import POLLS_ON_PAID_CLIENT
from social_recording.recording.store_retry import WRITE_RETRY_S, write_through_outages
from social_recording.store.base import PaidRequestStore

UNIT_PRICES: dict[str, float] = {a.name: a.unit_price_usd or 0.0 for a in CATALOGUE.paid_accounts()}
"""Each paid account's price per request, carried by its open calls (an unanswered one is billed at it)."""


class PaidCallNotRecorded(CallVetoed):
    """The store could not take the record of a paid call about to leave: the call is not sent."""


class LeaseGuard:
    """A RequestObserver bound to one URL lease.

    `sent` counts the requests handed to the transport during this invocation (the one source of
    truth for `attempted`); `paid_sent` those of paid providers. `record_paid` is asked before each
    paid request leaves: no paid request without a durable record of it.
    """

    def __init__(self, lease: Lease, record_paid: Callable[[str], None] | None = None) -> None:
        self._lease = lease
        self._record_paid = record_paid
        self._lock = threading.Lock()
        self.sent = 0
        self.paid_sent = 0
        self.vetoed: str | None = None

    def before_request(self, *, service: str, paid: bool) -> None:
        if self._lease.lost:
            self.vetoed = f"URL lock lost before a {service} request ({self._lease.lost_reason}); nothing sent"
            raise CallVetoed(self.vetoed)
        if paid and not self._lease.confirm():
            reason = self._lease.lost_reason or "the lock backend could not confirm it"
            self.vetoed = f"URL lock no longer ours right before a paid {service} request ({reason}); nothing sent"
            raise CallVetoed(self.vetoed)
        if paid and self._record_paid is not None:
            self._record_paid(service)

    def request_sent(self, *, service: str, paid: bool) -> None:
        with self._lock:
            self.sent += 1
            self.paid_sent += int(paid)


class StoredPaidRequests:
    """`PaidRequests` on the URL's state: ids of submitted two-step paid calls, fenced like every
    other write under the URL lock, so a later holder resumes the call instead of paying again. It
    remembers what the attempt learned about the request (submitted, past its retention) for the
    state machine's next state."""

    def __init__(
        self,
        store: PaidRequestStore,
        url: str,
        platform: str,
        lease: Lease,
        request: PaidRequest | None,
        clock: Callable[[], datetime],
        retry_s: float = WRITE_RETRY_S,
        open_call: OpenCall | None = None,
        unentered: Callable[[], SpendLine | None] = lambda: None,
    ) -> None:
        self._seen_open_call = open_call
        self._retry_s = retry_s
        self._store = store
        self._url = url
        self._platform = platform
        self._lease = lease
        self._request = request
        self._clock = clock
        self.resumed: str | None = None
        self.submitted_request: PaidRequest | None = None
        """The request this attempt submitted (saved on the URL state)."""
        self.expired = False
        """The open request was past its provider's retention: closed, not resumed."""
        self.opened: OpenCall | None = None
        """The paid call this attempt recorded before sending it, with the timed-out open call (the
        decision counted it) it was written over: stored with it, so the count outlives this holder."""
        self.unentered = unentered
        """The ledger line of this attempt's new paid requests not entered yet (the attempt's)."""
        self.entered = 0
        """New paid requests this attempt entered in the ledger with its saved submission."""

    def open_call(self, provider: str) -> None:
        """Record the paid call about to leave on the URL state, durably, or refuse to send it: a
        store that cannot write would otherwise turn every run into a new payment nobody counts. Each
        later paid request of the call records its count on the same open call while it stands (once a
        submission is saved in its place, the submission's spend line carries the requests)."""
        if self.opened is not None:
            if self.submitted_request is None:
                self._record(provider, self.opened.model_copy(update={"requests": self.opened.requests + 1}))
            return
        call = OpenCall(provider=provider, subject=self._url, started_at=as_stored(self._clock()),
                        fence=self._lease.fence, unit_price_usd=UNIT_PRICES.get(provider, 0.0),
                        replaced=self._seen_open_call,
                        new_spending=not (self.resumed is not None and provider in POLLS_ON_PAID_CLIENT))
        self._record(provider, call)

    def _record(self, provider: str, call: OpenCall) -> None:
        try:
            result = write_through_outages(
                lambda: self._store.save_open_call(self._url, self._platform, self._lease.fence, call),
                what="open_call", url=self._url, retry_s=self._retry_s,
            )
        except Exception as exc:
            raise PaidCallNotRecorded(
                f"the store could not record the paid {provider} call before sending it "
                f"({type(exc).__name__}: {exc}); nothing sent, the URL is left as it was") from exc
        if not result.applied:
            raise CallVetoed(f"a newer holder of the URL wrote first; the paid {provider} call is left to it")
        self.opened = call

    def previous(self, provider: str, retention: timedelta) -> str | None:
        request = self._request
        if request is None or request.provider != provider:
            return None
        if self._clock() - request.submitted_at >= retention:
            self.expired = True
            return None  # the provider no longer keeps it: submit anew
        self.resumed = request.request_id
        return request.request_id

    def submitted(self, provider: str, request_id: str) -> None:
        """Save the submitted request in place of this attempt's open call, with the ledger line of the
        requests that paid for it: should this holder die now, nobody else could enter them."""
        request = PaidRequest(provider=provider, request_id=request_id, submitted_at=self._clock())
        spend = self.unentered()
        result = write_through_outages(
            lambda: self._store.save_paid_request(self._url, self._platform, self._lease.fence, request,
                                                  kept=None if self.opened is None else self.opened.replaced,
                                                  spend=spend),
            what="paid_request", url=self._url, retry_s=self._retry_s,
        )
        if result.applied and spend is not None:
            self.entered += spend.requests
        if not result.applied:
            # A newer holder owns the URL: it will resume or decide; stop here without writing more.
            raise CallVetoed(f"a newer holder of the URL recorded its own request; {provider} request left to it")
        self._request = request
        self.submitted_request = request
