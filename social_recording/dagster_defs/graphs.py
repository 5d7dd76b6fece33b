"""The three job nodes users configure: each a graph of stages whose config maps onto the stages.

`retry_urls`, `reconcile_window` and `record_tokens` keep the names and the run config that users,
schedules, sensors and scripts already use (`{"ops": {"retry_urls": {"config": {...}}}}`); their
config mapping hands each stage its part, so the UI shows the stages while the launchpad shows one
config per job. The graph's output is the report's counters.
"""

from typing import Any

from dagster import config_mapping, graph

from social_recording.dagster_defs.config import ReconcileConfig, RecordTokensConfig, RetryConfig
from social_recording.dagster_defs.ops import (
    read_reconcile_window,
    record_live_tokens,
    record_retry_candidates,
    record_window_tokens,
    report_live,
    report_reconcile,
    report_retry,
    select_retry_candidates,
)


@config_mapping
def _retry_stages(config: RetryConfig) -> dict[str, Any]:
    return config.stage_configs()


@config_mapping
def _reconcile_stages(config: ReconcileConfig) -> dict[str, Any]:
    return config.stage_configs()


@config_mapping
def _live_stages(config: RecordTokensConfig) -> dict[str, Any]:
    return config.stage_configs()


@graph(
    config=_retry_stages,
    description="Re-attempts URLs that have not converged: select the due elements, record them, report. "
    "`ok` is never reopened.",
)
def retry_urls() -> Any:
    return report_retry(record_retry_candidates(select_retry_candidates()))


@graph(
    config=_reconcile_stages,
    description="Records the tokens of the partition's UTC day that were never stored: read the day from the "
    "tracker, record its new tokens, report.",
)
def reconcile_window() -> Any:
    return report_reconcile(record_window_tokens(read_reconcile_window()))


@graph(
    config=_live_stages,
    description="Records a batch of freshly traded tokens launched by token_flow_sensor, then reports.",
)
def record_tokens() -> Any:
    return report_live(record_live_tokens())
