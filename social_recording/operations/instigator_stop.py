"""Stopping every schedule and sensor of the code location so that the stop holds (`drain`).

Dagster keeps a schedule's or sensor's on/off state in the instance, and its daemon writes that state
back at the end of each tick (cursor, last tick time) from a copy it read moments before: a tick in
flight when the operator stops the sensor can write RUNNING over the STOPPED, and the sensor ticks on
while "drained". So a stop is held, not assumed: after stopping, `hold_stopped` waits out the ticks in
flight, stops again whatever is running again, and returns only once every one has stayed stopped
with no tick in flight for `settle_s` — longer than the sensor daemon's loop, so that a tick started
from a state read before the stop shows up (docs/operations.md, "Migrations and draining").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from social_recording.settings import DAEMON_SENSOR_LOOP_S

SETTLE_S = 2.0 * DAEMON_SENSOR_LOOP_S
"""How long everything must stay stopped, with no tick in flight, before the stop counts as held."""
TICK_BOUND_S = 300.0
"""A tick still STARTED after this long is a dead daemon's (it is never finished), not one in flight:
Dagster bounds a sensor's evaluation at 60 s and its run submissions follow within seconds."""


def instigators(repositories: Sequence[Any]) -> list[Any]:
    """Every schedule and sensor of the repositories (RemoteSchedule, RemoteSensor)."""
    return [i for repo in repositories for i in (*repo.get_schedules(), *repo.get_sensors())]


def kind(instigator: Any) -> str:
    from dagster._core.remote_representation.external import RemoteSchedule

    return "schedule" if isinstance(instigator, RemoteSchedule) else "sensor"


def is_running(instance: Any, instigator: Any) -> bool:
    stored = instance.get_instigator_state(instigator.get_remote_origin_id(), instigator.selector_id)
    return bool(instigator.get_current_instigator_state(stored).is_running)


def stop(instance: Any, instigator: Any) -> None:
    stopper = instance.stop_schedule if kind(instigator) == "schedule" else instance.stop_sensor
    stopper(instigator.get_remote_origin_id(), instigator.selector_id, instigator)


def stop_instigators(instance: Any, repositories: Sequence[Any]) -> list[str]:
    """Stop every schedule and sensor; one line per instigator saying what was done."""
    lines = []
    for instigator in instigators(repositories):
        was = is_running(instance, instigator)
        stop(instance, instigator)
        lines.append(f"{kind(instigator)} {instigator.name}: {'stopped' if was else 'was already stopped'}")
    return lines


def ticking(instance: Any, instigator: Any, now: float) -> bool:
    """Whether its latest tick is still in flight (STARTED, and not so old that its daemon is dead)."""
    from dagster._core.scheduler.instigation import TickStatus

    ticks = instance.get_ticks(instigator.get_remote_origin_id(), instigator.selector_id, limit=1)
    return bool(ticks) and ticks[0].status == TickStatus.STARTED and now - ticks[0].timestamp < TICK_BOUND_S


def hold_stopped(instance: Any, repositories: Sequence[Any], *, timeout_s: float, poll_s: float,
                 say: Callable[[str], None], settle_s: float = SETTLE_S,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 wall: Callable[[], float] = time.time) -> list[str]:
    """Stop again, until it holds, whatever a tick in flight set running; the names still running or
    ticking when `timeout_s` passed (empty: held)."""
    every = instigators(repositories)
    deadline = clock() + timeout_s
    quiet_since: float | None = None
    while True:
        in_flight = [i for i in every if ticking(instance, i, wall())]
        again = [i for i in every if is_running(instance, i)]
        for instigator in again:
            stop(instance, instigator)
            say(f"{kind(instigator)} {instigator.name}: running again (a tick in flight wrote its state back), "
                "stopped again")
        now = clock()
        if in_flight or again:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= settle_s:
            return []
        if now >= deadline:
            ticking_names = {i.name for i in in_flight}
            return [f"{kind(i)} {i.name} ({'tick in flight' if i.name in ticking_names else 'running'})"
                    for i in every if i.name in ticking_names or any(a.name == i.name for a in again)]
        sleep(min(poll_s, settle_s))
