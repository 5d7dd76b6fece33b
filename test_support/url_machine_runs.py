"""The model's walks of a run around the per-URL state machine (test_support/url_machine_model.py):
what a run does between its selection and its token lock, where the model's drawn interleavings do not
reach (they land before a retry's second look, or at a call or a write). Listed among the model's walks
(test_support/url_machine_walks.py), so every run meets them whatever the draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from social_recording.domain.status import FetchStatus
from social_recording.recording.engine import Timings
from social_recording.recording.processor import TOKEN_LOCK_PREFIX
from test_support.url_machine_model import POOL, LosingLocks, UrlRules, Why
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, YT, TG = POOL



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


def _a_token_locked_out_then_freed(m: UrlRules) -> list[Callable[[], object]]:
    """Another worker holds a token's lock when a retry first asks for it, and lets it go before the
    retry's second look at its locked-out tokens: the retry records the token's due element then
    ("Retry selection": a token locked out is looked at again at the end of the run)."""
    def retry() -> None:
        key = TOKEN_LOCK_PREFIX + "T000"
        locks = m.locks
        other = ExitStack()
        asks: list[str] = []
        real_try, real_within = locks.try_hold, locks.hold_within

        def try_hold(k: str, ttl: float) -> Any:
            if k == key and not asks:
                asks.append("first")
                assert other.enter_context(real_try(k, ttl)).held  # another worker takes it first
            return real_try(k, ttl)

        def hold_within(k: str, ttl: float, wait: float) -> Any:
            if k == key:
                asks.append("again")
                other.close()  # the other worker is done
            return real_within(k, ttl, wait)

        before = m.store.find_element("T000", TG)
        locks.try_hold, locks.hold_within = try_hold, hold_within  # type: ignore[method-assign, assignment]
        try:
            m.default_retry(0, "none", Draws())
        finally:
            locks.try_hold, locks.hold_within = real_try, real_within  # type: ignore[method-assign]
            other.close()
        after = m.store.find_element("T000", TG)
        defaults = Timings()  # the second look waits past a crashed holder's lock, which its TTL frees
        if defaults.token_lock_wait <= defaults.token_lock_ttl:
            m.world.violations.append(f"a run's second look waits {defaults.token_lock_wait} s, a crashed holder's "
                                      f"token lock lasts {defaults.token_lock_ttl} s")
        if asks != ["first", "again"] or after == before:
            m.world.violations.append(f"T000 locked out at a retry's first look and free at its second: asked "
                                      f"{asks}, its element {before} left {after}")
    return [lambda: m.some_tokens_and_answers([[TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), retry]


def _two_holders_of_a_url_at_once(url: str) -> Steps:
    """Two tokens hold one URL; while a run of the first calls it, a run of the second records it: the
    URL lock, one per URL whatever the token, leaves the second without a call ("Recording one URL")."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        def live() -> None:
            def at_the_call(_url: str, _address: str) -> None:
                calls = m.world.calls
                m._second_recorder("T001")
                if m.world.calls != calls:
                    m.world.violations.append(f"{url}: called for T001 while T000's run called it")
            m.world.on_call = at_the_call
            m.live_event(Draws(lambda a: a == "T000"), "none")  # type: ignore[arg-type]
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), live]
    return steps


def _the_token_lock_lost_at_a_call(m: UrlRules) -> list[Callable[[], object]]:
    """A live run of a token of two due URLs loses its token lock while it calls the first: the second
    is not started, left as it was for the next run ("Fencing": a holder that lost its lease stops)."""
    def live() -> None:
        locks = LosingLocks(m.locks)

        def lost(_url: str, _address: str) -> None:
            locks.leases[0].mark_lost("the test: the token lock's key was found gone")

        doc = m.store.find_token("T000")
        assert doc is not None
        before = {el.url: el for el in doc.social_urls}
        with m.doing("live"):
            m.world.on_call = lost
            out = m._engine_on(locks, m.paid).processor.record("T000", "T000", m._run(Why.LIVE))
        m.world.on_call = None
        recorded = [o.url for o in out.urls]
        left = [url for url in before if url not in recorded[:1]]
        after = {url: m.store.find_element("T000", url) for url in left}
        if len(recorded) != 1 or any(after[url] != before[url] for url in left):
            m.world.violations.append(f"T000: its token lock lost at its first URL's call, yet recorded {recorded}")
    return [lambda: m.some_tokens_and_answers([[TG, YT]], {TG: "5xx", YT: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), live]


def _one_accounts_credit_is_gone(m: UrlRules) -> list[Callable[[], object]]:
    """One paid account says its credit is gone at a run's first URL: the run still calls the other
    paid account's URL ("Spend budgets": the credit is an account's own)."""
    def called_the_other() -> None:
        el = m.store.find_element("T001", WEB)
        if el is None or el.status is not FetchStatus.OK:
            m.world.violations.append(f"T001 {WEB}: left {el and el.status} by a run where only another account's "
                                      f"credit was gone")
    return [lambda: m.some_tokens_and_answers([[X], [WEB]], {X: "no credit", WEB: "ok"}), m.reconcile,
            called_the_other]


RUN_WALKS: tuple[tuple[str, Steps], ...] = (
    ("one account's credit is gone", _one_accounts_credit_is_gone),
    ("the token lock lost at a call", _the_token_lock_lost_at_a_call),
    *((f"two holders of a URL at once ({url})", _two_holders_of_a_url_at_once(url)) for url in (TG, YT)),
    ("a token locked out, then freed", _a_token_locked_out_then_freed),
    ("a retry among a token meets an unreadable answer", _a_retry_among_a_token_meets_an_unreadable_answer),
    ("a retry among one of two tokens", _a_retry_among_one_of_two_tokens),
    *((f"recorded before a {'named' if named else 'default'} retry's second look", _recorded_before_the_second_look(named))
      for named in (False, True)),
    *((f"recorded after a {'named' if named else 'default'} retry's second look ({interval} min)",
       _recorded_after_the_second_look(interval, named)) for interval in (0, 120) for named in (False, True)),
)
"""(name, steps) of each walk."""
