"""The model's walks of the lock backends' own expiries (test_support/url_machine_expiry.py): a paid and a
free URL's holder paused past its key's expiry (nobody took the key, or a waiter did), a take whose answer
is lost in an outage, a reconcile re-executed right after a crashed run. The URL lock walks' names say
"lock", so the Redis variant walks them on its own backend (test_support/url_machine_redis.py); the
re-executed run's does not (Redis's keys run out on the server's clock)."""

from __future__ import annotations

from collections.abc import Callable

from test_support.url_machine_expiry import PAUSES
from test_support.url_machine_lease_walks import _failed_once
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, YT, WEB, X2, TG = POOL


def _paused(then: str, url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url),
                lambda: m.a_paused_holder_meets_its_expiry(Draws(lambda c: c == ("T000", url)), then),  # type: ignore[arg-type]
                recorded_live(m, "T001")]
    return steps


def _answer_lost(url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [*_failed_once(m, url), lambda: m.a_take_loses_its_answer(Draws(lambda c: c == ("T000", url)))]  # type: ignore[arg-type]
    return steps


def _re_executed(m: UrlRules) -> list[Callable[[], object]]:
    return [lambda: m.some_tokens_and_answers([[YT], [TG]], {YT: "ok", TG: "ok"}),
            m.a_run_is_re_executed_after_a_crash]


EXPIRY_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"a paid URL's lock holder paused past its expiry, {then}", _paused(then, X)) for then in PAUSES),
    ("a free URL's lock holder paused past its expiry, a waiter took it", _paused(PAUSES[1], TG)),
    ("a paid URL's lock take loses its answer in an outage", _answer_lost(X)),
    ("a free URL's lock take loses its answer in an outage", _answer_lost(TG)),
    ("a reconcile re-executed right after a crashed run waits the dead run out", _re_executed),
)
"""(name, steps) of each walk."""
