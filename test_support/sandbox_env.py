"""Helpers for the Dagster-layer tests: small sandbox scenarios written per test, an environment
pointing every resource at a temporary SQLite store and ledger, and readers for run logs/metadata."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dagster import DagsterEventType, DagsterInstance, Definitions, ExecuteInProcessResult

from social_recording.dagster_defs.definitions_builder import build_definitions, build_resources
from social_recording.domain.models import TokenDoc
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.ledger import Ledger, LedgerEntry
from social_recording.settings import Settings, load_settings
from social_recording.store import open_store

ENV_KEYS = (
    "SOCIAL_RECORDING_STORE_URL",
    "SOCIAL_RECORDING_LOCK_URL",
    "SOCIAL_RECORDING_UPSTREAM",
    "SOCIAL_RECORDING_SANDBOX_SCENARIO",
    "SOCIAL_RECORDING_SANDBOX_LEDGER",
    "SOCIAL_RECORDING_TRACKER_URL",
    "SOCIAL_RECORDING_TRACKER_API_KEY",
    "SOCIAL_RECORDING_AF_GROUP_IDS",
    "SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD",
    "SOCIAL_RECORDING_ENABLE_PAID",
    "SOCIAL_RECORDING_MAX_ATTEMPTS",
    "SOCIAL_RECORDING_BACKOFF_GROWTH",
    "SOCIAL_RECORDING_BACKOFF_MAX_MINUTES",
    "SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR",
    "SOCIAL_RECORDING_ENV",
    "SOCIAL_RECORDING_PARTITION_START",
    "SOCIAL_RECORDING_SPEND_BUDGETS",
    *CATALOGUE.key_variables(),  # every provider key the catalogue names
)


def token(
    address: str,
    last_transfer_at: datetime | str,
    *,
    investors: int = 5,
    website: str | None = None,
    twitter: str | None = None,
    telegram: str | None = None,
    discord: str | None = None,
    image: str | None = "https://cdn.example.com/t.png",
) -> dict[str, Any]:
    """One scenario token (tracker view); `first_transfer_at` an hour before the last transfer."""
    last = last_transfer_at if isinstance(last_transfer_at, str) else last_transfer_at.isoformat()
    first_dt = datetime.fromisoformat(last.replace("Z", "+00:00"))
    first = first_dt.replace(hour=0, minute=0, second=0, microsecond=0).isoformat()
    return {
        "address": address,
        "symbol": address[:4].upper(),
        "name": f"{address[:4]} token",
        "image_url": image,
        "investor_count": investors,
        "first_transfer_at": first,
        "last_transfer_at": last,
        "website": website,
        "twitter": twitter,
        "telegram": telegram,
        "discord": discord,
    }


@dataclass
class SandboxEnv:
    """Env for one test: a temporary SQLite store (locks in the same file) and ledger."""

    root: Path
    scenario_path: Path
    store_url: str
    ledger_path: Path

    def settings(self) -> Settings:
        return load_settings()

    def defs(self) -> Definitions:
        return build_definitions(self.settings())

    def resources(self) -> dict[str, Any]:
        return build_resources(self.settings())

    def ledger(self) -> list[LedgerEntry]:
        return Ledger(self.ledger_path).read()

    def tokens(self) -> dict[str, TokenDoc]:
        """Every stored token of the scenario, by address."""
        addresses = [t["address"] for t in json.loads(self.scenario_path.read_text())["tokens"]]
        store = open_store(self.store_url)
        try:
            docs = (store.find_token(a) for a in sorted(store.find_existing_addresses(addresses)))
            return {d.address: d for d in docs if d is not None}
        finally:
            store.close()

    def statuses(self) -> dict[str, dict[str, str]]:
        """address -> {url: status} of every stored token."""
        return {a: {el.url: el.status.value for el in d.social_urls} for a, d in self.tokens().items()}


def job_named(name: str) -> Any:
    """A job of the code location the environment's settings build: what `reconstructable` jobs of
    these tests point at (`build_reconstructable_job(__name__, "job_named", reconstructable_args=...)`)."""
    return build_definitions(load_settings()).resolve_job_def(name)


def write_scenario(path: Path, tokens: list[dict[str, Any]], targets: Mapping[str, str | dict[str, Any]] | None = None,
                   redirects: Mapping[str, str] | None = None) -> Path:
    """A scenario file; a target is an outcome ("ok", "flaky:2", ...) or a whole spec ({"latency_ms": ...})."""
    path.write_text(json.dumps({
        "tokens": tokens,
        "redirects": dict(redirects or {}),
        "targets": {url: {"outcome": spec} if isinstance(spec, str) else dict(spec)
                    for url, spec in (targets or {}).items()},
        "default_latency_ms": 0,
    }, indent=1))
    return path


def apply_env(monkeypatch: Any, env: Mapping[str, str]) -> None:
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def make_env(tmp_path: Path, monkeypatch: Any, tokens: list[dict[str, Any]], targets: Mapping[str, str] | None = None,
             *, paid: bool = True, extra: Mapping[str, str] | None = None) -> SandboxEnv:
    scenario = write_scenario(tmp_path / "scenario.json", tokens, targets)
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    ledger = tmp_path / "ledger.jsonl"
    apply_env(monkeypatch, {
        "SOCIAL_RECORDING_STORE_URL": store_url,
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(ledger),
        "SOCIAL_RECORDING_ENABLE_PAID": "true" if paid else "false",
        "SOCIAL_RECORDING_PARTITION_START": "2026-11-01",
        "DAGSTER_HOME": str(tmp_path / "dagster_home"),
        **(extra or {}),
    })
    (tmp_path / "dagster_home").mkdir(exist_ok=True)
    return SandboxEnv(tmp_path, scenario, store_url, ledger)


def log_lines(instance: DagsterInstance, run_id: str, prefix: str) -> list[str]:
    """Run-log lines starting with `prefix`; a message carrying several lines (the per-URL lines
    are written in batches) counts line by line."""
    return [line for e in instance.all_logs(run_id) for line in e.user_message.split("\n")
            if line.startswith(prefix)]


def output_metadata(result: ExecuteInProcessResult, node: str) -> dict[str, Any]:
    """The metadata attached to the node's final output (what the UI shows on its report step)."""
    found = None
    for event in result.events_for_node(node):
        if event.event_type == DagsterEventType.STEP_OUTPUT:
            found = {k: v.value for k, v in event.step_output_data.metadata.items()}
    if found is None:
        raise AssertionError(f"no output event for {node}")
    return found


def step_metadata(result: ExecuteInProcessResult, step_key: str) -> dict[str, Any]:
    """The output metadata of one stage (`node.stage`)."""
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_OUTPUT and event.step_key == step_key:
            return {k: v.value for k, v in event.step_output_data.metadata.items()}
    raise AssertionError(f"no output event for step {step_key}")

