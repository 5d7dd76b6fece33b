"""The model test is only as good as the defects it catches: each of the project's mutants
(test_support/mutants.py: a plausible wrong rule of the state machine, the back-off policy, the call
guard, the spend check or a store, one line changed) is applied to a copy of the package, and the
model test ALONE must fail on it (docs/architecture.md, "The per-URL state machine"). The unit and
regression tests are the second line, not the only one. A mutant that survives means a rule the
model does not check.

Each mutant runs in its own process on a copy of the package put first on PYTHONPATH, on the store
whose code it changes (SQLite, or the Mongo store's code over mongomock), with a bounded number of
examples, derandomized, and no shrinking: the first failing example kills it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_support.mutants import MUTANTS, REPO, Mutant, apply

pytestmark = pytest.mark.heavy

MODEL_TEST = REPO / "social_recording_tests/recording/test_url_machine_model.py"
EXAMPLES_PER_MUTANT = "250"
"""Bounded, so the whole list stays within a few minutes of CI (a killed mutant stops at its first
failing example); every mutant of the list dies well within it."""
PARTS = ("domain/url_machine.py", "domain/policy.py", "recording/call_guard.py", "recording/spend_check.py",
         "store/sqlite/", "store/mongo/")


def test_every_mutant_names_one_line_once() -> None:
    for name, m in MUTANTS.items():
        source = (REPO / m.path).read_text()
        assert source.count(m.original) == 1, f"{name}: {m.original!r} found {source.count(m.original)} times in {m.path}"


def test_the_mutants_cover_every_part_that_carries_a_rule() -> None:
    assert len(MUTANTS) >= 25, len(MUTANTS)
    for part in PARTS:
        assert any(part in m.path for m in MUTANTS.values()), f"no mutant of {part}"


def model_alone(name: str, into: Path, examples: str = EXAMPLES_PER_MUTANT,
                mutants: dict[str, Mutant] = MUTANTS) -> subprocess.CompletedProcess[str]:
    """Run the model test alone against mutant `name` of `mutants` (a copy of the package under `into`)."""
    path = apply(name, into, mutants)
    # The copy comes first on the path: the child runs outside the repository (a `python -m` puts its
    # working directory first) and pytest appends the test's root instead of prepending it.
    env = {**os.environ, "PYTHONPATH": f"{into}{os.pathsep}{REPO}", "SOCIAL_RECORDING_MODEL_EXAMPLES": examples,
           "SOCIAL_RECORDING_MODEL_MONGOMOCK_EXAMPLES": examples, "SOCIAL_RECORDING_MODEL_SHRINK": "0"}
    env.pop("SOCIAL_RECORDING_MODEL_SEED", None)
    module = path.relative_to(into).with_suffix("").as_posix().replace("/", ".")
    loaded = subprocess.run([sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
                            cwd=into, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == str(path), f"the child would test {loaded}, not the mutant"
    which = "TestUrlRulesOnMongomock" if mutants[name].store == "mongomock" else "TestUrlRules and not Mongo"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "--import-mode=append",
         "-k", which, str(MODEL_TEST)],
        cwd=into, env=env, capture_output=True, text=True, timeout=900, check=False,
    )


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_model_alone_kills_the_mutant(name: str, tmp_path: Path) -> None:
    proc = model_alone(name, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "1 failed" in out, (
        f"mutant {name!r} survived the model (pytest exit {proc.returncode}):\n{out[-3000:]}")
