"""The model's walks of backend outages and cut-short retries (test_support/url_machine_outages.py): a
store busy or full for a moment, a lock server down past its bound, a retry whose deadline passes before
its last token and its raw values, and one whose URL lock is lost before its write. Listed among the
model's walks (test_support/url_machine_walks.py), so every run meets them whatever the draws."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, _, WEB, YT, TG = POOL


def _failed_once(m: UrlRules) -> list[Callable[[], object]]:
    """Two tokens whose free URL failed once (due again after its back-off), and a token with a raw value."""
    return [lambda: m.some_tokens_and_answers([[YT], [TG]], {YT: "5xx", TG: "5xx"}), recorded_live(m, "T000"),
            recorded_live(m, "T001"), lambda: m.a_token_with_raw_values([], [("transient", "fresh", True)]),
            lambda: m.provider_changes(YT, "ok"), lambda: m.clock_moves(61)]


def _the_store_unavailable(kind: str, seconds: float) -> Steps:
    return lambda m: [*_failed_once(m), lambda: m.the_store_is_unavailable_for_a_moment(Draws(), kind, seconds)]


def _the_lock_server_down(seconds: float) -> Steps:
    return lambda m: [*_failed_once(m), lambda: m.the_lock_server_does_not_answer(Draws(), seconds)]


def _a_paid_answer_past_the_bound(refusal: str) -> Steps:
    """A paid call answers while the store stays unavailable past the write's bound: the URL fails as
    attempted, the answer waits in the spool, a next recording meets the store still away (deferred), and
    the one after writes it (the spool's rule and checks, test_support/url_machine_spool.py)."""
    return lambda m: [lambda: m.some_tokens_and_answers([[X], [YT]], {}),
                      lambda: m.a_paid_answer_the_store_cannot_take(
                          Draws(), "ok", "writable", "the store still refuses, then takes it", "the token that paid",
                          timedelta(seconds=1), "lifted", True, refusal)]


def _a_retry_cut_short(deadline_at: int | None, lost_at: int | None) -> Steps:
    return lambda m: [*_failed_once(m),
                      lambda: m.a_retry_cut_short_or_losing_a_lock(Draws(), 60, 50, deadline_at, lost_at)]


OUTAGE_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"the store {kind} for {seconds} s", _the_store_unavailable(kind, seconds))
      for kind, seconds in (("busy", 0.9), ("full disk", 0.05))),
    *((f"the lock server down for {seconds} s", _the_lock_server_down(seconds)) for seconds in (5.0, 60.0)),
    *((f"a paid answer, the store {refusal}", _a_paid_answer_past_the_bound(refusal))
      for refusal in ("busy past the bound", "full past the bound")),
    ("a retry's deadline passes at its first token", _a_retry_cut_short(0, None)),
    ("a retry's deadline passes at its last token", _a_retry_cut_short(1, None)),
    ("a retry's URL lock is lost before its first write", _a_retry_cut_short(None, 0)),
)
"""(name, steps) of each walk."""
