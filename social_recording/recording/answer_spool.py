"""Paid answers the store could not take, kept on another disk until it can.

A paid call was recorded before it left (`OpenCall`); its answer came back and the store refused the
write (a full disk past the write retry, a store gone). Dropping the answer would make the next run
pay for it again, so it is written here, one file per URL, and the next recording of that URL writes
it before deciding anything (docs/architecture.md, "No payment without a record"). A spool that cannot
be written either loses the answer, never more: the open call then counts as one failed call.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import OpenCall, PaidRequest
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import Act, Decision, Outcome, Result
from social_recording.recording._text import kv, safe_url

log = logging.getLogger("social_recording.recording")


class _Link(BaseModel):
    kind: ObjectKind
    obj: SocialObject
    depth: int


class SpooledAnswer(BaseModel):
    """One call's answer as `after` needs it again: whose call, when, what it answered, its graph."""

    model_config = ConfigDict(frozen=True)

    address: str
    url: str
    called_at: datetime
    status: FetchStatus
    detail: str
    act: Act
    forced: bool
    submitted: PaidRequest | None = None
    opened: OpenCall | None = None
    links: list[_Link] | None = None

    @classmethod
    def of(cls, address: str, url: str, called_at: datetime, outcome: Outcome, decision: Decision,
           links: list[PlannedLink] | None) -> SpooledAnswer:
        assert outcome.result is Result.ANSWER and outcome.status is not None
        return cls(address=address, url=url, called_at=called_at, status=outcome.status, detail=outcome.detail,
                   act=decision.act, forced=decision.forced, submitted=outcome.submitted, opened=outcome.opened,
                   links=None if links is None else [_Link(kind=pl.kind, obj=pl.obj, depth=pl.depth) for pl in links])

    def outcome(self) -> Outcome:
        return Outcome(Result.ANSWER, status=self.status, called=True, detail=f"{self.detail}; written from the spool",
                       submitted=self.submitted, opened=self.opened)

    def decision(self) -> Decision:
        return Decision(self.act, forced=self.forced)

    def planned(self) -> list[PlannedLink] | None:
        return None if self.links is None else [PlannedLink(link.kind, link.obj, link.depth) for link in self.links]


class AnswerSpool:
    """A directory of spooled answers, one file per URL, each written whole (temporary file, fsync,
    rename) so a crash leaves either the old file or the new one."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, url: str) -> Path:
        return self.directory / f"{hashlib.sha256(url.encode()).hexdigest()}.json"

    def put(self, answer: SpooledAnswer) -> bool:
        """Keep `answer`; False (logged) when the spool cannot be written either."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(answer.model_dump_json())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path(answer.url))
        except OSError as exc:
            log.error(kv(event="spool_write_failed", url=safe_url(answer.url), error=type(exc).__name__))
            return False
        return True

    def find(self, url: str) -> SpooledAnswer | None:
        path = self._path(url)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return SpooledAnswer.model_validate_json(text)
        except ValueError as exc:  # a file we did not write whole: keep it aside for a person, go on
            path.rename(path.with_suffix(".unreadable"))
            log.error(kv(event="spool_unreadable", url=safe_url(url), error=type(exc).__name__))
            return None

    def done(self, url: str) -> None:
        self._path(url).unlink(missing_ok=True)
