"""When the store refuses a fenced write: one rule, which both backends apply.

A URL write (`UrlWrite`) is checked against what is stored, in this order, and the first check that
fails is the reason reported:

1. the element's fence is larger than the write's -> FENCED (a newer holder wrote the element);
2. the element is `ok` -> OK_KEPT (an `ok` element is never replaced);
3. the URL state's fence is larger than the write's -> FENCED (a newer holder wrote the state);
4. the write names the state's version it read and the state is not at it any more -> STALE.

A missing element is NO_ELEMENT; a missing URL state is fence 0, version 0. The URL state's own
writes (a paid request, an open call) and the token's writes (raw values) are fenced by checks 3 and
1 alone. The table of cases is in docs/architecture.md, "Fencing".

SQLite reads the stored fields and decides with this rule inside its write transaction. MongoDB
decides with it on a read first, then repeats the same conditions in the filters of its conditional
updates (`element_admits` / `state_admits` say what those filters must match), so a holder racing it
is still refused atomically.
"""

from __future__ import annotations

from dataclasses import dataclass

from social_recording.domain.status import FetchStatus
from social_recording.store.base import WriteOutcome, WriteResult

KEPT_STATUS = FetchStatus.OK
"""An element in this status is never replaced, whatever the fence."""


@dataclass(frozen=True)
class StoredElement:
    """The element's fields the rule reads."""

    status: str
    fence: int


@dataclass(frozen=True)
class StoredState:
    """The URL state's fields the rule reads (absent: fence 0, version 0)."""

    fence: int = 0
    version: int = 0


NO_STATE = StoredState()


def fence_refusal(stored_fence: int, fence: int) -> WriteOutcome | None:
    """FENCED when a larger fence than `fence` was applied; else None."""
    if stored_fence > fence:
        return WriteOutcome(WriteResult.FENCED, applied_fence=stored_fence)
    return None


def element_refusal(element: StoredElement | None, fence: int) -> WriteOutcome | None:
    """Checks 1 and 2: why a write with `fence` may not touch this element, or None."""
    if element is None:
        return WriteOutcome(WriteResult.NO_ELEMENT)
    fenced = fence_refusal(element.fence, fence)
    if fenced is not None:
        return fenced
    if element.status == KEPT_STATUS.value:
        return WriteOutcome(WriteResult.OK_KEPT)
    return None


def state_refusal(state: StoredState, fence: int, expect_version: int | None) -> WriteOutcome | None:
    """Checks 3 and 4: why a write with `fence`, decided on `expect_version` (None: any), may not
    touch this URL state, or None."""
    fenced = fence_refusal(state.fence, fence)
    if fenced is not None:
        return fenced
    if expect_version is not None and state.version != expect_version:
        return WriteOutcome(WriteResult.STALE)
    return None


def url_write_refusal(
    element: StoredElement | None, state: StoredState, fence: int, expect_version: int | None
) -> WriteOutcome | None:
    """The whole rule, checks 1 to 4 in order: the refusal of a URL write, or None to apply it."""
    return element_refusal(element, fence) or state_refusal(state, fence, expect_version)


def element_admits(element: StoredElement, fence: int) -> bool:
    """What a conditional element update's filter must match: checks 1 and 2 pass."""
    return element_refusal(element, fence) is None


def state_admits(state: StoredState, fence: int, expect_version: int | None) -> bool:
    """What a conditional URL-state update's filter must match: checks 3 and 4 pass."""
    return state_refusal(state, fence, expect_version) is None
