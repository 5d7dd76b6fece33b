"""`make demo-run` / `python -m social_recording.demo`: the headless quickstart.

A thin entry point; the runner lives in `dagster_defs.demo` (Dagster stays inside dagster_defs).
"""

from __future__ import annotations

from social_recording.dagster_defs.demo import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
