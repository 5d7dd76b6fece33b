"""Benchmark: what Dagster costs around the engine's work (not a test).

    python bench/dagster_runs.py overhead [--reps N] [--no-assets-report]   one-token live_tokens_job
    python bench/dagster_runs.py logging [--tokens N]       per-URL run-log lines at zero latency
    python bench/dagster_runs.py memory [--tokens N]        peak RSS of one reconcile of N tokens

Every mode runs the real code location on the sandbox (`default_latency_ms: 0`) with a scenario it
writes itself, a temporary SQLite store and a SQLite-backed Dagster instance in a temporary
DAGSTER_HOME (what `make dev` uses), so the numbers are Dagster's and the store's, not a provider's.

- overhead: `execute_in_process` of a one-token `live_tokens_job` (median of N runs, each on a
  fresh store), then the same through the CLI (`dagster job execute`): the command's wall time and
  the run's own RUN_START -> RUN_SUCCESS time from the instance.
- logging: one reconcile partition of N tokens x 3 free-platform URLs, timed with the per-URL
  run-log lines on and off (`--url-log off` patches them out); the difference is what the run log
  costs. Also reports the time spent inside Dagster's log calls and the number of log events.
- memory: one reconcile partition of N tokens x 2 URLs in a fresh process; prints the peak RSS
  (`resource.getrusage`) and the RSS just before the run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DAY = "2026-11-10"
VENV_BIN = Path(sys.executable).parent


def scenario(path: Path, tokens: int, urls_per_token: int, prefix: str = "Bench") -> Path:
    """`tokens` tokens traded on DAY, each with `urls_per_token` free-platform URLs answered ok."""
    items = []
    for i in range(tokens):
        address = f"{prefix}{i:06d}" + "b" * 30
        minute = i % (24 * 60)
        values: dict[str, str] = {"website": f"https://github.com/bench{i}/repo{i}"}
        if urls_per_token >= 2:
            values["telegram"] = f"https://t.me/benchchat{i}"
        if urls_per_token >= 3:
            values["twitter"] = f"https://youtube.com/watch?v=Bench{i:06d}"
        items.append({
            "address": address, "symbol": f"B{i}", "name": f"bench {i}",
            "image_url": "https://cdn.example.com/t.png", "investor_count": 5,
            "first_transfer_at": f"{DAY}T00:00:00Z",
            "last_transfer_at": f"{DAY}T{minute // 60:02d}:{minute % 60:02d}:00Z",
            **values,
        })
    path.write_text(json.dumps({"tokens": items, "redirects": {}, "targets": {}, "default_latency_ms": 0}))
    return path


def environment(root: Path, scenario_path: Path, store_name: str = "store.db") -> dict[str, str]:
    home = root / "dagster_home"
    home.mkdir(exist_ok=True)
    return {
        "DAGSTER_HOME": str(home),
        "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{root / store_name}",
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario_path),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(root / "ledger.jsonl"),
        "SOCIAL_RECORDING_PARTITION_START": "2026-11-01",
        "SOCIAL_RECORDING_ENABLE_PAID": "false",
    }


def apply(env: dict[str, str]) -> None:
    for key in list(os.environ):
        if key.startswith("SOCIAL_RECORDING_"):
            del os.environ[key]
    os.environ.update(env)


def disable_url_log() -> None:
    """Per-URL run-log lines off (the A/B baseline); counting and the report stay."""
    from social_recording.dagster_defs import run_log

    run_log.UrlLog.add = lambda self, outcome: None  # type: ignore[method-assign]


class LogTimer:
    """Time spent inside Dagster's log manager for user messages (all threads)."""

    def __init__(self) -> None:
        from dagster._core.log_manager import DagsterLogManager

        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()
        original = DagsterLogManager._log
        timer = self

        def timed(manager: Any, level: Any, msg: Any, args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(manager, level, msg, args, **kwargs)
            finally:
                with timer._lock:
                    timer.seconds += time.perf_counter() - started
                    timer.calls += 1

        DagsterLogManager._log = timed  # type: ignore[method-assign]


# --------------------------------------------------------------------------- overhead


def without_assets_report() -> None:
    """The recording stages' asset observations and health checks off (to tell their cost apart)."""
    from social_recording.dagster_defs import reporting

    reporting.report_to_assets = lambda context, store, health, recorded: None  # type: ignore[assignment]


def overhead(reps: int, assets_report: bool) -> None:
    from dagster import DagsterEventType, DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    if not assets_report:
        without_assets_report()
    root = Path(tempfile.mkdtemp(prefix="sr-bench-overhead-"))
    path = scenario(root / "scenario.json", 1, 1, prefix="One")
    address = json.loads(path.read_text())["tokens"][0]["address"]
    config = {"ops": {"record_tokens": {"config": {"tokens": [{"address": address, "symbol": "ONE"}]}}}}
    times = []
    for i in range(reps + 1):
        apply(environment(root, path, f"store-{i}.db"))
        defs = build_definitions(load_settings())
        job = defs.resolve_job_def("live_tokens_job")
        with DagsterInstance.get() as instance:
            started = time.perf_counter()
            assert job.execute_in_process(run_config=config, instance=instance).success
            if i:  # the first run warms imports and creates the instance's database
                times.append(time.perf_counter() - started)
    print(f"execute_in_process, one-token live_tokens_job, SQLite instance"
          f"{'' if assets_report else ', asset report off'}: median "
          f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}; "
          f"{reps} runs)")

    (root / "run.json").write_text(json.dumps(config))
    cli_wall, run_times = [], []
    for i in range(reps):
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SOCIAL_RECORDING_")},
               **environment(root, path, f"cli-store-{i}.db")}
        started = time.perf_counter()
        proc = subprocess.run(
            [str(VENV_BIN / "dagster"), "job", "execute", "-m", "social_recording.definitions",
             "-j", "live_tokens_job", "-c", str(root / "run.json")],
            cwd=root, env=env, capture_output=True, text=True, timeout=300,
        )
        cli_wall.append(time.perf_counter() - started)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    apply(environment(root, path))
    with DagsterInstance.get() as instance:
        for record in instance.get_run_records():
            stamps = {}
            for entry in instance.all_logs(record.dagster_run.run_id):
                event = entry.dagster_event
                if event is not None and event.event_type in (DagsterEventType.RUN_START,
                                                               DagsterEventType.RUN_SUCCESS):
                    stamps[event.event_type] = entry.timestamp
            if len(stamps) == 2 and record.dagster_run.job_name == "live_tokens_job" \
                    and "cli-" not in str(record.dagster_run.run_config):
                run_times.append(stamps[DagsterEventType.RUN_SUCCESS] - stamps[DagsterEventType.RUN_START])
    run_times = run_times[:reps]
    print(f"dagster job execute (CLI), same run: command wall median {statistics.median(cli_wall):.2f} s "
          f"(min {min(cli_wall):.2f}); RUN_START -> RUN_SUCCESS median {statistics.median(run_times) * 1000:.0f} ms "
          f"(min {min(run_times) * 1000:.0f}, max {max(run_times) * 1000:.0f})")


# --------------------------------------------------------------------------- logging


def logging_cost(tokens: int, url_log: bool, workers: int) -> None:
    from dagster import DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    root = Path(tempfile.mkdtemp(prefix="sr-bench-logging-"))
    path = scenario(root / "scenario.json", tokens, 3)
    apply(environment(root, path))
    if not url_log:
        disable_url_log()
    timer = LogTimer()
    job = build_definitions(load_settings()).resolve_job_def("reconcile_job")
    with DagsterInstance.get() as instance:
        started = time.perf_counter()
        result = job.execute_in_process(
            partition_key=DAY, instance=instance,
            run_config={"ops": {"reconcile_window": {"config": {"max_workers": workers}}}},
        )
        wall = time.perf_counter() - started
        assert result.success
        events = len(instance.all_logs(result.run_id))
    print(json.dumps({"url_log": url_log, "tokens": tokens, "urls": tokens * 3, "wall_s": round(wall, 3),
                      "dagster_log_s": round(timer.seconds, 3), "log_calls": timer.calls, "events": events}))


def logging(tokens: int, reps: int, workers: int) -> None:
    rows: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    for _ in range(reps):
        for on in (True, False):
            proc = subprocess.run([sys.executable, __file__, "_logging", "--tokens", str(tokens),
                                   "--url-log", "on" if on else "off", "--workers", str(workers)],
                                  capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stderr[-3000:]
            rows[on].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    on_wall = statistics.median(r["wall_s"] for r in rows[True])
    off_wall = statistics.median(r["wall_s"] for r in rows[False])
    inside = statistics.median(r["dagster_log_s"] for r in rows[True])
    print(f"reconcile of {tokens} tokens / {tokens * 3} URLs, {workers} worker(s), latency 0, {reps} rep(s):")
    print(f"  wall with per-URL lines {on_wall:.2f} s, without {off_wall:.2f} s: the lines cost "
          f"{on_wall - off_wall:.2f} s = {(on_wall - off_wall) / on_wall * 100:.1f} % of the run")
    print(f"  time inside Dagster log calls {inside:.2f} s = {inside / on_wall * 100:.1f} % of the run; "
          f"log calls {rows[True][0]['log_calls']}, run events {rows[True][0]['events']} "
          f"(without per-URL lines: {rows[False][0]['log_calls']} calls, {rows[False][0]['events']} events)")


# --------------------------------------------------------------------------- memory


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_run(tokens: int, workers: int) -> None:
    from dagster import DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    root = Path(tempfile.mkdtemp(prefix="sr-bench-memory-"))
    path = scenario(root / "scenario.json", tokens, 2)
    apply(environment(root, path))
    job = build_definitions(load_settings()).resolve_job_def("reconcile_job")
    with DagsterInstance.get() as instance:
        before = _rss_kib()
        started = time.perf_counter()
        result = job.execute_in_process(
            partition_key=DAY, instance=instance,
            run_config={"ops": {"reconcile_window": {"config": {"max_workers": workers}}}},
        )
        wall = time.perf_counter() - started
        assert result.success
        out = result.output_for_node("reconcile_window")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"tokens": tokens, "processed": out.get("processed"), "wall_s": round(wall, 1),
                      "rss_before_run_mib": round(before / 1024, 1), "peak_rss_mib": round(peak / 1024, 1)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["overhead", "logging", "memory", "_logging"])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--url-log", choices=["on", "off"], default="on")
    parser.add_argument("--no-assets-report", action="store_true",
                        help="overhead: in-process runs without the recording stage's asset observations")
    args = parser.parse_args()
    if args.mode == "overhead":
        overhead(args.reps, not args.no_assets_report)
    elif args.mode == "logging":
        logging(args.tokens or 100, max(1, args.reps // 2), args.workers)
    elif args.mode == "_logging":
        logging_cost(args.tokens or 100, args.url_log == "on", args.workers)
    else:
        memory_run(args.tokens or 10_000, args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
