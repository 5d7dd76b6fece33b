"""P5 — what one Dagster run costs beside the work it does (a benchmark, not a test).

    python bench/p5_run_overhead.py [--repeat 5] [--cli-repeat 2]

Measures the jobs as they are: `retry_job` and `reconcile_job` (a day whose tracker answer is empty)
with nothing to record, so their time is the run's overhead alone — in-process
(`execute_in_process` on an ephemeral instance) and through the CLI (`dagster job execute`, a fresh
Python process that loads the code location and runs the job with the instance in a temporary
DAGSTER_HOME). Baselines in the same run: the plain-Python use case doing the same (nothing) on the
same store, and a bare `python -c "import social_recording.definitions"` (what every CLI run pays
before Dagster starts). Sandbox upstream, SQLite store and locks in a temporary directory.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import REPO, Table, reconcile, settings_engine  # noqa: I001  (bench/ on sys.path)

DAY = "2026-11-10"
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
ENV_PREFIXES = ("SOCIAL_RECORDING_", "DAGSTER_HOME")


def _env(root: Path) -> dict[str, str]:
    scenario = root / "scenario.json"
    scenario.write_text(json.dumps({"tokens": []}))
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env.update({
        "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{root / 'store.db'}",
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(root / "ledger.jsonl"),
        "SOCIAL_RECORDING_PARTITION_START": "2026-11-01",
        "DAGSTER_HOME": str(home),
        "PYTHONPATH": str(REPO),
    })
    return env


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def in_process(root: Path, repeat: int) -> dict[str, float]:
    os.environ.update(_env(root))
    from dagster import DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    settings = load_settings()
    defs = build_definitions(settings)
    instance = DagsterInstance.ephemeral()
    jobs = {name: defs.resolve_job_def(name) for name in ("retry_job", "reconcile_job")}
    out: dict[str, float] = {}
    for name, job in jobs.items():
        kwargs = {"partition_key": DAY} if name == "reconcile_job" else {}
        samples = []
        for _ in range(repeat + 1):  # the first run pays imports and schema creation: not counted
            started = time.perf_counter()
            result = job.execute_in_process(instance=instance, run_config=QUIET, **kwargs)
            samples.append(time.perf_counter() - started)
            if not result.success:
                raise SystemExit(f"P5: {name} failed in process")
        out[f"{name} in-process"] = _median_ms(samples[1:])

    # The plain-Python use cases, on the same store and sandbox, with the same (empty) work, the two
    # steps each job runs.
    engine = settings_engine(settings)
    start = datetime.fromisoformat(DAY).replace(tzinfo=UTC)
    end = start + timedelta(days=1)
    for name, call in (("retry use case", lambda: engine.retry.record_selection(engine.retry.select_due())),
                       ("reconcile use case", lambda: reconcile(engine, start, end, partition_key=DAY,
                                                                min_af_count=settings.af_investor_threshold))):
        samples = []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            call()
            samples.append(time.perf_counter() - started)
        out[name] = _median_ms(samples[1:])
    engine.locks.close()
    engine.store.close()
    return out


def cli(root: Path, repeat: int) -> dict[str, float]:
    env = _env(root)
    out: dict[str, float] = {}
    commands = {
        "python + import definitions": [sys.executable, "-c", "import social_recording.definitions"],
        "retry_job via CLI": [sys.executable, "-m", "dagster", "job", "execute", "-m", "social_recording.definitions",
                              "-j", "retry_job"],
        "reconcile_job via CLI": [sys.executable, "-m", "dagster", "job", "execute", "-m",
                                  "social_recording.definitions", "-j", "reconcile_job", "--tags",
                                  json.dumps({"dagster/partition": DAY})],
    }
    for name, cmd in commands.items():
        samples = []
        for _ in range(repeat):
            started = time.perf_counter()
            done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
            samples.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"P5: {name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
        out[name] = _median_ms(samples)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="in-process runs per job (after one warm-up)")
    parser.add_argument("--cli-repeat", type=int, default=2, help="CLI runs per job")
    args = parser.parse_args(argv)
    if args.repeat < 1 or args.cli_repeat < 1:
        parser.error("--repeat and --cli-repeat must be >= 1")
    with tempfile.TemporaryDirectory(prefix="bench-p5-") as tmp:
        root = Path(tmp)
        (root / "cli").mkdir()
        (root / "inproc").mkdir()
        measured_cli = cli(root / "cli", args.cli_repeat)
        measured = in_process(root / "inproc", args.repeat)
    table = Table("P5", "per-run overhead: jobs with nothing to record (median ms)",
                  ["job", "pipeline ms", "baseline ms", "baseline"])
    table.add("retry_job in-process", measured["retry_job in-process"], measured["retry use case"],
              "select_due + record_selection alone")
    table.add("reconcile_job in-process", measured["reconcile_job in-process"], measured["reconcile use case"],
              "read_window + record_window alone")
    table.add("retry_job via CLI", measured_cli["retry_job via CLI"], measured_cli["python + import definitions"],
              "python -c 'import social_recording.definitions'")
    table.add("reconcile_job via CLI", measured_cli["reconcile_job via CLI"],
              measured_cli["python + import definitions"], "python -c 'import social_recording.definitions'")
    table.notes.append("the jobs as they are on this branch (executor, metadata): whatever they cost is measured")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
