"""deploy/requirements.lock, the image's dependencies (Dockerfile), stays what pyproject.toml asks for.

`make lock` compiles it with uv, every version pinned with its hashes. Here: the target run again into
a copy changes nothing (uv keeps the current pins that still fit, so a new release elsewhere does not
move it, while a changed dependency in pyproject.toml does); every declared dependency is pinned; and
the Dockerfile's own install steps succeed in a fresh environment (hashes checked, `pip check`).
Needs the package index, as `make install` does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from test_support.rehearsal import DOCKERFILE, REPO

pytestmark = [pytest.mark.integration, pytest.mark.heavy]

LOCK = REPO / "deploy" / "requirements.lock"
BIN = Path(sys.executable).parent


def _pins() -> dict[str, tuple[str, int]]:
    """name -> (version, number of hashes) of every package in the lock."""
    pins: dict[str, tuple[str, int]] = {}
    current = None
    for line in LOCK.read_text().splitlines():
        if match := re.match(r"^([A-Za-z0-9_.\-]+)==(\S+)", line):
            current = _norm(match.group(1))
            pins[current] = (match.group(2), 0)
        elif current and line.strip().startswith("--hash=sha256:"):
            version, hashes = pins[current]
            pins[current] = (version, hashes + 1)
    return pins


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_make_lock_run_again_changes_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "requirements.lock"
    shutil.copy(LOCK, copy)
    done = subprocess.run(
        ["make", "-s", "-o", "install", "lock", f"LOCK={copy}", f"BIN={BIN}"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert copy.read_text() == LOCK.read_text(), "deploy/requirements.lock is stale: run `make lock` and commit it"


def test_every_declared_dependency_is_pinned_with_hashes() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = [Requirement(r) for r in project["project"]["dependencies"]
                + project["project"]["optional-dependencies"]["deploy"]
                + project["build-system"]["requires"]]
    pins = _pins()
    for req in declared:
        assert _norm(req.name) in pins, f"{req.name} is not in the lock"
        version, hashes = pins[_norm(req.name)]
        assert req.specifier.contains(version, prereleases=True), f"{req} but the lock pins {version}"
    assert all(hashes > 0 for _, hashes in pins.values())
    assert "social-recording" not in pins  # the project itself is installed from the source


def test_the_dockerfiles_install_steps_succeed_in_a_fresh_environment(tmp_path: Path) -> None:
    """The two RUN lines that install Python packages, as written in the Dockerfile, in a new venv
    of this Python (3.11, Linux x86-64 like the image): every file matches its hash, nothing is
    resolved, and `pip check` finds the project's dependencies satisfied."""
    steps = [line.removeprefix("RUN ").strip() for line in DOCKERFILE.read_text().splitlines()
             if line.startswith("RUN pip install")]
    assert len(steps) == 2, steps
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)
    work = tmp_path / "src"
    work.mkdir()
    (work / "deploy").mkdir()
    shutil.copy(LOCK, work / "deploy" / "requirements.lock")
    shutil.copy(REPO / "pyproject.toml", work)
    shutil.copy(REPO / "README.md", work)
    shutil.copytree(REPO / "social_recording", work / "social_recording",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for step in steps:
        done = subprocess.run(["sh", "-c", step], cwd=work, env=env, capture_output=True, text=True,
                              timeout=900, check=False)
        assert done.returncode == 0, f"{step}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import social_recording.definitions, dagster_postgres"],
                           cwd=tmp_path, env={**env, "SOCIAL_RECORDING_UPSTREAM": "sandbox"},
                           capture_output=True, text=True, timeout=300, check=False)
    assert probe.returncode == 0, probe.stderr[-3000:]
