"""Prints the deployment rehearsal's and the daemon crash test's timings at the end of the session (when they ran)."""

from __future__ import annotations

import pytest

from test_support.rehearsal import RECOVERY_TIMINGS, REHEARSAL_TIMINGS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for key, title in ((REHEARSAL_TIMINGS, "deployment rehearsal timings"),
                       (RECOVERY_TIMINGS, "daemon crash and recovery timings")):
        lines = config.stash.get(key, None)
        if lines:
            terminalreporter.write_sep("-", title)
            for line in lines:
                terminalreporter.write_line(line)
