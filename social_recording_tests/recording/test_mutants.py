"""The model and regression tests are only as good as the defects they catch: each named mutant of
`domain/url_machine.py` (a plausible wrong rule) is applied to a copy of the package, and the
regression tests, then the model test, must fail on it (docs/architecture.md, "The per-URL state
machine"). A mutant that survives means a rule nothing checks.

Each mutant runs in its own process on a copy of the package put first on PYTHONPATH, SQLite only
(the Mongo runs of the same tests add nothing a mutant could hide behind), with `-x`: the first
failing test kills it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MACHINE = Path("social_recording/domain/url_machine.py")

MUTANTS: dict[str, tuple[str, str]] = {
    "answers spend the budget": (
        "source_token=source, streak=0,", "source_token=source, streak=before.streak + 1,"),
    "a later not_found replaces a fresh ok": (
        "better_stands = before.answer is not None and rank(before.answer) > rank(this_answer) and (",
        "better_stands = this_answer is not FetchStatus.NOT_FOUND and before.answer is not None"
        " and rank(before.answer) > rank(this_answer) and ("),
    "the streak survives an answer": (
        "source_token=source, streak=0,", "source_token=source, streak=before.streak,"),
    "an open paid request is dropped on a failed call": (
        "engine_failures=0,\n        request=_request_after(before, outcome))", "engine_failures=0,\n        request=None)"),
    "the selection's copy is ignored": (
        "if selected is not None and (status, element.checked_at)", "if False and (status, element.checked_at)"),
    "a forced call past a better fresh answer": (
        "if forced and not called and (fresh is None or rank(fresh[0]) <= rank(status)):",
        "if forced and not called:"),
    "the streak never expires": (
        "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if False:"),
    "a holder pays beside an open call": (
        "if decision.calls and settled is not None and settled.open_call is not None:", "if False:"),
    "an open call never times out": (
        "if state is None or state.open_call is None or now - state.open_call.started_at < rules.call_timeout:",
        "if True:"),
    "a failing URL is called inside its back-off": (
        "if streak > 0 and (called or not may_call_again(s, now, rules)):", "if streak > 0 and called:"),
    "the URL's back-off ignores the streak": (
        "return rules.backoff.next_due(state.attempted_at, live_streak(state, now, rules))",
        "return rules.backoff.next_due(state.attempted_at, 1)"),
    "an element's due time ignores the streak": (
        "return rules.backoff.next_due(now, streak)", "return rules.backoff.next_due(now, 0)"),
}
"""name -> (the line as written, the mutant's line): each original appears exactly once."""

TESTS = (
    "social_recording_tests/recording/test_url_machine_regressions.py",
    "social_recording_tests/domain/test_open_calls.py",
    "social_recording_tests/domain/test_url_machine_times.py",
    "social_recording_tests/recording/test_backoff_growth.py",
    "social_recording_tests/recording/test_url_machine_model.py",
)


def test_every_mutant_names_one_line_of_the_machine() -> None:
    source = (REPO / MACHINE).read_text()
    for name, (original, _) in MUTANTS.items():
        assert source.count(original) == 1, f"{name}: {original!r} found {source.count(original)} times"


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_tests_kill_the_mutant(name: str, tmp_path: Path) -> None:
    original, mutant = MUTANTS[name]
    copy = tmp_path / "social_recording"
    shutil.copytree(REPO / "social_recording", copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = tmp_path / MACHINE
    path.write_text(path.read_text().replace(original, mutant))
    # The copy comes first on the path: the child runs outside the repository (a `python -m` puts its
    # working directory first) and pytest appends the test's root instead of prepending it.
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "SOCIAL_RECORDING_MODEL_EXAMPLES": "100"}
    loaded = subprocess.run([sys.executable, "-c", "import social_recording.domain.url_machine as m; print(m.__file__)"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == str(path), f"the child would test {loaded}, not the mutant"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--import-mode=append",
         "-m", "not mongo_server", "-k", "not mongo", *(str(REPO / t) for t in TESTS)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 1, (
        f"mutant {name!r} survived (pytest exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
