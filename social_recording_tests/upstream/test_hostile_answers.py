"""Hostile tracker and shortener answers never crash a process (docs/architecture.md, "Bounds of an
answer"): each parser runs, in a worker process, the Hypothesis cases of `hostile_input.mutations`,
and every one ends in a value or the client's own error (TrackerError, ShortlinkError), naming the
bound it passed. The named regression test is the crash found on the tracker's range answer."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings

from social_recording.outbound.bounds import MAX_DEPTH, MAX_NUMBER_CHARS, TRACKER_BODY_BYTES
from social_recording_tests.hostile_input import (
    SHORTLINK_LIMITS,
    TRACKER_LIMITS,
    Worker,
    judge,
    mutations,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = 120
WORKERS: dict[str, Worker] = {}


@pytest.fixture(scope="module", autouse=True)
def _workers() -> Iterator[None]:
    yield
    for worker in WORKERS.values():
        worker.close()


def _run(parser: str, case: dict[str, object], limits: dict[str, str]) -> None:
    worker = WORKERS.setdefault(parser, Worker())
    judge(parser, case, worker.run(parser, case), limits)


SEQUENCE = """
import json
from datetime import UTC, datetime
import httpx
from social_recording.upstream.tracker import TrackerClient, TrackerError

bodies = [b'{"data": [{"tokenAddress": "A1", "investorCount": 5}]}', b'{"data": [{"tokenAddress": "A1"',
          b"<html><body>502 Bad Gateway</body></html>", b"null", b'{"data": [[[[[{"a": [1]}]]]]]}',
          b'{"data": [{"tokenAddress": "A1", "investorCount": ' + b"7" * 5000 + b'}]}'] * 3
for body in bodies:
    transport = httpx.MockTransport(lambda request, body=body: httpx.Response(200, content=body))
    with TrackerClient("http://tracker.internal", None, ["g1"], transport=transport, sleep=lambda s: None) as client:
        try:
            scan = client.scan_range(datetime(2026, 11, 9, tzinfo=UTC), datetime(2026, 11, 10, tzinfo=UTC), lambda t: t)
            print(json.dumps(["value", scan.scanned]), flush=True)
        except TrackerError as exc:
            print(json.dumps(["TrackerError", str(exc)]), flush=True)
"""


def test_a_range_answer_with_a_5000_digit_integer_is_a_tracker_error_naming_the_bound_not_a_crash() -> None:
    """Good, truncated, HTML, null, nested, then a 5,000-digit integer, three times over, in one
    process: ijson's C parser raised a plain ValueError on the integer, and the process died with a
    segmentation fault (exit 139) on the next answer."""
    done = subprocess.run([sys.executable, "-c", SEQUENCE], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 18
    for big in lines[5::6]:
        assert big[0] == "TrackerError" and f"a number over the limit of {MAX_NUMBER_CHARS} characters" in big[1]
    assert [line[0] for line in lines[:5]] == ["value", "TrackerError", "TrackerError", "TrackerError", "value"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(case=mutations(TRACKER_BODY_BYTES))
def test_a_hostile_range_answer_is_a_value_or_a_tracker_error(case: dict[str, object]) -> None:
    _run("tracker_range", case, TRACKER_LIMITS)


@settings(max_examples=EXAMPLES, deadline=None)
@given(case=mutations(TRACKER_BODY_BYTES))
def test_a_hostile_by_address_answer_is_a_value_or_a_tracker_error(case: dict[str, object]) -> None:
    _run("tracker_by_address", case, TRACKER_LIMITS)


@settings(max_examples=60, deadline=None)
@given(case=mutations(1, location=True))
def test_a_hostile_shortener_location_is_a_location_or_a_shortlink_error(case: dict[str, object]) -> None:
    _run("shortlink", case, SHORTLINK_LIMITS)


def test_nesting_at_the_bound_still_reads_and_one_more_level_is_refused() -> None:
    """The value goes into an item, three levels down (the envelope, `data`, the item)."""
    worker = WORKERS.setdefault("tracker_range", Worker())
    for depth, refused in ((MAX_DEPTH - 3, False), (MAX_DEPTH - 2, True)):
        raw = ("[" * depth + "]" * depth).encode()
        case = {"kind": "value", "n": 0, "raw": base64.b64encode(raw).decode(), "at": 0.5, "step": 0}
        answer = worker.run("tracker_range", case)
        assert (answer["outcome"] == "error") is refused, (depth, answer)
        if refused:
            assert f"nesting over the limit of {MAX_DEPTH} levels" in answer["message"]


def test_a_utf8_encoded_surrogate_in_a_range_answer_is_a_tracker_error() -> None:
    """Found by the fuzz test: ijson's C parser let `\\xed\\xa0\\x80` through its own UTF-8 check and
    raised Python's UnicodeDecodeError from inside its callbacks, past the tracker client."""
    worker = WORKERS.setdefault("tracker_range", Worker())
    case = {"kind": "bad_utf8", "n": 0, "raw": base64.b64encode(b"\xed\xa0\x80").decode(), "at": 0.0, "step": 0}
    answer = worker.run("tracker_range", case)
    assert answer["outcome"] == "error" and answer["type"] == "TrackerError", answer
    assert "body is not JSON" in answer["message"]
