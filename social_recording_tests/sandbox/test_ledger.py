"""The ledger: one JSON line per answered request, safe from several OS processes, keys never written."""

from __future__ import annotations

import json
import multiprocessing
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

import social_recording.sandbox.ledger as ledger_module
from social_recording.sandbox import Ledger
from social_recording.sandbox.ledger import LedgerFormatError, redact_url
from social_recording.sandbox.paid_tally import PaidTally
from social_recording_tests.sandbox._workers import append_lines


def test_append_and_read_round_trip(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "nested" / "dir" / "ledger.jsonl")  # parent directories are created
    assert ledger.read() == []
    ts = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    ledger.append(service="youtube", method="get", url="https://www.googleapis.com/youtube/v3/videos?id=a&key=SECRET",
                  subject="video:a", status=200, paid=False, ts=ts)
    ledger.append(service="apify", method="POST", url="https://api.apify.com/v2/acts/x~y/runs?token=T0K&timeout=90",
                  subject="apify:https://tiktok.com/@a", status=201, paid=True)
    raw = ledger.path.read_text(encoding="utf-8").splitlines()
    assert len(raw) == 2
    first = json.loads(raw[0])
    assert set(first) == {"ts", "service", "method", "url", "subject", "status", "paid"}
    assert first["ts"] == "2026-11-01T10:00:00Z" and first["method"] == "GET"
    assert "SECRET" not in ledger.path.read_text() and "T0K" not in ledger.path.read_text()
    entries = ledger.read()
    assert [e.subject for e in entries] == ["video:a", "apify:https://tiktok.com/@a"]
    assert entries[0].url == "https://www.googleapis.com/youtube/v3/videos?id=a"
    assert entries[1].url == "https://api.apify.com/v2/acts/x~y/runs?timeout=90"
    assert entries[0].ts == ts and entries[1].ts.tzinfo is not None


@pytest.mark.parametrize(
    ("url", "expected"),
    [("https://h.example/p?key=abc", "https://h.example/p"),
     ("https://h.example/p?a=1&KEY=abc&b=%2C2", "https://h.example/p?a=1&b=%2C2"),
     ("https://h.example/p?api_key=1&access_token=2&part=snippet,statistics", "https://h.example/p?part=snippet,statistics"),
     ("https://user:pw@h.example/p", "https://h.example/p"),
     ("https://h.example/p?keyword=x&id=1", "https://h.example/p?id=1")],  # the logs' name rule: safe side
)
def test_redact_url(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_unknown_service_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown ledger service 'twitter'"):
        Ledger(tmp_path / "l.jsonl").append(service="twitter", method="GET", url="u", subject="s", status=200, paid=True)


def test_corrupt_line_is_reported_with_its_number(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.jsonl")
    ledger.append(service="tracker", method="GET", url="u", subject="range:a/b", status=200, paid=False)
    with ledger.path.open("a") as fh:
        fh.write("{not json\n")
    with pytest.raises(LedgerFormatError, match=r"l\.jsonl: line 2"):
        ledger.read()


def test_paid_requests_and_repeated_subjects(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "l.jsonl")

    def add(service: str, subject: str, paid: bool) -> None:
        ledger.append(service=service, method="GET", url="https://h.example/", subject=subject, status=200, paid=paid)

    add("twitterapi", "tweet:1", True)
    add("twitterapi", "tweet:1", True)
    add("twitterapi", "tweet:1", True)
    add("apify", "tweet:1", True)  # same subject, other service: not a repeat of the twitterapi one
    add("urlscan", "scan:https://a.example", True)
    add("urlscan", "result:u-1", True)
    add("urlscan", "result:u-1", True)  # polls are paid but never a repeat
    add("youtube", "video:v", False)
    add("youtube", "video:v", False)  # free: not counted
    assert len(ledger.paid_requests()) == 7
    assert ledger.repeated_paid_subjects() == {("twitterapi", "tweet:1"): 3}


def test_four_processes_append_200_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "ledger.jsonl"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=append_lines, args=(str(path), w, 50)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 200
    parsed = [json.loads(line) for line in lines]  # every line is whole, valid JSON
    assert {p["subject"] for p in parsed} == {f"tweet:{w}-{i}-" + "x" * 300 for w in range(4) for i in range(50)}
    assert len(Ledger(path).read()) == 200


def test_a_value_holding_a_unicode_line_separator_reads_back_whole(tmp_path: Path) -> None:
    """Values are written as they are (ensure_ascii=False): U+2028, U+2029 or U+0085 inside a
    subject is not the end of its line, for `read` as for `read_from`."""
    ledger = Ledger(tmp_path / "ledger.jsonl")
    subjects = ["tweet:a\u2028b", "tweet:c\u2029d", "tweet:e\x85f", "tweet:plain"]
    for subject in subjects:
        ledger.append(service="twitterapi", method="GET", url="https://api.twitterapi.io/x", subject=subject,
                      status=200, paid=True)
    assert [e.subject for e in ledger.read()] == subjects
    assert [e.subject for e, _ in ledger.read_from(0)] == subjects


def _append_paid(ledger: Ledger, subjects: list[str]) -> None:
    """One paid request per subject, appended as the sandbox appends them (30,000 take about a second)."""
    ts = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
    for subject in subjects:
        ledger.append(service="twitterapi", method="GET", url="https://api.twitterapi.io/twitter/tweets",
                      subject=subject, status=200, paid=True, ts=ts)


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 16])
def test_read_from_yields_each_line_once_with_its_end_whatever_the_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """Lines cut anywhere by the reads (a chunk of one byte, lines longer than a chunk, a UTF-8
    character cut in two) come out whole, each with the offset just after it, and a read resumed at
    any of those offsets yields exactly the lines after it."""
    monkeypatch.setattr(ledger_module, "READ_CHUNK", chunk)
    path = tmp_path / "ledger.jsonl"
    subjects = [f"tweet:{i}" + "é" * (i % 5) + "x" * (i * 37 % 200) for i in range(60)]
    ledger = Ledger(path)
    _append_paid(ledger, subjects)
    read = list(ledger.read_from(0))
    assert [e.subject for e, _ in read] == subjects
    raw = path.read_bytes()
    assert [end for _, end in read] == [i + 1 for i, byte in enumerate(raw) if byte == ord("\n")]
    for k in (0, 1, 30, 59):
        assert [e.subject for e, _ in ledger.read_from(read[k][1])] == subjects[k + 1:]
    assert list(ledger.read_from(len(raw))) == []


def test_the_paid_once_tally_reads_a_large_ledger_in_bounded_memory(tmp_path: Path) -> None:
    """A run's first paid-once check folds the whole ledger (every request of the run): what it
    holds at once is a chunk of the file and a batch of subjects, not the file or its lines (nor
    its values in pydantic-core's string cache)."""
    path = tmp_path / "ledger.jsonl"
    _append_paid(Ledger(path), [f"tweet:{i}" for i in range(30_000)])
    assert path.stat().st_size > 4_000_000
    tally = PaidTally(Ledger(path))
    tracemalloc.start()
    try:
        figures = tally.figures()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (figures.paid_requests, figures.distinct_subjects, tally.lines_read) == (30_000, 30_000, 30_000)
    assert peak < 1_000_000, f"folding the ledger held {peak / 1e6:.1f} MB at once"
