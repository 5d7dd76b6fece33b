"""The code location as the daemon sees it, for the commands that stop or reset its schedules and sensors.

Dagster keeps a schedule's or sensor's on/off state in the instance, keyed by its selector (code
location, repository, name). Loading the location under the same name as the deployment's
workspace files (`social_recording`) therefore reaches the very states the daemon reads, whether the
location is loaded from a workspace file (the deployment's gRPC code server) or from the module.
Imports Dagster: only the commands that need the instance import this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LOCATION_NAME = "social_recording"
"""The code location's name in every workspace file and in pyproject's `[tool.dg]`."""
MODULE = "social_recording.definitions"


class CodeLocationError(RuntimeError):
    """The code location could not be loaded (its error, or the workspace file's, is in the message)."""


@contextmanager
def remote_repositories(instance: Any, workspace: Path | None = None) -> Iterator[list[Any]]:
    """The code location's repositories (RemoteRepository), loaded from `workspace` (a workspace.yaml)
    or, without one, from the module in a code server of its own."""
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import ModuleTarget, WorkspaceFileTarget

    target: Any = (WorkspaceFileTarget(paths=[str(workspace)]) if workspace is not None
                   else ModuleTarget(MODULE, None, None, LOCATION_NAME))
    with WorkspaceProcessContext(instance, target, code_server_log_level="WARNING") as process_context:
        request = process_context.create_request_context()
        errors = request.code_location_errors()
        if errors:
            raise CodeLocationError("; ".join(e.to_string()[:500] for e in errors))
        repositories = [repo for location in request.code_locations
                        if location.name == LOCATION_NAME
                        for repo in location.get_repositories().values()]
        if not repositories:
            found = ", ".join(location.name for location in request.code_locations) or "none"
            raise CodeLocationError(f"no code location named {LOCATION_NAME!r} (found: {found})")
        yield repositories
