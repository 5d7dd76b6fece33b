"""The retry policies of every outbound client, run by tenacity.

Why these numbers:
- free providers: 3 attempts, a flat 0.8 s apart — a blip at a free provider costs nothing to retry;
- paid providers: exactly 1 attempt — each request is billed, a retry would pay twice for one answer;
- the tracker: 3 attempts, 1 s x 2^i apart (1 s, then 2 s), and only for what a retry can change.
Which failures are worth retrying is the caller's decision (`retry_if`); a veto from the request
observer is never retried whatever the predicate says. Every wait goes through the caller's `sleep`
(the sandbox compresses time, tests record the delays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

from social_recording.outbound.observe import CallVetoed

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """`attempts` in total (the first included); before retry i (0-based) wait `delay_s` x 2^i when
    `exponential`, else `delay_s` flat."""

    attempts: int
    delay_s: float = 0.0
    exponential: bool = False

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be >= 1, got {self.attempts!r}")
        if self.delay_s < 0:
            raise ValueError(f"RetryPolicy.delay_s must be >= 0, got {self.delay_s!r}")

    def wait(self) -> tenacity.wait.wait_base:
        if self.exponential:
            return tenacity.wait_exponential(multiplier=self.delay_s, exp_base=2)
        return tenacity.wait_fixed(self.delay_s)


FREE_PROVIDER = RetryPolicy(attempts=3, delay_s=0.8)
PAID_PROVIDER = RetryPolicy(attempts=1)
TRACKER = RetryPolicy(attempts=3, delay_s=1.0, exponential=True)

OnRetry = Callable[[int, BaseException, float], None]
"""(number of the attempt that failed, its exception, seconds before the next one)."""


def run_with_retries(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    *,
    retry_if: Callable[[BaseException], bool],
    sleep: Callable[[float], None],
    on_retry: OnRetry | None = None,
) -> T:
    """`attempt()` until it returns, or raises something `retry_if` rejects, or the attempts are spent;
    the last exception is re-raised unchanged. The loop is set up only once a first attempt failed and
    may be retried (`retried_after_a_failed_first`)."""

    def worth_retrying(exc: BaseException) -> bool:
        return not isinstance(exc, CallVetoed) and retry_if(exc)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is None or state.outcome is None:
            return
        exc = state.outcome.exception()
        if exc is not None:
            delay = state.upcoming_sleep if state.next_action is None else state.next_action.sleep
            on_retry(state.attempt_number, exc, float(delay))

    return retried_after_a_failed_first(
        attempt, lambda exc: policy.attempts > 1 and worth_retrying(exc),
        lambda: tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.attempts),
            wait=policy.wait(),
            retry=tenacity.retry_if_exception(worth_retrying),
            sleep=sleep,
            before_sleep=before_sleep,
            reraise=True,
        ))


def retried_after_a_failed_first(attempt: Callable[[], T], worth_retrying: Callable[[BaseException], bool],
                                 retrying: Callable[[], tenacity.Retrying]) -> T:
    """`attempt()` as a plain call; only when it fails with an error `worth_retrying` is the loop
    `retrying()` builds set up, and it runs `attempt()` again with that first failure counted as its
    first attempt (so its waits, stop and logging see it). The call every URL makes then does not pay
    for a tenacity loop (docs/architecture.md, "Per-URL bookkeeping")."""
    try:
        return attempt()
    except Exception as exc:
        if not worth_retrying(exc):
            raise
        failed: list[BaseException] = [exc]

    def again() -> T:
        if failed:  # the first attempt, already made: its error counts as the loop's first
            raise failed.pop()
        return attempt()

    result: T = retrying()(again)
    return result
