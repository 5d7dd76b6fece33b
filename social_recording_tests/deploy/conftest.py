"""Prints the deployment rehearsal's timings at the end of the test session (when it ran)."""

from __future__ import annotations

import pytest

from social_recording_tests.deploy.rehearsal import REHEARSAL_TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    lines = config.stash.get(REHEARSAL_TIMINGS, None)
    if lines:
        terminalreporter.write_sep("-", "deployment rehearsal timings")
        for line in lines:
            terminalreporter.write_line(line)
