"""`python -m social_recording drain [--timeout S]`: quiesce the code location before an upgrade or a move.

Stops every schedule and sensor of the code location (their state is stored in the instance, so
the daemon launches nothing new from them, whichever daemon reads it) and holds the stop: a tick in
flight can write its sensor's state back as running, so the ticks are waited out and whatever runs
again is stopped again until all stay stopped (instigator_stop.py). Then waits until no run of
its jobs is queued, starting, in progress or canceling, and no backfill of it is still creating
runs, printing what is still going. With nothing in flight, the store and the instance can be
migrated, dumped or moved without a run writing underneath (docs/operations.md, "Migrations and
draining"). `python -m social_recording resume` gives schedules and sensors their default status back.

Reads the Dagster instance of DAGSTER_HOME. Exit codes: 0 drained, 1 timed out (the runs still
going, or the schedules and sensors that would not stay stopped, are named), 2 a bad argument or an instance / code location that cannot be loaded.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from social_recording.operations.code_location import CodeLocationError, remote_repositories
from social_recording.operations.instigator_stop import hold_stopped, stop_instigators

DEFAULT_TIMEOUT_S = 900.0
"""A quarter of an hour: a run given SIGTERM finishes its tokens in flight (each call bounded by its
provider's timeout) well within it; a backfill of many partitions may need longer (`--timeout`)."""
DEFAULT_POLL_S = 5.0


@dataclass(frozen=True)
class InFlight:
    """What still runs: `runs` as (run id, job, status), `backfills` as backfill ids."""

    runs: tuple[tuple[str, str, str], ...]
    backfills: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.runs or self.backfills)

    def describe(self) -> str:
        parts = [f"run {run_id} ({job}, {status})" for run_id, job, status in self.runs]
        parts += [f"backfill {b} (still creating runs)" for b in self.backfills]
        return ", ".join(parts) or "nothing"


def in_flight(instance: Any, job_names: set[str]) -> InFlight:
    """Runs of these jobs not yet finished, and backfills of them still being created."""
    from dagster import DagsterRunStatus, RunsFilter
    from dagster._core.execution.backfill import BulkActionsFilter, BulkActionStatus

    going = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
             DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
    runs = tuple((r.dagster_run.run_id, r.dagster_run.job_name, r.dagster_run.status.value)
                 for r in instance.get_run_records(RunsFilter(statuses=going))
                 if r.dagster_run.job_name in job_names)
    backfills = tuple(b.backfill_id for b in instance.get_backfills(
        filters=BulkActionsFilter(statuses=[BulkActionStatus.REQUESTED]))
        if b.job_name is None or b.job_name in job_names)
    return InFlight(runs, backfills)


def wait_drained(instance: Any, job_names: set[str], *, timeout_s: float, poll_s: float,
                 say: Callable[[str], None], clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> InFlight:
    """Poll until nothing is in flight or `timeout_s` passed; what was still going (empty: drained)."""
    deadline = clock() + timeout_s
    while True:
        going = in_flight(instance, job_names)
        if not going:
            return going
        left = deadline - clock()
        if left <= 0:
            return going
        say(f"waiting for {len(going.runs)} run(s) and {len(going.backfills)} backfill(s), "
            f"{left:.0f} s left: {going.describe()}")
        sleep(min(poll_s, max(left, 0.0)))


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording drain") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds to wait for the schedules and sensors to stay stopped, and again for the runs in "
                             f"flight (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL_S,
                        help=f"seconds between two looks at the runs (default {DEFAULT_POLL_S:g})")
    parser.add_argument("--workspace", type=Path, default=None,
                        help="a workspace.yaml to load the code location from (default: the module "
                             "social_recording.definitions, in a code server of its own)")
    args = parser.parse_args(argv)
    if not args.timeout >= 0:
        parser.error(f"--timeout must be >= 0 seconds, got {args.timeout}")
    if not args.poll > 0:
        parser.error(f"--poll must be > 0 seconds, got {args.poll}")
    from dagster import DagsterInstance

    def say(line: str) -> None:
        print(line, flush=True)

    try:
        with DagsterInstance.get() as instance, remote_repositories(instance, args.workspace) as repositories:
            started = time.monotonic()
            for line in stop_instigators(instance, repositories):
                say(line)
            say("holding the stop: waiting out ticks in flight until every schedule and sensor stays stopped")
            stuck = hold_stopped(instance, repositories, timeout_s=args.timeout, poll_s=args.poll, say=say)
            jobs = {job.name for repo in repositories for job in repo.get_all_jobs()}
            going = InFlight((), ()) if stuck else wait_drained(instance, jobs, timeout_s=args.timeout,
                                                                   poll_s=args.poll, say=say)
    except CodeLocationError as exc:
        print(f"drain: cannot load the code location: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # DAGSTER_HOME unset or its dagster.yaml invalid, storage unreachable
        print(f"drain: cannot use the Dagster instance: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
        return 2
    if stuck:
        print(f"drain: timed out after {args.timeout:g} s; not staying stopped: {', '.join(stuck)}", file=sys.stderr)
        return 1
    if going:
        print(f"drain: timed out after {args.timeout:g} s; still going: {going.describe()}", file=sys.stderr)
        return 1
    say(f"drained: no run or backfill in flight ({time.monotonic() - started:.1f} s); schedules and sensors "
        "stay stopped until `python -m social_recording resume`")
    return 0
