"""Riding out a lock-server outage (docs/architecture.md, "Backend outages").

A lock server that restarts, fails over or is busy for a moment must cost a run a short wait, never a
failed token, a paid URL left `error` or a key left blocking re-runs for its whole TTL. So a call to
the lock backend (or to the shared rate limiter, which lives there) that fails because the backend
did not answer is repeated with a growing, jittered delay for up to a bound (`OUTAGE_S`); past it
the caller gets `LockBackendUnavailable`, naming the backend with its password masked. An error that
waiting cannot heal (a wrong password, a bug) is raised at once. Each backend says which of its
errors mean "did not answer" (`is_redis_outage`, SQLite's busy file).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from social_recording.locks.base import LockBackendUnavailable

log = logging.getLogger("social_recording.locks")

T = TypeVar("T")

OUTAGE_S = 30.0
"""How long one call to the lock backend is repeated while the backend does not answer: a restart
(an append-only file reloads in seconds) or a failover fits; a backend gone for longer fails the
run, naming it."""
FIRST_DELAY_S = 0.05
MAX_DELAY_S = 1.0


def is_redis_outage(exc: BaseException) -> bool:
    """A Redis error that means the server did not answer or cannot answer yet (connection refused or
    reset, a timeout, loading its append-only file after a restart, a replica not yet promoted); not
    a refused password, which waiting does not heal."""
    import redis.exceptions as rx  # here, not at the top: a process on SQLite locks never imports redis

    if isinstance(exc, rx.AuthenticationError | rx.AuthorizationError):
        return False
    return isinstance(exc, rx.ConnectionError | rx.TimeoutError | rx.ReadOnlyError | rx.TryAgainError
                      | rx.ClusterDownError)


def ride_out(
    call: Callable[[], T],
    *,
    is_outage: Callable[[BaseException], bool],
    bound: float,
    backend: str | Callable[[], str],
    what: str | Callable[[], str],
    describe: Callable[[BaseException], str] = str,
    give_up: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`call()`, repeated while it fails with an outage error, for up to `bound` seconds from the first
    failure (or until `give_up()` says the answer no longer matters); then `LockBackendUnavailable`.
    `backend` names the backend (credentials masked), `what` the call ("taking social-record:X"),
    `describe` makes an error's text safe to show. `backend` and `what` may be functions, asked only
    when the backend failed to answer: building their text for every call costs a lock's holder
    more than the call's own Python."""
    first_failure: float | None = None
    delay = FIRST_DELAY_S
    failures = 0
    while True:
        try:
            result = call()
        except Exception as exc:
            if not is_outage(exc):
                raise
            now = clock()
            failures += 1
            error = f"{type(exc).__name__}: {describe(exc)}"
            if first_failure is None:
                first_failure = now
                backend, what = _text(backend), _text(what)
                log.warning("lock backend %s did not answer while %s (%s); waiting up to %g s", backend, what,
                            error, bound)
            waited = now - first_failure
            if waited >= bound or (give_up is not None and give_up()):
                raise LockBackendUnavailable(_text(backend), _text(what), waited, bound, error) from None
            sleep(min(bound - waited, delay * random.uniform(0.5, 1.0)))
            delay = min(MAX_DELAY_S, delay * 2.0)
            continue
        if first_failure is not None:
            log.info("lock backend %s answered again after %.1f s (%d failed attempt(s)) while %s", _text(backend),
                     clock() - first_failure, failures, _text(what))
        return result


def _text(value: str | Callable[[], str]) -> str:
    return value if isinstance(value, str) else value()
