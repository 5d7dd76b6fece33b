"""P6 — peak memory of one reconcile run against the number of tokens (a benchmark, not a test).

    python bench/p6_memory.py [--tokens 1000 3000 10000] [--in-process]

For each size, a sandbox day holds N new tokens (an X post, a Telegram channel and a GitHub repo
each, paid calls on) and one fresh Python process records it, reporting its own peak resident set
(`ru_maxrss`). `run`: `reconcile_job` for the day executed as a run process started on its own
executes it (`make dev`: Dagster's code server spawns a new interpreter per run; a run created on a
SQLite instance in $DAGSTER_HOME, this repository's dagster.yaml, its events streamed to the
instance's event log: the stages, the run log, the per-URL table, the report with the health checks
and the sandbox ledger check). `forked`: the same run in a process forked from a fork server that
imported Dagster and the code location first, as the deployment's code server
(`social_recording.code_server`) starts every run: its resident set is in part pages it still shares
with the fork server, so the table gives, sampled every 50 ms over the run, its own memory (USS: the
pages only it holds, what each more run adds), the part it shares (RSS - USS at its peak) and its
proportional share (PSS), with the fork server's own RSS beside (paid once per code server, not per
run). `no Dagster`: the same work on the same parts in a process that never imports Dagster (read
the window, record it with the per-URL outcomes counted, not kept); it fails if Dagster was imported
after all. `--in-process` adds `execute_in_process` on an ephemeral instance, the tests' harness,
which keeps every event in memory. Printed: each peak, the run's peak over and above the one without
Dagster and less the sandbox's tracker data, and the growth per 1,000 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

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
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")  # what `make dev` runs on: SQLite files
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
    from social_recording.settings import load_settings

    settings = load_settings()
    if mode == "sandbox":
        print(json.dumps({"rss_mb": _sandbox_data_mb(settings.effective_scenario), "urls": 0, "seconds": 0.0}))
        return
    started = time.perf_counter()
    if mode == "forked":
        print(json.dumps({**_forked(), "urls": _urls_recorded(), "seconds": time.perf_counter() - started}))
        return
    if mode == "run":
        _as_a_run_worker()
    elif mode == "in_process":
        _in_process(settings)
    else:
        _without_dagster(settings)
        if "dagster" in sys.modules:
            raise SystemExit("P6: the run without Dagster imported dagster; its figure would hide Dagster's part")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    seconds = time.perf_counter() - started
    print(json.dumps({"rss_mb": rss_mb, "urls": _urls_recorded(), "seconds": seconds}))


def _sandbox_data_mb(path: Path) -> float:
    """What the sandbox's tracker data (the scenario's tokens, held by every process that plays the
    tracker) adds to a process: memory the real tracker keeps on its own side."""
    import gc

    from social_recording.sandbox.scenario import load_scenario

    def rss() -> float:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024.0

    gc.collect()
    before = rss()
    scenario = load_scenario(path)
    gc.collect()
    grown = rss() - before
    del scenario
    return grown


def _as_a_run_worker() -> None:
    """The run as a deployed run process executes it (`dagster api execute_run`): a run created on
    the instance of $DAGSTER_HOME (this repository's dagster.yaml: SQLite files on disk), its events
    streamed to the instance's event log and dropped from memory."""
    from dagster import DagsterInstance
    from dagster._core.definitions.reconstruct import ReconstructableRepository
    from dagster._core.execution.api import execute_run_iterator

    recon = ReconstructableRepository.for_module("social_recording.definitions", "defs",
                                                 working_directory=str(REPO)).get_reconstructable_job("reconcile_job")
    with DagsterInstance.get() as instance:
        run = instance.create_run_for_job(recon.get_definition(), run_config=QUIET, tags={"dagster/partition": DAY},
                                          job_code_origin=recon.get_python_origin())
        for _ in execute_run_iterator(recon, run, instance):
            pass
        finished = instance.get_run_by_id(run.run_id)
        if finished is None or finished.status.value != "SUCCESS":
            raise SystemExit(f"P6: reconcile_job run ended {finished and finished.status}")


def memory_mb(pid: int | str = "self") -> dict[str, float]:
    """A process's resident set now, from /proc/<pid>/smaps_rollup: rss, uss (its private pages:
    what it alone holds), shared (pages other processes map too) and pss (each shared page divided
    among the processes that map it), in MB."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                fields[name] = int(rest.split()[0]) / 1024.0
    uss = fields["Private_Clean"] + fields["Private_Dirty"]
    return {"rss": fields["Rss"], "uss": uss, "shared": fields["Rss"] - uss, "pss": fields["Pss"]}


class PeakSampler:
    """Samples this process's memory every `every` seconds on a daemon thread: the highest USS, PSS
    and RSS seen (each its own peak), and the shared part at the RSS peak."""

    def __init__(self, every: float = 0.05) -> None:
        self.peak = memory_mb()
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="p6-sampler", daemon=True)
        self._thread.start()

    def _take(self) -> None:
        now = memory_mb()
        peak = self.peak
        if now["rss"] > peak["rss"]:
            peak["rss"], peak["shared"] = now["rss"], now["shared"]
        peak["uss"], peak["pss"] = max(peak["uss"], now["uss"]), max(peak["pss"], now["pss"])

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            self._take()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        self._take()
        return self.peak


def _forked_run(results: str) -> None:
    """The target of the forked run process: the run, its memory sampled meanwhile."""
    at_start = memory_mb()
    sampler = PeakSampler()
    _as_a_run_worker()
    peak = sampler.stop()
    Path(results).write_text(json.dumps({
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, "uss_mb": peak["uss"],
        "shared_mb": peak["shared"], "pss_mb": peak["pss"], "uss_start_mb": at_start["uss"]}))


def _forked() -> dict[str, float]:
    """The run in a process forked from a fork server preloaded as the deployment's code server's
    (`social_recording.code_server.preloaded_context`), and the fork server's own memory after it."""
    from multiprocessing import forkserver

    from social_recording.code_server import preloaded_context

    with tempfile.TemporaryDirectory(prefix="bench-p6-forked-") as tmp:
        results = Path(tmp) / "forked.json"
        process = preloaded_context().Process(target=_forked_run, args=(str(results),))
        process.start()
        process.join()
        if process.exitcode != 0:
            raise SystemExit(f"P6: the forked run ended with exit code {process.exitcode}")
        got: dict[str, float] = json.loads(results.read_text())
    server = memory_mb(forkserver._forkserver._forkserver_pid)  # type: ignore[attr-defined]
    return {**got, "server_rss_mb": server["rss"], "server_uss_mb": server["uss"]}


def _in_process(settings: Any) -> None:
    """`execute_in_process` on an ephemeral instance (tests' harness: it keeps every event in memory)."""
    from dagster import DagsterInstance

    from social_recording.dagster_defs.definitions_builder import build_definitions

    result = build_definitions(settings).resolve_job_def("reconcile_job").execute_in_process(
        partition_key=DAY, instance=DagsterInstance.ephemeral(), run_config=QUIET)
    if not result.success:
        raise SystemExit("P6: reconcile_job failed")


def _without_dagster(settings: Any) -> None:
    """The same two steps on the same parts, in a process that never imports Dagster: read the
    window, record it with the per-URL outcomes counted, not kept (as the job's recording stage does)."""
    start = datetime.fromisoformat(DAY).replace(tzinfo=UTC)
    reconcile(settings_engine(settings), start, start + timedelta(days=1), partition_key=DAY,
              min_af_count=settings.af_investor_threshold, keep_url_outcomes=False)


def _urls_recorded() -> int:
    """Elements the store holds now, whatever recorded them."""
    from social_recording.settings import load_settings
    from social_recording.store import open_store

    store = open_store(load_settings().store_url)
    try:
        return sum(store.status_counts().by_status().values())
    finally:
        store.close()


def measure(n: int, mode: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-p6-") as tmp:
        done = subprocess.run([sys.executable, __file__, "--child", mode], cwd=REPO, env=_env(Path(tmp), n),
                              capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"P6: {mode} with {n} tokens failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    if mode != "sandbox" and result["urls"] != 3 * n:
        raise SystemExit(f"P6: {mode} recorded {result['urls']} URLs, expected {3 * n}")
    return result


MODES = {"run": "run", "forked": "forked", "in_process": "in-process", "baseline": "no Dagster",
         "sandbox": "sandbox data"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[1000, 3000, 10000])
    parser.add_argument("--in-process", action="store_true",
                        help="also run the job with execute_in_process on an ephemeral instance")
    parser.add_argument("--child", choices=tuple(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if min(args.tokens) < 1:
        parser.error("--tokens must be >= 1")
    modes = ["run", "forked", *(["in_process"] if args.in_process else []), "baseline"]
    columns = ["tokens"] + [f"{MODES[m]} {unit}" for m in modes for unit in ("MB", "s")] + [
        "run / no Dagster", "run - no Dagster MB", "sandbox data MB", "run - sandbox data MB",
        "forked own at start MB", "forked own MB", "forked shared MB", "forked PSS MB", "fork server MB", "load"]
    table = Table("P6", "peak RSS of one reconcile run against tokens (3 URLs each; a fresh process per run, or "
                        "one forked from a preloaded fork server)", columns)
    peaks: dict[str, list[tuple[int, float]]] = {m: [] for m in [*modes, "forked_own"]}
    for n in sorted(args.tokens):
        row: list[object] = [n]
        forked: dict[str, float] = {}
        for mode in modes:
            result = measure(n, mode)
            peaks[mode].append((n, result["rss_mb"]))
            row += [result["rss_mb"], result["seconds"]]
            if mode == "forked":
                forked = result
                peaks["forked_own"].append((n, result["uss_mb"]))
        sandbox = measure(n, "sandbox")["rss_mb"]
        peaks.setdefault("sandbox", []).append((n, sandbox))
        run_mb, plain_mb = peaks["run"][-1][1], peaks["baseline"][-1][1]
        table.add(*row, run_mb / plain_mb, run_mb - plain_mb, sandbox, run_mb - sandbox, forked["uss_start_mb"], forked["uss_mb"],
                  forked["shared_mb"], forked["pss_mb"], forked["server_rss_mb"], f"{os.getloadavg()[0]:.2f}")
    if len(args.tokens) > 1:
        rate: dict[str, float] = {}
        for mode in [*modes, "forked_own", "sandbox"]:
            (n0, p0), (n1, p1) = peaks[mode][0], peaks[mode][-1]
            rate[mode] = (p1 - p0) * 1000.0 / (n1 - n0)
        growth = [f"{MODES.get(mode, 'forked own')} {mb:+.1f} MB" for mode, mb in rate.items()]
        growth.append(f"run - sandbox data {rate['run'] - rate['sandbox']:+.1f} MB")
        table.notes.append("growth per 1,000 tokens: " + ", ".join(growth))
    table.notes.append("sandbox data: what the sandbox's tracker data (the scenario's N tokens, which every process "
                       "playing the tracker holds) adds to a process; the real tracker keeps it on its own side, "
                       "so run - sandbox data is what a run's process holds against a real tracker")
    table.notes.append("run: reconcile_job executed as a run process executes it (a run on a SQLite instance, events "
                       "streamed to its event log); no Dagster: the same two steps (read the window, record it "
                       "with URL outcomes counted) on the same parts, in a process that never imports Dagster; "
                       "run - no Dagster: what Dagster's process adds (its modules, its instance's storage, the "
                       "code location's definitions, the event log); load: the 1-minute load average after the row")
    table.notes.append("forked: the same run in a process forked from a fork server that imported Dagster and the code "
                       "location first (the deployment's code server, social_recording.code_server); its RSS counts "
                       "pages it still shares with the fork server: own = its peak USS (the pages only it holds, "
                       "what each more run at once adds; at start: when the run begins, right after the fork), "
                       "shared = RSS - USS at its RSS peak, PSS = its proportional share; fork server = that "
                       "process's RSS after the run, paid once per code server"
                       + ("; in-process: execute_in_process on an ephemeral instance, which keeps every event"
                          if args.in_process else ""))
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
