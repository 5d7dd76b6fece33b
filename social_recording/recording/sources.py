"""What the engine needs from upstream, as small Protocols (the real clients live in `upstream/`).

Keeping these here lets the use cases depend on a shape rather than on HTTP clients, so tests and
benchmarks plug in tiny in-memory fakes (DESIGN §1: recording -> upstream only through this seam).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from social_recording.domain.models import TokenProfile


@runtime_checkable
class ProfileSource(Protocol):
    """The single URL entry (DESIGN §3): canonical, de-duplicated URLs of one token, or None when the
    token has no image / is unknown upstream (seed 000 §1.4: then nothing is written)."""

    def read(self, address: str) -> TokenProfile | None: ...

    def resolve_value(self, field: str, raw: str) -> str:
        """One raw value -> its canonical URL; raises `upstream.profile.DroppedValue` (for good) or
        `upstream.profile.UnresolvedValueError` (transient: keep it, try later)."""
        ...


class RangeToken(Protocol):
    """One token of the tracker's range answer; only what reconcile needs (seed 004 §5.3)."""

    @property
    def address(self) -> str: ...

    @property
    def symbol(self) -> str | None: ...

    @property
    def investor_count(self) -> int: ...


@runtime_checkable
class TokenRangeSource(Protocol):
    """The tracker's `GET /tokens` for a `last_transfer_at` window (seed 004 §3.2). A failure raises
    (after the client's own retries) and must fail the reconcile run with zero writes."""

    def tokens_in_range(self, start: datetime, end: datetime) -> Sequence[RangeToken]: ...
