"""The model's walks of the URL locks (test_support/url_machine_locks.py): a paid URL's lock taken over
under its paused holder (a one-step and a two-step provider), a free URL's likewise, a paid URL's lock
that runs out with nobody taking it, and one reported lost as its holder checks it; each after a failed
call (so the URL is called again), and followed by another token's run of the same URL, which takes
the key the holders left. Listed among the model's
walks (test_support/url_machine_walks.py) and run on Redis's lock manager too
(test_support/url_machine_redis.py)."""

from __future__ import annotations

from collections.abc import Callable

from test_support.url_machine_locks import ended
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Steps, recorded_live

X, _, WEB, _, TG = POOL


def _a_lock_ends(how: str, url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
                lambda: m.provider_changes(url, "ok"), lambda: m.clock_moves(61), ended(how, url)(m),
                recorded_live(m, "T001")]
    return steps


LOCK_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a paid URL's lock taken over under its paused holder", _a_lock_ends("taken over", X)),
    ("a two-step paid URL's lock taken over under its paused holder", _a_lock_ends("taken over", WEB)),
    ("a free URL's lock taken over under its paused holder", _a_lock_ends("taken over", TG)),
    ("a paid URL's lock runs out under its paused holder", _a_lock_ends("runs out", X)),
    ("a paid URL's lock reported lost as its holder checks it", _a_lock_ends("reported lost", X)),
)
"""(name, steps) of each walk."""
