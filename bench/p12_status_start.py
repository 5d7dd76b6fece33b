"""P12 — how fast `python -m social_recording status` starts, beside `import dagster` (a benchmark, not a test).

    python bench/p12_status_start.py [--repeat 7]

The status command answers an operator at a terminal: it reads the store and prints, and never
imports Dagster (social_recording_tests/test_status.py checks that much, with no clock). How long it
takes from start to exit is measured here, on a small SQLite store (two tokens, five URLs), for its
three forms (text, `--json`, `--url`), alternated in the same run with the baseline: a process that
only imports Dagster, what the command cost at least when it imported it. A busy machine slows
both alike, so the ratio is the figure to compare; the modules loaded are counted with
`python -X importtime` (Dagster's own: none).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from _common import REPO, Table, median  # noqa: I001  (bench/ on sys.path)

from social_recording.domain.models import TokenProfile, utcnow
from social_recording.domain.status import FetchStatus
from social_recording.store import SqliteStore
from social_recording.store.base import ElementWrite, UrlWrite

GH = "https://github.com/org/repo"
FORMS = {"status": ["status"], "status --json": ["status", "--json"], "status --url": ["status", "--url", GH]}


def seed(path: Path) -> None:
    """Two tokens: one with a failed, an ok and a pending URL, one never recorded."""
    now = utcnow()
    store = SqliteStore(path)
    try:
        store.create_pending_token(TokenProfile(address="TokBenchA", urls=[GH, "https://t.me/coinchat",
                                                                            "https://example.com/a"]),
                                   now=now - timedelta(hours=5))
        for url, platform, status in ((GH, "github", FetchStatus.ERROR), ("https://t.me/coinchat", "telegram",
                                                                         FetchStatus.OK)):
            at = now - timedelta(hours=1)
            store.apply_url_write(UrlWrite(address="TokBenchA", url=url, platform=platform, fence=1, now=at,
                                           element=ElementWrite(status, 1, at, at, None, None)))
        store.create_pending_token(TokenProfile(address="TokBenchB", urls=["https://github.com/other/repo"]),
                                   now=now - timedelta(hours=2))
    finally:
        store.close()


def timed(args: list[str], env: dict[str, str]) -> float:
    """Seconds from start to exit of `python <args>`."""
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, timeout=300)
    return time.perf_counter() - started


def modules_loaded(args: list[str], env: dict[str, str]) -> tuple[int, int]:
    """(modules imported, of which Dagster's) by `python -X importtime <args>`."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True, timeout=300)
    loaded = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    return len(loaded), sum(1 for m in loaded if m.split(".")[0] in ("dagster", "dagster_shared"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each, alternated (median reported)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sr-bench-p12-") as work:
        store = Path(work) / "store.db"
        seed(store)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIAL_RECORDING_") and k != "DAGSTER_HOME"}
        env.update({"PYTHONPATH": str(REPO), "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{store}"})
        commands = {name: ["-m", "social_recording", *form] for name, form in FORMS.items()}
        commands["import dagster"] = ["-c", "import dagster"]
        for command in commands.values():  # warm-up: byte-compiled files and the page cache
            timed(command, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(max(1, args.repeat)):
            for name, command in commands.items():
                times[name].append(timed(command, env))
        baseline = median(times["import dagster"])
        table = Table("P12", "status command start to exit, beside importing Dagster (same run)",
                      ["command", "median s", "min s", "/ import dagster", "modules", "of Dagster"])
        for name, command in commands.items():
            loaded, of_dagster = modules_loaded(command, env)
            table.add(f"python {' '.join(command)}", median(times[name]), min(times[name]),
                      median(times[name]) / baseline, loaded, of_dagster)
        table.notes.append(f"{max(1, args.repeat)} runs each, alternated; load {os.getloadavg()[0]:.1f}")
        table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
