"""Loaded by every Python process `make dev` starts (the Makefile puts this directory first on
PYTHONPATH), to keep its terminal to what an operator acts on.

Dagster's sensor daemon logs two INFO lines for every sensor evaluation, also for the ones that
launch nothing: with token_flow_sensor on, two lines every 5 s. Those are dropped here (a skipped
tick's reason stays on the sensor's page in the UI); the daemon's other lines, every warning and the
lines of a tick that launches runs are kept. `make dev DEV_LOG_LEVEL=debug` keeps them too.
(docs/quickstart.md, "Starting and stopping"; no other process loads this file.)
"""

import logging
import os

_SKIPPED_TICK_STARTS = ("Checking for new runs for sensor: ", "No run requests returned for ")


class QuietSkippedTicks(logging.Filter):
    """Drops the sensor daemon's lines of an evaluation, keeping those of one that launches runs."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        skipped = message.startswith("Sensor ") and " skipped: " in message
        return not (skipped or message.startswith(_SKIPPED_TICK_STARTS))


if os.environ.get("SOCIAL_RECORDING_DEV_LOG_LEVEL", "info").lower() != "debug":
    logging.getLogger("dagster.daemon.SensorDaemon").addFilter(QuietSkippedTicks())
