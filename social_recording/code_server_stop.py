"""What the deployment's code server does on SIGTERM (a container stop, an upgrade's recreate) or SIGINT:
it stops taking runs, terminates every run in flight the way an operator's "Terminate" does (the run
marked canceling, then interrupted: it starts no new token, finishes and writes the ones in flight and
ends CANCELED), and exits once the last of them has ended (docs/operations.md, "Upgrades").

The handler is installed for both signals whatever dispositions the process inherited: a service
started in the background by a non-interactive shell (`sh -c 'entrypoint.sh code-server &'`) begins
with SIGINT ignored, and Dagster maps SIGTERM to SIGINT's handler, which left the server deaf to both.
Dagster's own "shut down once the executions finish" does the waiting and the exit.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
TERMINATED_BY_STOP = "the code server was stopped (SIGTERM): the run finishes its tokens in flight and ends CANCELED"
RECHECK_S = 1.0
"""How often the stopping server looks for a run that started while it was being told to stop."""


def graceful_stop(servicer: Any, instance: Any, stopped: threading.Event) -> None:
    """Refuse new runs, then terminate each run in flight (again for one that slips in) until the
    server's process ends (`stopped` only ends it early, for a caller that stops waiting)."""
    from dagster import DagsterRunStatus
    from dagster._grpc.__generated__ import dagster_api_pb2
    from dagster._grpc.types import CancelExecutionRequest, GetCurrentRunsResult
    from dagster._serdes import deserialize_value, serialize_value

    servicer.ShutdownServer(dagster_api_pb2.Empty(), None)
    terminated: set[str] = set()
    while not stopped.is_set():
        reply = servicer.GetCurrentRuns(dagster_api_pb2.Empty(), None)
        for run_id in deserialize_value(reply.serialized_current_runs, GetCurrentRunsResult).current_runs:
            if run_id in terminated:
                continue
            run = instance.get_run_by_id(run_id)
            if run is not None and run.status in (DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                                                  DagsterRunStatus.STARTED):
                instance.report_run_canceling(run, message=TERMINATED_BY_STOP)
            request = serialize_value(CancelExecutionRequest(run_id=run_id))
            servicer.CancelExecution(dagster_api_pb2.CancelExecutionRequest(
                serialized_cancel_execution_request=request), None)
            terminated.add(run_id)
        stopped.wait(RECHECK_S)


class StopOnSignal:
    """The SIGTERM/SIGINT handler: before the server is serving, the process ends at once; after, the
    first signal starts `graceful_stop` in a thread and later ones are noted."""

    def __init__(self) -> None:
        self.servicer: Any = None
        self.stopping = threading.Event()

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self)

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.servicer is None:
            raise SystemExit(128 + signum)
        if self.stopping.is_set():
            print(f"code server: {name} again: still waiting for the runs in flight to end", file=sys.stderr, flush=True)
            return
        self.stopping.set()
        print(f"code server: {name}: taking no new run, terminating the runs in flight, exiting once they end",
              file=sys.stderr, flush=True)
        threading.Thread(target=self._stop, name="code-server-stop", daemon=True).start()

    def _stop(self) -> None:
        from dagster import DagsterInstance

        with DagsterInstance.get() as instance:
            graceful_stop(self.servicer, instance, threading.Event())
