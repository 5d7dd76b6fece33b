"""What a recording stage keeps while its URLs finish, as the listener of the run's state: one
run-log event per URL, and a bounded table of outcomes for the run's metadata.

Each URL gets an event of its own, one short line (status, platform, URL, token, the call, why), so
the run log's filter finds one URL or one status and the log table shows the line without
expanding it (docs/architecture.md, "The run log"). Each Dagster log call is one event-log write
(a row in the run's SQLite file or in PostgreSQL), so the lines are written by a writer thread of
their own, in the order they came: the recording threads only queue a line and never wait for the
event log. Lines of the outcomes an operator must look at (an engine failure, a URL that is not
canonical, a lost lock, work left behind) are warnings.

The outcome table keeps every non-ok row up to PROBLEM_ROWS and a sample of ok rows up to
TABLE_ROWS in all, as the run goes, so a run of any size keeps the same few hundred rows; the
counters (the run's `RunState`) cover every URL.
"""

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from social_recording.domain.status import FetchStatus
from social_recording.recording.log_line import kv_fields
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome

URL_LINE_EVENT = "url_outcome"
"""The first word of every per-URL line (what operators and the deployment rehearsal grep for)."""
QUEUED_LINES = 10_000
"""Lines waiting for the writer at most (about 3 MB): past it a recording thread waits for the event
log, so a run's memory stays bounded however far the event log falls behind."""
WHY_CHARS = 160
"""The `why` of a per-URL line is cut here (the table keeps it whole): one line in the log table."""
TABLE_ROWS = 500
"""Rows of the per-URL table in the run's metadata."""
PROBLEM_ROWS = 400
"""Of those, at most this many non-ok rows; ok rows fill the rest."""
EXAMPLES = 10
"""Lost-lock and engine-failure examples named in the report."""
_WARN = frozenset({EngineOutcome.FAILED, EngineOutcome.INVALID_URL, EngineOutcome.LOST, EngineOutcome.LOCKED,
                   EngineOutcome.DEFERRED, EngineOutcome.LOCKED_OUT})
LEFT_BEHIND = (EngineOutcome.LOCKED, EngineOutcome.DEFERRED, EngineOutcome.LOCKED_OUT)
"""URL outcomes that leave the element as it was because a lock was held elsewhere or a backend did
not answer: work this run did not do (docs/architecture.md, "Runs tell the truth")."""


def call_of(outcome: UrlOutcome) -> str:
    """How the URL's answer came: `made` (a provider call went out), `reused` (the window's answer of
    another holder, no call) or `none`."""
    if outcome.attempted:
        return "made"
    return "reused" if outcome.reused else "none"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def url_line(outcome: UrlOutcome) -> str:
    """The one run-log line of a URL, status first (its URL made log-safe)."""
    row = outcome.as_row()
    return kv_fields(URL_LINE_EVENT, {
        "status": row["status"],
        "platform": row["platform"] or "-",
        "url": row["url"],
        "token": row["token"],
        "call": call_of(outcome),
        "why": _cut(str(row["detail"] or ""), WHY_CHARS),
    })


EVENT_CONNECTION_RECYCLE_S = 600
EVENT_CONNECTION_OVERFLOW = 20
"""Threads that write events at the same moment beyond the held connection each get a connection of
their own for that write, as before, never a wait."""


def hold_event_connection(instance: Any) -> None:
    """Make the run process keep one connection to the instance's event-log database for its writes.

    Dagster's PostgreSQL event log opens a new connection for every event it stores (a connection is
    a new server process: about 10 ms, several times the insert), so a thousand per-URL events would
    cost a thousand connections. Its storage can instead hold one pooled connection, as the webserver
    does for its reads (`optimize_for_webserver`, no statement timeout here: a write is never cut
    short); the SQLite event log has no such setting (it is a no-op there). Best effort: an instance
    that refuses keeps writing as before."""
    with contextlib.suppress(Exception):  # the run log must never break a recording
        instance.event_log_storage.optimize_for_webserver(
            statement_timeout=0, pool_recycle=EVENT_CONNECTION_RECYCLE_S, max_overflow=EVENT_CONNECTION_OVERFLOW)


_Write = Callable[[str], Any]


class UrlLog:
    """Writes each URL's line to `log` (`info` / `warning`) as an event of its own, from a writer
    thread, in the order the lines came. A context manager: entering starts the writer, leaving
    writes what is queued and stops it. Outside the context a line is written at once. A failing
    write never disturbs recording."""

    def __init__(self, log: Any) -> None:
        self._log = log
        self._queue: queue.Queue[tuple[_Write, str] | None] = queue.Queue(maxsize=QUEUED_LINES)
        self._thread: threading.Thread | None = None
        self._count_lock = threading.Lock()
        self.lines = 0
        """URL lines handed to the log."""
        self.messages = 0
        """Events written."""

    def __enter__(self) -> "UrlLog":
        self._thread = threading.Thread(target=self._drain, name="url-log", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
        while not self._queue.empty():  # a line queued as the writer stopped
            item = self._queue.get_nowait()
            if item is not None:
                self._write(*item)

    def add(self, outcome: UrlOutcome) -> None:
        with self._count_lock:
            self.lines += 1
        self._send(self._log.warning if outcome.status in _WARN else self._log.info, url_line(outcome))

    def warn(self, message: str) -> None:
        """A warning of the run's own (not a URL's), written after the lines before it."""
        self._send(self._log.warning, message)

    def _send(self, method: _Write, line: str) -> None:
        if self._thread is None:
            self._write(method, line)
        else:
            self._queue.put((method, line))

    def _write(self, method: _Write, line: str) -> None:
        try:
            method(line)
            self.messages += 1
        except Exception:  # pragma: no cover - the run log must never break a recording
            pass

    def _drain(self) -> None:
        while (item := self._queue.get()) is not None:
            self._write(*item)


@dataclass(frozen=True)
class OutcomeRows:
    """The bounded table of a run's URL outcomes, with what it leaves out."""

    rows: tuple[dict[str, str | int | float | bool | None], ...] = ()
    total: int = 0
    not_ok: int = 0
    """Non-ok outcomes in the run (all shown up to PROBLEM_ROWS)."""
    ok: int = 0

    @property
    def shown_not_ok(self) -> int:
        return sum(1 for r in self.rows if r.get("status") != FetchStatus.OK.value)

    @property
    def shown_ok(self) -> int:
        return len(self.rows) - self.shown_not_ok

    def caption(self) -> str:
        return (f"{len(self.rows)} of {self.total} URL outcomes: {self.shown_not_ok} of {self.not_ok} non-ok, "
                f"{self.shown_ok} of {self.ok} ok")


ADDRESS_ENDS = 6
"""A token address in the table keeps this many characters at each end (the run log has it whole)."""


def short_address(address: str) -> str:
    """`AbCdEf…WxYz12`: enough to tell a run's tokens apart in a table column."""
    return address if len(address) <= 2 * ADDRESS_ENDS + 1 else f"{address[:ADDRESS_ENDS]}…{address[-ADDRESS_ENDS:]}"


def table_row(outcome: UrlOutcome) -> dict[str, str | int | float | bool | None]:
    """A row of the per-URL table: the log line's fields (the address shortened, `why` whole), then
    the URL's time waiting for a call slot and its own time, typed for a Dagster table."""
    row = outcome.as_row()
    return {
        "status": str(row["status"]),
        "platform": str(row["platform"] or "-"),
        "url": str(row["url"]),
        "token": short_address(outcome.token),
        "call": call_of(outcome),
        "why": str(row["detail"] or ""),
        "waited_ms": round(outcome.waited_ms, 1),
        "took_ms": round(outcome.took_ms, 1),
    }


class RunLog:
    """The listener a recording stage gives its run's state (`RunState(listener=...)`): writes each
    URL's run-log line through `url_log`, and keeps the bounded table and a few examples of lost
    locks, engine failures and work left behind for the report. Told once per URL outcome, from the
    engine's worker threads."""

    def __init__(self, url_log: UrlLog) -> None:
        self._url_log = url_log
        self._rows_lock = threading.Lock()
        self._not_ok_rows: list[dict[str, str | int | float | bool | None]] = []
        self._ok_rows: list[dict[str, str | int | float | bool | None]] = []
        self._not_ok = 0
        self._ok = 0
        self.lost_examples: list[str] = []
        self.defect_examples: list[str] = []
        self.left_examples: list[str] = []

    def interrupted(self, message: str) -> None:
        self._url_log.warn(message)

    def noted(self, outcome: UrlOutcome) -> None:
        self._url_log.add(outcome)
        with self._rows_lock:
            if outcome.status == FetchStatus.OK:
                self._ok += 1
                if len(self._ok_rows) < TABLE_ROWS:
                    self._ok_rows.append(table_row(outcome))
            else:
                self._not_ok += 1
                if len(self._not_ok_rows) < PROBLEM_ROWS:
                    self._not_ok_rows.append(table_row(outcome))
            if (outcome.lease_lost or outcome.status == EngineOutcome.LOST) and len(self.lost_examples) < EXAMPLES:
                self.lost_examples.append(f"{outcome.token}:{outcome.platform}")
            if outcome.engine_failure and len(self.defect_examples) < EXAMPLES:
                self.defect_examples.append(f"{outcome.token} {outcome.platform}: {outcome.detail}")
            if outcome.status in LEFT_BEHIND and len(self.left_examples) < EXAMPLES:
                self.left_examples.append(f"{outcome.token} {outcome.platform} {outcome.status}: {outcome.detail}")

    def rows(self) -> OutcomeRows:
        """Every non-ok row kept, then ok rows up to TABLE_ROWS in all."""
        with self._rows_lock:
            shown = self._not_ok_rows + self._ok_rows[: max(0, TABLE_ROWS - len(self._not_ok_rows))]
            return OutcomeRows(tuple(shown), self._not_ok + self._ok, self._not_ok, self._ok)
