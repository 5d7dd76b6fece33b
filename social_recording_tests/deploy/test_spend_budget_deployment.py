"""A Neynar (Farcaster) spend budget in the deployment: the rehearsal's services (deploy/entrypoint.sh's
code server, daemon and webserver on a real PostgreSQL, redis-server holding the budget's counters, the
Mongo store on a FerretDB) with SOCIAL_RECORDING_SPEND_BUDGETS set, met where the outcome cannot depend
on timing: the first partition's run spends the budget on two Farcaster casts (both within it, in any
order), the second partition's run, launched after the first ended, finds it used up and holds its
cast `skipped_paid` with no request sent (docs/architecture.md, "Spend budgets").

A test of its own, not a step of the rehearsal: the rehearsal's fault phase pays Neynar after its
ordinary phase, so a budget met there would hold the fault phase's casts.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from social_recording.domain.status import FetchStatus
from social_recording.sandbox.ledger import Ledger
from social_recording.store import open_store
from test_support.rehearsal import (
    GraphQL,
    deployment,
    launch_partition,
    wait_finished,
    wait_location_loaded,
    with_events,
)
from test_support.sandbox_env import token

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server, pytest.mark.heavy]

BUDGET = 2
"""Neynar's paid requests per month: exactly the first partition's casts."""


def test_a_neynar_budget_holds_the_farcaster_cast_past_it(tmp_path: Path) -> None:
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=3), today - timedelta(days=2)]
    spent = [f"https://farcaster.xyz/budget/0xb0d9e7{i:02x}" for i in range(BUDGET)]
    held = "https://farcaster.xyz/budget/0xb0d9e7ff"
    tokens = [token(f"SbA{i}token", f"{days[0]}T{9 + i:02d}:00:00Z", website=url) for i, url in enumerate(spent)]
    tokens.append(token("SbB0token", f"{days[1]}T09:00:00Z", website=held))
    budgets = {"SOCIAL_RECORDING_SPEND_BUDGETS": json.dumps({"neynar": f"{BUDGET}/month"})}
    with deployment(tmp_path, tokens, date(days[0].year, days[0].month, 1), code_env=budgets) as dep:
        gql = GraphQL(dep.cfg.webserver_port)
        try:
            wait_location_loaded(gql, dep)
            finished = []
            for day in days:  # one after the other: the second run starts with the budget used up
                run_id = launch_partition(gql, day.isoformat(), {})
                (run,) = wait_finished(gql, dep, {"runIds": [run_id]}, 1)
                finished.append(with_events(gql, run))
        finally:
            gql.close()
        store = open_store(dep.cfg.store_url)
        try:
            statuses = {c.url: c.status for c in store.oldest_elements(list(FetchStatus), 1000)}
        finally:
            store.close()
        neynar = [e for e in Ledger(dep.cfg.ledger).read() if e.service == "neynar"]

    assert [r.status for r in finished] == ["SUCCESS", "SUCCESS"], [r.messages[-10:] for r in finished]
    assert statuses == {**dict.fromkeys(spent, FetchStatus.OK), held: FetchStatus.SKIPPED_PAID}
    assert len(neynar) == BUDGET and all(e.paid for e in neynar)  # nothing sent past the budget
    lines = [line for line in finished[1].url_lines if f"url={held}" in line]
    assert lines and all("status=skipped_paid" in line and "neynar" in line and "budget" in line
                         for line in lines), finished[1].url_lines
