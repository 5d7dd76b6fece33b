"""A counterexample of the model test as a plain test: its steps, called in order on a fresh machine,
with every invariant checked after each one, as Hypothesis does (test_support/url_machine_model.py).
The draws a step makes inside (`data.draw`) are answered by `Draws`, which picks the first element
its next chooser accepts, so the steps read as the shrunk counterexample printed them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hypothesis.stateful import INVARIANT_MARKER, RuleBasedStateMachine

if TYPE_CHECKING:
    from test_support.url_machine_model import UrlRules

Steps = Callable[["UrlRules"], list[Callable[[], object]]]
"""A walk: given a fresh machine, the steps to call on it in order."""


class Draws:
    """Stands for a step's `st.data()`: each draw from a `sampled_from` takes the first element the
    next chooser accepts (no chooser left: the first element)."""

    def __init__(self, *choosers: Callable[[Any], bool]) -> None:
        self._choosers = list(choosers)

    def draw(self, strategy: Any) -> Any:
        # `sampled_from` keeps its elements; `booleans()` is the only other strategy the rules draw from.
        elements = list(strategy.elements) if hasattr(strategy, "elements") else [False, True]
        chooser = self._choosers.pop(0) if self._choosers else (lambda _: True)
        chosen = [e for e in elements if chooser(e)]
        if not chosen:
            raise AssertionError(f"no element the step's chooser accepts among {elements}")
        return chosen[0]


def recorded_live(machine: Any, address: str) -> Callable[[], object]:
    """A step: a live run records token `address`, nothing interleaved (the machine's `live_event`)."""
    return lambda: machine.live_event(Draws(lambda a: a == address), "none")


def check_invariants(machine: RuleBasedStateMachine) -> None:
    for _name, f in inspect.getmembers(type(machine)):
        if getattr(f, INVARIANT_MARKER, None) is not None:
            f(machine)


def replay(machine: RuleBasedStateMachine, steps: Iterable[Callable[[], object]]) -> None:
    """Run `steps` (each a call of one of the machine's rules) and check every invariant after each."""
    try:
        check_invariants(machine)
        for step in steps:
            step()
            check_invariants(machine)
    finally:
        machine.teardown()
