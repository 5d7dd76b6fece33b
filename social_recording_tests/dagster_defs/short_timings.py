"""Lock timings in seconds for Dagster-level tests of crashes and held locks: the recording engine of
every run built in this process uses them (production keeps recording/engine.py's constants)."""

from __future__ import annotations

from functools import partial
from typing import Any

import social_recording.dagster_defs.engine as dagster_engine
from social_recording.recording.engine import Timings, build_engine

SHORT = Timings(url_lock_wait=10.0, url_lock_ttl=3.0, token_lock_ttl=3.0, token_lock_wait=6.0, job_lock_ttl=15.0,
                job_lock_wait=25.0)
"""A crashed run's locks expire within seconds (its window lock within 15 s, so a run started right
after a kill still finds it held); waits stay longer than those TTLs, as in production."""


def use_timings(timings: Timings = SHORT, monkeypatch: Any = None) -> None:
    """Make the runs of this process build their engine with `timings` (through `monkeypatch` when
    given, so a test undoes it)."""
    patched = partial(build_engine, timings=timings)
    if monkeypatch is not None:
        monkeypatch.setattr(dagster_engine, "build_engine", patched)
    else:
        dagster_engine.build_engine = patched  # type: ignore[assignment]
