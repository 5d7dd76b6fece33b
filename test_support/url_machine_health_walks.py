"""The model's walks of the health report (test_support/url_machine_health.py): a failed element, a
never-recorded one and a non-canonical one (stored before the entry canonicalised its URLs), each read
by the report at every one of its bounds (stuck, starved, due), exactly and a tick either side, the
clock landing there. Listed among the model's walks (test_support/url_machine_walks.py)."""

from __future__ import annotations

from collections.abc import Callable

from social_recording.domain.models import TokenProfile
from test_support.engine_fakes import StepClock
from test_support.url_machine_health import BASE, STARVED_LATE, STUCK_AFTER, US
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Steps, recorded_live

X, _, WEB, YT, TG = POOL


def _at_every_bound(m: UrlRules) -> None:
    """The report read at each element's bounds, in time order, the clock set to each."""
    lates = (STUCK_AFTER, BASE + STARVED_LATE, BASE)
    targets = sorted({el.key + late - BASE + tick for el in m.held() for late in lates for tick in (-US, 0 * US, US)})
    for at in targets:
        if at >= StepClock.__call__(m.clock):  # read without the tick a reading adds
            m.clock.set(at)
            m.report_health(at, m.held(), observe=False)


def _each_bound_of_three_elements(m: UrlRules) -> list[Callable[[], object]]:
    def stored() -> None:  # seen, not recorded yet; and one stored before the entry canonicalised it
        assert m.store.create_pending_token(TokenProfile(address="T001", urls=[YT]), m.clock())
        assert m.store.create_pending_token(TokenProfile(address="OLD", urls=["https://X.com/i/status/101"]),
                                            m.clock())
    return [lambda: m.some_tokens_and_answers([[TG], [YT]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(1), stored, lambda: _at_every_bound(m)]


HEALTH_WALKS: tuple[tuple[str, Steps], ...] = (
    ("each bound of a failed, a never-recorded and a non-canonical element", _each_bound_of_three_elements),
)
