"""Hands the deployment rehearsal's and the daemon crash test's timings (when they ran) to the
session's terminal summary (the root conftest prints them): through the first test report after
they were measured, so they reach the summary from a pytest-xdist worker too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from social_recording_tests.conftest import TIMINGS_PROPERTY
from test_support.rehearsal import RECOVERY_TIMINGS, REHEARSAL_TIMINGS

_REPORTED = pytest.StashKey[set[str]]()


@pytest.fixture(autouse=True)
def _timings_reported(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reported = request.config.stash.setdefault(_REPORTED, set())
    for key, title in ((REHEARSAL_TIMINGS, "deployment rehearsal timings"),
                       (RECOVERY_TIMINGS, "daemon crash and recovery timings")):
        lines = request.config.stash.get(key, None)
        if lines and title not in reported:
            reported.add(title)
            request.node.user_properties.append((TIMINGS_PROPERTY, [title, *lines]))
