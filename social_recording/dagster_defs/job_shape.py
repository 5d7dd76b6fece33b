"""The shape every job module builds, once: a graph of stages that ends in `report`, configured as one
node with the job's own config, and a job whose only node is that graph (or, for housekeeping, its
one op), run in process with the run tags of its kind, and its schedule on UTC (docs/architecture.md,
"Jobs").

Users, schedules and sensors configure a recording job as `{"ops": {<graph>: {"config": {...}}}}`;
the job's config class hands each stage its part (`JobConfig.stage_configs`), so a field is declared
once, on the stage that uses it.

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dagster import (
    Config,
    ConfigMapping,
    DefaultScheduleStatus,
    GraphDefinition,
    JobDefinition,
    OpDefinition,
    PartitionsDefinition,
    RunConfig,
    ScheduleDefinition,
    graph,
    in_process_executor,
    job,
)

from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.stages import RUN_TAGS, report

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition


class JobConfig(Config):
    """A job's user-facing config: the union of its stages' configs."""

    def stage_configs(self) -> dict[str, Any]:
        """Each stage's part, by stage name (`stages.stage_config`)."""
        raise NotImplementedError


def staged_graph(name: str, config: type[JobConfig], stages: Callable[[], Any], description: str) -> GraphDefinition:
    """The graph `name`: the stages `stages()` wires, then `report` on what the last one recorded."""

    def to_stages(values: dict[str, Any]) -> dict[str, Any]:
        return config(**values).stage_configs()

    def compose() -> Any:
        return report(stages())

    mapping = ConfigMapping(config_fn=to_stages, config_schema=config.to_config_schema())
    return graph(name=name, config=mapping, description=description)(compose)


def one_node_job(name: str, node: GraphDefinition | OpDefinition, kind: JobKind, description: str,
                 partitions_def: PartitionsDefinition | None = None) -> JobDefinition:
    """The job `name` running `node` in process, tagged with its kind and the tags of every run."""

    def body() -> None:
        node()

    return job(name=name, tags={**kind.tag, **RUN_TAGS}, executor_def=in_process_executor, description=description,
               partitions_def=partitions_def)(body)


def utc_schedule(name: str, job_def: "JobDefinition | UnresolvedAssetJobDefinition", cron: str,
                 status: DefaultScheduleStatus, description: str, run_config: RunConfig | None = None) -> ScheduleDefinition:
    """A schedule of `job_def` on `cron` in UTC, the clock of the partitions' days and of every cycle
    the status command and the health checks count."""
    return ScheduleDefinition(name=name, job=job_def, cron_schedule=cron, execution_timezone="UTC",
                              default_status=status, run_config=run_config, description=description)
