"""`make demo-run` (python -m social_recording.demo): the quickstart for people without a browser."""

from __future__ import annotations

from pathlib import Path

import pytest

from social_recording import demo
from social_recording.domain.status import FetchStatus
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
    for url in ("https://github.com/retrydao/comeback-repo", "https://t.me/retrydaochat",
                "https://youtube.com/watch?v=R3c0v3rV1d0"):  # flaky:3 (3 free attempts per call): ok at the first retry
        assert statuses[url] == "ok", url
    for url in ("https://github.com/downdev/always-down", "https://t.me/alwaysdownsol",
                "https://youtube.com/watch?v=Err0rV1deo1"):  # error on every call: exhausted after 5 attempts
        assert statuses[url] == "exhausted", url
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
