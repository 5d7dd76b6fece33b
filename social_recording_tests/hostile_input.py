"""Support for the hostile-input fuzz tests (docs/architecture.md, "Bounds of an answer"): the
Hypothesis strategy of mutations of a real answer, and the worker process each case runs in.

Why a process: a parser that corrupts the interpreter (ijson's C parser on a 5,000-digit integer)
may not fail where it is called but segfault later; in the test's own process that would kill the
whole test run. The worker runs case after case, as a code server parses answer after answer; when
it dies, the case it was given fails with the exit code, and the next case starts a new worker.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from social_recording.outbound.bounds import (
    MAX_DEPTH,
    MAX_EXPONENT_DIGITS,
    MAX_LOCATION_CHARS,
    MAX_NUMBER_CHARS,
    MAX_STRING_BYTES,
    PROVIDER_BODY_BYTES,
    TRACKER_BODY_BYTES,
)

REPO = Path(__file__).resolve().parents[1]

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_ZERO = st.just(0)
_NO_BYTES = st.just(b"")
_non_finite = st.sampled_from([b"1e999", b"-1e999", b"1E400", b"NaN", b"Infinity", b"-Infinity", b"1e308e1"])

LIMITS = {
    "long_number": f"limit of {MAX_NUMBER_CHARS:,} characters",
    "exponent": f"limit of {MAX_EXPONENT_DIGITS:,} digits",
    "deep": f"limit of {MAX_DEPTH:,} levels",
    "long_string": f"limit of {MAX_STRING_BYTES:,} bytes",
}
"""The mutation kinds a bound refuses, and the words that name the bound in the error."""


def mutations(body_cap: int, *, steps: int = 1, location: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """A mutation of a real answer: a number of 101 to 20,000 digits (5,000+ more often than not), an
    exponent of 5 to 40 digits, a non-finite number, 65 to 100,000 brackets, a string over the string
    bound, invalid UTF-8 in a string, a value of any JSON type put where the parser reads, the answer
    cut anywhere, replaced by another JSON value or by random bytes, or padded past the body cap; in
    the answer to one of the first `steps` requests of the call."""
    def case(kind: str, n: st.SearchStrategy[int] = _ZERO, raw: st.SearchStrategy[bytes] = _NO_BYTES) -> Any:
        return st.fixed_dictionaries({
            "kind": st.just(kind), "n": n, "raw": raw.map(lambda b: base64.b64encode(b).decode()),
            "at": st.floats(0, 1), "step": st.integers(0, steps - 1),
        })

    kinds = [
        case("long_number", st.one_of(st.integers(MAX_NUMBER_CHARS + 1, 4_300), st.integers(5_000, 20_000))),
        case("exponent", st.integers(MAX_EXPONENT_DIGITS + 1, 40)),
        case("value", raw=_non_finite),
        case("deep", st.one_of(st.integers(MAX_DEPTH + 1, 2_000), st.just(100_000))),
        case("long_string", st.integers(MAX_STRING_BYTES + 1, MAX_STRING_BYTES + 4_096)),
        case("bad_utf8", raw=st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])),
        case("value", raw=_json_values.map(lambda v: json.dumps(v).encode())),
        case("truncate"),
        case("replace", raw=_json_values.map(lambda v: json.dumps(v).encode())),
        case("junk", raw=st.binary(max_size=64)),
        case("oversize", st.just(body_cap + 1)),
    ]
    if location:
        kinds.append(case("long_location", raw=st.binary(min_size=MAX_LOCATION_CHARS + 1, max_size=MAX_LOCATION_CHARS + 64)))
    return st.one_of(kinds)


def limits(body_cap: int, **more: str) -> dict[str, str]:
    """`LIMITS`, the body cap's words (as the capped reader words it) and any others."""
    return {**LIMITS, "oversize": f"larger than {body_cap} bytes", **more}


TRACKER_LIMITS = limits(TRACKER_BODY_BYTES)
PROVIDER_LIMITS = limits(PROVIDER_BODY_BYTES)
SHORTLINK_LIMITS = {"long_location": f"limit of {MAX_LOCATION_CHARS:,} characters"}


class Worker:
    """A `hostile_worker` process fed one case per line; a new one after each death."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self.cases = 0

    def run(self, parser: str, case: dict[str, Any]) -> dict[str, Any]:
        if self._process is None or self._process.poll() is not None:
            env = {**os.environ, "PYTHONPATH": str(REPO)}
            self._process = subprocess.Popen(
                [sys.executable, "-m", "social_recording_tests.hostile_worker"], cwd=REPO, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )
        assert self._process.stdin is not None and self._process.stdout is not None
        self.cases += 1
        try:
            self._process.stdin.write(json.dumps({**case, "parser": parser}).encode() + b"\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            pass
        line = self._process.stdout.readline()
        if not line:
            code = self._process.wait(timeout=10)
            raise AssertionError(f"the {parser} worker died on this case with exit code {code}: {case}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._process is not None:
            if self._process.stdin is not None:
                self._process.stdin.close()
            self._process.wait(timeout=30)


def judge(parser: str, case: dict[str, Any], answer: dict[str, Any], limits: dict[str, str]) -> None:
    """Never an unexpected exception type; a bound the case passes is named by the error when the
    mutated answer was read as the first answer of the call (a later one, e.g. enrichment, may be
    dropped by design)."""
    if answer["outcome"] == "error":
        assert answer["expected"], f"{parser}: unexpected {answer['type']}: {answer['message']} on {case}"
    named = limits.get(case["kind"])
    if named and answer["mutated"] and case["step"] == 0:
        assert answer["outcome"] == "error" and named in answer["message"], (parser, case, answer)
