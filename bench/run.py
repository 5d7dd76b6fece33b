"""The benchmark suite: P1–P12 (and the fault benchmark), each beside its baseline.

    python bench/run.py                 # every part at its full size (tens of minutes, ~2 GB of disk for P4)
    python bench/run.py --parts P3 P4   # some parts
    python bench/run.py --smoke         # every part at a tiny size (under a minute: CI runs this)
    python bench/run.py --parts P8 --extra "P8=--db-dir /tmp/p8"   # a part with more arguments of its own

Each part is its own script (run alone with `--help` to see its knobs) and runs in its own process;
each prints one table headed `== P<n>: ... ==`. These are measurements, not tests: nothing here
fails on a number, only on a part that could not run.

A full-size run writes each part's tables into bench/RESULTS.md (`--record`; `--smoke` writes nothing
unless asked), with the commit, the date and the load average before and after the part, which it
also prints: a figure in the docs is one a run produced (bench/_results.py).

- P1 `p1_paid_calls.py`  paid calls per distinct paid subject, four processes, ok-only and mixed outcomes
- P2 `p2_bookkeeping.py` bookkeeping per URL at 1 and 4 threads (SQLite store; Redis and SQLite locks)
- P3 `p3_throughput.py`  ratio to the latency bound at 4/16/32 calls at once and 50–400 URLs
- P4 `p4_scale.py`       candidate query, gate lookup, window lookup and health figures at 1M tokens, with plans
- P4-mongo `p4_scale.py --store mongo`  the same at 100k tokens on the Mongo store over the wire (FerretDB)
- P5 `p5_run_overhead.py` per-run overhead of the Dagster jobs, in-process and through the CLI
- P6 `p6_memory.py`      peak RSS of a reconcile run against the number of tokens
- P7 `p7_freshness.py`   trade -> recorded under the real daemon, per phase, on both instance configs
- P8 `p8_health.py`      the report stage's health figures and the status read at 100k and 1M tokens
  (P8-mongo: the same on the Mongo store over the wire)
- P9 `p9_connections.py` the GitHub client per URL on real sockets: one shared transport against one per call
- P10 `p10_run_log.py`   one run-log event per URL against 50 lines per event, on both instance configs
- P11 `p11_backfill_start.py` launch of a backfill -> its first run, under the real daemon, both instance configs
- P12 `p12_status_start.py` the status command from start to exit, beside `import dagster`
- faults `faults.py`     paid calls per distinct paid subject under faults (full runs only)
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from _results import PartRun, commit_text, load_text, now, record  # noqa: I001  (bench/ on sys.path)

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"

PARTS: dict[str, tuple[str, list[str] | None]] = {
    "P1": ("p1_paid_calls.py", ["--tokens", "8", "--holders", "2", "--procs", "2", "--latency-ms", "0",
                                "--budget", "2"]),
    "P2": ("p2_bookkeeping.py", ["--threads", "1", "4", "--urls", "24", "--latency-ms", "1", "--repeat", "1"]),
    "P3": ("p3_throughput.py", ["--concurrency", "4", "16", "--urls", "32", "--latency-ms", "20",
                                         "--defaults-urls", "30"]),
    "P4": ("p4_scale.py", ["--tokens", "3000", "--shared", "100", "--repeat", "3", "--window", "200"]),
    "P4-mongo": ("p4_scale.py", ["--tokens", "300", "--shared", "10", "--repeat", "1", "--window", "20"]),
    "P5": ("p5_run_overhead.py", ["--repeat", "1", "--cli-repeat", "1"]),
    "P6": ("p6_memory.py", ["--tokens", "5", "20"]),
    "P7": ("p7_freshness.py", ["--instances", "dev", "--settings", "new", "--tokens", "2", "--gap", "2", "--idle", "5"]),
    "P8": ("p8_health.py", ["--tokens", "500", "--repeat", "1"]),
    "P8-mongo": ("p8_health.py", ["--tokens", "200", "--repeat", "1"]),
    "P10": ("p10_run_log.py", ["--urls", "50", "--repeat", "1"]),
    "P11": ("p11_backfill_start.py", ["--instances", "dev", "--repeat", "1"]),
    "P9": ("p9_connections.py", ["--urls", "10", "--threads", "1", "2", "--repeat", "1"]),
    "P12": ("p12_status_start.py", ["--repeat", "1"]),
    "faults": ("faults.py", None),
}
"""Part -> (script, its arguments for --smoke; None: the part is skipped by --smoke)."""

PART_ARGS: dict[str, list[str]] = {"P4-mongo": ["--store", "mongo"], "P8-mongo": ["--store", "mongo"]}
"""Arguments a part always gets (before the smoke ones)."""


def run_part(cmd: list[str]) -> tuple[int, str]:
    """Run one part, its output passed through as it comes and kept."""
    kept: list[str] = []
    with subprocess.Popen(cmd, cwd=HERE.parent, stdout=subprocess.PIPE, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            kept.append(line)
    return proc.returncode, "".join(kept)


def _extra(text: str) -> tuple[str, list[str]]:
    name, sep, rest = text.partition("=")
    if not sep or name not in PARTS:
        raise argparse.ArgumentTypeError(f"--extra takes PART=ARGS with PART one of {sorted(PARTS)}, got {text!r}")
    return name, shlex.split(rest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=sorted(PARTS), default=list(PARTS))
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks that every part still runs")
    parser.add_argument("--extra", type=_extra, action="append", default=[], metavar="PART=ARGS",
                        help="more arguments for one part (e.g. 'P8=--db-dir /tmp/p8'), recorded with its tables")
    parser.add_argument("--record", type=Path, default=None,
                        help=f"write the tables here (default: {RESULTS.relative_to(HERE.parent)} for a full-size run, "
                             "nowhere for --smoke)")
    parser.add_argument("--no-record", action="store_true", help="write no results file")
    args = parser.parse_args(argv)
    extra: dict[str, list[str]] = {}
    for name, more in args.extra:
        extra.setdefault(name, []).extend(more)
    target = None if args.no_record else args.record or (None if args.smoke else RESULTS)
    failed: list[str] = []
    for name in args.parts:
        script, smoke = PARTS[name]
        if args.smoke and smoke is None:
            continue
        cmd = [sys.executable, str(HERE / script), *PART_ARGS.get(name, []), *(smoke if args.smoke else []),
               *extra.get(name, [])]
        load_before, started_at = load_text(), now()
        commit = commit_text(HERE.parent, target) if target is not None else ""
        print(f"--- {name}: {' '.join(cmd[1:])} (load average {load_before})", flush=True)
        started = time.monotonic()
        code, output = run_part(cmd)
        took, load_after = time.monotonic() - started, load_text()
        print(f"--- {name}: exit {code} after {took:.1f} s (load average {load_after})", flush=True)
        if code != 0:
            failed.append(name)
        elif target is not None:
            command = [str(Path(c).relative_to(HERE)) if c.startswith(str(HERE)) else c for c in cmd[1:]]
            record(target, [PartRun(name, command, commit, started_at, took, load_before,
                                    load_after, output)], list(PARTS))
            print(f"--- {name}: tables written to {target}", flush=True)
    if failed:
        print(f"parts that could not run: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
