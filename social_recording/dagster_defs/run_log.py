"""What a recording stage keeps while its URLs finish, as the listener of the run's state: the run
log's per-URL lines, written in batches, and a bounded table of outcomes for the run's metadata.

One run-log line per URL stays (operators read them), but each Dagster log call is one event-log
write; at zero provider latency writing every line on its own cost about half of a run's wall time.
So lines are buffered and written as one message every FLUSH_LINES lines or FLUSH_SECONDS, each URL
still on its own line, and always flushed before the stage returns. Warning lines (an engine
failure, a URL that is not canonical, a lost lock) go out as warning messages.

The outcome table keeps every non-ok row up to PROBLEM_ROWS and a sample of ok rows up to
TABLE_ROWS in all, as the run goes, so a run of any size keeps the same few hundred rows; the
counters (the run's `RunState`) cover every URL.
"""

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from social_recording.domain.status import FetchStatus
from social_recording.recording.log_line import kv_fields
from social_recording.recording.outcomes import EngineOutcome, UrlOutcome

URL_LINE_EVENT = "url_outcome"
"""The first word of every per-URL line (what operators and the deployment rehearsal grep for)."""
FLUSH_LINES = 50
FLUSH_SECONDS = 0.5
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


def url_line(outcome: UrlOutcome) -> str:
    """The one run-log line of a URL (its URL made log-safe)."""
    return kv_fields(URL_LINE_EVENT, outcome.as_row())


class UrlLog:
    """Buffers per-URL lines and writes them to `write(level, message)` in batches. A context
    manager: entering starts the timer thread, leaving stops it and flushes what is left. A failing
    write never disturbs recording."""

    def __init__(self, log: Any, *, max_lines: int = FLUSH_LINES, interval_s: float = FLUSH_SECONDS) -> None:
        self._log = log
        self._max_lines = max_lines
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._info: list[str] = []
        self._warn: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lines = 0
        self.messages = 0

    def __enter__(self) -> "UrlLog":
        self._thread = threading.Thread(target=self._tick, name="url-log", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()

    def add(self, outcome: UrlOutcome) -> None:
        line = url_line(outcome)
        with self._lock:
            (self._warn if outcome.status in _WARN else self._info).append(line)
            self.lines += 1
            full = len(self._info) + len(self._warn) >= self._max_lines
        if full:
            self.flush()

    def warn(self, message: str) -> None:
        """A warning of the run's own (not a URL's), written at once after the lines before it."""
        self.flush()
        self._write(self._log.warning, [message])

    def flush(self) -> None:
        with self._lock:
            info, self._info = self._info, []
            warn, self._warn = self._warn, []
        self._write(self._log.warning, warn)
        self._write(self._log.info, info)

    def _write(self, method: Callable[[str], Any], lines: list[str]) -> None:
        if not lines:
            return
        try:
            method("\n".join(lines))
            self.messages += 1
        except Exception:  # pragma: no cover - the run log must never break a recording
            pass

    def _tick(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.flush()


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


def table_row(outcome: UrlOutcome) -> dict[str, str | int | float | bool | None]:
    """The engine's log-safe row (URL credentials removed), typed for a Dagster table."""
    row: dict[str, str | int | float | bool | None] = {}
    for key, value in outcome.as_row().items():
        row[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return row


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
