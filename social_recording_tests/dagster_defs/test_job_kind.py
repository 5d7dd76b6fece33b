"""Job kinds drive the run tag the instance's run queue limits: every limit in the three instance
configurations names a kind, every recording kind has its limit, and every job carries its kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from social_recording.dagster_defs.job_kind import JOB_TAG, RECORDING_KINDS, JobKind

REPO = Path(__file__).resolve().parents[2]


def _limits(path: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load(path.read_text())
    if path.name == "values.yaml":
        queued = doc["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
        return list(queued["tagConcurrencyLimits"])
    return list(doc["concurrency"]["runs"]["tag_concurrency_limits"])


@pytest.mark.parametrize("config", ["dagster.yaml", "deploy/dagster.yaml", "deploy/helm/values.yaml"])
def test_every_run_limit_names_a_job_kind_and_every_recording_kind_is_limited(config: str) -> None:
    limits = _limits(REPO / config)
    assert {lim["key"] for lim in limits} == {JOB_TAG}, config
    named = [lim["value"] for lim in limits]
    assert sorted(set(named) - {k.value for k in JobKind}) == [], f"{config}: a limit names no job kind"
    assert len(named) == len(set(named)), f"{config}: a kind limited twice"
    assert sorted(k.value for k in RECORDING_KINDS - set(map(JobKind, named))) == [], \
        f"{config}: a recording kind without a run limit"
    assert all(isinstance(lim["limit"], int) and lim["limit"] >= 1 for lim in limits), config


def test_every_job_carries_its_kind_as_plain_text() -> None:
    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    defs = build_definitions(load_settings())
    kinds = {}
    for job in defs.resolve_all_job_defs():
        if job.name.startswith("__"):
            continue
        value = job.tags.get(JOB_TAG)
        assert type(value) is str, (job.name, value)
        kinds[job.name] = JobKind(value)
    assert set(kinds.values()) == set(JobKind), kinds
