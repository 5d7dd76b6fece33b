"""`python -m social_recording resume`: undo `drain` — every schedule and sensor back to its default status.

Resets each one's stored state, so the code's default applies again: running in prod, stopped
elsewhere (`SOCIAL_RECORDING_ENV`; docs/quickstart.md, "Sensor and schedules"). A schedule or sensor
an operator had turned on or off by hand before the drain comes back at its default too: each one's
line says what it is now (docs/operations.md, "Migrations and draining").
Exit codes: 0 done, 2 an instance or code location that cannot be loaded.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from social_recording.operations.code_location import CodeLocationError, remote_repositories


def reset_instigators(instance: Any, repositories: Sequence[Any]) -> list[str]:
    lines = []
    for repo in repositories:
        for schedule in repo.get_schedules():
            state = instance.reset_schedule(schedule)
            lines.append(f"schedule {schedule.name}: {'running' if state.is_running else 'stopped'} (its default)")
        for sensor in repo.get_sensors():
            state = instance.reset_sensor(sensor)
            lines.append(f"sensor {sensor.name}: {'running' if state.is_running else 'stopped'} (its default)")
    return lines


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording resume") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=None,
                        help="a workspace.yaml to load the code location from (default: the module)")
    args = parser.parse_args(argv)
    from dagster import DagsterInstance

    try:
        with DagsterInstance.get() as instance, remote_repositories(instance, args.workspace) as repositories:
            for line in reset_instigators(instance, repositories):
                print(line, flush=True)
    except CodeLocationError as exc:
        print(f"resume: cannot load the code location: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        print(f"resume: cannot use the Dagster instance: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
        return 2
    return 0
