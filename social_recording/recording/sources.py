"""What the engine needs from upstream, as small Protocols (the real clients live in `upstream/`).

Keeping these here lets the use cases depend on a shape rather than on HTTP clients, so tests and
benchmarks plug in tiny in-memory fakes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar, runtime_checkable

from social_recording.domain.models import TokenProfile

K = TypeVar("K")
K_co = TypeVar("K_co", covariant=True)


@runtime_checkable
class ProfileSource(Protocol):
    """The single URL entry: canonical, de-duplicated URLs of one token, or None when the token has no
    image or is unknown upstream (then nothing is written)."""

    def read(self, address: str) -> TokenProfile | None: ...

    def resolve_value(self, field: str, raw: str) -> str:
        """One raw value -> its canonical URL; raises `upstream.profile.DroppedValue` (for good) or
        `upstream.profile.UnresolvedValueError` (transient: keep it, try later)."""
        ...


class RangeToken(Protocol):
    """One token of the tracker's range answer; only what reconcile needs."""

    @property
    def address(self) -> str: ...

    @property
    def symbol(self) -> str | None: ...

    @property
    def investor_count(self) -> int: ...


class SkippedItem(Protocol):
    """An item of the tracker's answer that could not be read (junk fields)."""

    @property
    def index(self) -> int: ...

    @property
    def address(self) -> str | None: ...

    @property
    def reason(self) -> str: ...


class RangeScanned(Protocol[K_co]):
    """A window's range answer as reconcile keeps it: what its `keep` made of the usable tokens."""

    @property
    def kept(self) -> Sequence[K_co]: ...

    @property
    def scanned(self) -> int:
        """Usable tokens in the answer (kept or not)."""
        ...

    @property
    def malformed(self) -> Sequence[SkippedItem]: ...


@runtime_checkable
class TokenRangeSource(Protocol):
    """The tracker's `GET /tokens` for a `last_transfer_at` window, read as it streams: each usable
    token goes through `keep` and only what it returns (not None) is held, so a window of any size
    costs what reconcile keeps (docs/architecture.md, "Run memory"). A failure raises (after the
    client's own retries) and must fail the reconcile run with zero writes. Items the tracker sent
    but we could not read are reported, not silently dropped: they are counted, named, and tried
    again by the next reconcile of the window."""

    def scan_range(self, start: datetime, end: datetime, keep: Callable[[RangeToken], K | None]) -> RangeScanned[K]: ...
