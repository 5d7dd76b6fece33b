"""`python -m social_recording status` prints today's and this month's spend per paid account against
the budgets (docs/architecture.md, "Spend budgets"); its spend section never imports Dagster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from social_recording.domain.models import TokenProfile, utcnow
from social_recording.domain.spend import Budget, SpendLine, day_key
from social_recording.domain.status import FetchStatus
from social_recording.locks.spend_budget import open_spend_budgets
from social_recording.status import main
from social_recording.store import SqliteStore
from social_recording_tests.store._seed import url_write
from test_support.sandbox_env import apply_env

REPO = Path(__file__).resolve().parents[1]
X1, X2 = "https://x.com/i/status/1", "https://x.com/i/status/2"


@pytest.fixture()
def paid_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "store.db"
    now = utcnow()
    store = SqliteStore(path)
    try:
        store.create_pending_token(TokenProfile(address="A", urls=[X1, X2]), now=now)
        for n, url in enumerate((X1, X2), start=1):
            line = SpendLine("twitterapi", day_key(now), n, n * 0.00015)
            assert store.apply_url_write(replace(url_write("A", url, n, FetchStatus.OK, now), spend=line)).result.applied
    finally:
        store.close()
    apply_env(monkeypatch, {"SOCIAL_RECORDING_STORE_URL": f"sqlite:///{path}",
                            "SOCIAL_RECORDING_SPEND_BUDGETS": json.dumps({"twitterapi": "4/day;100/month"})})
    budgets = open_spend_budgets(f"sqlite:///{path}", {"twitterapi": Budget("twitterapi", 4, 100)})
    for _ in range(3):
        assert budgets.take("twitterapi") is None
    budgets.close()
    return path


def test_status_prints_todays_and_this_months_spend_against_the_budgets(
    paid_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 0
    text = capsys.readouterr().out
    section = text[text.index("spend (UTC day"):]
    row = next(line for line in section.splitlines() if line.strip().startswith("twitterapi "))
    assert row.split()[:3] == ["twitterapi", "3", "$0.0004"] and "4 (75%)" in row and "100 (3%)" in row
    assert "twitterapi: the shared budget counted 3 today, 3 this month" in section
    assert main(["--json"]) == 0
    spend = json.loads(capsys.readouterr().out)["spend"]
    assert spend["accounts"]["twitterapi"]["requests"] == {"day": 3, "month": 3}
    assert spend["accounts"]["twitterapi"]["budget"] == {"day": 4, "month": 100}
    assert spend["accounts"]["twitterapi"]["counted_by_budget"] == {"day": 3, "month": 3}
    assert spend["accounts"]["apify"]["requests"] == {"day": 0, "month": 0}


def test_the_spend_section_never_imports_dagster(paid_store: Path) -> None:
    code = ("import sys; from social_recording.settings import load_settings; "
            "from social_recording.status_spend import read_spend, render_spend; from datetime import datetime, UTC; "
            "s = load_settings(); render_spend(read_spend(s.store_url, s.effective_lock_url, s.budgets, "
            "datetime.now(UTC))); print('dagster' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**os.environ}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
