"""Recording results the way the engine does, for tests that need elements in a given state.

The engine writes every result through `Store.apply_url_write` under the URL lock's fencing token:
a call (`record_call`) writes the element, the URL's cross-token state and, for `ok`, the graph
links; a zero-call outcome (`record_no_call`: reuse, unsupported, skipped_paid, a back-off
adoption) writes the element only, keeping its attempts and last call time. Fences come from one
increasing counter, like a lock server's, so each seeded write outranks every earlier one.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from social_recording.domain.graph import ObjectKind, PlannedLink, SocialObject
from social_recording.domain.models import PaidRequest
from social_recording.domain.status import Cause, FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import ElementWrite, Store, UrlWrite, WriteOutcome
from social_recording.store._codec import platform_or_none
from test_support.url_states import state_write

_FENCES = itertools.count(1)


def next_fence() -> int:
    """A fencing token larger than every one handed out before in this process."""
    return next(_FENCES)


def platform(url: str) -> str:
    return platform_or_none(url) or "unknown"


def planned(key: str, kind: ObjectKind = ObjectKind.CONTENT, depth: int = 0, **fields: object) -> PlannedLink:
    """One planned link to an X object with `platform_key` `key` (and a first `likes` metric)."""
    obj = SocialObject(
        platform=Platform.X, platform_key=key, subtype="tweet", fields=dict(fields), metrics={"likes": 1.0}
    )
    return PlannedLink(kind=kind, obj=obj, depth=depth)


def record_call(
    store: Store,
    address: str,
    url: str,
    status: FetchStatus,
    at: datetime,
    *,
    fence: int | None = None,
    links: Sequence[PlannedLink] | None = None,
    detail: str | None = None,
) -> WriteOutcome:
    """A call was made at `at` and answered `status`: the element and the URL state count it (the
    URL's calls across every holder, plus one), an `ok` names this token as the answer's source and
    writes its graph links (`links`, none by default)."""
    current = store.find_element(address, url)
    state = store.find_url_state(url)
    calls = max(0 if current is None else current.attempts, 0 if state is None else state.attempts) + 1
    ok = status is FetchStatus.OK
    return store.apply_url_write(
        UrlWrite(
            address=address,
            url=url,
            platform=platform(url),
            fence=next_fence() if fence is None else fence,
            now=at,
            element=ElementWrite(status=status, attempts=calls, attempted_at=at, checked_at=at, detail=detail),
            state=state_write(status=status, attempts=calls, attempted_at=at, source_token=address if ok else None),
            graph_links=list(links or []) if ok else None,
        )
    )


def record_no_call(
    store: Store,
    address: str,
    url: str,
    status: FetchStatus,
    now: datetime,
    *,
    cause: Cause | None = None,
    fence: int | None = None,
    copy_links_from: str | None = None,
    detail: str | None = None,
) -> WriteOutcome:
    """An outcome recorded without a call (no generator, paid calls off, a reused answer): the element's
    status, cause and `checked_at` move; its attempts and last call time stay; the URL state is not
    rewritten (only its fence rises)."""
    current = store.find_element(address, url)
    return store.apply_url_write(
        UrlWrite(
            address=address,
            url=url,
            platform=platform(url),
            fence=next_fence() if fence is None else fence,
            now=now,
            element=ElementWrite(
                status=status,
                attempts=0 if current is None else current.attempts,
                attempted_at=None if current is None else current.attempted_at,
                checked_at=now,
                cause=cause,
                detail=detail,
            ),
            copy_links_from=copy_links_from,
        )
    )


def url_write(
    address: str,
    url: str,
    fence: int,
    status: FetchStatus,
    at: datetime,
    *,
    attempts: int = 1,
    links: Sequence[PlannedLink] | None = None,
    with_state: bool = True,
    request: PaidRequest | None = None,
    detail: str | None = None,
) -> UrlWrite:
    """A called result with explicit values (for fencing tests, where the writer's view is fixed); the
    state carries `request` as the open paid request (None closes it)."""
    return UrlWrite(
        address=address,
        url=url,
        platform=platform(url),
        fence=fence,
        now=at,
        element=ElementWrite(status=status, attempts=attempts, attempted_at=at, checked_at=at, detail=detail),
        state=replace(state_write(
            status=status,
            attempts=attempts,
            attempted_at=at,
            source_token=address if status is FetchStatus.OK else None,
        ), request=request)
        if with_state
        else None,
        graph_links=None if links is None else list(links),
    )
