"""The paid-once tally (sandbox/paid_tally.py): reading only what was appended since the last
evaluation, it decides exactly as a fold of the whole ledger; a replaced ledger or other rules are
tallied again from the start; processes sharing it take turns."""

from __future__ import annotations

import multiprocessing as mp
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.paid import paid_ledger_figures
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger, LedgerFormatError
from social_recording.sandbox.paid_tally import PaidTally, tally_path

T0 = datetime(2026, 11, 3, 12, tzinfo=UTC)


def _append(ledger: Ledger, minutes: float, subject: str, status: int = 200, *, service: str = "twitterapi",
            paid: bool = True) -> None:
    ledger.append(service=service, method="GET", url=f"https://{service}.example/x", subject=subject, status=status,
                  paid=paid, ts=T0 + timedelta(minutes=minutes))


def _batches() -> list[list[tuple[float, str, int, str, bool]]]:
    """Appends as several runs would make them: retries after failures, a poll, free requests, a
    payment made again for an answer, a fresh call past the TTL, a subject spanning batches."""
    past_ttl = DEDUPE_TTL / timedelta(minutes=1) + 1
    return [
        [(0, "tweet:1", 503, "twitterapi", True), (1, "tweet:2", 200, "twitterapi", True),
         (2, "https://coin.example/", 200, "urlscan", True), (3, "result:abc", 200, "urlscan", True)],
        [(60, "tweet:1", 429, "twitterapi", True), (61, "repos/o/r", 200, "github", False)],
        [(120, "tweet:1", 200, "twitterapi", True), (121, "https://coin.example/", 200, "urlscan", True)],
        [],
        [(past_ttl, "tweet:2", 200, "twitterapi", True), (past_ttl + 1, "tweet:3", 404, "twitterapi", True)],
    ]


def test_reading_only_new_lines_decides_as_the_whole_ledger_does(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    tally = PaidTally(ledger, second_steps=POLL_PREFIXES)
    assert tally.figures() == paid_ledger_figures([])  # no ledger yet
    for batch in _batches():
        for minutes, subject, status, service, paid in batch:
            _append(ledger, minutes, subject, status, service=service, paid=paid)
        figures = tally.figures()
        assert tally.lines_read == len(batch)  # never a line it had read before
        assert figures == paid_ledger_figures(ledger.read(), second_steps=POLL_PREFIXES)
    assert figures.repeated == {("urlscan", "https://coin.example/"): 2}
    assert (figures.paid_requests, figures.distinct_subjects, figures.retries_after_failure) == (8, 4, 3)
    # A later tally (another run's process) starts where this one stopped.
    again = PaidTally(ledger, second_steps=POLL_PREFIXES)
    assert again.figures() == figures and again.lines_read == 0


def test_a_replaced_or_cut_ledger_and_other_rules_are_tallied_again(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ledger = Ledger(path)
    for minutes in (0, 1, 2):
        _append(ledger, minutes, "tweet:1", 200)
    assert PaidTally(ledger).figures().paid_requests == 3
    other_rules = PaidTally(ledger, second_steps=("tweet:",))  # polls by another name: nothing counts
    assert other_rules.figures().paid_requests == 0 and other_rules.lines_read == 3

    path.unlink()
    _append(ledger, 5, "tweet:9", 200)  # a new file at the same path
    tally = PaidTally(ledger)
    figures = tally.figures()
    assert (figures.paid_requests, figures.distinct_subjects, figures.repeated) == (1, 1, {})
    assert tally.lines_read == 1

    path.write_text("")  # cut short in place
    assert PaidTally(ledger).figures().paid_requests == 0


def test_a_bad_line_is_named_and_nothing_is_counted_from_its_batch(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    _append(ledger, 0, "tweet:1")
    assert PaidTally(ledger).figures().paid_requests == 1
    with ledger.path.open("a") as out:
        out.write('{"ts": "not a time"}\n')
    with pytest.raises(LedgerFormatError, match="ledger.jsonl: the line ending at byte"):
        PaidTally(ledger).figures()
    assert tally_path(ledger).exists()


def _evaluate(path: str, out: mp.Queue) -> None:  # type: ignore[type-arg]
    out.put(PaidTally(Ledger(path), second_steps=POLL_PREFIXES).figures().paid_requests)


def test_processes_evaluating_at_once_take_turns(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "ledger.jsonl")
    for i in range(300):
        _append(ledger, i, f"tweet:{i % 120}", 503 if i % 7 == 0 else 200)
    expected = paid_ledger_figures(ledger.read(), second_steps=POLL_PREFIXES)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_evaluate, args=(str(ledger.path), out)) for _ in range(3)]
    for p in procs:
        p.start()
    counts = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(30)
    assert counts == [expected.paid_requests] * 3
    assert PaidTally(ledger, second_steps=POLL_PREFIXES).figures() == expected
