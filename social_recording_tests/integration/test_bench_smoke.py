"""The benchmark suite still runs: `bench/run.py --smoke` runs every part (P1–P12, and P4 on the Mongo
store over a FerretDB it starts, and P8 there too) at a tiny size and each prints its table. Numbers are not checked
(benchmarks, not timed tests); a part that cannot run any more fails here instead of rotting until
someone needs it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server]

REPO = Path(__file__).resolve().parents[2]
PARTS = ("P1", "P2", "P3", "P4", "P4-mongo", "P5", "P6", "P7", "P8", "P8-mongo", "P9", "P10", "P11", "P12")


def test_every_benchmark_part_runs_and_prints_its_table() -> None:
    done = subprocess.run([sys.executable, str(REPO / "bench" / "run.py"), "--smoke"], cwd=REPO,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for part in PARTS:
        table = re.search(rf"^== {part}: .* ==\n(?P<header>.+)\n(?P<row>.+)$", done.stdout, re.MULTILINE)
        assert table is not None, f"{part} printed no table:\n{done.stdout[-4000:]}"
        assert not table["row"].startswith(("==", "---", "   ")), f"{part}'s table has no row"
