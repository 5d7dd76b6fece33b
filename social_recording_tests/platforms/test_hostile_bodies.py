"""Hostile provider answers never crash a generator (docs/architecture.md, "Bounds of an answer"):
for every platform, the Hypothesis cases of `hostile_input.mutations` replace one of the first three
answers of the contract test's successful flow, in a worker process, and each call ends in a result
or the platform's own failure (ExternalFetchError, or SocialContractError for a graph that breaks
the contract); a bound passed in the call's first answer is named by the UPSTREAM error."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from social_recording.domain.urls import Platform
from social_recording.outbound.bounds import MAX_DEPTH, MAX_NUMBER_CHARS, MAX_PAGE_TAGS, PROVIDER_BODY_BYTES
from social_recording.platforms.shaping import to_number
from social_recording_tests.hostile_input import PROVIDER_LIMITS, Worker, judge, limits, mutations

EXAMPLES = 40
WORKERS: dict[Platform, Worker] = {}
HTML_LIMITS = {"oversize": limits(PROVIDER_BODY_BYTES)["oversize"]}
"""Telegram's answer is a page, not JSON: a count past the number bound is left out (as any count
that holds no number), so only the body cap fails its call."""


@pytest.fixture(scope="module", autouse=True)
def _workers() -> Iterator[None]:
    yield
    for worker in WORKERS.values():
        worker.close()


@pytest.mark.parametrize("platform", list(Platform), ids=str)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_a_hostile_answer_is_a_result_or_the_platforms_own_failure(platform: Platform, data: st.DataObject) -> None:
    case = data.draw(mutations(PROVIDER_BODY_BYTES, steps=3), label="case")
    worker = WORKERS.setdefault(platform, Worker())
    parser = f"platform_{platform.value}"
    answer = worker.run(parser, case)
    judge(parser, case, answer, HTML_LIMITS if platform is Platform.TELEGRAM else PROVIDER_LIMITS)
    if answer["outcome"] == "error" and answer["type"] == "ExternalFetchError" and case["kind"] in PROVIDER_LIMITS:
        assert answer["code"] in ("UPSTREAM", "NOT_FOUND", "TARGET_BLOCKED"), answer


def _one_case(platform: Platform, kind: str, n: int) -> dict[str, object]:
    worker = WORKERS.setdefault(platform, Worker())
    case = {"kind": kind, "n": n, "raw": "", "at": 0.5, "step": 0}
    return worker.run(f"platform_{platform.value}", case)


@pytest.mark.parametrize("platform", [Platform.GITHUB, Platform.YOUTUBE, Platform.X], ids=str)
def test_an_answer_nested_100000_deep_is_upstream_naming_the_bound(platform: Platform) -> None:
    """json.loads recursed into 100,000 brackets and raised RecursionError out of `generate()`."""
    answer = _one_case(platform, "deep", 100_000)
    assert answer["type"] == "ExternalFetchError" and answer["code"] == "UPSTREAM", answer
    assert f"nesting over the limit of {MAX_DEPTH} levels" in str(answer["message"])


def test_a_telegram_page_of_100000_nested_tags_is_refused_at_once() -> None:
    """lexbor builds a page's tree in time that grows with the square of its nesting: 100,000
    nested elements took about 100 s of one worker's CPU."""
    started = time.monotonic()
    answer = _one_case(Platform.TELEGRAM, "deep", 100_000)
    assert time.monotonic() - started < 10
    assert answer["type"] == "ExternalFetchError" and answer["code"] == "UPSTREAM", answer
    assert f"limit of {MAX_PAGE_TAGS:,} tags" in str(answer["message"])


@pytest.mark.parametrize("raw", ["1e999", "-1E400", "NaN", "Infinity", "9" * (MAX_NUMBER_CHARS + 1), [float("inf")]])
def test_a_metric_that_is_not_a_finite_number_of_bounded_length_is_not_recorded(raw: object) -> None:
    """A count sent as text ("1e999", "NaN") was read as an infinite or NaN metric."""
    assert to_number(raw) is None
    assert to_number("1,234") == 1234.0 and to_number("9" * MAX_NUMBER_CHARS) == float("9" * MAX_NUMBER_CHARS)
