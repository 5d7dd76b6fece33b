"""The deployment's code server: Dagster's own `dagster api grpc` (same arguments), whose run processes
are forked from one process that has already imported Dagster and this code location, instead of
each starting a new interpreter and importing both again (docs/architecture.md, "Freshness").

Dagster builds a run's process with `multiprocessing.get_context("spawn")` and offers no setting for
it; this swaps that one call for a `forkserver` context preloaded with those modules. The server, run
monitoring and termination (through the run's own event) stay Dagster's. A SIGTERM or SIGINT stops
the server gracefully, its runs ending CANCELED (code_server_stop.py).
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Sequence
from multiprocessing.context import BaseContext
from types import ModuleType
from typing import Any

from social_recording.code_server_stop import StopOnSignal

PRELOAD = ("dagster", "social_recording.definitions")
"""What the fork server imports once: each run's process starts with both loaded."""


class _RunContexts(ModuleType):
    """`multiprocessing` as Dagster's server module sees it: the preloaded context where it asks for
    "spawn", the real module for everything else."""

    def __init__(self, preloaded: BaseContext) -> None:
        super().__init__("multiprocessing")
        self._preloaded = preloaded

    def get_context(self, method: str | None = None) -> Any:
        return self._preloaded if method == "spawn" else multiprocessing.get_context(method)

    def __getattr__(self, name: str) -> Any:
        return getattr(multiprocessing, name)


def preloaded_context(preload: Sequence[str] = PRELOAD) -> BaseContext:
    """A `forkserver` context whose server process imports `preload` before it forks any child."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


def install(preload: Sequence[str] = PRELOAD, stop: StopOnSignal | None = None) -> None:
    """Make Dagster's gRPC server start runs from the preloaded fork server (before it is built), and
    hand the server to `stop` once it is built."""
    from dagster._grpc import server

    server.multiprocessing = _RunContexts(preloaded_context(preload))  # type: ignore[attr-defined]
    if stop is None:
        return
    on_stop = stop

    class StoppableApiServer(server.DagsterApiServer):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            on_stop.servicer = self

    server.DagsterApiServer = StoppableApiServer  # type: ignore[misc]


def main(argv: Sequence[str]) -> None:
    stop = StopOnSignal()
    install(stop=stop)
    # SIGINT's handler is the one Dagster's server copies to SIGTERM when it starts.
    stop.install()
    from dagster._cli import main as dagster_main

    sys.argv = ["dagster", *argv]
    dagster_main()


if __name__ == "__main__":
    main(sys.argv[1:])
