"""bench/RESULTS.md is written by `bench/run.py` from what a part printed: each part's tables with
the commit, date and load they were measured at, a re-run replacing only that part's section."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from _results import PartRun, record, tables_of  # type: ignore[import-not-found]  # noqa: E402

OUTPUT = """P8 store: 500 tokens (generated in 1 s)
== P8: health figures (median ms of 1) ==
tokens  what          ms
500     report stage  3.1
   load: the 1-minute load average after each row

== P8-extra: a second table ==
a  b
1  2
trailing text
"""


def _run(name: str, output: str, commit: str = "abc1234") -> PartRun:
    return PartRun(name, ["p8_health.py", "--tokens", "500"], commit, datetime(2026, 12, 6, 2, 0, tzinfo=UTC), 12.0,
                   "1.00 / 0.50 / 0.25", "1.50 / 0.60 / 0.30", output)


def test_the_tables_are_what_the_part_printed_between_its_headers_and_a_blank_line() -> None:
    tables = tables_of(OUTPUT)
    assert [t.splitlines()[0] for t in tables] == ["== P8: health figures (median ms of 1) ==",
                                                   "== P8-extra: a second table =="]
    assert tables[0].splitlines()[-1] == "   load: the 1-minute load average after each row"
    assert "P8 store" not in tables[0] and tables[1].endswith("trailing text")


def test_a_run_replaces_its_parts_section_and_keeps_the_others(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    record(results, [_run("P8", OUTPUT), _run("P2", "== P2: x ==\na\n1\n")], ["P2", "P8"])
    record(results, [_run("P8", OUTPUT.replace("3.1", "2.9"), commit="def5678")], ["P2", "P8"])
    text = results.read_text()
    assert text.index("## P2") < text.index("## P8") and text.count("## P8") == 1
    assert "2.9" in text and "3.1" not in text and "commit `def5678`" in text and "commit `abc1234`" in text
    assert "load average before: 1.00 / 0.50 / 0.25; after: 1.50 / 0.60 / 0.30" in text
    assert "2026-12-06 02:00 UTC" in text and "`python bench/p8_health.py --tokens 500`" in text
