"""The model's walks of the token's fence over raw values and of the graph contract
(test_support/url_machine_tokens.py): a raw value's holder overtaken by a newer one, whatever each one's
shortener answers; each broken graph shape answered by a provider. Listed among the model's walks
(test_support/url_machine_walks.py), so every run meets them whatever the draws."""

from __future__ import annotations

from collections.abc import Callable

from test_support.url_machine_graph import BROKEN, BROKEN_SHAPES
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, YT, TG = POOL


def _overtaken(first: str, then: str, tries: str, moment: str = "at the shortener") -> Steps:
    """A token's raw value (failed once at the read, or with one try left); a retry's holder of it is
    overtaken by a newer one (`moment`): the newer one's shortener answers `then`, the overtaken one's `first`."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.a_token_with_raw_values([], [("transient", tries, True)]),
                lambda: m.a_raw_values_holder_is_overtaken(Draws(), first, then, moment)]  # type: ignore[arg-type]
    return steps


def _a_broken_graph(shape: str) -> Steps:
    """A free URL whose provider answers a graph of `shape`: recorded `invalid` by its first call."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[YT], [X]], {YT: BROKEN + shape}), recorded_live(m, "T000")]
    return steps


TOKEN_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"a raw value's holder is overtaken ({first}, then {then}; {tries})", _overtaken(first, then, tries))
      for first, then, tries in (("transient", "gone", "fresh"), (YT, "transient", "fresh"), ("gone", X, "fresh"),
                                 ("transient", YT, "one try left"))),
    *((f"a raw value's holder is overtaken inside its write ({first}, then {then})",
       _overtaken(first, then, "fresh", "inside the write")) for first, then in (("transient", "gone"), (YT, X))),
    *((f"a provider answers a broken graph ({shape})", _a_broken_graph(shape)) for shape in BROKEN_SHAPES),
)
"""(name, steps) of each walk."""
