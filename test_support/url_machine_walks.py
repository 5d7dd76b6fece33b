"""The model's explicit examples: short walks of its own rules that meet every boundary of the state
machine's tables, and a tick either side, on every run (test_support/url_machine_model.py). The drawn
examples reach them too, but by chance: a change to the model moves the derandomized draws, and a
boundary met in one version of the model can be missed in the next. The walks make "its clock lands on
each boundary" a certainty; the invariants and the table checks are the model's, unchanged
(docs/architecture.md, "The per-URL state machine")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from test_support.engine_fakes import T0
from test_support.url_machine_entry16 import ENTRY16_WALKS
from test_support.url_machine_expiry_walks import EXPIRY_WALKS
from test_support.url_machine_feed_walks import FEED_WALKS
from test_support.url_machine_health_walks import HEALTH_WALKS
from test_support.url_machine_http import HTTP_WALKS
from test_support.url_machine_lease_walks import LEASE_WALKS
from test_support.url_machine_limits import LIMIT_WALKS
from test_support.url_machine_lock_walks import LOCK_WALKS
from test_support.url_machine_locks15_walks import LOCKS15_WALKS
from test_support.url_machine_locks16 import LOCKS16_WALKS
from test_support.url_machine_model import FOUR_ATTEMPTS, NINE_ATTEMPTS, POOL, SPEND_PER_MONTH, TICK, UrlRules
from test_support.url_machine_mongo15_walks import MONGO15_WALKS
from test_support.url_machine_outages_walks import OUTAGE_WALKS
from test_support.url_machine_outbound import OUTBOUND_WALKS
from test_support.url_machine_outbound15 import OUTBOUND15_WALKS
from test_support.url_machine_outbound16 import OUTBOUND16_WALKS
from test_support.url_machine_partitions_walks import PARTITION_WALKS
from test_support.url_machine_rates_walks import RATE_WALKS, RATE_WALKS_WITH_SETTINGS
from test_support.url_machine_retry_walks import RETRY_WALKS
from test_support.url_machine_runs import RUN_WALKS
from test_support.url_machine_runs15 import RUNS15_WALKS
from test_support.url_machine_runs16 import RUNS16_WALKS
from test_support.url_machine_sensors import SENSOR_WALKS
from test_support.url_machine_spend_walks import SPEND_WALKS
from test_support.url_machine_steps import Draws, Steps, recorded_live, replay
from test_support.url_machine_stores16 import STORES16_WALKS
from test_support.url_machine_stores_walks import STORE_WALKS
from test_support.url_machine_tokens_walks import TOKEN_WALKS

X, _, WEB, YT, TG = POOL
"""The model's URLs: a paid one-step call (an open call is recorded before it), a paid two-step
request (submitted, then polled), a free one, and a free one never reused (its answers are not
adopted by other holders)."""
TICKS = (-1, 0, 1)


@dataclass(frozen=True)
class Walk:
    name: str
    steps: Steps
    config: Mapping[str, Any] = field(default_factory=dict)
    """The machine's settings this walk needs (class attributes: `limits`, `per_month`, `live_interval`)."""

    def run(self, machine: type[UrlRules] = UrlRules) -> None:
        m = (type(machine.__name__, (machine,), dict(self.config)) if self.config else machine)()
        replay(m, self.steps(m))


def _at_boundary(m: UrlRules, boundary: str, url: str, ticks: int, address: str,
                 started_before: bool = False) -> Callable[[], object]:
    """The clock on `boundary` of `url` (+ `ticks`), where `address`, one of its holders, records it (in a
    run that started a minute before if asked)."""
    return lambda: m.clock_reaches_a_boundary(
        boundary, ticks, Draws(lambda u: u == url, lambda new: not new, lambda a: a == address,  # type: ignore[arg-type]
                               lambda before: before is started_before))


def _open_call_times_out(ticks: int) -> Walk:
    """A failed call, then a holder dies after recording its open call and paying; a token traded just
    now comes a tick before, at, or after the call's timeout (the open-call table: counted from then on)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        dies = Draws(lambda e: e[0] == "T000" and e[1].url == X, lambda t: t == ticks)
        return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
                lambda: m.provider_changes(X, "ok"),
                lambda: m.a_holder_dies(dies, "after the open call")]  # type: ignore[arg-type]
    return Walk(f"an open call times out, {ticks:+d} tick", steps)


def _a_first_call_dies_after_its_open_call(m: UrlRules) -> list[Callable[[], object]]:
    """The URL's first call (its holder recorded it with paid calls off before): its holder dies after recording the open call and paying, before any
    result; the URL's state, written once, stands pending (seen, not processed); a holder a tick before
    the call's timeout pays nothing beside it, and leaves the state as it is."""
    dies = Draws(lambda e: e[0] == "T000" and e[1].url == X, lambda t: t == -1)
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "ok"}), m.toggle_paid, recorded_live(m, "T000"),
            m.toggle_paid, lambda: m.clock_moves(61),  # recorded skipped_paid, no call: the URL has no state yet
            lambda: m.a_holder_dies(dies, "after the open call")]  # type: ignore[arg-type]


def _a_named_retry_in_the_millisecond_of_a_call(m: UrlRules) -> list[Callable[[], object]]:
    """A URL's not_found expired with its window; a new holder's call answers blocked, and in that very
    millisecond a retry naming not_found starts: the call counts as since its start (the stores keep
    the millisecond), so the re-examination pays nothing and leaves not_found (the `decide` table)."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "not_found"}), recorded_live(m, "T000"),
            recorded_live(m, "T001"), lambda: m.clock_moves(15 * 24 * 60), lambda: m.provider_changes(YT, "blocked"),
            lambda: m.new_token([YT]), recorded_live(m, "T002"),
            lambda: m.named_retry(["not_found"], 0, "none", Draws())]  # type: ignore[arg-type]


def _streak_expires(ticks: int) -> Walk:
    """Two failed calls, then another holder a tick before, at, or after the streak's expiry."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}),
                recorded_live(m, "T000"), lambda: m.clock_moves(61), recorded_live(m, "T000"),
                _at_boundary(m, "the streak expires", TG, ticks, "T001")]
    return Walk(f"a streak expires, {ticks:+d} tick", steps)


def _answer_expires(ticks: int) -> Walk:
    """An answer, then a token traded just now a tick before, at, or after the window's end."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[YT], [YT]], {}), recorded_live(m, "T000"),
                lambda: m.a_new_holder_as_the_answer_expires(url=YT, ticks=ticks)]
    return Walk(f"an answer expires, {ticks:+d} tick", steps)


def _called_again(ticks: int, failures: int) -> Walk:
    """`failures` failed calls, then a holder a tick before, at, or after the back-off ends."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        again = _at_boundary(m, "it may be called again", YT, 1, "T000")  # each further failure, once callable
        return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "5xx"}), recorded_live(m, "T000"),
                *[again] * (failures - 1), _at_boundary(m, "it may be called again", YT, ticks, "T001")]
    return Walk(f"called again after {failures} failure(s), {ticks:+d} tick", steps)


def _element_due(ticks: int) -> Walk:
    """A failed call, then its element a tick before, at, or after it is due."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[TG]], {TG: "5xx"}), recorded_live(m, "T000"),
                _at_boundary(m, "an element is due", TG, ticks, "T000")]
    return Walk(f"an element is due, {ticks:+d} tick", steps)


def _in_one_instant(m: UrlRules, step: Callable[[], object], *, on_a_second: bool = False) -> Callable[[], object]:
    """`step` with the clock standing still (every reading the same instant), on a whole second if asked
    (a run's `since` is kept to the millisecond: there a call in the same instant is stored as equal)."""
    def run() -> None:
        if on_a_second:
            m.clock.set((m.clock() + timedelta(seconds=1)).replace(microsecond=0))
        m.clock.frozen = True
        try:
            step()
        finally:
            m.clock.frozen = False
    return run


def _retention_ends(ticks: int) -> Walk:
    """A paid submission whose poll failed (the request stays saved), then a holder a tick before, at,
    or after the provider forgets it: it polls the saved request before, submits a new one from then on
    (the submission recorded in one instant, so the provider's time and the engine's are one)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}),
                _in_one_instant(m, recorded_live(m, "T000")),
                _at_boundary(m, "the submission's retention ends", WEB, ticks, "T001")]
    return Walk(f"a submission's retention ends, {ticks:+d} tick", steps)


def _named_beside_a_young_open_call(m: UrlRules) -> list[Callable[[], object]]:
    """An operator names a `not_found` whose window ended while another holder's paid call is open (it
    died after paying): nothing is called beside it, and the named element keeps its answer."""
    dies = Draws(lambda e: e[0] == "T001", lambda t: t is None, lambda a: a == "T000")
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T001"),
            lambda: m.provider_changes(X, "not_found"), lambda: m.clock_moves(61), recorded_live(m, "T000"),
            lambda: m.provider_changes(X, "ok"), lambda: m.clock_moves(15 * 24 * 60),
            lambda: m.a_holder_dies(dies, "after the open call"),  # type: ignore[arg-type]
            lambda: m.named_retry(["not_found"], 0, "none", Draws())]  # type: ignore[arg-type]


def _called_in_the_selections_instant(m: UrlRules) -> list[Callable[[], object]]:
    """A named retry selects an expired `not_found`; in the very instant of its selection another run
    calls the URL (and it fails): called since the selection, the named element is not called again."""
    between = Draws(lambda pool: "T001" in pool, lambda a: a == "T001")
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "not_found"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(YT, "5xx"), lambda: m.clock_moves(15 * 24 * 60),
            _in_one_instant(m, lambda: m.named_retry(["not_found"], 0, "between", between),  # type: ignore[arg-type]
                            on_a_second=True)]


def _an_answer_without_a_call(url: str) -> Steps:
    """A failed call, then an answer decided without a request (no anchor), then a holder a window
    later: the answer still stands, and the failed call's moment is not its anchor."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
                lambda: m.provider_changes(url, "nothing to fetch"), lambda: m.clock_moves(24 * 60),
                recorded_live(m, "T000"), lambda: m.provider_changes(url, "ok"),
                lambda: m.clock_moves(15 * 24 * 60), recorded_live(m, "T001")]
    return steps


def _a_submission_over_a_dead_call(m: UrlRules) -> list[Callable[[], object]]:
    """A holder dies after paying a two-step submission nobody knows the id of; a day on, the next one
    submits again over its timed-out call and its poll fails: the dead call travels with the saved
    submission and is counted, once."""
    dies = Draws(lambda e: e[0] == "T000", lambda t: t is None, lambda a: a == "T000")
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "429"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(WEB, "5xx"),
            lambda: m.a_holder_dies(dies, "after the open call"),  # type: ignore[arg-type]
            lambda: m.clock_moves(24 * 60), recorded_live(m, "T000"), lambda: m.clock_moves(24 * 60),
            recorded_live(m, "T001")]


def _at_the_due_instant(m: UrlRules, step: Callable[[], object]) -> Callable[[], object]:
    """`step` at the moment T000's Telegram element is due, as the store keeps it (to the millisecond on
    Mongo), with the clock standing still from there (no tick later)."""
    def run() -> None:
        el = m.store.find_element("T000", TG)
        assert el is not None and el.due_at is not None
        m.clock.set(el.due_at)
        _in_one_instant(m, step)()
    return run


def _a_retry_in_the_instant_an_element_is_due(among: bool) -> Steps:
    """A failed call, then a retry selecting in the very instant its element is due (among all tokens,
    or among given ones): it is taken."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        # A run every base interval takes what is due by its very moment (the back-off table's "due by").
        retry = (lambda: m.retry_among(["T000"], 60)) if among else (
            lambda: m.default_retry(60, "none", Draws()))  # type: ignore[arg-type]
        return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
                _at_the_due_instant(m, retry)]
    return steps


def _a_failure_as_the_answer_expires(m: UrlRules) -> list[Callable[[], object]]:
    """An answer, then a holder exactly at the window's end whose call fails: the URL stands at the
    failure, not at the answer that just expired."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {}), recorded_live(m, "T000"),
            lambda: m.provider_changes(YT, "5xx"), _at_boundary(m, "the answer expires", YT, 0, "T001")]


def _a_dead_call_on_a_streak_about_to_expire(m: UrlRules) -> list[Callable[[], object]]:
    """Two failures; minutes before their streak expires a holder dies with its paid call open; the
    next holder finds it timed out after the expiry: it counts on the streak alive when it was opened."""
    dies = Draws(lambda e: e[0] == "T000", lambda t: t is None, lambda a: a == "T000")
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"),
            lambda: m.clock_moves(14 * 24 * 60 - 10), lambda: m.a_holder_dies(dies, "after the open call"),  # type: ignore[arg-type]
            lambda: m.clock_moves(20), recorded_live(m, "T000")]


def _reads_nothing_after_the_streak_expired(m: UrlRules) -> list[Callable[[], object]]:
    """Two failures, a window of silence, then a call that reads nothing and a failure: one failure."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}),
            recorded_live(m, "T000"), lambda: m.clock_moves(61), recorded_live(m, "T000"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.provider_changes(TG, "unreadable"),
            recorded_live(m, "T001"), lambda: m.provider_changes(TG, "5xx"), lambda: m.clock_moves(61),
            recorded_live(m, "T000")]


def _a_stale_write_below_the_elements_fence(m: UrlRules) -> list[Callable[[], object]]:
    """A failed paid call, then the same token recorded again inside the back-off (its element written,
    the URL state not): a late write with a fence between the two is refused by the element's, and its
    spend line enters nothing."""
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(1), recorded_live(m, "T000"),
            lambda: m.a_stale_url_write(Draws(lambda e: e[0] == "T000"),  # type: ignore[arg-type]
                                        "below the element's fence alone")]


def _dies_after_a_fresh_submissions_answer(m: UrlRules) -> list[Callable[[], object]]:
    """A holder submits a paid two-step request, its poll is answered, and it dies before writing: the
    saved submission is polled again by the next holder, nothing is paid or entered twice."""
    dies = Draws(lambda e: e[0] == "T000", lambda t: t is None, lambda a: a == "T000")
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "bug"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(WEB, "ok"), lambda: m.clock_moves(61),
            lambda: m.a_holder_dies(dies, "after the answer"),  # type: ignore[arg-type]
            lambda: m.clock_moves(24 * 60), recorded_live(m, "T000")]


def _the_spend_counter_cannot_be_asked(m: UrlRules) -> list[Callable[[], object]]:
    """A failed paid call; once it may be called again, a holder while the spend budget's counter cannot
    be asked (nothing new is paid), then one once it can."""
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: m.the_spend_counter_cannot_be_asked(Draws(lambda e: e[0] == "T000")),  # type: ignore[arg-type]
            recorded_live(m, "T000")]


def _the_back_off_meets_its_cap(m: UrlRules) -> list[Callable[[], object]]:
    """Three failures: the third back-off is the cap's, and an element is due a tick after it."""
    again = _at_boundary(m, "it may be called again", TG, 1, "T000")
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"), again, again,
            _at_boundary(m, "an element is due", TG, 0, "T000")]


def _a_late_write_inside_a_paid_calls_write(m: UrlRules) -> list[Callable[[], object]]:
    """A paid call answers; between its write's read and its conditional update (the Mongo store's
    moment; elsewhere right before it) a late holder writes: the call's write is refused once, read
    again and applied, and its spend line enters the ledger once."""
    late = Draws(lambda a: a == "T000", lambda answer: answer == "ok", lambda at: at == "inside a call's write")
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T001"),
            lambda: m.provider_changes(X, "ok"), lambda: m.clock_moves(61),
            lambda: m.live_event(late, "write")]  # type: ignore[arg-type]


def _a_named_answer_that_cannot_be_called(m: UrlRules) -> list[Callable[[], object]]:
    """A holder's `not_found` of an old window; the window now holds a worse `blocked`, and the day's
    spend budget is used up; an operator names `not_found`: its call cannot be made, and the element
    takes the window's answer (holders recorded in one window agree)."""
    x2 = POOL[1]
    return [lambda: m.some_tokens_and_answers([[X], [X], [x2]], {X: "not_found"}), recorded_live(m, "T001"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.provider_changes(X, "blocked"),
            recorded_live(m, "T000"), recorded_live(m, "T002"),  # the account's two requests of the day
            lambda: m.clock_moves(61), lambda: m.named_retry(["not_found"], 0, "none", Draws())]  # type: ignore[arg-type]


def _disowned_as_a_day_ends(m: UrlRules) -> list[Callable[[], object]]:
    """A holder the lock backend disowns right before its paid request, in the last microseconds of a
    UTC day, once per offset (a day apart): wherever midnight falls between its admission and the veto,
    the slot goes back to the day it was taken in."""
    def at(k: int) -> Callable[[], object]:
        def step() -> None:
            now = m.clock()
            m.clock.set(datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1) - k * TICK)
            m.the_lock_backend_disowns_a_holder_before_it_pays(Draws(lambda e: e == ("T000", X)))  # type: ignore[arg-type]
        return step
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            *(at(k) for k in range(1, 80))]


def _engine_failures_then_an_answer(m: UrlRules) -> list[Callable[[], object]]:
    """Our own defect before any request, twice, then the provider answers: the count starts again."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "bug"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.provider_changes(TG, "ok"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.provider_changes(TG, "bug"),
            recorded_live(m, "T001")]


def _a_failure_then_an_answer(m: UrlRules) -> list[Callable[[], object]]:
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: m.provider_changes(TG, "ok"), recorded_live(m, "T000"),
            lambda: m.provider_changes(TG, "5xx"), lambda: m.clock_moves(61), recorded_live(m, "T001")]


def _a_named_re_examination_fails(m: UrlRules) -> list[Callable[[], object]]:
    """A `not_found` named by a retry is called again and fails: it keeps the window's answer."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "not_found"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(YT, "5xx"), lambda: m.clock_moves(61),
            lambda: m.named_retry(["not_found"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_paid_request_survives_a_failed_poll(m: UrlRules) -> list[Callable[[], object]]:
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T001")]


def _the_provider_changes_its_mind(url: str) -> Steps:
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[url], [url]], {}),
                lambda: m.the_provider_changes_its_mind_between_two_new_holders(url=url, first="ok", then="not_found")]
    return steps


def _a_days_budget_holds_the_next_request(m: UrlRules) -> list[Callable[[], object]]:
    """The paid one-step account's budget is two new requests a UTC day: the third failure waits."""
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(121), recorded_live(m, "T000")]


def _a_runs_interval(m: UrlRules) -> list[Callable[[], object]]:
    """A retry that runs every base interval takes what is due within it; one that runs at once only
    what is due now."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(30), lambda: m.default_retry(0, "none", Draws()),  # type: ignore[arg-type]
            lambda: m.clock_moves(61), lambda: m.default_retry(60, "none", Draws())]  # type: ignore[arg-type]


def _a_retry_at_once_meets_its_own_failure(m: UrlRules) -> list[Callable[[], object]]:
    """A retry that runs at once (its "due by" one base interval ahead) calls a URL whose streak has
    expired, fails, and meets the same URL for its second token: a URL its own call failed, which
    the run's "due by" would let it call again, is not called twice in one run."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), m.reconcile,
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.default_retry(0, "none", Draws())]  # type: ignore[arg-type]


def _a_live_run_in_the_instant_an_element_is_due(m: UrlRules) -> list[Callable[[], object]]:
    """A failed call, then a live run in the very instant its element is due: the live path reopens it."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            _at_the_due_instant(m, recorded_live(m, "T000"))]


def _a_dead_holders_poll(m: UrlRules) -> list[Callable[[], object]]:
    """A two-step submission whose poll failed stays saved; the next holder resumes it and dies after
    the provider answered its poll: its open call, a poll, counts as a failed call once timed out, and
    is no new spending (the ledger holds the submission alone)."""
    dies = Draws(lambda e: e[0] == "T000", lambda t: t is None, lambda a: a == "T000")
    return [lambda: m.some_tokens_and_answers([[WEB]], {WEB: "5xx"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(WEB, "ok"), lambda: m.clock_moves(61),
            lambda: m.a_holder_dies(dies, "after the answer"),  # type: ignore[arg-type]
            lambda: m.provider_changes(WEB, "5xx"), lambda: m.clock_moves(24 * 60), recorded_live(m, "T000")]


def _a_late_holder_inside_a_write_without_a_call(m: UrlRules) -> list[Callable[[], object]]:
    """A holder reuses the window's answer (a write without a call, made on the state's version) while
    a late holder reuses it for a third token inside that write, between its read and its conditional
    update (on the Mongo store; right before it elsewhere): the version moved, so the write is stale."""
    inside = Draws(lambda a: a == "T001", lambda flip: flip == "ok", lambda at: at == "inside the first write")
    return [lambda: m.some_tokens_and_answers([[X], [X], [X]], {X: "5xx"}), recorded_live(m, "T002"),
            lambda: m.provider_changes(X, "ok"), lambda: m.clock_moves(61), recorded_live(m, "T000"),
            lambda: m.live_event(inside, "write")]  # type: ignore[arg-type]


def _three_holders_die_with_their_calls_open(m: UrlRules) -> list[Callable[[], object]]:
    """Three holders in a row die after paying, a day apart, each writing its open call over the last
    one's, timed out: the third record carries all three (the open-call table), none entered yet."""
    def dies(address: str) -> Callable[[], object]:
        return lambda: m.a_holder_dies(Draws(lambda e: e[0] == address and e[1].url == X, lambda t: t is None),  # type: ignore[arg-type]
                                       "after the open call")
    return [lambda: m.some_tokens_and_answers([[X], [X], [X], [X]], {X: "ok"}), m.toggle_paid, m.reconcile,
            m.toggle_paid, dies("T000"), lambda: m.clock_moves(24 * 60), dies("T001"),
            lambda: m.clock_moves(24 * 60), dies("T002")]


def _a_named_exhausted_element_reads_nothing(m: UrlRules) -> list[Callable[[], object]]:
    """A URL spent its budget; an operator names exhausted, and the provider now answers in a shape the
    generator cannot read: the forced re-examination learned nothing, the element keeps exhausted."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(120), recorded_live(m, "T000"),
            lambda: m.provider_changes(TG, "unreadable"), lambda: m.clock_moves(61),
            lambda: m.named_retry(["exhausted"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_paused_holder(what: str) -> Steps:
    """A holder paused past its lease wakes with its old fence: its paid call's record (or its saved
    submission, with its spend line) is refused."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        wakes = (lambda: m.a_paused_holder_records_a_paid_url(Draws(lambda e: e[0] == "T000"))) if what == "records" \
            else (lambda: m.a_paused_holder_wakes(url=X, what="open call" if what == "wakes" else "paid request"))  # type: ignore[arg-type]
        return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
                lambda: m.clock_moves(24 * 60), wakes]  # a day on: the account's budget is not what stops it
    return steps


def _a_paused_submission_taken_over(answer: str) -> Steps:
    """A holder of the two-step paid URL sends its submission and is paused before saving it, past its
    lease and its call's timeout; a newer holder records the URL (the provider answering `answer`) and
    writes its state (after a first call refused before it submitted); the paused holder wakes: its save is refused and its call stops there, no poll
    sent, nothing written (the draws reach this interleaving only by chance)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "429"}), recorded_live(m, "T000"),
                lambda: m.provider_changes(WEB, answer),  # refused before its submission: nothing saved
                lambda: m.a_newer_holder_takes_over_a_paused_submission(Draws(lambda e: e[0] == "T000"))]  # type: ignore[arg-type]
    return steps


def _an_answer_lands_while_a_call_fails(moment: str) -> Steps:
    """A holder's call fails; before its write (or, on the Mongo store, between its read and its
    conditional update), a late holder's later call answers and is written first: the failed call's
    write is merged, under its own fence, and leaves the last call at the answer's (it only moves
    forward)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        late = Draws(lambda a: a == "T000", lambda answer: answer == "ok", lambda at: at == moment)
        return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "bug"}),
                recorded_live(m, "T001"),  # T001 holds the URL (our own defect: nothing called), for the late write
                lambda: m.provider_changes(YT, "5xx"), lambda: m.live_event(late, "write")]  # type: ignore[arg-type]
    return steps


def _holders_die_one_after_another(m: UrlRules) -> list[Callable[[], object]]:
    """Holders in turn die after recording their open call and paying (a day apart: the account's
    budget), each once the last one's call timed out: each record is written over a timed-out one,
    which travels with it until counted; then the world stands still."""
    def dies() -> None:
        m.a_holder_dies(Draws(lambda e: e[0] == "T000", lambda t: t is None), "after the open call")  # type: ignore[arg-type]

    def day() -> None:
        m.clock_moves(24 * 60)

    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), recorded_live(m, "T000"),
            dies, day, dies, day, dies, m.a_stable_world_converges]


def _a_stale_write_onto_ok(m: UrlRules) -> list[Callable[[], object]]:
    """An `ok` element, its URL state since written by another holder (a newer fence, a newer version):
    stale writes onto it are refused as `ok` kept, the first check of the refusal table that fails (below
    the element's own fence: fenced, the check before)."""
    def onto_ok(why: str) -> Callable[[], object]:
        return lambda: m.a_stale_url_write(Draws(lambda e: e[0] == "T000"), why)  # type: ignore[arg-type]
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {}), recorded_live(m, "T000"), recorded_live(m, "T001"),
            *(onto_ok(why) for why in ("onto an ok element", "onto an ok element, on an old version",
                                       "onto an ok element, below the state's fence",
                                       "onto an ok element, below its fence"))]


def _read_nothing_for_many_holders(m: UrlRules) -> list[Callable[[], object]]:
    """Three holders of a paid URL whose answers nobody can read, in one run."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB], [WEB]], {WEB: "unreadable"}), m.reconcile]


def _a_later_failure_lands_while_a_call_answers(moment: str) -> Steps:
    """A holder's call answers; a few milliseconds later a late holder's call fails and is written
    first (right before the answer's write, or inside it on the Mongo store): the answer is merged, and
    the URL's last call stays the late holder's, stored as later (it only moves forward)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        late = Draws(lambda a: a == "T001", lambda answer: answer == "5xx", lambda at: at == moment,
                     lambda later: later == timedelta(milliseconds=2))
        return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "bug"}),
                recorded_live(m, "T000"),  # T000 holds the URL (our own defect: nothing called), for the late write
                lambda: m.provider_changes(YT, "ok"), lambda: m.live_event(late, "write")]  # type: ignore[arg-type]
    return steps


def _a_late_call_before_a_dead_holders_record(m: UrlRules) -> list[Callable[[], object]]:
    """A failed paid call; a day on, a holder decides to call again, and at its call (before its open
    call is recorded, dated at its decision) a late holder's call fails a few milliseconds later and is
    written; the holder pays and dies. A token traded just now comes as the dead call times out: it
    counts it, and the URL's last call stays the late holder's (the open-call table)."""
    dies = Draws(lambda e: e[0] == "T000", lambda t: t == 0)
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "5xx"}), m.reconcile,
            lambda: m.clock_moves(24 * 60),
            lambda: m.a_late_holder_calls_before_a_dead_holders_record(
                dies, "5xx", timedelta(milliseconds=2))]  # type: ignore[arg-type]


def _two_holders_race_a_first_state(paid: bool, url: str = X) -> Steps:
    """A URL nothing has been recorded for: a holder (a paid one with paid calls on, or a free one: it
    calls; paid calls off: it writes its element alone) decides on no state while a late holder with paid
    calls on writes the URL's first state before its write (inside it on the Mongo store): the holder's
    write is stale, taken anew."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        race = Draws(lambda p: p is paid, lambda late_paid: late_paid, lambda flip: flip == "5xx",
                     lambda at: at == "inside the first write")
        return [lambda: m.some_tokens_and_answers([[TG], [TG]], {}),
                lambda: m.two_holders_race_a_urls_first_state(url, race)]  # type: ignore[arg-type]
    return steps


def _a_named_exhausted_element_beside_a_young_open_call(m: UrlRules) -> list[Callable[[], object]]:
    """A URL spent its budget; its streak expires, a third holder dies after paying (its call open), and an
    operator names exhausted: nothing is called beside the open call, and the named element keeps
    exhausted (the open-call row for a named absorbing element)."""
    dies = Draws(lambda e: e[0] == "T002", lambda t: t is None, lambda a: a == "T002")
    return [lambda: m.some_tokens_and_answers([[X], [X], [X]], {X: "5xx"}), m.toggle_paid,
            recorded_live(m, "T002"), m.toggle_paid,  # T002 waits skipped_paid: callable once its streak expires
            recorded_live(m, "T001"), lambda: m.clock_moves(24 * 60), recorded_live(m, "T001"),
            lambda: m.clock_moves(24 * 60), recorded_live(m, "T001"),  # a day apart: the account's budget
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.a_holder_dies(dies, "after the open call"),  # type: ignore[arg-type]
            lambda: m.named_retry(["exhausted"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_request_past_its_retention_without_a_call(m: UrlRules) -> list[Callable[[], object]]:
    """A paid submission whose poll failed stays saved; once the provider forgot it, the next holder
    can make no call (our rate limiter holds it before any request): the request past its retention is
    closed all the same (the `after` table's no-call row)."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}),
            _in_one_instant(m, recorded_live(m, "T000")), lambda: m.our_rate_limiter_holds_the_next_call(WEB),
            _at_boundary(m, "the submission's retention ends", WEB, 1, "T001")]


def _a_request_past_its_retention_then_an_engine_failure(m: UrlRules) -> list[Callable[[], object]]:
    """A paid submission whose poll failed stays saved; once the provider forgot it, the next holder's
    call reads it (past its retention: closed) and our code then fails before any request: an engine
    failure, the request closed all the same (the `after` table's engine-failure row)."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}),
            _in_one_instant(m, recorded_live(m, "T000")),
            lambda: m.provider_changes(WEB, "bug after the saved request is read"),
            _at_boundary(m, "the submission's retention ends", WEB, 1, "T001"),
            lambda: m.provider_changes(WEB, "ok"), lambda: m.clock_moves(24 * 60), recorded_live(m, "T001")]


def _a_request_closed_without_a_call_past_the_window(m: UrlRules) -> list[Callable[[], object]]:
    """A paid submission whose poll failed stays saved; past its retention and the failure's window, a
    holder's call reads it (closed) and our rate limiter then holds the call: nothing sent, the request
    closed, and the URL stands as the statuses say now (its failure expired: pending), not as it stood
    at its last write (the `after` table's no-call row)."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.our_rate_limiter_holds_the_next_call(WEB),
            recorded_live(m, "T001")]


def _a_saved_submissions_acknowledgement_lost(m: UrlRules) -> list[Callable[[], object]]:
    """A paid submission is saved, and the store's acknowledgement is lost (Mongo: the connection drops
    after the write applied): the engine repeats the save, which moves nothing twice; the URL state and
    the ledger count its request once."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {}), lambda: setattr(m.store, "ack_lost", True),
            recorded_live(m, "T000"), recorded_live(m, "T001")]


def _an_open_call_loses_the_first_insert(m: UrlRules) -> list[Callable[[], object]]:
    """A URL nothing was recorded for (its first holder recorded while the key was unset); a new holder
    saves its paid call's record, and a late holder (a lower fence) inserts the URL's first state right
    before it (Mongo: the record's insert loses the race): the record is written all the same (its
    fence is the larger: "Fencing"), then paid."""
    def race(url: str, fence: int) -> None:
        m._late_holder("T001", url, fence - 1, "nothing to fetch")

    return [lambda: m.some_tokens_and_answers([[X], [X]], {}), lambda: m.a_providers_key_goes_or_comes_back(Platform.X),
            recorded_live(m, "T000"), lambda: m.a_providers_key_goes_or_comes_back(Platform.X),
            lambda: setattr(m.store, "racing_insert", race), recorded_live(m, "T001")]


def _a_newer_holder_claims_the_element_mid_write(m: UrlRules) -> list[Callable[[], object]]:
    """A failed call's URL, retried an hour on: between the write's URL state and its element
    (Mongo: two updates), a newer holder claims the element; the element's update is refused as
    fenced (the refusal table, check 1: conditional on the fence this write claimed)."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "5xx"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(YT, "ok"), lambda: m.clock_moves(61),
            lambda: setattr(m.store, "claimed_after_commit", True),
            lambda: m.default_retry(60, "none", Draws(), limit=1)]  # type: ignore[arg-type]


def _a_newer_holders_links_mid_write(m: UrlRules) -> list[Callable[[], object]]:
    """A free URL answers ok with links: before the write's links land (Mongo: links, then the state,
    then the element), a newer holder claims the element and replaces its links; the write is refused
    as fenced and, refused, changes nothing: the newer holder's links stand alone ("Fencing")."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "ok"}),
            lambda: setattr(m.store, "links_claimed_mid_write", True), recorded_live(m, "T000")]


def _an_answer_in_two_paid_requests(m: UrlRules) -> list[Callable[[], object]]:
    """A one-step paid call reads its answer from two paid requests: both are entered in the ledger,
    each at its account's price; the next day a third one's second request meets the day's budget,
    after its first left: a failed call."""
    return [lambda: m.some_tokens_and_answers([[X], [X, YT]], {X: "ok in two requests"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.provider_changes(X, "5xx"), recorded_live(m, "T001"),
            lambda: m.provider_changes(X, "ok in two requests"), lambda: m.clock_moves(61), recorded_live(m, "T001")]


def _dies_after_an_answer_in_two_paid_requests(m: UrlRules) -> list[Callable[[], object]]:
    """A one-step paid call reads its answer from two paid requests and its holder dies before writing:
    its record counts both (each recorded before it left), so the holder a tick past its timeout enters
    both in the ledger ("No payment without a record")."""
    dies = Draws(lambda e: e[0] == "T000" and e[1].url == X, lambda t: t == 1)
    return [lambda: m.some_tokens_and_answers([[X], [X]], {X: "bug"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(X, "ok in two requests"), lambda: m.clock_moves(61),
            lambda: m.a_holder_dies(dies, "after the answer"), lambda: m.clock_moves(24 * 60),  # type: ignore[arg-type]
            recorded_live(m, "T000")]


def _a_generator_back_in_the_instant_an_element_is_due(paid: bool) -> Steps:
    """The free platform's key is not set: its URL is recorded unsupported for want of a generator; the
    key is set again, and a retry (paid calls on, or off: the free platform's generator is usable either
    way) selects in the very instant the element is due: it is taken."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[TG], [TG]], {}), lambda: m.a_providers_key_goes_or_comes_back(
                    Platform.TELEGRAM), recorded_live(m, "T000"),
                lambda: m.a_providers_key_goes_or_comes_back(Platform.TELEGRAM), *([] if paid else [m.toggle_paid]),
                _at_the_due_instant(m, lambda: m.default_retry(60, "none", Draws()))]  # type: ignore[arg-type]
    return steps


def _a_retry_limited_to_one(m: UrlRules) -> list[Callable[[], object]]:
    """Two holders of a failing URL recorded a minute apart are due a minute apart; a retry limited to
    one element takes the longest due."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(1), recorded_live(m, "T001"), lambda: m.clock_moves(120),
            lambda: m.default_retry(60, "none", Draws(), limit=1)]  # type: ignore[arg-type]


def _a_retry_limited_to_one_of_two_statuses(error_first: bool) -> Steps:
    """A failed call's element (`error`) and, a day apart before or after it, an element recorded
    `unsupported` for want of a generator whose key is set again: both due, a retry limited to one takes
    the longest due whatever its status (the stores select status by status)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        error = [recorded_live(m, "T000")]
        unsupported = [lambda: m.a_providers_key_goes_or_comes_back(Platform.YOUTUBE), recorded_live(m, "T001"),
                       lambda: m.a_providers_key_goes_or_comes_back(Platform.YOUTUBE)]
        first, then = (error, unsupported) if error_first else (unsupported, error)
        return [lambda: m.some_tokens_and_answers([[TG], [YT]], {TG: "5xx"}), *first,
                lambda: m.clock_moves(24 * 60), *then, lambda: m.clock_moves(3 * 24 * 60),
                lambda: m.default_retry(60, "none", Draws(), limit=1)]  # type: ignore[arg-type]
    return steps


def _a_million_times_the_base(m: UrlRules) -> list[Callable[[], object]]:
    """Eight failed calls in a row, each once the URL may be called again, under a growth of 10 and a
    budget of nine: the waits grow to the cap and stay there, a million times the base included."""
    again = _at_boundary(m, "it may be called again", YT, 1, "T000")
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "5xx"}), recorded_live(m, "T000"), *[again] * 7]


def _a_providers_credit_is_gone(m: UrlRules) -> list[Callable[[], object]]:
    """The paid account says its credit is gone at a run's first URL: the run sends it no further
    request (its other URL is not called), and the next run may again."""
    x2 = POOL[1]
    return [lambda: m.some_tokens_and_answers([[X], [x2]], {X: "no credit", x2: "ok"}), m.reconcile,
            lambda: m.clock_moves(61), m.reconcile]


def _a_paid_accounts_credit_is_gone_skips_its_urls(m: UrlRules) -> list[Callable[[], object]]:
    """The paid account says its credit is gone at a run's first URL: that URL's call failed (`error`,
    credit), and its other URL, never called, ends `skipped_paid` (the docs: a paid one's URLs), not
    `error`, which a free provider's quota leaves."""
    x2 = POOL[1]
    return [lambda: m.some_tokens_and_answers([[X], [x2]], {X: "no credit", x2: "ok"}), m.reconcile,
            _holds(m, "T000", X, FetchStatus.ERROR), _holds(m, "T001", x2, FetchStatus.SKIPPED_PAID)]


def _a_free_providers_quota_is_gone(m: UrlRules) -> list[Callable[[], object]]:
    """A free provider says its quota is gone at a run's first URL: the run calls it no more, and its
    other URL ends `error` (credit or quota gone: the no-call row keeps that status), not `skipped_paid`,
    which is a paid account's."""
    yt2 = "https://youtube.com/watch?v=bcdefghijkl"
    return [lambda: m.some_tokens_and_answers([[YT], [yt2]], {YT: "no credit", yt2: "ok"}), m.reconcile,
            _holds(m, "T000", YT, FetchStatus.ERROR), _holds(m, "T001", yt2, FetchStatus.ERROR)]


def _a_defect_after_a_free_request(m: UrlRules) -> list[Callable[[], object]]:
    """Our code fails once a free request left: a failed call of the streak (the `after` table), not an
    engine failure; a second holder an hour on calls again and fails the same way."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "bug after a request"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T001")]


def _a_retry_past_the_default_limit(m: UrlRules) -> list[Callable[[], object]]:
    """More tokens than a retry takes by default hold a failing URL, recorded by a reconcile run: a day
    on, a retry given a larger limit takes all it may, the rest counted as remaining
    (docs/architecture.md, a run's `limit`)."""
    return [lambda: m.some_tokens_and_answers([[YT]] * 53, {YT: "5xx"}), m.reconcile,
            lambda: m.clock_moves(24 * 60), lambda: m.default_retry(0, "none", Draws(), limit=52)]  # type: ignore[arg-type]


def _a_retry_among_a_tokens_elements(m: UrlRules) -> list[Callable[[], object]]:
    """A token holds an element `unsupported` because its generator cannot read the URL's shape (a
    usable platform: only a code change helps) and an answered one; a retry among that token's elements
    takes neither (only the default statuses, and unsupported only for want of a generator)."""
    return [lambda: m.some_tokens_and_answers([[TG, YT], [TG]], {TG: "unreadable", YT: "not_found"}),
            recorded_live(m, "T000"), lambda: m.clock_moves(15 * 24 * 60), lambda: m.retry_among(["T000"], 60)]


def _a_tie_at_a_retrys_limit(among: bool) -> Steps:
    """Two tokens' failing URLs called in one instant are due in one instant; a retry limited to one
    (among both tokens, or by default) takes the first token's, whatever the URLs' order (the longest due
    first, ties by token then URL: "Retry selection"), and so does the store asked for one."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        retry = (lambda: m.retry_among(["T000", "T001"], 60, limit=1)) if among else (
            lambda: m.default_retry(60, "none", Draws(), limit=1))  # type: ignore[arg-type]
        return [lambda: m.some_tokens_and_answers([[YT], [TG]], {YT: "5xx", TG: "5xx"}), _in_one_instant(m, m.reconcile),
                lambda: m.clock_moves(120), retry]
    return steps


def _a_named_unsupported_among_a_tokens_elements(m: UrlRules) -> list[Callable[[], object]]:
    """A token's element is recorded `unsupported` for want of a generator; an operator names unsupported
    in a retry among that token's elements: it is taken (named, whatever the configuration)."""
    return [lambda: m.some_tokens_and_answers([[TG, YT], [YT]], {}),
            lambda: m.a_providers_key_goes_or_comes_back(Platform.TELEGRAM), recorded_live(m, "T000"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.retry_among(["T000"], 60, named=["unsupported"])]


def _a_retry_among_tokens_meets_a_non_canonical_url(m: UrlRules) -> list[Callable[[], object]]:
    """A token stored before the entry canonicalised its URLs holds a non-canonical one (our bug: reported,
    never sent, so nothing a retry could change); a retry among it and a model token never selects it."""
    def stored() -> None:
        assert m.store.create_pending_token(TokenProfile(address="OLD", urls=["https://X.com/i/status/101"]),
                                            m.clock())
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"), stored,
            lambda: m.clock_moves(120), lambda: m.retry_among(["T000", "OLD"], 60)]


def _a_default_retry_meets_a_non_canonical_url(m: UrlRules) -> list[Callable[[], object]]:
    """As above, but the retry of the whole store, limited to one: the non-canonical URL (no platform,
    never sent) is never selected, so it takes no slot of the limit; the model's due element is taken."""
    def stored() -> None:
        assert m.store.create_pending_token(TokenProfile(address="OLD", urls=["https://X.com/i/status/101"]),
                                            m.clock())
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"), stored,
            lambda: m.clock_moves(120), lambda: m.default_retry(60, "none", Draws(), limit=1)]  # type: ignore[arg-type]


def _a_retry_limited_to_one_meets_a_never_recorded_element(m: UrlRules) -> list[Callable[[], object]]:
    """A failed element long due beside one never recorded (due at once: the longest due of all); the
    store's selection limited to one takes the never-recorded one first, as the retry's own order does."""
    def seen() -> None:  # T001 seen, stored pending, not recorded yet (as the entry leaves it)
        assert m.store.create_pending_token(TokenProfile(address="T001", urls=[YT]), m.clock())
    return [lambda: m.some_tokens_and_answers([[TG], [YT]], {TG: "5xx", YT: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(24 * 60), seen, lambda: m.clock_moves(1),
            lambda: m.default_retry(0, "none", Draws(), limit=1)]  # type: ignore[arg-type]


def _a_retry_among_tokens_where_one_generator_is_back(m: UrlRules) -> list[Callable[[], object]]:
    """Two platforms' keys are unset: a token's two URLs end `unsupported` for want of a generator. One
    key comes back: a retry among that token takes that platform's element only, never the other's
    (still without a generator: nothing the retry could change)."""
    def keys(*platforms: Platform) -> Callable[[], object]:
        return lambda: [m.a_providers_key_goes_or_comes_back(p) for p in platforms]
    return [lambda: m.some_tokens_and_answers([[YT, TG]], {YT: "5xx", TG: "5xx"}),
            keys(Platform.YOUTUBE, Platform.TELEGRAM), recorded_live(m, "T000"),
            _holds(m, "T000", TG, FetchStatus.UNSUPPORTED), keys(Platform.YOUTUBE),
            lambda: m.clock_moves(24 * 60), lambda: m.retry_among(["T000"], 0)]


def _a_redirect_refused(m: UrlRules) -> list[Callable[[], object]]:
    """The page fetch is redirected to a non-public address: our guard refuses it, the element is
    `blocked` (docs/architecture.md, the statuses), and a second holder reuses that answer."""
    return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "blocked"}), recorded_live(m, "T000"),
            recorded_live(m, "T001"), *(_holds(m, address, WEB, FetchStatus.BLOCKED) for address in ("T000", "T001"))]


def _holds(m: UrlRules, address: str, url: str, status: FetchStatus) -> Callable[[], object]:
    """A step: `address`'s element of `url` holds `status` (what the provider's answer means, by the docs)."""
    def check() -> None:
        el = m.store.find_element(address, url)
        assert el is not None and el.status is status, f"{address} {url}: {el!r}, expected {status.value}"
    return check


def _a_named_exhausted_element_that_cannot_be_called(m: UrlRules) -> list[Callable[[], object]]:
    """A URL spent its budget; an operator names exhausted, and our rate limiter holds the forced call
    before any request: no call was made, the element keeps exhausted (the `after` table's no-call row)."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(120), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: m.our_rate_limiter_holds_the_next_call(TG),
            lambda: m.named_retry(["exhausted"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_named_exhausted_element_fails_in_our_code(m: UrlRules) -> list[Callable[[], object]]:
    """A URL spent its budget; an operator names exhausted, and our code fails before any request: an
    engine failure, no call was made, the element keeps exhausted (the `after` table's engine-failure row)."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(120), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), lambda: m.provider_changes(TG, "bug"),
            lambda: m.named_retry(["exhausted"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_named_exhausted_element_meets_a_fresh_invalid(m: UrlRules) -> list[Callable[[], object]]:
    """A URL spent its budget; its streak expires, the provider now finds nothing to fetch and another
    holder records `invalid` (no call stands behind it); an operator names exhausted: the window's
    better `invalid` is taken, not paid for again (the answers' ranks)."""
    return [lambda: m.some_tokens_and_answers([[YT], [YT]], {YT: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(120), recorded_live(m, "T000"),
            lambda: m.clock_moves(15 * 24 * 60), lambda: m.provider_changes(YT, "nothing to fetch"),
            recorded_live(m, "T001"), lambda: m.named_retry(["exhausted"], 0, "none", Draws())]  # type: ignore[arg-type]


def _a_spent_streak_expires_during_a_run(ticks: int) -> Walk:
    """A URL spends its budget; a holder's run starts a minute before the streak expires and records the
    URL a tick before, at, or after the expiry: judged at its recording (from the expiry on, called)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        again = _at_boundary(m, "it may be called again", TG, 1, "T000")
        return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"), again, again,
                _at_boundary(m, "the streak expires", TG, ticks, "T001", started_before=True)]
    return Walk(f"a spent streak expires during a run, {ticks:+d} tick", steps)


def _an_unanchored_answer_stands(url: str) -> Steps:
    """A `blocked` no call stood behind (a private target's link: no anchor, it never expires); the
    provider then finds nothing to fetch (`invalid`, no anchor either), met by a named re-examination
    (or a second holder of a URL never reused): the better `blocked` stands."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        then = (lambda: m.named_retry(["blocked"], 0, "none", Draws())) if url != TG else (  # type: ignore[arg-type]
            recorded_live(m, "T001"))
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "blocked without a request"}),
                recorded_live(m, "T000"), lambda: m.provider_changes(url, "nothing to fetch"),
                lambda: m.clock_moves(24 * 60), then, lambda: m.clock_moves(15 * 24 * 60), recorded_live(m, "T001")]
    return steps


def _the_rate_limiter_cannot_be_asked(when: str, url: str) -> Steps:
    """A failed call; once the URL may be called again, our rate limiter cannot be asked during the next
    call: before its first request (left as it was), or after one left (a failed call)."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
                lambda: m.provider_changes(url, "ok"), lambda: m.clock_moves(61),
                lambda: m.our_rate_limiter_cannot_be_asked_at_the_next_call(url, when), recorded_live(m, "T000"),
                lambda: m.clock_moves(120), recorded_live(m, "T001")]
    return steps


def _the_url_lock_is_lost_before_a_request(url: str) -> Steps:
    """A failed call; once the URL may be called again, a holder's URL lock is lost right before its
    first request (free, or paid): nothing leaves, nothing is written."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[url], [url]], {url: "5xx"}), recorded_live(m, "T000"),
                lambda: m.clock_moves(61),
                lambda: m.the_url_lock_is_lost_before_a_request(Draws(lambda e: e[0] == "T000")),  # type: ignore[arg-type]
                recorded_live(m, "T001")]
    return steps


def _a_month_budget_used_up_first(m: UrlRules) -> list[Callable[[], object]]:
    """The one-step account's budget is two new requests a day and five a month: two failing URLs called
    on three days of one month meet the month's budget first, on a day with one request left."""
    x2 = POOL[1]
    day = lambda: m.clock_moves(24 * 60)  # noqa: E731
    return [lambda: m.some_tokens_and_answers([[X], [x2]], {X: "5xx", x2: "5xx"}),
            recorded_live(m, "T000"), recorded_live(m, "T001"), day, recorded_live(m, "T000"), recorded_live(m, "T001"),
            day, recorded_live(m, "T000"), recorded_live(m, "T001")]


def _a_month_budget_used_up_in_december(m: UrlRules) -> list[Callable[[], object]]:
    """The month's budget used up first, in the last days of December: it resets when the UTC month ends,
    on the first of January of the next year."""
    to_december = lambda: m.clock.set(T0.replace(month=12, day=28))  # noqa: E731
    return [to_december, *_a_month_budget_used_up_first(m)]


def _a_month_budget_of_zero(m: UrlRules) -> list[Callable[[], object]]:
    """A month budget of no paid request: a paid URL is not called (held by the month's budget), a free
    one is; a day on, still not."""
    return [lambda: m.some_tokens_and_answers([[X, YT], [X]], {X: "5xx", YT: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(24 * 60), recorded_live(m, "T001")]


def _a_month_budget_of_zero_skips_a_paid_url(m: UrlRules) -> list[Callable[[], object]]:
    """A month budget of no paid request: the paid URL held by it is `skipped_paid` (cause spend budget,
    zero calls), not `error`; the free one is called and fails (`error`). A live run an hour on reopens
    the error, never the `skipped_paid` (live reopens error and pending only: a retry takes it again)."""
    return [lambda: m.some_tokens_and_answers([[X, YT]], {X: "5xx", YT: "5xx"}), recorded_live(m, "T000"),
            _holds(m, "T000", X, FetchStatus.SKIPPED_PAID), _holds(m, "T000", YT, FetchStatus.ERROR),
            lambda: m.clock_moves(61), recorded_live(m, "T000")]


def _a_retry_limited_to_one_across_statuses(m: UrlRules) -> list[Callable[[], object]]:
    """A URL failed twice (its back-off grown), then a paid URL is held by a month budget of zero
    (`skipped_paid`) a minute after its second recording: the retry limited to one takes the longest due
    (by due time, not by last recording) across the two statuses."""
    return [lambda: m.some_tokens_and_answers([[TG], [X]], {TG: "5xx", X: "5xx"}), recorded_live(m, "T000"),
            lambda: m.clock_moves(61), recorded_live(m, "T000"), lambda: m.clock_moves(1), recorded_live(m, "T001"),
            lambda: m.clock_moves(24 * 60), lambda: m.default_retry(0, "none", Draws(), limit=1)]  # type: ignore[arg-type]


def _at_the_live_due_instant(m: UrlRules, step: Callable[[], object]) -> Callable[[], object]:
    """`step` at the first moment a live run takes T000's Telegram element (its due time less the live
    path's lead), the clock standing still from there."""
    def run() -> None:
        el = m.store.find_element("T000", TG)
        assert el is not None and el.due_at is not None
        m.clock.set(el.due_at - m._live_lead)
        _in_one_instant(m, step)()
    return run


def _a_live_path_every_30_minutes(m: UrlRules) -> list[Callable[[], object]]:
    """A live path every 30 minutes takes what is due within them: a failed call's element, recorded
    again at its due time less 30 minutes (the back-off table's "due by"), then a tick before that."""
    return [lambda: m.some_tokens_and_answers([[TG], [TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            _at_the_live_due_instant(m, recorded_live(m, "T000")),
            lambda: m.clock.set(m.store.find_element("T000", TG).due_at - m._live_lead - TICK),  # type: ignore[union-attr]
            _in_one_instant(m, recorded_live(m, "T000"))]


def _a_re_polled_submission_meets_its_retention(ticks: int) -> Walk:
    """A paid submission whose poll fails stays saved; an hour on another holder polls it again and fails
    (the write carries the request as submitted); then a holder a tick before, at, or after the
    provider forgets it."""
    def steps(m: UrlRules) -> list[Callable[[], object]]:
        return [lambda: m.some_tokens_and_answers([[WEB], [WEB]], {WEB: "5xx"}),
                _in_one_instant(m, recorded_live(m, "T000")), lambda: m.clock_moves(61), recorded_live(m, "T001"),
                _at_boundary(m, "the submission's retention ends", WEB, ticks, "T000")]
    return Walk(f"a re-polled submission meets its retention, {ticks:+d} tick", steps)


def _a_late_holder_at_the_claim(call: bool) -> Steps:
    """A holder's write (of its call's answer, or of the window's answer reused without one) meets, between
    its refusal read and its claim of the element (the Mongo store's moment; elsewhere right before it),
    a late holder of the same token that makes the element `ok`: the write is refused, `ok` kept."""
    at = "at the claim of a call's write" if call else "at the claim of the first write"
    url = YT if call else X  # a free URL: a paid call's record would fence the late holder out

    def steps(m: UrlRules) -> list[Callable[[], object]]:
        late = Draws(lambda a: a == "T000", lambda answer: answer == "ok", lambda moment: moment == at)
        first = [recorded_live(m, "T001")] if call else [recorded_live(m, "T001"), lambda: m.provider_changes(url, "ok"),
                                                         lambda: m.clock_moves(61), recorded_live(m, "T002")]
        return [lambda: m.some_tokens_and_answers([[url], [url], [url]], {url: "5xx"}), *first,
                lambda: m.provider_changes(url, "ok"), lambda: m.clock_moves(61),
                lambda: m.live_event(late, "write")]  # type: ignore[arg-type]
    return steps


WALKS: tuple[Walk, ...] = (
    *(Walk(name, steps) for name, steps in SENSOR_WALKS),  # first: they take a second, and kill in it
    *(Walk(name, steps) for name, steps in MONGO15_WALKS),
    *(Walk(name, steps) for name, steps in ENTRY16_WALKS),
    *(Walk(name, steps) for name, steps in STORES16_WALKS),
    *(Walk(name, steps) for name, steps in RETRY_WALKS),
    *(Walk(name, steps) for name, steps in FEED_WALKS),
    *(Walk(name, steps) for name, steps in HEALTH_WALKS),
    *(Walk(name, steps) for name, steps in RUN_WALKS),
    *(Walk(name, steps) for name, steps in RUNS15_WALKS),
    *(Walk(name, steps) for name, steps in RUNS16_WALKS),
    *(Walk(name, steps) for name, steps in TOKEN_WALKS),
    *(Walk(name, steps) for name, steps in LIMIT_WALKS),
    *(Walk(name, steps) for name, steps in OUTAGE_WALKS),
    *(Walk(name, steps, config) for name, steps, config in SPEND_WALKS),
    *(Walk(name, steps, config) for name, steps, config in STORE_WALKS),
    *(Walk(name, steps) for name, steps in LOCK_WALKS),
    *(Walk(name, steps) for name, steps in RATE_WALKS),
    *(Walk(name, steps, config) for name, steps, config in RATE_WALKS_WITH_SETTINGS),
    *(Walk(name, steps) for name, steps in LEASE_WALKS),
    *(Walk(name, steps) for name, steps in EXPIRY_WALKS),
    *(Walk(name, steps) for name, steps in HTTP_WALKS),
    *(Walk(name, steps) for name, steps in OUTBOUND_WALKS),
    *(Walk(name, steps) for name, steps in OUTBOUND15_WALKS),
    *(Walk(name, steps) for name, steps in OUTBOUND16_WALKS),
    *(Walk(name, steps) for name, steps in PARTITION_WALKS),
    *(Walk(name, steps, config) for name, steps, config in LOCKS15_WALKS),
    *(Walk(name, steps) for name, steps in LOCKS16_WALKS),
    *(_open_call_times_out(t) for t in TICKS),
    Walk("a first call dies after its open call", _a_first_call_dies_after_its_open_call),
    *(Walk(f"a paused submission taken over ({answer})", _a_paused_submission_taken_over(answer))
      for answer in ("ok", "5xx")),
    Walk("a named retry in the millisecond of a call", _a_named_retry_in_the_millisecond_of_a_call),
    *(_streak_expires(t) for t in TICKS),
    *(_answer_expires(t) for t in TICKS),
    *(_called_again(t, n) for t in TICKS for n in (1, 2)),
    *(_element_due(t) for t in TICKS),
    *(_retention_ends(t) for t in TICKS),
    Walk("a named answer beside a young open call", _named_beside_a_young_open_call),
    Walk("called in the selection's instant", _called_in_the_selections_instant),
    *(Walk(f"an answer without a call ({url})", _an_answer_without_a_call(url)) for url in (X, YT)),
    Walk("engine failures, then an answer", _engine_failures_then_an_answer),
    Walk("a run's call reads nothing for three holders", _read_nothing_for_many_holders),
    Walk("a failure, then an answer", _a_failure_then_an_answer),
    Walk("holders die one after another", _holders_die_one_after_another),
    Walk("a submission saved over a dead holder's call", _a_submission_over_a_dead_call),
    *(Walk(f"an answer lands while a call fails ({at})", _an_answer_lands_while_a_call_fails(at))
      for at in ("before a call's write", "inside a call's write")),
    Walk("a stale write onto an ok element", _a_stale_write_onto_ok),
    Walk("a named re-examination fails", _a_named_re_examination_fails),
    Walk("a paid request survives a failed poll", _a_paid_request_survives_a_failed_poll),
    *(Walk(f"the provider changes its mind ({url})", _the_provider_changes_its_mind(url)) for url in (TG, YT)),
    Walk("a day's budget holds the next request", _a_days_budget_holds_the_next_request),
    Walk("a run's interval", _a_runs_interval),
    Walk("a retry at once meets its own failure", _a_retry_at_once_meets_its_own_failure),
    Walk("a late holder inside a write without a call", _a_late_holder_inside_a_write_without_a_call),
    Walk("three holders die with their calls open", _three_holders_die_with_their_calls_open),
    Walk("a dead holder's poll", _a_dead_holders_poll),
    Walk("a live run in the instant an element is due", _a_live_run_in_the_instant_an_element_is_due),
    Walk("a named exhausted element reads nothing", _a_named_exhausted_element_reads_nothing),
    *(Walk(f"a retry{' among given tokens' if among else ''} in the instant an element is due",
           _a_retry_in_the_instant_an_element_is_due(among)) for among in (False, True)),
    Walk("a failure as the answer expires", _a_failure_as_the_answer_expires),
    Walk("a dead call on a streak about to expire", _a_dead_call_on_a_streak_about_to_expire),
    Walk("reads nothing after the streak expired", _reads_nothing_after_the_streak_expired),
    Walk("a stale write below the element's fence", _a_stale_write_below_the_elements_fence),
    Walk("dies after a fresh submission's answer", _dies_after_a_fresh_submissions_answer),
    Walk("the spend counter cannot be asked", _the_spend_counter_cannot_be_asked),
    Walk("the back-off meets its cap", _the_back_off_meets_its_cap),
    Walk("a late write inside a paid call's write", _a_late_write_inside_a_paid_calls_write),
    Walk("a named answer that cannot be called", _a_named_answer_that_cannot_be_called),
    Walk("disowned as a day ends", _disowned_as_a_day_ends),
    *(Walk(f"a paused holder {what}", _a_paused_holder(what)) for what in ("records", "wakes", "submits")),
    *(Walk(f"a later failure lands while a call answers ({at})", _a_later_failure_lands_while_a_call_answers(at))
      for at in ("before a call's write", "inside a call's write")),
    Walk("a late call before a dead holder's record", _a_late_call_before_a_dead_holders_record),
    *(Walk(f"two holders race a URL's first state (paid calls {'on' if paid else 'off'})",
           _two_holders_race_a_first_state(paid)) for paid in (False, True)),
    Walk("two holders race a free URL's first state", _two_holders_race_a_first_state(True, YT)),
    Walk("a named exhausted element beside a young open call", _a_named_exhausted_element_beside_a_young_open_call),
    Walk("a request past its retention without a call", _a_request_past_its_retention_without_a_call),
    Walk("a saved submission's acknowledgement lost", _a_saved_submissions_acknowledgement_lost),
    Walk("an open call loses the first insert", _an_open_call_loses_the_first_insert),
    Walk("a newer holder claims the element mid-write", _a_newer_holder_claims_the_element_mid_write),
    Walk("a newer holder's links mid-write", _a_newer_holders_links_mid_write),
    Walk("a request past its retention, then an engine failure", _a_request_past_its_retention_then_an_engine_failure),
    Walk("a request closed without a call past the window", _a_request_closed_without_a_call_past_the_window),
    Walk("an answer in two paid requests", _an_answer_in_two_paid_requests),
    Walk("dies after an answer in two paid requests", _dies_after_an_answer_in_two_paid_requests),
    *(Walk(f"a generator back in the instant an element is due (paid calls {'on' if paid else 'off'})",
           _a_generator_back_in_the_instant_an_element_is_due(paid)) for paid in (True, False)),
    Walk("a retry limited to one", _a_retry_limited_to_one),
    *(Walk(f"a retry limited to one of two statuses ({'error' if first else 'unsupported'} first)",
           _a_retry_limited_to_one_of_two_statuses(first)) for first in (True, False)),
    Walk("a retry among a token's elements", _a_retry_among_a_tokens_elements),
    *(Walk(f"a tie at a retry's limit{' among given tokens' if among else ''}", _a_tie_at_a_retrys_limit(among))
      for among in (False, True)),
    Walk("a named unsupported among a token's elements", _a_named_unsupported_among_a_tokens_elements),
    Walk("a redirect refused", _a_redirect_refused),
    Walk("a retry among tokens meets a non-canonical URL", _a_retry_among_tokens_meets_a_non_canonical_url),
    Walk("a default retry meets a non-canonical URL", _a_default_retry_meets_a_non_canonical_url),
    Walk("a retry among tokens where one generator is back", _a_retry_among_tokens_where_one_generator_is_back),
    Walk("a retry limited to one meets a never-recorded element",
         _a_retry_limited_to_one_meets_a_never_recorded_element),
    Walk("a retry past the default limit", _a_retry_past_the_default_limit),
    Walk("a provider's credit is gone", _a_providers_credit_is_gone),
    Walk("a paid account's credit is gone: its URLs skipped", _a_paid_accounts_credit_is_gone_skips_its_urls),
    Walk("a free provider's quota is gone", _a_free_providers_quota_is_gone),
    Walk("a defect after a free request", _a_defect_after_a_free_request),
    Walk("a million times the base", _a_million_times_the_base, {"limits": NINE_ATTEMPTS}),
    Walk("a named exhausted element that cannot be called", _a_named_exhausted_element_that_cannot_be_called),
    Walk("a named exhausted element fails in our code", _a_named_exhausted_element_fails_in_our_code),
    Walk("a named exhausted element meets a fresh invalid", _a_named_exhausted_element_meets_a_fresh_invalid),
    *(_a_spent_streak_expires_during_a_run(t) for t in TICKS),
    *(Walk(f"an unanchored answer stands ({url})", _an_unanchored_answer_stands(url)) for url in (YT, TG)),
    *(Walk(f"the rate limiter cannot be asked {when} ({url})", _the_rate_limiter_cannot_be_asked(when, url))
      for when in ("before any request", "after a request") for url in (YT, X)),
    *(Walk(f"the URL lock is lost before a request ({url})", _the_url_lock_is_lost_before_a_request(url))
      for url in (YT, X)),
    Walk("a month's budget used up first", _a_month_budget_used_up_first,
         {"limits": FOUR_ATTEMPTS, "per_month": SPEND_PER_MONTH}),
    Walk("a month's budget used up in December", _a_month_budget_used_up_in_december,
         {"limits": FOUR_ATTEMPTS, "per_month": SPEND_PER_MONTH}),
    Walk("a month's budget of zero", _a_month_budget_of_zero,
         {"per_month": {account: 0 for account in SPEND_PER_MONTH}}),
    Walk("a month's budget of zero skips a paid URL", _a_month_budget_of_zero_skips_a_paid_url,
         {"per_month": {account: 0 for account in SPEND_PER_MONTH}}),
    Walk("a retry limited to one across statuses", _a_retry_limited_to_one_across_statuses,
         {"per_month": {account: 0 for account in SPEND_PER_MONTH}}),
    Walk("a live path every 30 minutes", _a_live_path_every_30_minutes, {"live_interval": 30}),
    *(_a_re_polled_submission_meets_its_retention(t) for t in TICKS),
    *(Walk(f"a late holder at the claim of {'a call' if call else 'a write without a call'}",
           _a_late_holder_at_the_claim(call)) for call in (True, False)),
)

