"""The sandbox ledger: one JSON line per request the sandbox answered, written when
it arrives; two paid requests with the same service and subject are one payment wasted
(docs/architecture.md, "The sandbox"). Lines are appended with one `os.write` under an exclusive
`flock`, so several processes never interleave them; keys never reach the file."""

from __future__ import annotations

import fcntl
import json
import os
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from social_recording.domain.models import ensure_utc, utcnow
from social_recording.domain.redaction import strip_credentials as redact_url
from social_recording.platforms.catalogue import CATALOGUE

SERVICES: frozenset[str] = frozenset({"tracker", "shortlink"} | {a.name for a in CATALOGUE.accounts()})
"""The tracker, the shortlink services, and every provider account (the descriptors' names)."""
PAID_SERVICES: frozenset[str] = frozenset(a.name for a in CATALOGUE.accounts() if a.paid)
READ_CHUNK = 1 << 16
"""Bytes read at a time: what reading the ledger holds at once besides the line being parsed,
whatever the ledger's size (the paid-once check reads it at the end of every run)."""
POLL_PREFIXES: tuple[str, ...] = CATALOGUE.second_steps()
"""Subjects of the second step of a two-step paid call (urlscan result polls, Apify run-status and
dataset reads): asking again about a request already paid for is never a payment wasted."""


class LedgerEntry(BaseModel):
    # Only the keys are worth pydantic-core's string cache: nearly every value (time, URL, subject)
    # is new, and caching them would fill its 16,384 entries with strings never seen again.
    model_config = ConfigDict(frozen=True, extra="ignore", cache_strings="keys")

    ts: datetime
    service: str
    method: str
    url: str
    subject: str
    status: int
    paid: bool


class LedgerFormatError(ValueError):
    """A ledger line that is not a valid entry; names the file and the line number."""


class Ledger:
    """Append-only JSON-lines file, safe for concurrent appends from several processes and threads."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def append(
        self,
        *,
        service: str,
        method: str,
        url: str,
        subject: str,
        status: int,
        paid: bool,
        ts: datetime | None = None,
    ) -> LedgerEntry:
        """Record one answered request. The URL is redacted before it is written."""
        if service not in SERVICES:
            raise ValueError(f"unknown ledger service {service!r} (expected one of {sorted(SERVICES)})")
        entry = LedgerEntry(
            ts=ensure_utc(ts) if ts is not None else utcnow(),
            service=service,
            method=method.upper(),
            url=redact_url(url),
            subject=subject,
            status=status,
            paid=paid,
        )
        line = json.dumps(
            {
                "ts": entry.ts.isoformat().replace("+00:00", "Z"),
                "service": entry.service,
                "method": entry.method,
                "url": entry.url,
                "subject": entry.subject,
                "status": entry.status,
                "paid": entry.paid,
            },
            ensure_ascii=False,
            separators=(",", ":"),
        )
        self._write((line + "\n").encode("utf-8"))
        return entry

    def _write(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                written = os.write(fd, data)
                if written != len(data):  # a regular file short-writes only when the disk is full
                    raise OSError(f"short write to ledger {self.path}: {written} of {len(data)} bytes")
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def read(self) -> list[LedgerEntry]:
        """Every entry in file order ([] when the file does not exist yet)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return []
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                chunks: list[bytes] = []
                while True:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    chunks.append(chunk)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
        entries: list[LedgerEntry] = []
        # Lines end at "\n" only, as they are written: str.splitlines would also cut at U+2028 and the
        # like, which a value written as it is (ensure_ascii=False) may hold.
        for number, raw in enumerate(b"".join(chunks).decode("utf-8").split("\n"), start=1):
            if not raw.strip():
                continue
            try:
                entries.append(LedgerEntry.model_validate_json(raw))
            except ValidationError as exc:
                raise LedgerFormatError(
                    f"{self.path}: line {number} is not a ledger entry: {exc.errors()[0]['msg']}"
                ) from None
        return entries

    def identity(self) -> str | None:
        """Which file the path names now (device and inode), None when there is none: a ledger
        replaced by another file is told apart from one that only grew."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return f"{st.st_dev}:{st.st_ino}"

    def read_from(self, offset: int) -> Iterator[tuple[LedgerEntry, int]]:
        """The entries after byte `offset` (a line boundary a previous read returned), each with the
        offset just after its line, streamed: only what was appended since is read, never the whole
        file at once. It stops at the end the file had when the read began (appends hold an
        exclusive lock for one whole line, so that end is a line boundary)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                end = os.fstat(fd).st_size
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if offset > end:
                raise ValueError(f"{self.path}: offset {offset} is past the end of the ledger ({end} bytes)")
            position = offset
            rest = b""
            while position < end:
                chunk = os.pread(fd, min(READ_CHUNK, end - position), position)
                if not chunk:
                    break
                position += len(chunk)
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                consumed = position - len(rest) - sum(len(raw) + 1 for raw in lines)
                for raw in lines:
                    consumed += len(raw) + 1
                    if raw.strip():
                        yield self._entry(raw, consumed), consumed
        finally:
            os.close(fd)

    def _entry(self, raw: bytes, end_offset: int) -> LedgerEntry:
        try:
            return LedgerEntry.model_validate_json(raw)
        except ValidationError as exc:
            raise LedgerFormatError(
                f"{self.path}: the line ending at byte {end_offset} is not a ledger entry: {exc.errors()[0]['msg']}"
            ) from None

    def paid_requests(self) -> list[LedgerEntry]:
        """Every paid request (urlscan polls included: they are billed with their scan; Apify's status
        and dataset reads are free and not among them)."""
        return [e for e in self.read() if e.paid]

    def repeated_paid_subjects(self) -> dict[tuple[str, str], int]:
        """(service, subject) -> count for paid subjects requested more than once, polls aside.
        Each extra request is one payment wasted."""
        counts = Counter(
            (e.service, e.subject) for e in self.read() if e.paid and not e.subject.startswith(POLL_PREFIXES)
        )
        return {key: n for key, n in sorted(counts.items()) if n > 1}
