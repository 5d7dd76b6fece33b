"""docs/quickstart.md's walk-through, followed in the UI: `dg dev` as `make dev` starts it (paid calls on,
as the walk-through says), driven over the webserver's GraphQL API — the backfill of every demo day,
then the four retry runs — and the figures the asset pages show compared with the block the quickstart
carries (read from the doc, so the two cannot drift). Run with the run concurrency `make dev` ships and
with every partition at once and one retry worker: the figures do not depend on the order the workers
take the URLs. Also: `provider_spend` is materialized by the paid backfill with its budget check evaluated, the
health job evaluates every check, and the quickstart names every check the UI shows.

When the product or the demo scenario changes the figures, the failure prints the new block;
`python -m social_recording.demo --print-figures` prints it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from social_recording.dagster_defs.assets import TOKEN_SOCIAL_URLS
from social_recording.dagster_defs.health_report import check_names, check_specs
from social_recording.dagster_defs.spend import (
    LEDGER_MATCHES,
    PROVIDER_SPEND,
    SPEND_CHECK_SPECS,
    WITHIN_BUDGET,
)
from social_recording.dagster_defs.walkthrough import BACKFILL, SETTINGS, Figures, retry_step, start_command
from social_recording.recording.health import COUNTS_MATCH
from social_recording.sandbox import load_scenario
from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH
from test_support.dev_server import DevServer, dev_server
from test_support.rehearsal import M_BACKFILL, M_LAUNCH_RUN, REPO_SELECTOR, TERMINAL, runs

pytestmark = pytest.mark.heavy(minutes=1.5)

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "docs" / "quickstart.md"
RETRIES = 4
RUN_TIMEOUT_S = 900.0
"""Guards only: eight partition runs and a retry run, each a process of its own, on a busy machine."""

Q_ASSET = """query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { __typename ... on AssetNode {
  assetObservations(limit: 1000) { runId timestamp metadataEntries { label ... on IntMetadataEntry { intValue } } }
  assetMaterializations(limit: 100) { runId timestamp metadataEntries { label
    ... on IntMetadataEntry { intValue } } }
  assetChecksOrError { __typename ... on AssetChecks { checks { name } } } } } }"""

Q_CHECK = """query($key: AssetKeyInput!, $name: String!) { assetCheckExecutions(assetKey: $key, checkName: $name,
  limit: 50) { runId status evaluation { severity } } }"""


def _key(key: Any) -> dict[str, list[str]]:
    return {"path": list(key.path)}


def _asset(server: DevServer, key: Any) -> dict[str, Any]:
    node: dict[str, Any] = server.gql(Q_ASSET, key=_key(key))["assetNodeOrError"]
    assert node["__typename"] == "AssetNode", node
    return node


def _numbers(event: dict[str, Any]) -> dict[str, int]:
    return {e["label"]: e["intValue"] for e in event["metadataEntries"] if e.get("intValue") is not None}


def _in_runs(events: list[dict[str, Any]], run_ids: set[str]) -> list[dict[str, int]]:
    return [_numbers(e) for e in sorted(events, key=lambda e: float(e["timestamp"])) if e["runId"] in run_ids]


def _wait_runs(server: DevServer, run_filter: dict[str, Any], count: int) -> list[str]:
    def finished() -> list[str] | None:
        found = runs(server.gql, run_filter)
        return [r.run_id for r in found] if len(found) >= count and all(r.status in TERMINAL for r in found) else None

    run_ids: list[str] = server.wait_until(f"{count} finished run(s) of {run_filter}", finished, RUN_TIMEOUT_S)
    return run_ids


def _launch_retry(server: DevServer, config: dict[str, Any]) -> str:
    launched = server.gql(M_LAUNCH_RUN, params={
        "selector": {**REPO_SELECTOR, "jobName": "retry_job"},
        "runConfigData": {"ops": {"retry_urls": {"config": {"min_interval_minutes": 0, **config}}}},
    })["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id: str = launched["run"]["runId"]
    return run_id


def _evaluated(server: DevServer, key: Any, name: str) -> list[dict[str, Any]]:
    executions: list[dict[str, Any]] = server.gql(Q_CHECK, key=_key(key), name=name)["assetCheckExecutions"]
    return [e for e in executions if e["evaluation"] is not None]


def _all_at_once(text: str) -> str:
    """dagster.yaml with every reconcile partition of the backfill running at once instead of three."""
    pattern = r'(value: "reconcile"\n\s+limit: )\d+'
    assert re.search(pattern, text), "dagster.yaml's reconcile run limit moved; update this test"
    return re.sub(pattern, r"\g<1>8", text)


ORDERS: dict[str, tuple[Callable[[str], str], dict[str, Any]]] = {
    "as-make-dev-ships": (lambda text: text, {}),
    "eight-partitions-at-once-and-retries-one-worker": (_all_at_once, {"max_workers": 1}),
}


@pytest.mark.integration
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_the_walk_through_shows_the_quickstart_figures(tmp_path: Path, order: str) -> None:
    expected = Figures.parse(QUICKSTART.read_text(encoding="utf-8"))
    instance, retry_config = ORDERS[order]
    env = {
        "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{tmp_path / 'store.db'}",
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp_path / "ledger.jsonl"),
        "SOCIAL_RECORDING_ENV": "dev",
        **SETTINGS,  # what the quickstart starts `make dev` with
    }
    days = sorted({t.last_transfer_at.date().isoformat() for t in load_scenario(DEMO_SCENARIO_PATH).tokens})
    with dev_server(tmp_path, env, instance=instance) as server:
        # Backfill: Jobs -> reconcile_job -> Partitions, every demo day, Launch backfill.
        launched = server.gql(M_BACKFILL, params={
            "selector": {"partitionSetName": "reconcile_job_partition_set", "repositorySelector": REPO_SELECTOR},
            "partitionNames": days,
        })["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        backfill_runs = _wait_runs(server, {"tags": [{"key": "dagster/backfill", "value": launched["backfillId"]}]},
                                   len(days))
        spend = _asset(server, PROVIDER_SPEND)
        paid_by = {m["runId"] for m in spend["assetMaterializations"]}
        assert paid_by & set(backfill_runs), "the paid backfill did not materialize provider_spend"
        budget = _evaluated(server, PROVIDER_SPEND, WITHIN_BUDGET)
        assert {e["runId"] for e in budget} & set(backfill_runs), "no budget check evaluated by the backfill"
        hourly_only = {(TOKEN_SOCIAL_URLS, COUNTS_MATCH), (PROVIDER_SPEND, LEDGER_MATCHES)}
        assert all(not _evaluated(server, key, name) for key, name in hourly_only), "the docs say Not Evaluated"

        # The recorded data: health_check_job evaluates every check now; the quickstart names each check
        # the UI shows, and on the walk-through every one passes.
        health = server.gql(M_LAUNCH_RUN, params={"selector": {**REPO_SELECTOR, "jobName": "health_check_job"}})
        assert health["launchRun"]["__typename"] == "LaunchRunSuccess", health
        health_run = health["launchRun"]["run"]["runId"]
        _wait_runs(server, {"runIds": [health_run]}, 1)
        doc = QUICKSTART.read_text(encoding="utf-8")
        for key in (TOKEN_SOCIAL_URLS, PROVIDER_SPEND):
            checks = _asset(server, key)["assetChecksOrError"]
            names = [c["name"] for c in checks["checks"]]
            assert names, checks
            for name in names:
                assert f"`{name}`" in doc, f"docs/quickstart.md does not name the check {name} of {key.path[-1]}"
                latest = _evaluated(server, key, name)
                assert latest and latest[0]["runId"] == health_run and latest[0]["status"] == "SUCCEEDED", latest

        # Retry: retry_job launched four times with min_interval_minutes: 0, one after the other. The
        # backfill's store figures are those the health run observed after it (a partition run's report
        # may read the store a moment before another run's last write).
        steps: list[tuple[str, set[str]]] = [(BACKFILL, {*backfill_runs, health_run})]
        for n in range(1, RETRIES + 1):
            run_id = _launch_retry(server, retry_config)
            _wait_runs(server, {"runIds": [run_id]}, 1)
            steps.append((retry_step(n), {run_id}))

        urls, spend = _asset(server, TOKEN_SOCIAL_URLS), _asset(server, PROVIDER_SPEND)
        shown: list[tuple[str, list[dict[str, int]], list[dict[str, int]]]] = []
        so_far: set[str] = set()
        for name, run_ids in steps:
            so_far |= run_ids
            shown.append((name, _in_runs(urls["assetObservations"], run_ids),
                          _in_runs(spend["assetMaterializations"], so_far)))
        last = _in_runs(urls["assetObservations"], steps[-1][1])[-1]
        actual = Figures.of_observations(shown, {k.removeprefix("urls_"): v for k, v in last.items()})
        assert actual == expected, (
            f"the walk-through in the UI ({order}) shows other figures than docs/quickstart.md; if the change is "
            f"intended, replace the quickstart's block with:\n\n{actual.render()}\n")

def test_the_quickstart_starts_the_walk_through_with_its_settings() -> None:
    command = start_command()
    assert f"\n{command}\n" in QUICKSTART.read_text(encoding="utf-8"), (
        f"docs/quickstart.md's walk-through starts `make dev` otherwise than walkthrough.SETTINGS; its command "
        f"is:\n\n{command}\n")


def test_the_figures_block_reads_back_what_it_renders() -> None:
    figures = Figures.parse(QUICKSTART.read_text(encoding="utf-8"))
    assert Figures.parse(figures.render()) == figures
    assert [s.name for s in figures.steps] == [BACKFILL, *(retry_step(n) for n in range(1, RETRIES + 1))]
    with pytest.raises(ValueError, match="no walk-through figures"):
        Figures.parse("# a doc without the block")



EVERY_RUN, PAYING_RUN, HOURLY = "every recording run, and hourly", "every run that paid, and hourly", "hourly only"


def test_the_quickstart_names_every_check_and_when_it_is_evaluated() -> None:
    """The quickstart's table of checks against the code: the checks a recording run's report stage
    evaluates (check_names), those only the hourly health job adds, and the spend checks (the budget one
    by every run that paid, spend.report_spend; the ledger one hourly)."""
    doc = QUICKSTART.read_text(encoding="utf-8")
    block = doc[doc.index("<!-- health checks: begin -->"): doc.index("<!-- health checks: end -->")]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.splitlines()
            if line.startswith("| `")]
    shown = {re.findall(r"`([^`]+)`", name)[0]: (asset.strip("`"), when) for name, asset, when in rows}
    by_runs = check_names(sandbox=True)
    expected = {name: (TOKEN_SOCIAL_URLS.path[-1], EVERY_RUN if name in by_runs else HOURLY)
                for name in check_names(sandbox=True, hourly=True)}
    expected |= {WITHIN_BUDGET: (PROVIDER_SPEND.path[-1], PAYING_RUN), LEDGER_MATCHES: (PROVIDER_SPEND.path[-1], HOURLY)}
    assert shown == expected
    assert set(expected) == {s.name for s in (*check_specs(sandbox=True), *SPEND_CHECK_SPECS)}
