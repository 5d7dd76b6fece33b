"""`make demo-run`: the quickstart without a browser.

Runs `reconcile_job` over every day of the sandbox scenario, then `retry_job` a few times (back-off
shortened to 0 so flaky targets converge) with the walk-through's settings (walkthrough.py,
`SETTINGS`; its spend budget unless the environment sets budgets of its own), and prints the
per-status counts of every token URL and the ledger's paid requests vs distinct paid targets. Each
invocation starts from a fresh data directory (default `.social_recording/demo/`) and records one
token at a time (`--max-workers`: more; the bundled scenario's figures do not depend on it).
`--print-figures` prints only the walk-through's figures block of docs/quickstart.md
(walkthrough.py). The warnings the runs log (the scenario's dropped tracker values, tokens without a
profile, ...) go to `run-warnings.log` in the data directory, counted after the summary;
`--verbose` shows the runs' logs instead, including the one structured line per URL.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from social_recording.dagster_defs.walkthrough import SETTINGS as WALKTHROUGH

WARNINGS_FILE = "run-warnings.log"
RECONCILE_KEYS = ("scanned", "filtered", "already_seen", "targeted", "processed", "failed", "stopped_by")
RETRY_KEYS = ("candidate_urls", "processed", "converged", "locked_out", "remaining")


def _line(out: dict[str, Any], keys: tuple[str, ...]) -> str:
    return " ".join(f"{k}={out[k]}" for k in keys if k in out)


def _kind(message: str) -> str:
    """What a run-log warning is about: its event name, or its first words."""
    if message.startswith("dropped tracker value"):
        return "dropped tracker value"
    first = message.split(" ", 1)[0]
    return first if "_" in first else " ".join(message.split(" ", 3)[:3])


def _keep_warnings(instance: Any, run_ids: list[str], path: Path) -> Counter[str]:
    """Write the runs' warnings (and worse) to `path`, one per line with its run; count them by kind."""
    kinds: Counter[str] = Counter()
    with path.open("w", encoding="utf-8") as out:
        for run_id in run_ids:
            for entry in instance.all_logs(run_id):
                if entry.level < logging.WARNING or not entry.user_message or entry.is_dagster_event:
                    continue
                for line in entry.user_message.split("\n"):
                    kinds[_kind(line)] += 1
                    out.write(f"{entry.job_name} {run_id} {entry.step_key or '-'}: {line}\n")
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m social_recording.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=".social_recording/demo", help="fresh directory for store + ledger")
    parser.add_argument("--no-paid", action="store_true", help="keep paid platforms off (they end skipped_paid)")
    # 4 retries after the backfill make 5 attempts, the default maximum: targets that never recover
    # visibly end `exhausted`, while transient failures converge in the first retries.
    parser.add_argument("--retries", type=int, default=4, help="retry runs after the backfill (default 4)")
    parser.add_argument("--scenario", default=None, help="scenario JSON (default: the bundled demo)")
    parser.add_argument("--verbose", action="store_true", help="print the runs' logs (one line per URL)")
    parser.add_argument("--max-workers", type=int, default=1,
                        help="tokens recorded in parallel by each run (default 1; the figures do not depend on it)")
    parser.add_argument("--print-figures", action="store_true",
                        help="print only the walk-through figures block of docs/quickstart.md")
    args = parser.parse_args(argv)
    if args.retries < 0:
        parser.error(f"--retries must be >= 0, got {args.retries}")
    if args.max_workers < 1:
        parser.error(f"--max-workers must be >= 1, got {args.max_workers}")
    say = (lambda *a, **k: None) if args.print_figures else print

    # The runs' own log (Dagster's console logger) reports what an operator must see, each dropped
    # tracker value and each warning once; without a handler of their own, the engine's Python
    # loggers would repeat every warning on stderr through Python's last-resort handler.
    logging.getLogger("social_recording").addHandler(logging.NullHandler())

    data_dir = Path(args.data_dir).resolve()
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    os.environ["SOCIAL_RECORDING_STORE_URL"] = f"sqlite:///{data_dir / 'store.db'}"
    os.environ.pop("SOCIAL_RECORDING_LOCK_URL", None)  # locks in the same SQLite file
    os.environ["SOCIAL_RECORDING_UPSTREAM"] = "sandbox"
    os.environ["SOCIAL_RECORDING_SANDBOX_LEDGER"] = str(data_dir / "ledger.jsonl")
    os.environ["SOCIAL_RECORDING_ENABLE_PAID"] = "false" if args.no_paid else "true"
    # The walk-through's spend budget, unless this shell sets budgets of its own.
    os.environ.setdefault("SOCIAL_RECORDING_SPEND_BUDGETS", WALKTHROUGH["SOCIAL_RECORDING_SPEND_BUDGETS"])
    if args.scenario:
        os.environ["SOCIAL_RECORDING_SANDBOX_SCENARIO"] = str(Path(args.scenario).resolve())
    else:
        os.environ.pop("SOCIAL_RECORDING_SANDBOX_SCENARIO", None)

    from dagster import DagsterInstance

    from social_recording.dagster_defs.assets import TOKEN_SOCIAL_URLS
    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.dagster_defs.spend import PROVIDER_SPEND
    from social_recording.dagster_defs.walkthrough import BACKFILL, Figures, retry_step
    from social_recording.domain.status import FetchStatus
    from social_recording.sandbox import Ledger, load_scenario
    from social_recording.sandbox.scenario import ScenarioError
    from social_recording.settings import BAD_SETTING_EXIT, load_settings, read_for_command
    from social_recording.store import open_store

    settings = read_for_command(load_settings)
    if settings is None:
        return BAD_SETTING_EXIT
    scenario = read_for_command(lambda: load_scenario(settings.effective_scenario), (ScenarioError,))
    if scenario is None:
        return BAD_SETTING_EXIT
    days = sorted({t.last_transfer_at.date() for t in scenario.tokens})
    if not days:
        print(f"the scenario {settings.effective_scenario} has no tokens", file=sys.stderr)
        return 1
    all_days = [days[0] + timedelta(days=i) for i in range((days[-1] - days[0]).days + 1)]
    defs = build_definitions(settings.model_copy(update={"partition_start": min(days[0], settings.partition_start)}))
    instance = DagsterInstance.ephemeral()
    reconcile = defs.resolve_job_def("reconcile_job")
    retry = defs.resolve_job_def("retry_job")
    # The runs' warnings are expected outcomes of the scenario: kept in a file, counted after the summary.
    quiet: dict[str, Any] = {} if args.verbose else {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    run_ids: list[str] = []

    def observed(result: Any) -> list[dict[str, Any]]:
        return [{k: v.value for k, v in e.asset_observation_data.asset_observation.metadata.items()}
                for e in result.get_asset_observation_events()
                if e.asset_observation_data.asset_observation.asset_key == TOKEN_SOCIAL_URLS]

    def spent(result: Any) -> list[dict[str, Any]]:
        return [{k: v.value for k, v in e.materialization.metadata.items()}
                for e in result.get_asset_materialization_events() if e.materialization.asset_key == PROVIDER_SPEND]

    steps: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]] = []
    spend: list[dict[str, Any]] = []
    backfill: list[dict[str, Any]] = []
    say(f"demo: {len(scenario.tokens)} tokens over {len(all_days)} days, paid calls "
          f"{'off' if args.no_paid else 'on'}, data in {data_dir}")
    for day in all_days:
        result = reconcile.execute_in_process(
            partition_key=day.isoformat(), instance=instance,
            run_config={**quiet, "ops": {"reconcile_window": {"config": {"max_workers": args.max_workers}}}},
        )
        run_ids.append(result.run_id)
        backfill += observed(result)
        spend += spent(result)
        say(f"  reconcile {day}: {_line(result.output_for_node('reconcile_window'), RECONCILE_KEYS)}")
    steps.append((BACKFILL, backfill, list(spend)))
    for i in range(args.retries):
        result = retry.execute_in_process(
            instance=instance,
            run_config={**quiet, "ops": {"retry_urls": {"config": {"min_interval_minutes": 0,
                                                                  "max_workers": args.max_workers}}}},
        )
        run_ids.append(result.run_id)
        spend += spent(result)
        steps.append((retry_step(i + 1), observed(result), list(spend)))
        say(f"  retry #{i + 1}: {_line(result.output_for_node('retry_urls'), RETRY_KEYS)}")

    store = open_store(settings.store_url)
    try:
        counts = store.status_counts()
        by_status = counts.by_status()
        if args.print_figures:
            print(Figures.of_observations(steps, {s.value: n for s, n in by_status.items()}).render())
            return 0
        print(f"\nper-status counts over {counts.urls} token URLs of {counts.tokens} tokens:")
        for status in FetchStatus:
            print(f"  {status.value:<13} {by_status[status]}")
    finally:
        store.close()

    if settings.budgets:  # SOCIAL_RECORDING_SPEND_BUDGETS: what the budgets let through, and held back
        from social_recording.domain.models import utcnow
        from social_recording.status_spend import read_spend, render_spend

        print("\n" + render_spend(read_spend(settings.store_url, settings.effective_lock_url, settings.budgets,
                                             utcnow())))

    ledger = Ledger(settings.effective_ledger)
    entries = ledger.read()
    billable = [e for e in entries if e.paid and not e.subject.startswith("result:")]
    distinct = {(e.service, e.subject) for e in billable}
    print(f"\nledger: {len(entries)} requests; {len(billable)} paid requests (urlscan result polls aside) "
          f"for {len(distinct)} distinct paid targets")
    repeated = ledger.repeated_paid_subjects()
    if repeated:
        statuses: dict[tuple[str, str], list[int]] = {}
        for e in billable:
            statuses.setdefault((e.service, e.subject), []).append(e.status)
        print("  paid targets asked more than once (HTTP status of each answer):")
        for (service, subject), n in repeated.items():
            print(f"    {service} {subject}: {n} requests {statuses[(service, subject)]}")
    if not args.verbose:
        kinds = _keep_warnings(instance, run_ids, data_dir / WARNINGS_FILE)
        if kinds:
            shown = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
            print(f"\nthe runs logged {sum(kinds.values())} warning(s), outcomes the scenario contains on purpose "
                  f"({shown}): {data_dir / WARNINGS_FILE} (--verbose prints every run-log line)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
