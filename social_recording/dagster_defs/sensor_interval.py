"""A sensor's minimum interval for one evaluation every N seconds, shared by every sensor that must keep
each loop of the sensor daemon it is due on (the live sensor, backfill_start_sensor)."""

from __future__ import annotations

from social_recording.settings import DAEMON_SENSOR_LOOP_S


def live_minimum_interval(poll_seconds: int) -> int:
    """The sensor's `minimum_interval_seconds` for one evaluation every `poll_seconds`.

    The daemon skips a sensor while less than its minimum interval has passed since its last tick
    *started*; it looks every DAEMON_SENSOR_LOOP_S seconds, and a tick starts a few milliseconds
    into a loop, so the loop `poll_seconds` later finds a little less than `poll_seconds` elapsed: a
    minimum of exactly 5 would tick every 10 s. One second less keeps every due loop (docs/architecture.md,
    "Live")."""
    if poll_seconds < DAEMON_SENSOR_LOOP_S:
        raise ValueError(f"poll_seconds must be >= {DAEMON_SENSOR_LOOP_S} (the daemon's sensor loop), got {poll_seconds!r}")
    return poll_seconds - 1
