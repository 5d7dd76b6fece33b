"""The benchmark suite still runs: `bench/run.py --smoke` runs each part (P1–P12, and P4 on the Mongo
store over a FerretDB it starts, and P8 there too) at a tiny size and each prints its table; one test
a part, so the parallel run spreads them. Numbers are not checked
(benchmarks, not timed tests); a part that cannot run any more fails here instead of rotting until
someone needs it."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server, pytest.mark.heavy]

REPO = Path(__file__).resolve().parents[2]


def smoke_parts() -> list[str]:
    """The parts bench/run.py runs with --smoke, read from its own table."""
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REPO / "bench"))  # run.py imports its neighbour _results
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(REPO / "bench"))
    return [part for part, (_, smoke) in module.PARTS.items() if smoke is not None]


PARTS = smoke_parts()


@pytest.mark.parametrize("part", PARTS)
def test_the_benchmark_part_runs_and_prints_its_table(part: str) -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--smoke", "--parts", part], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    table = re.search(rf"^== {part}: .* ==\n(?P<header>.+)\n(?P<row>.+)$", done.stdout, re.MULTILINE)
    assert table is not None, f"{part} printed no table:\n{done.stdout[-4000:]}"
    assert not table["row"].startswith(("==", "---", "   ")), f"{part}'s table has no row"
