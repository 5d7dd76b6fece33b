"""`make demo-run` (python -m social_recording.demo): the quickstart for people without a browser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from social_recording import demo
from social_recording.dagster_defs.walkthrough import SETTINGS, Figures
from social_recording.domain.spend import budget_texts, parse_budgets
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import parse_canonical, to_canonical
from social_recording.outbound.retry import FREE_PROVIDER
from social_recording.platforms.base import PROVIDER_OF
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox import load_scenario
from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH, OutcomeKind, Scenario, ScriptedOutcome
from social_recording.store import open_store
from test_support.sandbox_env import ENV_KEYS, token, write_scenario

YT = "https://youtube.com/watch?v=dQw4w9WgXcQ"
GH = "https://github.com/solana-labs/solana"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in ENV_KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))


def test_demo_runs_reconcile_and_retry_and_prints_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write_scenario(
        tmp_path / "s.json",
        [
            token("DemoTokenA1111111111111111111111111111111pump", "2026-11-02T10:00:00Z", website=GH),
            token("DemoTokenB1111111111111111111111111111111pump", "2026-11-03T10:00:00Z", website=YT,
                  discord="https://discord.gg/abc"),
        ],
        targets={YT: "flaky:3"},
    )
    rc = demo.main(["--data-dir", str(tmp_path / "demo"), "--scenario", str(scenario), "--retries", "2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "reconcile 2026-11-02:" in out and "reconcile 2026-11-03:" in out
    assert "retry #2:" in out
    counts = {line.split()[0]: int(line.split()[1]) for line in out.splitlines()
              if line.startswith("  ") and len(line.split()) == 2 and line.split()[1].isdigit()}
    # github and the discord invite ok at once; the flaky video converges on a retry (3 free attempts per call)
    assert counts["ok"] == 3 and counts["unsupported"] == 0 and counts["error"] == 0
    assert "ledger:" in out and "0 paid requests" in out


def test_the_bundled_demo_converges_with_paid_calls_off(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Free targets that fail transiently end ok after a retry; those that never recover end exhausted
    after the default retries; paid platforms are skipped and nothing is paid."""
    data = tmp_path / "demo"
    rc = demo.main(["--data-dir", str(data), "--no-paid"])
    captured = capsys.readouterr()
    out = captured.out
    assert rc == 0 and "paid calls off" in out and "retry #4:" in out
    assert "0 paid requests" in out
    # The scenario's dropped tracker values and tokens without a profile are expected: the summary is
    # printed without them, they are counted after it and kept in a file.
    assert "WARNING" not in captured.err and "dropped tracker value adQ" not in out + captured.err
    assert out.rstrip().splitlines()[-1] == (
        "the runs logged 4 warning(s), outcomes the scenario contains on purpose (2 dropped tracker value, "
        f"2 token_not_recorded): {data / 'run-warnings.log'} (--verbose prints every run-log line)")
    kept = (data / "run-warnings.log").read_text().splitlines()
    assert len(kept) == 4 and sum("dropped tracker value" in line for line in kept) == 2
    store = open_store(f"sqlite:///{data / 'store.db'}")
    try:
        statuses = {c.url: c.status.value for c in store.oldest_elements(list(FetchStatus), 10_000)}
    finally:
        store.close()
    for url in ("https://github.com/retrydao/comeback-repo", "https://t.me/retrydaochat"):
        assert statuses[url] == "ok", url  # flaky:3 (3 free attempts per call): ok at the first retry
    assert statuses["https://youtube.com/watch?v=R3c0v3rV1d0"] == "ok"  # flaky:2: ok at its first call's 3rd attempt
    for url in ("https://github.com/downdev/always-down", "https://t.me/alwaysdownsol",
                "https://youtube.com/watch?v=QuotaV1de0X"):  # error on every call: exhausted after 5 attempts
        assert statuses[url] == "exhausted", url
    assert statuses["https://youtube.com/watch?v=Err0rV1deo1"] == "not_found"
    assert "error" not in statuses.values()
    assert statuses["https://x.com/rugdevsol"] == "skipped_paid"
    assert statuses["https://github.com/ghostdev/vanished-repo"] == "not_found"
    assert statuses["https://t.me/rugprivate"] == "blocked"
    assert statuses["https://discord.com/invite/bonkdog"] == "ok"
    assert statuses["https://discord.com/invite/rugrats"] == "not_found"  # an expired invite
    assert "unsupported" not in statuses.values()


def test_demo_reports_a_broken_scenario_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"tokens": [{"address": 5}]}')
    rc = demo.main(["--data-dir", str(tmp_path / "demo"), "--scenario", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2
    assert str(bad) in err and "tokens[0].address" in err and "Traceback" not in err


def _demo_urls_by_day() -> dict[str, list[str]]:
    """The canonical URLs each demo day's tokens link to, shortlinks followed."""
    scenario = load_scenario(DEMO_SCENARIO_PATH)
    days: dict[str, list[str]] = {}
    for t in scenario.tokens:
        for value in t.social_values().values():
            if not isinstance(value, str):
                continue
            while value in scenario.redirects:
                value = scenario.redirects[value]
            try:
                days.setdefault(t.last_transfer_at.date().isoformat(), []).append(to_canonical(value))
            except ValueError:
                continue  # a value the tracker sends that is not a link
    return days


def test_the_demo_meets_a_quota_or_credit_only_where_no_other_call_of_its_account_shares_the_run() -> None:
    """Why the walk-through's figures do not depend on the order parallel workers take the URLs: a quota
    or credit answer (free or paid) stops the rest of its run's calls to that provider account, so the
    demo puts each such target on a day with no other URL of that account, and no other target of that
    account is still failing after its first call (the retry runs take every failing URL together).
    Fixed-window rate limits (time-dependent) are not in the demo at all."""
    scenario = load_scenario(DEMO_SCENARIO_PATH)
    assert scenario.rate_limits == {}
    paid = {a.name for a in CATALOGUE.accounts() if a.paid}
    quotas = {url: _account(url) for url, spec in scenario.targets.items()
              if spec.outcome.kind is OutcomeKind.CREDIT_EXHAUSTED}
    assert set(quotas.values()) & paid and set(quotas.values()) - paid, "the demo shows a quota and a credit met"
    days = _demo_urls_by_day()
    for url, account in quotas.items():
        day = next(d for d, urls in days.items() if url in urls)
        assert [u for u in days[day] if _account(u) == account] == [url], (url, day)
        assert _still_failing(scenario, account) == [url], url


def test_the_walk_throughs_spend_budget_is_met_by_one_url_alone() -> None:
    """The walk-through's budgets (walkthrough.SETTINGS) are met in the retries, where their account's
    only still-failing target is called alone: which URL the budget holds never depends on the order."""
    paid = frozenset(a.name for a in CATALOGUE.accounts() if a.paid)
    budgets = parse_budgets(budget_texts(SETTINGS["SOCIAL_RECORDING_SPEND_BUDGETS"]), paid)
    assert budgets, "the walk-through shows a spend budget met"
    scenario = load_scenario(DEMO_SCENARIO_PATH)
    for account in budgets:
        assert len(_still_failing(scenario, account)) == 1, account


def _account(url: str) -> str:
    platform = parse_canonical(url).platform
    return PROVIDER_OF.get(platform, platform.value)


def _still_failing(scenario: Scenario, account: str) -> list[str]:
    """The demo's targets of `account` that still fail after their first call."""
    free = account not in {a.name for a in CATALOGUE.accounts() if a.paid}

    def failing(outcome: ScriptedOutcome) -> bool:
        flaky_beyond = outcome.kind is OutcomeKind.FLAKY and outcome.flaky_calls >= (FREE_PROVIDER.attempts if free else 1)
        return flaky_beyond or outcome.kind in (OutcomeKind.ERROR, OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED)

    return sorted(u for u, spec in scenario.targets.items() if _account(u) == account and failing(spec.outcome))


def test_print_figures_prints_the_quickstarts_block_whatever_the_workers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The headless walk-through with four tokens at a time (the doc's block came from one at a time)
    prints the block docs/quickstart.md carries; the UI's own is test_walkthrough.py."""
    rc = demo.main(["--data-dir", str(tmp_path / "demo"), "--print-figures", "--max-workers", "4"])
    out = capsys.readouterr().out
    assert rc == 0
    doc = (Path(__file__).resolve().parents[1] / "docs" / "quickstart.md").read_text(encoding="utf-8")
    assert Figures.parse(out) == Figures.parse(doc), f"replace the quickstart's block with:\n\n{out}"


def test_the_quickstart_states_the_demo_scenarios_size() -> None:
    """"N tokens over D days of <month> <year>": the figure a new user checks the UI's partitions against."""
    tokens = json.loads(DEMO_SCENARIO_PATH.read_text(encoding="utf-8"))["tokens"]
    days = sorted({str(t["last_transfer_at"])[:10] for t in tokens})
    doc = (Path(__file__).resolve().parents[1] / "docs" / "quickstart.md").read_text(encoding="utf-8")
    stated = re.search(r"\((\d+) tokens over (\d+) days of", " ".join(doc.split()))
    assert stated is not None, "docs/quickstart.md no longer says how many tokens over how many days"
    assert (int(stated[1]), int(stated[2])) == (len(tokens), len(days)), (
        f"docs/quickstart.md: write '({len(tokens)} tokens over {len(days)} days of' (demo days {days[0]}..{days[-1]})")
