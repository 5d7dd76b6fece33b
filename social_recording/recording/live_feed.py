"""The live feed: which tokens traded since the last launch, read from the tracker in bounded pages.

The business rules of the live path's entry, independent of what launches the work (the Dagster
sensor turns the tokens into runs):

- a token qualifies with at least `threshold` AF investors; each address once, at its latest trade;
- the cursor is the last `last_transfer_at` handed out plus the addresses handed out at exactly that
  instant, so a token sharing the boundary timestamp is neither dropped nor handed out twice;
- the feed looks back at most LIVE_MAX_LOOKBACK (an older gap is the daily reconcile's) and at
  most LIVE_INITIAL_LOOKBACK on its first read, in pages of LIVE_PAGE, and stops paging once it
  holds `cap` tokens or its time budget is used: the rest is read next time from the cursor;
- a cursor that fell more than LIVE_RESCAN behind a range read through to its end moves up to
  that point, so a quiet feed does not re-read an ever longer range (a late tracker entry within
  LIVE_RESCAN is still found).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from social_recording.recording.sources import RangeToken

__all__ = [
    "LIVE_INITIAL_LOOKBACK",
    "LIVE_MAX_LOOKBACK",
    "LIVE_PAGE",
    "LIVE_RESCAN",
    "LiveCursor",
    "LiveRangeSource",
    "TradedScan",
    "TradedToken",
    "scan_traded",
]

LIVE_INITIAL_LOOKBACK = timedelta(hours=1)
"""First read ever (no cursor): look this far back; older tokens are reconcile's job."""
LIVE_MAX_LOOKBACK = timedelta(days=2)
"""A cursor older than this (the feed stopped for days) is clamped: the gap is reconcile's job
(daily partitions), and one read must not page through weeks."""
LIVE_PAGE = timedelta(hours=6)
"""One tracker range query covers at most this much time, so a long gap is read in bounded pages."""
LIVE_RESCAN = timedelta(hours=1)
"""How far behind the end of a complete read the cursor may stay: late tracker entries within it
are still found, and a quiet feed re-reads at most this much."""


class TradedToken(RangeToken, Protocol):
    """One token of the tracker's range answer, with when it last traded (what the feed pages by)."""

    @property
    def last_transfer_at(self) -> datetime | None: ...


class LiveRangeSource(Protocol):
    """What the feed needs of the tracker client (TrackerClient; a fake in unit tests)."""

    def tokens_in_range(self, start: datetime, end: datetime) -> Sequence[TradedToken]: ...


@dataclass
class LiveCursor:
    """The last `last_transfer_at` handed out, plus the addresses handed out at exactly that instant."""

    ts: datetime | None = None
    at_ts: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, raw: str | None) -> LiveCursor:
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            ts = datetime.fromisoformat(data["ts"]) if data.get("ts") else None
            if ts is not None:
                ts = ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
            return cls(ts=ts, at_ts=sorted(str(a) for a in data.get("at_ts", [])))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"live cursor is not JSON {{ts, at_ts}}: {raw[:200]!r}") from exc

    def dump(self) -> str:
        return json.dumps({"ts": self.ts.isoformat() if self.ts else None, "at_ts": sorted(self.at_ts)})

    def already_launched(self, address: str, last_transfer_at: datetime) -> bool:
        if self.ts is None:
            return False
        return last_transfer_at < self.ts or (last_transfer_at == self.ts and address in self.at_ts)

    def advance(self, address: str, last_transfer_at: datetime) -> None:
        if self.ts is None or last_transfer_at > self.ts:
            self.ts = last_transfer_at
            self.at_ts = [address]
        elif last_transfer_at == self.ts and address not in self.at_ts:
            self.at_ts.append(address)

    def copy(self) -> LiveCursor:
        return LiveCursor(self.ts, list(self.at_ts))


@dataclass
class TradedScan:
    """One read of the feed: the qualifying tokens not handed out yet (oldest trade first, at most
    `cap`) and what was read to find them."""

    tokens: list[TradedToken]
    start: datetime
    """Where the read began (the cursor, clamped)."""
    read_until: datetime
    """Where it stopped: `now` unless the budget or the cap cut it short."""
    complete: bool
    """The whole range up to `now` was read and every qualifying token in it is in `tokens`."""
    scanned: int = 0
    pages: int = 0
    below_threshold: int = 0
    notes: list[str] = field(default_factory=list)

    def cursor_after(self, cursor: LiveCursor, handed_out: Sequence[TradedToken]) -> LiveCursor:
        """The cursor once `handed_out` (a prefix of `tokens`) is launched: past exactly those, and,
        after a complete read, never more than LIVE_RESCAN behind its end."""
        new = cursor.copy()
        for t in handed_out:
            assert t.last_transfer_at is not None
            new.advance(t.address, t.last_transfer_at)
        everything = self.complete and len(handed_out) == len(self.tokens)
        floor = self.read_until - LIVE_RESCAN
        if everything and (new.ts is None or new.ts < floor):
            # Every qualifying token traded before `floor` has been handed out by now (this read
            # covered [start, read_until) and launched all it found): none is at `floor` itself.
            new = LiveCursor(floor, [])
        return new


def scan_traded(
    cursor: LiveCursor,
    tracker: LiveRangeSource,
    threshold: int,
    now: datetime,
    *,
    cap: int,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> TradedScan:
    """Page the tracker from the cursor to `now` and return the qualifying tokens not handed out."""
    started = clock()
    notes: list[str] = []
    floor = now - LIVE_MAX_LOOKBACK
    if cursor.ts is None:
        start = now - LIVE_INITIAL_LOOKBACK
    elif cursor.ts < floor:
        start = floor
        notes.append(f"cursor {cursor.ts.isoformat()} is older than {LIVE_MAX_LOOKBACK}; tokens traded "
                     f"before {floor.isoformat()} are left to reconcile_job")
    else:
        start = cursor.ts
    fresh: dict[str, TradedToken] = {}
    scanned = pages = below = 0
    page_start = start
    cut = False
    while page_start < now:
        if pages and clock() - started > budget_s:
            notes.append(f"time budget of {budget_s:g}s used; read up to {page_start.isoformat()}")
            cut = True
            break
        page_end = min(page_start + LIVE_PAGE, now)
        page = tracker.tokens_in_range(page_start, page_end)
        pages += 1
        scanned += len(page)
        for t in page:
            ts = t.last_transfer_at
            if ts is None:
                continue
            if t.investor_count < threshold:
                below += 1
                continue
            if cursor.already_launched(t.address, ts):
                continue
            prev = fresh.get(t.address)
            if prev is None or (prev.last_transfer_at is not None and ts > prev.last_transfer_at):
                fresh[t.address] = t
        page_start = page_end
        if len(fresh) >= cap and page_start < now:
            cut = True
            break
    ordered = sorted(fresh.values(), key=lambda t: (t.last_transfer_at or now, t.address))
    if len(ordered) > cap:
        notes.append(f"{len(ordered) - cap} qualifying token(s) left for the next read")
        ordered = ordered[:cap]
        cut = True
    return TradedScan(ordered, start, page_start if cut else now, not cut, scanned, pages, below, notes)
