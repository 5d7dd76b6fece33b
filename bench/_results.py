"""bench/RESULTS.md: the tables the last run of each part printed, with the commit, date and machine
load they were measured at, written by `run.py` so that a figure quoted in the docs is one a run
produced (bench/README.md links here).

Each part has one section between marker lines (`<!-- part:P8 -->` ... `<!-- /part:P8 -->`); a run
replaces the sections of the parts it ran and leaves the others as they were, so the file holds, per
part, its latest full-size run. Sections are kept in the order of `run.py`'s parts.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HEADER = """# Benchmark results

Written by `python bench/run.py` (do not edit by hand): for each part, the tables its latest full-size
run printed, with the commit it measured, the date, and the machine's load average (1, 5 and 15
minutes) before and after the part. The development machine has 2 cores shared with other work: a
figure is only comparable with one measured at a similar load, and with the baseline of its own
table. What each part measures: bench/README.md.
"""

_SECTION = re.compile(r"<!-- part:(?P<name>[^ ]+) -->\n.*?<!-- /part:(?P=name) -->\n", re.S)


def load_text() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def commit_text(repo: Path, results: Path) -> str:
    """The commit measured: its short hash, `+changes` when tracked files other than the
    results differ from it (the figures are then of uncommitted code), or "unknown" outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=repo, capture_output=True, text=True,
                              check=True).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                                 capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    mine = str(results.resolve().relative_to(repo.resolve())) if results.resolve().is_relative_to(repo.resolve()) else ""
    dirty = [line for line in changed if line[3:].strip() != mine]
    return f"{head}+changes" if dirty else head


def tables_of(output: str) -> list[str]:
    """The tables a part printed: each from its `== <part>: ... ==` line to the next blank line, next
    table, or the end of the output."""
    found: list[list[str]] = []
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("== ") and line.rstrip().endswith(" =="):
            current = [line]
            found.append(current)
        elif current is not None and line.strip():
            current.append(line)
        else:
            current = None
    return ["\n".join(t) for t in found]


@dataclass(frozen=True)
class PartRun:
    """One part's run as `run.py` saw it."""

    name: str
    command: Sequence[str]
    commit: str
    started: datetime
    seconds: float
    load_before: str
    load_after: str
    output: str

    def section(self) -> str:
        tables = tables_of(self.output)
        body = "\n\n".join(f"```\n{t}\n```" for t in tables) if tables else "(no table printed)"
        return (f"<!-- part:{self.name} -->\n## {self.name}\n\n"
                f"- commit `{self.commit}`, {self.started.astimezone(UTC):%Y-%m-%d %H:%M} UTC, "
                f"{self.seconds:.0f} s\n"
                f"- load average before: {self.load_before}; after: {self.load_after}\n"
                f"- `python bench/{' '.join(self.command)}`\n\n{body}\n<!-- /part:{self.name} -->\n")


def record(path: Path, runs: Sequence[PartRun], order: Sequence[str]) -> None:
    """Replace the sections of `runs`' parts in `path` (made with its header when missing), keeping
    every other part's section, in the order of `order`."""
    sections: dict[str, str] = {}
    if path.exists():
        sections = {m.group("name"): m.group(0) for m in _SECTION.finditer(path.read_text())}
    sections.update({run.name: run.section() for run in runs})
    ranked = sorted(sections, key=lambda name: (order.index(name) if name in order else len(order), name))
    path.write_text(HEADER + "".join(f"\n{sections[name]}" for name in ranked))


def now() -> datetime:
    return datetime.now(UTC)
