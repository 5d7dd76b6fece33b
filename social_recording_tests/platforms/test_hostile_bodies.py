"""Hostile provider answers never crash a generator (docs/architecture.md, "Bounds of an answer"):
for every platform, the Hypothesis cases of `hostile_input.mutations` replace one of the first three
answers of the contract test's successful flow, in a worker process, and each call ends in a result
or the platform's own failure (ExternalFetchError, or SocialContractError for a graph that breaks
the contract); a bound passed in the call's first answer is named by the UPSTREAM error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from social_recording.domain.urls import Platform
from social_recording.outbound.bounds import PROVIDER_BODY_BYTES
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
