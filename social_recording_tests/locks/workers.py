"""Entry points of the child processes of the lock contract suite (spawned: keep imports light)."""

from __future__ import annotations

import time
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from social_recording.locks import open_lock_manager


def increment(url: str, key: str, counter: str, times: int, start: Barrier) -> None:
    """Non-atomic read-modify-write of a shared file, each one under `hold_within`."""
    lm = open_lock_manager(url)
    path = Path(counter)
    start.wait(timeout=60)
    for _ in range(times):
        with lm.hold_within(key, ttl=5.0, wait=60.0) as lease:
            if not lease.held:
                raise SystemExit(f"could not take {key} within 60 s")
            value = int(path.read_text() or "0")
            time.sleep(0.001)  # widen the race window: without the lock, increments get lost
            path.write_text(str(value + 1))
    lm.close()


def hold(url: str, key: str, ttl: float, seconds: float, ready: Event, done: Event, out: Any) -> None:
    """Take `key`, say so, work `seconds` (or until `done` is set), report `lease.lost`, and keep
    holding until `done` is set (so the parent decides when the release happens).

    `out` (a multiprocessing Queue) gets ("held", owner) once held and ("lost", bool) after the work.
    """
    lm = open_lock_manager(url)
    with lm.hold_within(key, ttl=ttl, wait=10.0) as lease:
        out.put(("held", lease.owner if lease.held else None))
        ready.set()
        done.wait(seconds)
        out.put(("lost", lease.lost))
        done.wait(60.0)
    lm.close()


def take_fences(url: str, key: str, times: int, start: Barrier, out: Any) -> None:
    """Take `key` `times` times (waiting as needed) and report every fencing token received."""
    lm = open_lock_manager(url)
    start.wait(timeout=60)
    fences: list[int] = []
    for _ in range(times):
        with lm.hold_within(key, ttl=5.0, wait=60.0) as lease:
            if not lease.held:
                raise SystemExit(f"could not take {key} within 60 s")
            fences.append(lease.fence)
    out.put(fences)
    lm.close()
