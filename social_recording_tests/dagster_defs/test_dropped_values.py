"""Tracker values the profile reader refuses are visible to operators: a warning per value in the
run log and a list in the op's output metadata (nothing disappears silently)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance

from test_support.sandbox_env import log_lines, make_env, output_metadata, token

A = "TokDrop11111111111111111111111111111111111"
B = "TokDrop22222222222222222222222222222222222"


@pytest.mark.parametrize("job_name", ["reconcile_job", "live_tokens_job"])
def test_dropped_values_reach_the_run_log_and_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job_name: str
) -> None:
    env = make_env(tmp_path, monkeypatch, [
        token(A, "2026-11-12T03:00:00Z", website="TBA", twitter="javascript:alert(1)",
              telegram="https://t.me/dropchat"),
        token(B, "2026-11-12T04:00:00Z", website="http://192.168.1.1/admin", discord="https://discord.gg/keep"),
    ])
    job = env.defs().resolve_job_def(job_name)
    instance = DagsterInstance.ephemeral()
    if job_name == "reconcile_job":
        result = job.execute_in_process(partition_key="2026-11-12", instance=instance)
        node = "reconcile_window"
    else:
        config = {"tokens": [{"address": A, "symbol": "A"}, {"address": B, "symbol": "B"}]}
        result = job.execute_in_process(run_config={"ops": {"record_tokens": {"config": config}}},
                                        instance=instance)
        node = "record_tokens"
    assert result.success
    assert result.output_for_node(node)["dropped_values"] == 3
    warnings = log_lines(instance, result.run_id, "dropped tracker value")
    assert len(warnings) == 3
    assert any(A in w and "website='TBA'" in w for w in warnings)
    assert any(A in w and "twitter=" in w for w in warnings)
    assert any(B in w and "192.168.1.1" in w for w in warnings)
    listing = output_metadata(result, node)["dropped_values_list"]
    assert listing.count("\n- ") == 2 and "192.168.1.1" in listing
    # the kept links were recorded
    statuses = env.statuses()
    assert statuses[A] == {"https://t.me/dropchat": "ok"}
    assert statuses[B] == {"https://discord.com/invite/keep": "ok"}
