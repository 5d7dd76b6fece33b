"""P6 — peak memory of one reconcile run against the number of tokens (a benchmark, not a test).

    python bench/p6_memory.py [--tokens 100 1000 3000]

For each size, a sandbox day holds N new tokens (an X post, a Telegram channel and a GitHub repo
each, paid calls on) and one fresh Python process records it, reporting its own peak resident set
(`ru_maxrss`): the pipeline runs `reconcile_job` for the day in-process (`execute_in_process`, the
job as it is on this branch: executor, run metadata, per-URL table), the baseline runs the plain
`read_window` + `record_window` on the same resources. Both start from the same imports, so the
difference is what the Dagster run itself holds on to; growth per 1,000 tokens is printed beside.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _common import REPO, Table, reconcile, settings_engine  # noqa: I001  (bench/ on sys.path)

DAY = "2026-11-10"
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


def scenario_tokens(n: int) -> list[dict[str, object]]:
    return [{
        "address": f"P6Tok{i:07d}", "symbol": f"P{i}", "name": f"token {i}", "image_url": "https://cdn.example.com/t.png",
        "investor_count": 5, "first_transfer_at": f"{DAY}T00:00:00Z", "last_transfer_at": f"{DAY}T12:00:00Z",
        "twitter": f"https://x.com/i/status/{880000 + i}", "telegram": f"https://t.me/p6chan{i}",
        "website": f"https://github.com/p6org{i}/repo",
    } for i in range(n)]


def _env(root: Path, n: int) -> dict[str, str]:
    scenario = root / "scenario.json"
    scenario.write_text(json.dumps({"tokens": scenario_tokens(n)}))
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIAL_RECORDING_", "DAGSTER_HOME"))}
    env.update({
        "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{root / 'store.db'}",
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(root / "ledger.jsonl"),
        "SOCIAL_RECORDING_ENABLE_PAID": "true",
        "SOCIAL_RECORDING_PARTITION_START": "2026-11-01",
        "DAGSTER_HOME": str(home),
        "PYTHONPATH": str(REPO),
    })
    return env


def child(mode: str) -> None:
    """Run one reconcile of DAY in this process; print {"rss_mb", "urls", "seconds"}."""
    from dagster import DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    settings = load_settings()
    started = time.perf_counter()
    if mode == "pipeline":
        result = build_definitions(settings).resolve_job_def("reconcile_job").execute_in_process(
            partition_key=DAY, instance=DagsterInstance.ephemeral(), run_config=QUIET)
        if not result.success:
            raise SystemExit("P6: reconcile_job failed")
        out = result.output_for_node("reconcile_window")
        urls = sum(v for k, v in out.items() if k.startswith("urls_"))
    else:
        engine = settings_engine(settings)
        start = datetime.fromisoformat(DAY).replace(tzinfo=UTC)
        outcome = reconcile(engine, start, start + timedelta(days=1), partition_key=DAY,
                            min_af_count=settings.af_investor_threshold)
        urls = len(outcome.url_outcomes)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"rss_mb": rss_mb, "urls": urls, "seconds": time.perf_counter() - started}))


def measure(n: int, mode: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-p6-") as tmp:
        done = subprocess.run([sys.executable, __file__, "--child", mode], cwd=REPO, env=_env(Path(tmp), n),
                              capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"P6: {mode} with {n} tokens failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["urls"] != 3 * n:
        raise SystemExit(f"P6: {mode} recorded {result['urls']} URLs, expected {3 * n}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--child", choices=("pipeline", "baseline"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if min(args.tokens) < 1:
        parser.error("--tokens must be >= 1")
    table = Table("P6", "peak RSS of one reconcile run against tokens (3 URLs each; fresh process per run)",
                  ["tokens", "pipeline MB", "pipeline s", "baseline MB", "baseline s", "pipeline - baseline MB"])
    rows = []
    for n in sorted(args.tokens):
        new = measure(n, "pipeline")
        old = measure(n, "baseline")
        rows.append((n, new["rss_mb"], old["rss_mb"]))
        table.add(n, new["rss_mb"], new["seconds"], old["rss_mb"], old["seconds"], new["rss_mb"] - old["rss_mb"])
    if len(rows) > 1:
        (n0, p0, b0), (n1, p1, b1) = rows[0], rows[-1]
        per_k = 1000.0 / (n1 - n0)
        table.notes.append(f"growth per 1,000 tokens: pipeline {(p1 - p0) * per_k:.1f} MB, "
                           f"baseline {(b1 - b0) * per_k:.1f} MB")
    table.notes.append("pipeline: reconcile_job in-process as it is on this branch; baseline: "
                       "read_window + record_window on the same resources")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
