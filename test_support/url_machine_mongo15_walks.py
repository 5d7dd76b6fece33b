"""The model's walks of the Mongo store's busy moments (test_support/url_machine_mongo15.py): a write meeting
what MongoDB raises while unavailable for a moment, the day's first ledger line entered by two writers at
once, a write landing while the counters are recounted, and the default retry's held-back count beside an
element whose URL shape its generator cannot read. Listed among the model's walks
(test_support/url_machine_walks.py), run on both stores."""

from __future__ import annotations

from collections.abc import Callable

from social_recording.domain.urls import Platform
from test_support.url_machine_model import POOL, UrlRules
from test_support.url_machine_steps import Draws, Steps, recorded_live

X, X2, WEB, YT, TG = POOL


def _the_store_unavailable(kind: str) -> Steps:
    """A free URL failed once (due again after its back-off); its next write meets the store `kind`."""
    return lambda m: [lambda: m.some_tokens_and_answers([[YT]], {YT: "5xx"}), recorded_live(m, "T000"),
                      lambda: m.provider_changes(YT, "ok"), lambda: m.clock_moves(61),
                      lambda: m.the_store_is_unavailable_as_mongodb_says_it(Draws(), kind, 0.25)]


def _the_days_first_ledger_line_raced(m: UrlRules) -> list[Callable[[], object]]:
    """Two tokens each holding a paid URL of one account, both answering: the first's write enters the
    day's first ledger line as the second's recording enters it first."""
    return [lambda: m.some_tokens_and_answers([[X], [X2]], {X: "ok", X2: "ok"}),
            lambda: m.a_second_writer_enters_the_days_first_ledger_line("T000", "T001")]


def _a_write_while_recounted(m: UrlRules) -> list[Callable[[], object]]:
    return [lambda: m.some_tokens_and_answers([[TG]], {TG: "5xx"}), recorded_live(m, "T000"),
            m.a_write_lands_while_the_counters_are_recounted]


def _held_back_beside_an_unreadable_shape(m: UrlRules) -> list[Callable[[], object]]:
    """Three elements recorded just now, none due: an `unsupported` one whose URL shape its generator
    cannot read, a failed one, and an `unsupported` one for want of its platform's key, set again since.
    The default retry holds back the last two, never the first (nothing it could change)."""
    return [lambda: m.some_tokens_and_answers([[YT], [TG], [WEB]], {YT: "unreadable", TG: "5xx", WEB: "ok"}),
            recorded_live(m, "T000"), recorded_live(m, "T001"),
            lambda: m.a_providers_key_goes_or_comes_back(Platform.WEB), recorded_live(m, "T002"),
            lambda: m.a_providers_key_goes_or_comes_back(Platform.WEB),
            m.the_default_retry_counts_what_it_holds_back]


MONGO15_WALKS: tuple[tuple[str, Steps], ...] = (
    *((f"the store {kind} for a moment", _the_store_unavailable(kind))
      for kind in ("labelling the transaction transient", "labelling the write retryable", "failing over")),
    ("two writers enter the day's first ledger line", _the_days_first_ledger_line_raced),
    ("a write lands while the counters are recounted", _a_write_while_recounted),
    ("the default retry's held-back count beside an unreadable shape", _held_back_beside_an_unreadable_shape),
)
"""(name, steps) of each walk."""
