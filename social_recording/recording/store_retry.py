"""Repeat a store write while the store is unavailable (SQLite busy past its timeout, a MongoDB
failover): the writes made under a URL lock carry results that may have been paid for, and giving
up at once would pay for them again in the next run. They are fenced and idempotent, so repeating
one is safe: if a newer holder wrote meanwhile, the repeat is refused like any stale write."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

import tenacity

from social_recording.outbound.retry import retried_after_a_failed_first
from social_recording.recording._text import kv, safe_url
from social_recording.store.transient import is_transient

log = logging.getLogger("social_recording.recording")

T = TypeVar("T")

WRITE_RETRY_S = 60.0
"""How long one write is repeated while the store is unavailable."""


def write_through_outages(
    write: Callable[[], T],
    *,
    what: str,
    url: str,
    retry_s: float = WRITE_RETRY_S,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """`write()`, repeated with back-off for up to `retry_s` while it fails with a transient store
    error (each repeat logged); any other error, or the last transient one, propagates. The loop
    is set up only for a write that failed (`retried_after_a_failed_first`). `sleep` and `monotonic`
    let a test wait an outage out on its own clock."""
    started = monotonic()

    def retrying(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        log.warning(kv(event="store_write_retry", write=what, url=safe_url(url), attempt=state.attempt_number,
                       error=type(exc).__name__, waited_s=round(monotonic() - started, 1)))

    return retried_after_a_failed_first(write, is_transient, lambda: tenacity.Retrying(
        retry=tenacity.retry_if_exception(is_transient),
        stop=lambda _state: monotonic() - started >= retry_s,
        wait=tenacity.wait_exponential(multiplier=0.1, max=5.0),
        before_sleep=retrying,
        sleep=sleep,
        reraise=True,
    ))
