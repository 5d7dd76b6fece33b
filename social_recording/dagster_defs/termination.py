"""SIGTERM to a run executed in its own creating process (`dagster job execute`, a script) is a
termination: the run is marked canceling before Dagster's interrupt reaches the stage, so it ends
CANCELED with the stage's "run interrupted … not started" line, not as an unexpected FAILURE.

Runs launched by the webserver or the daemon are left to Dagster: a termination from the UI already
marks them canceling before their worker is interrupted, and a SIGTERM nobody asked for (a node
drained under a run pod) stays a failure that `run_retries` re-executes (docs/architecture.md,
"Runs tell the truth").
"""

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from dagster import DagsterRunStatus, OpExecutionContext

TERMINATED_BY_SIGTERM = "SIGTERM received: the run stops as a termination (tokens in flight finish and are written)"


@contextlib.contextmanager
def sigterm_terminates(context: OpExecutionContext) -> Iterator[None]:
    """Around one stage: a SIGTERM marks the run canceling, then hands over to the handler Dagster
    installed for the stage (which interrupts it). A no-op off the main thread (signal handlers can
    only be set there) and for runs that a run launcher started."""
    if context.run.remote_job_origin is not None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: Any = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signo: int, frame: FrameType | None) -> None:
        run = context.instance.get_run_by_id(context.run_id)
        if run is not None and run.status in (DagsterRunStatus.STARTING, DagsterRunStatus.STARTED):
            context.instance.report_run_canceling(run, message=TERMINATED_BY_SIGTERM)
        if callable(previous):
            previous(signo, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
