"""The model's walks of a run around the per-URL state machine (test_support/url_machine_model.py):
what a run does between its selection and its token lock, where the model's drawn interleavings do not
reach (they land before a retry's second look, or at a call or a write). Listed among the model's walks
(test_support/url_machine_walks.py), so every run meets them whatever the draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from social_recording.recording.processor import TOKEN_LOCK_PREFIX
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, recorded_live

X, _, WEB, YT, TG = POOL

Steps = Callable[[UrlRules], list[Callable[[], object]]]


@contextmanager
def _at_the_token_lock(m: UrlRules, address: str, before: Callable[[], None]) -> Iterator[None]:
    """`before` runs once, right before the next run asks for `address`'s token lock (after a retry's
    second look at its selection): another run lands in between."""
    locks = m.locks
    armed = [True]

    def hook(real: Callable[..., Any]) -> Callable[..., Any]:
        def asked(key: str, *args: Any) -> Any:
            if armed[0] and key == TOKEN_LOCK_PREFIX + address:
                armed[0] = False
                before()
            return real(key, *args)
        return asked

    real_try, real_within = locks.try_hold, locks.hold_within
    locks.try_hold, locks.hold_within = hook(real_try), hook(real_within)  # type: ignore[method-assign]
    try:
        yield
    finally:
        locks.try_hold, locks.hold_within = real_try, real_within  # type: ignore[method-assign]


def _recorded_after_the_second_look(interval: int, named: bool) -> Steps:
    """A retry selects a failed element; another run records it after the retry's second look, before
    its token lock: the retry leaves that recording as it stands ("Retry selection": an element recorded
    since the selection is left), it neither calls the URL again nor writes over it."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def retry() -> None:
            seen: dict[str, Any] = {}

            def live() -> None:
                m._second_recorder("T000")
                seen["element"] = m.store.find_element("T000", TG)
                seen["calls"] = m.world.calls

            with _at_the_token_lock(m, "T000", live):
                if named:
                    m.named_retry(["error"], interval, "none", Draws())
                else:
                    m.default_retry(interval, "none", Draws())
            if "element" not in seen:
                m.world.violations.append("the walk's retry never asked for T000's token lock")
                return
            after = m.store.find_element("T000", TG)
            if m.world.calls != seen["calls"] or after != seen["element"]:
                m.world.violations.append(
                    f"T000 {TG}: recorded by another run after the retry's second look, recorded again by the "
                    f"retry ({m.world.calls - seen['calls']} calls; {seen['element']} became {after})")
        return [lambda: m.some_tokens_and_answers([[TG]], {TG: "5xx"}), recorded_live(m, "T000"),
                lambda: m.clock_moves(61 + interval), retry]
    return steps


def _recorded_before_the_second_look(named: bool) -> Steps:
    """A retry selects a failed element; another run records it before the retry's second look: the
    retry leaves it and reports it as changed meanwhile (checked at every retry of the model)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def retry() -> None:
            if named:
                m.named_retry(["error"], 0, "between", Draws())
            else:
                m.default_retry(0, "between", Draws())
        return [lambda: m.some_tokens_and_answers([[TG], [YT]], {TG: "5xx", YT: "5xx"}), recorded_live(m, "T000"),
                recorded_live(m, "T001"), lambda: m.clock_moves(61), retry]
    return steps


def _a_retry_among_one_of_two_tokens(m: UrlRules) -> list[Callable[[], object]]:
    """Two tokens' failing elements are due, a third's inside its back-off: a retry among the first and
    third tokens takes the first's due element only, and counts the third's as held back."""
    return [lambda: m.some_tokens_and_answers([[TG], [YT], [WEB]], {TG: "5xx", YT: "5xx", WEB: "5xx"}),
            recorded_live(m, "T000"), recorded_live(m, "T001"), lambda: m.clock_moves(61), recorded_live(m, "T002"),
            lambda: m.retry_among(["T000", "T002"], 0)]


def _a_retry_among_a_token_meets_an_unreadable_answer(m: UrlRules) -> list[Callable[[], object]]:
    """A token's element unsupported because its generator could not read the answer, and a failed one:
    a retry among that token at once counts only the failed one as held back (the unreadable one waits
    for a code change, not for a back-off)."""
    return [lambda: m.some_tokens_and_answers([[TG, YT]], {TG: "unreadable", YT: "5xx"}),
            recorded_live(m, "T000"), lambda: m.retry_among(["T000"], 60)]


RUN_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a retry among a token meets an unreadable answer", _a_retry_among_a_token_meets_an_unreadable_answer),
    ("a retry among one of two tokens", _a_retry_among_one_of_two_tokens),
    *((f"recorded before a {'named' if named else 'default'} retry's second look", _recorded_before_the_second_look(named))
      for named in (False, True)),
    *((f"recorded after a {'named' if named else 'default'} retry's second look ({interval} min)",
       _recorded_after_the_second_look(interval, named)) for interval in (0, 120) for named in (False, True)),
)
"""(name, steps) of each walk."""
