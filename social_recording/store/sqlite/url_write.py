"""One recording of one URL is ONE write transaction (`apply_url_write`): the fencing check, object
upserts, first metrics, the link replacement, the URL state and the element all commit together or
not at all, which also keeps the write lock short. Also the paid calls recorded on the URL state.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from social_recording.domain.models import OpenCall, PaidRequest, SocialUrl, TokenLink, UrlState, utcnow
from social_recording.domain.spend import SpendLine, unanswered_lines
from social_recording.domain.status import FetchStatus
from social_recording.store._codec import dt_to_text, opt_dt_to_text
from social_recording.store.base import UrlWrite, WriteOutcome, WriteResult
from social_recording.store.sqlite.graph_write import GraphWriteMixin, _PreparedObject
from social_recording.store.sqlite.queries import q_element, q_url_state
from social_recording.store.sqlite.rows import _state_from_row, _url_from_row
from social_recording.store.write_refusal import (
    NO_STATE,
    StoredElement,
    StoredState,
    state_refusal,
    url_write_refusal,
)


class UrlWriteMixin(GraphWriteMixin):
    """UrlWriteStore and PaidRequestStore (store/base.py)."""

    def find_element(self, address: str, url: str) -> SocialUrl | None:
        row = self._conn().execute(*q_element(address, url)).fetchone()
        return None if row is None else _url_from_row(row)

    def find_url_state(self, url: str) -> UrlState | None:
        row = self._conn().execute(*q_url_state(url)).fetchone()
        return None if row is None else _state_from_row(row)

    def _refusal(self, conn: sqlite3.Connection, write: UrlWrite) -> tuple[WriteOutcome | None, str | None]:
        """Why `write` may not touch its (address, url), or None when it may, and the URL state's open
        call as stored (what `_settle_unanswered` settles): the element's and its URL state's fences, the
        state's version and its open call, read in one statement."""
        row = conn.execute(
            "SELECT u.status, u.fence, s.fence, s.version, s.open_call FROM token_urls u "
            "LEFT JOIN url_states s ON s.url = u.url WHERE u.address = ? AND u.url = ?", [write.address, write.url]
        ).fetchone()
        if row is None:
            return url_write_refusal(None, NO_STATE, write.fence, write.expect_version), None
        status, element_fence, state_fence, version, open_call = row
        state = NO_STATE if state_fence is None else StoredState(state_fence, version or 0)
        return url_write_refusal(StoredElement(status, element_fence), state, write.fence, write.expect_version), open_call

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        stamp = dt_to_text(write.now)
        # Everything that needs no database is prepared before the write lock is taken (object bodies,
        # metric values, link fields), so the transaction only runs statements.
        graph = None if write.graph_links is None else [_PreparedObject.of(pl, stamp) for pl in write.graph_links]
        with self._write() as conn:
            refused, stored_call = self._refusal(conn, write)
            if refused is not None:
                return refused
            links: tuple[TokenLink, ...] = ()
            if graph is not None:
                links = tuple(self._write_graph(conn, write.address, write.url, graph, write.now))
            elif write.copy_links_from is not None:
                links = tuple(self._copy_links(conn, write.address, write.url, write.copy_links_from, write.now))
            if write.state is not None:
                s = write.state
                self._settle_unanswered(conn, write.url, write.fence, stored_call, s.open_call)
                req = s.request
                paid = 0 if write.spend is None else write.spend.requests
                conn.execute(
                    "INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                    "request_provider, request_id, request_submitted_at, updated_at, answer, answered_at, streak, "
                    "engine_failures, open_call, paid_requests, version) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1) "
                    "ON CONFLICT (url) DO UPDATE SET status = excluded.status, "
                    "attempted_at = excluded.attempted_at, attempts = excluded.attempts, "
                    "source_token = excluded.source_token, fence = excluded.fence, "
                    "request_provider = excluded.request_provider, request_id = excluded.request_id, "
                    "request_submitted_at = excluded.request_submitted_at, updated_at = excluded.updated_at, "
                    "answer = excluded.answer, answered_at = excluded.answered_at, streak = excluded.streak, "
                    "engine_failures = excluded.engine_failures, open_call = excluded.open_call, "
                    "paid_requests = url_states.paid_requests + excluded.paid_requests, version = url_states.version + 1",
                    [write.url, write.platform, s.status.value, opt_dt_to_text(s.attempted_at), s.attempts,
                     s.source_token, write.fence, None if req is None else req.provider,
                     None if req is None else req.request_id,
                     None if req is None else dt_to_text(req.submitted_at), stamp,
                     None if s.answer is None else s.answer.value, opt_dt_to_text(s.answered_at), s.streak,
                     s.engine_failures, None if s.open_call is None else s.open_call.model_dump_json(), paid],
                )
                if write.spend is not None:
                    self._add_spend(conn, write.spend)
            else:
                conn.execute("UPDATE url_states SET fence = max(fence, ?) WHERE url = ?", [write.fence, write.url])
            e = write.element
            cur = conn.execute(
                "UPDATE token_urls SET status = ?, attempts = ?, attempted_at = ?, checked_at = ?, cause = ?, "
                "detail = ?, fence = ?, due_at = ? WHERE address = ? AND url = ? AND fence <= ? AND status <> ?",
                [e.status.value, e.attempts, opt_dt_to_text(e.attempted_at), dt_to_text(e.checked_at),
                 None if e.cause is None else e.cause.value, e.detail, write.fence,
                 dt_to_text(e.next_due), write.address, write.url,
                 write.fence, FetchStatus.OK.value],
            )
            if cur.rowcount != 1:  # cannot happen inside this transaction after _refusal; never half-apply
                raise RuntimeError(f"element {write.address}/{write.url} changed inside its own write transaction")
            conn.execute("UPDATE tokens SET updated_at = ? WHERE address = ?", [stamp, write.address])
        return WriteOutcome(WriteResult.APPLIED, links=links)

    @staticmethod
    def _add_spend(conn: sqlite3.Connection, line: SpendLine) -> None:
        conn.execute("INSERT INTO spend_ledger (account, day, requests, cost_usd, unanswered) VALUES (?, ?, ?, ?, ?) "
                     "ON CONFLICT (account, day) DO UPDATE SET requests = requests + excluded.requests, "
                     "cost_usd = cost_usd + excluded.cost_usd, unanswered = unanswered + excluded.unanswered",
                     [line.account, line.day, line.requests, line.cost_usd, line.unanswered])

    def _settle_unanswered(self, conn: sqlite3.Connection, url: str, fence: int, stored: str | None,
                           kept: OpenCall | None) -> None:
        """Inside a state write with `fence` that leaves `kept` as the open call, over the open call
        `stored` (its JSON text, read in this transaction; None or empty: none): another holder's open
        call it removes goes to the ledger and the state's count as spent (domain/spend.py)."""
        previous = OpenCall.model_validate_json(stored) if stored else None
        for line in unanswered_lines(previous, fence, kept):
            self._enter_spend(conn, url, line)

    @classmethod
    def _enter_spend(cls, conn: sqlite3.Connection, url: str, line: SpendLine) -> None:
        """Spend entered outside the URL write's own: in the ledger and in the state's count."""
        cls._add_spend(conn, line)
        conn.execute("UPDATE url_states SET paid_requests = paid_requests + ? WHERE url = ?", [line.requests, url])

    @staticmethod
    def _state_fence_refusal(conn: sqlite3.Connection, url: str, fence: int) -> tuple[WriteResult | None, str | None]:
        """The URL state's own writes are fenced whatever its version (write_refusal.py); with the
        state's open call as stored, read in the same statement."""
        row = conn.execute("SELECT fence, open_call FROM url_states WHERE url = ?", [url]).fetchone()
        refused = state_refusal(NO_STATE if row is None else StoredState(fence=row[0]), fence, None)
        return None if refused is None else refused.result, None if row is None else row[1]

    def save_paid_request(self, url: str, platform: str, fence: int, request: PaidRequest,
                          kept: OpenCall | None = None, spend: SpendLine | None = None) -> WriteResult:
        return self._fenced_state_upsert(url, platform, fence, {
            "request_provider": request.provider, "request_id": request.request_id,
            "request_submitted_at": dt_to_text(request.submitted_at),
            "open_call": None if kept is None else kept.model_dump_json()}, kept, spend)

    def save_open_call(self, url: str, platform: str, fence: int, call: OpenCall) -> WriteResult:
        return self._fenced_state_upsert(url, platform, fence, {"open_call": call.model_dump_json()}, call)

    def _fenced_state_upsert(self, url: str, platform: str, fence: int, fields: dict[str, Any],
                             kept: OpenCall | None, spend: SpendLine | None = None) -> WriteResult:
        """Set `fields` of the URL's state (made pending if it has none), whatever its version, unless a
        larger fence holds it: the one write behind a paid request and an open call, which leaves
        `kept` as the open call. `spend` (a saved submission's) moves the ledger and the state's count
        in the same transaction."""
        names = list(fields)
        columns = ", ".join(["url", "platform", "status", "attempts", "fence", *names, "updated_at", "version"])
        marks = ", ".join(["?", "?", "?", "0", "?", *("?" for _ in names), "?", "1"])
        updates = ", ".join(f"{name} = excluded.{name}" for name in ["fence", *names, "updated_at"])
        with self._write() as conn:
            refused, stored_call = self._state_fence_refusal(conn, url, fence)
            if refused is not None:
                return refused
            self._settle_unanswered(conn, url, fence, stored_call, kept)
            conn.execute(
                f"INSERT INTO url_states ({columns}) VALUES ({marks}) "
                f"ON CONFLICT (url) DO UPDATE SET {updates}, version = url_states.version + 1",
                [url, platform, FetchStatus.PENDING.value, fence, *fields.values(), dt_to_text(utcnow())],
            )
            if spend is not None:
                self._enter_spend(conn, url, spend)
        return WriteResult.APPLIED
