"""`python -m social_recording status` on a seeded store: text, `--json`, clear errors, no secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from social_recording.domain.models import TokenProfile, utcnow
from social_recording.domain.status import Cause, FetchStatus
from social_recording.status import main
from social_recording.store import SqliteStore
from social_recording.store.base import ElementWrite, UrlWrite
from social_recording_tests.dagster_defs.sandbox_env import apply_env

REPO = Path(__file__).resolve().parents[1]
HOUR = timedelta(hours=1)

A = "TokStatusA111111111111111111111111111111111"
B = "TokStatusB222222222222222222222222222222222"
GH = "https://github.com/org/repo"
TG = "https://t.me/coinchat"
DISCORD = "https://discord.com/invite/coin"
X1 = "https://x.com/i/status/1"
SECRETS = {"TWITTERAPI_IO_KEY": "twitterapi-key-S3cret", "YOUTUBE_API_KEY": "youtube-key-S3cret"}


def _write(store: SqliteStore, address: str, url: str, platform: str, status: FetchStatus, at: object, *,
           cause: Cause | None = None, detail: str | None = None) -> None:
    assert store.apply_url_write(UrlWrite(
        address=address, url=url, platform=platform, fence=1, now=at,  # type: ignore[arg-type]
        element=ElementWrite(status, 0 if cause else 1, None if cause else at, at, cause, detail),  # type: ignore[arg-type]
    )).result.applied


@pytest.fixture()
def seeded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with a token whose GitHub link failed 20 minutes ago, a telegram link recorded ok, a
    discord invite nobody can read, a paid tweet skipped (paid calls off), and a token never recorded."""
    path = tmp_path / "store.db"
    now = utcnow()
    store = SqliteStore(path)
    try:
        store.create_pending_token(TokenProfile(address=A, urls=[GH, TG, DISCORD, X1]), now=now - 5 * HOUR)
        _write(store, A, GH, "github", FetchStatus.ERROR, now - timedelta(minutes=20),
               detail="HTTP 503 from api.github.com")
        _write(store, A, TG, "telegram", FetchStatus.OK, now - 4 * HOUR)
        _write(store, A, DISCORD, "discord", FetchStatus.UNSUPPORTED, now - 4 * HOUR, cause=Cause.NO_GENERATOR,
               detail="no generator for discord")
        _write(store, A, X1, "x", FetchStatus.SKIPPED_PAID, now - 4 * HOUR, cause=Cause.PAID_DISABLED,
               detail="paid calls are disabled")
        store.create_pending_token(TokenProfile(address=B, urls=["https://github.com/other/repo"]),
                                   now=now - 2 * HOUR)
    finally:
        store.close()
    apply_env(monkeypatch, {"SOCIAL_RECORDING_STORE_URL": f"sqlite:///{path}", **SECRETS})
    return path


def test_json_reports_counts_oldest_and_next_retry(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["store"] == f"sqlite:///{seeded}"
    assert (report["tokens"], report["urls"], report["urls_final"], report["urls_not_converged"]) == (2, 5, 1, 4)
    assert report["by_status"] == {"ok": 1, "not_found": 0, "blocked": 0, "invalid": 0, "exhausted": 0, "error": 1,
                                   "unsupported": 1, "skipped_paid": 1, "pending": 1}
    assert report["by_platform"]["github"] == {**{s.value: 0 for s in FetchStatus}, "error": 1, "pending": 1,
                                               "total": 2}
    # Longest-waiting first: the three recorded 4 h ago, then the token created 2 h ago and never recorded.
    oldest = report["oldest_waiting"]
    assert [(e["token"], e["status"]) for e in oldest] == [
        (A, "unsupported"), (A, "skipped_paid"), (B, "pending"), (A, "error")]
    assert oldest[2]["recorded"] is False and oldest[3]["detail"] == "HTTP 503 from api.github.com"
    assert oldest[0]["cause"] == "no_generator"
    # Due now: the never-recorded token, and the Discord invite recorded before Discord had a
    # generator; paid calls are off, so the skipped tweet is not the retry's.
    retry = report["next_retry"]
    assert retry["due_now"] == 2 and retry["statuses"] == ["error", "pending", "unsupported"]
    assert retry["due_now_by_status"] == {"pending": 1, "unsupported": 1}
    # in words, from the one place that defines the default selection: its narrowing of unsupported
    # elements, and what it leaves while paid calls are off
    assert retry["takes"].startswith("error, pending, unsupported for want of a generator that now exists (")
    assert retry["takes"].endswith("); not skipped_paid: paid calls are off") and "discord" in retry["takes"]
    assert retry["next_schedule_tick"].endswith(":00:00Z")


def test_next_due_when_nothing_is_due_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "store.db"
    now = utcnow()
    store = SqliteStore(path)
    try:
        store.create_pending_token(TokenProfile(address=A, urls=[GH]), now=now - 5 * HOUR)
        _write(store, A, GH, "github", FetchStatus.ERROR, now - timedelta(minutes=20))
    finally:
        store.close()
    apply_env(monkeypatch, {"SOCIAL_RECORDING_STORE_URL": f"sqlite:///{path}"})

    assert main(["--json", "--oldest", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["oldest_waiting"] == [] and report["next_retry"]["due_now"] == 0
    due = report["next_retry"]["next_due_at"]
    expected = (now - timedelta(minutes=20) + HOUR).isoformat(timespec="seconds").replace("+00:00", "Z")
    assert due == expected  # the back-off of the element recorded 20 minutes ago ends in 40
    assert main([]) == 0
    assert "nothing due now; the next element comes due at " + due in capsys.readouterr().out


def test_text_output(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert f"store sqlite:///{seeded}" in out
    assert "2 tokens, 5 token URLs: 1 final, 4 a retry can still change" in out
    lines = out.splitlines()
    assert any(line.split() == ["error", "1", "retryable"] for line in lines)
    assert any(line.split() == ["exhausted", "0", "final"] for line in lines)
    assert any(line.split()[:1] == ["github"] and line.split()[-1] == "2" for line in lines)
    assert any("error" in line and "HTTP 503 from api.github.com" in line and A in line for line in lines)
    assert any(B in line and "never recorded" in line for line in lines)
    assert "2 element(s) due now: 1 pending, 1 unsupported" in out and "retry_schedule's next tick" in out
    assert "  the default selection takes error, pending, unsupported for want of a generator" in out
    assert "S3cret" not in out


def test_a_missing_store_is_reported_not_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nothing-here.db"
    apply_env(monkeypatch, {"SOCIAL_RECORDING_STORE_URL": f"sqlite:///{path}"})
    assert main([]) == 1
    err = capsys.readouterr().err
    assert "SOCIAL_RECORDING_STORE_URL" in err and "no store file" in err
    assert not path.exists()


def _make_dev_store(root: Path) -> Path:
    """A store where `make dev` run from `root` writes it (its instance directory is DEV_HOME)."""
    from social_recording.settings import DEV_HOME, STORE_FILE_NAME, data_dir_of

    path = root / data_dir_of(DEV_HOME) / STORE_FILE_NAME
    path.parent.mkdir(parents=True)
    store = SqliteStore(path)
    try:
        assert store.create_pending_token(TokenProfile(address=A, urls=[GH]), now=utcnow())
    finally:
        store.close()
    return path


def test_without_settings_it_reads_the_store_make_dev_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make dev` runs Dagster with DAGSTER_HOME=.social_recording/dagster_home; a plain `python -m
    social_recording status` from the repository root (no DAGSTER_HOME) finds that store."""
    apply_env(monkeypatch, {})
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    path = _make_dev_store(tmp_path)
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"store sqlite:///{path.resolve()} (the store `make dev` writes")
    assert "1 tokens, 1 token URLs" in out
    assert main(["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tokens"] == 1 and report["store_found"].startswith("the store `make dev` writes")
    assert main(["--url", GH]) == 0 and "the store `make dev` writes" in capsys.readouterr().out
    # a store the settings name is read as named, never replaced by the development one
    named = tmp_path / "named.db"
    monkeypatch.setenv("SOCIAL_RECORDING_STORE_URL", f"sqlite:///{named}")
    assert main([]) == 1
    assert str(named) in capsys.readouterr().err and not named.exists()


def test_without_any_store_it_says_how_to_point_at_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apply_env(monkeypatch, {})
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main([]) == 1
    err = capsys.readouterr().err
    dev_home = tmp_path.resolve() / ".social_recording" / "dagster_home"
    assert f"no store file at {tmp_path.resolve() / '.social_recording' / 'social_recording.db'}" in err
    assert str(dev_home / "social_recording" / "social_recording.db") in err  # where `make dev` writes
    assert f"DAGSTER_HOME=<the Dagster instance directory, e.g. {dev_home}>" in err
    assert "SOCIAL_RECORDING_STORE_URL=sqlite:////absolute/path/" in err and "make status" in err
    assert not (tmp_path / ".social_recording").exists()  # nothing created


def test_the_makefile_runs_dagster_where_the_status_command_looks() -> None:
    from social_recording.settings import DEV_HOME

    makefile = (REPO / "Makefile").read_text()
    assert f"DEV_HOME ?= $(CURDIR)/{DEV_HOME.as_posix()}\n" in makefile
    assert "DAGSTER_HOME=$(DEV_HOME)" in makefile


def test_a_bad_store_url_names_the_variable_without_the_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apply_env(monkeypatch, {"SOCIAL_RECORDING_STORE_URL": "mongodb://admin:Hunter2-S3cret@db.internal:27017"})
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "SOCIAL_RECORDING_STORE_URL" in err and "database name is missing" in err
    assert "Hunter2" not in err


def test_an_unreachable_store_names_the_variable_without_the_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apply_env(monkeypatch, {
        "SOCIAL_RECORDING_STORE_URL": "mongodb://admin:Hunter2-S3cret@127.0.0.1:1/social?serverSelectionTimeoutMS=300",
        "SOCIAL_RECORDING_LOCK_URL": "redis://127.0.0.1:1/0",
    })
    assert main(["--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "SOCIAL_RECORDING_STORE_URL='mongodb://admin:***@127.0.0.1:1/social" in captured.err
    assert "cannot" in captured.err and "Hunter2" not in captured.err


def test_the_module_entry_point(seeded: Path) -> None:
    env = {**os.environ}
    done = subprocess.run([sys.executable, "-m", "social_recording", "status", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tokens"] == 2
    usage = subprocess.run([sys.executable, "-m", "social_recording"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=120)
    assert usage.returncode == 2 and "status" in usage.stderr
    unknown = subprocess.run([sys.executable, "-m", "social_recording", "frobnicate"], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "unknown command 'frobnicate'" in unknown.stderr


def _state(store: SqliteStore, url: str, platform: str, state: object, address: str, at: object) -> None:
    assert store.apply_url_write(UrlWrite(
        address=address, url=url, platform=platform, fence=5, now=at,  # type: ignore[arg-type]
        element=ElementWrite(FetchStatus.ERROR, 1, at, at), state=state,  # type: ignore[arg-type]
    )).result.applied


def test_url_shows_one_urls_state_and_holders(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--url` takes the URL as a user has it (canonicalised like the pipeline does) and shows the
    state machine's view: the answer and its anchor, the failure streak against the budget, the
    calls, an open paid request, and the holders."""
    from dataclasses import replace

    from social_recording.domain.models import PaidRequest
    from social_recording_tests.url_states import state_write

    now = utcnow()
    store = SqliteStore(seeded)
    try:
        req = PaidRequest(provider="urlscan", request_id="scan-7", submitted_at=now - HOUR)
        _state(store, GH, "github", replace(state_write(FetchStatus.ERROR, 3, now - HOUR, streak=2),
                                            answer=FetchStatus.NOT_FOUND, answered_at=now - 3 * 24 * HOUR,
                                            request=req), A, now - HOUR)
    finally:
        store.close()
    assert main(["--url", "HTTPS://www.GitHub.com/org/repo/?utm_source=x", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["url"], report["platform"], report["stands_at"]) == (GH, "github", "not_found")
    state = report["state"]
    assert (state["answer"], state["failure_streak"], state["budget"], state["calls"]) == ("not_found", 2, 5, 3)
    assert state["open_request"]["request_id"] == "scan-7" and state["engine_failures"] == 0
    assert [(h["token"], h["status"]) for h in report["holders"]] == [(A, "error")]

    assert main(["--url", GH]) == 0
    text = capsys.readouterr().out
    assert "a new holder now gets not_found" in text and "failure streak: 2 of 5" in text
    assert "open paid request: urlscan scan-7" in text and "reusable until" in text


def test_url_of_a_url_nothing_was_recorded_for(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "https://example.com/never-seen"]) == 0
    text = capsys.readouterr().out
    assert "nothing recorded for this URL yet" in text and "a new holder now gets pending" in text


def test_url_that_is_not_a_url_is_refused_naming_it(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "not a url"]) == 2
    err = capsys.readouterr().err
    assert "--url 'not a url'" in err
