"""The deployment's code server starts each run from a process that has Dagster and the code location
imported already: what Dagster's server asks for as "spawn" is the preloaded fork server, and a
process it starts begins with both modules loaded (the rehearsal runs the whole server this way)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from multiprocessing.queues import Queue
from typing import Any

import pytest

from social_recording.code_server import PRELOAD, install


def _loaded(queue: Queue[Any]) -> None:
    queue.put((os.getppid(), {name: name in sys.modules for name in PRELOAD}))


@pytest.fixture()
def patched_server() -> Iterator[Any]:
    from dagster._grpc import server

    real = server.multiprocessing  # type: ignore[attr-defined]
    install()
    try:
        yield server
    finally:
        server.multiprocessing = real  # type: ignore[attr-defined]


def test_dagsters_spawn_context_is_the_preloaded_fork_server(patched_server: Any) -> None:
    context = patched_server.multiprocessing.get_context("spawn")
    assert context.get_start_method() == "forkserver"
    assert patched_server.multiprocessing.get_context("fork").get_start_method() == "fork"
    assert patched_server.multiprocessing.Process is not None  # everything else is the real module


def test_a_run_process_starts_with_dagster_and_the_code_location_loaded(patched_server: Any) -> None:
    context = patched_server.multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_loaded, args=(queue,))
    child.start()
    parent, loaded = queue.get(timeout=120)
    child.join(30)
    assert child.exitcode == 0
    assert loaded == {name: True for name in PRELOAD}
    assert parent != os.getpid()  # forked by the fork server, not started by the server itself
