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
from test_support.sandbox_env import apply_env

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
    # What the retry job takes next, in its order: never recorded first, then the oldest recording;
    # the error recorded 20 minutes ago comes due after its hour of back-off. Paid calls are off, so
    # the skipped tweet is not the retry's.
    retry = report["next_retry"]
    takes = retry["takes_next"]
    assert [(e["token"], e["status"]) for e in takes] == [(B, "pending"), (A, "unsupported"), (A, "error")]
    assert takes[0]["recorded_at"] is None and takes[2]["detail"] == "HTTP 503 from api.github.com"
    assert takes[0]["due_at"] == takes[1]["due_at"] == report["at"] and takes[2]["due_at"] > report["at"]
    assert report["settings"]["values"]["SOCIAL_RECORDING_ENABLE_PAID"] == {"value": "false", "from": "default"}
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

    assert main(["--json", "--next", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["next_retry"]["takes_next"] == [] and report["next_retry"]["due_now"] == 0
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
    assert any(line.split()[:3] == ["due", "in", "40"] and "error" in line and "HTTP 503 from api.github.com" in line
               and A in line for line in lines) or any(line.split()[:3] == ["due", "in", "39"] for line in lines)
    assert any(line.split()[:3] == ["due", "now", "pending"] and B in line and "never recorded" in line
               for line in lines)
    assert "  SOCIAL_RECORDING_ENABLE_PAID=false  (default)" in lines
    assert "2 element(s) due now: 1 pending, 1 unsupported" in out and "retry_schedule's next tick" in out
    assert ("what the retry job takes next, in its order (the default selection: error, pending, unsupported for "
            "want of a generator") in out
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
    from test_support.url_states import state_write

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
    assert report["calls"] is False and report["next_step"].startswith("the window's answer not_found is reused")
    assert "holders still error take it at their next recording" in report["next_step"]
    state = report["state"]
    assert (state["answer"], state["failure_streak"], state["budget"], state["calls"]) == ("not_found", 2, 5, 3)
    assert state["open_request"]["request_id"] == "scan-7" and state["engine_failures"] == 0
    assert [(h["token"], h["status"]) for h in report["holders"]] == [(A, "error")]

    assert main(["--url", GH]) == 0
    text = capsys.readouterr().out
    assert "a new holder now gets not_found" in text and "failure streak: 2 of 5" in text
    assert "open paid request: urlscan scan-7" in text and "reusable until" in text


def test_url_of_a_url_nothing_was_recorded_for(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "https://github.com/never/seen"]) == 0
    text = capsys.readouterr().out
    assert "nothing recorded for this URL yet" in text and "a new holder now gets pending (its recording calls)" in text
    # a website is paid (urlscan): with paid calls off a new holder is skipped_paid, never "pending"
    assert main(["--url", "https://example.com/never-seen"]) == 0
    text = capsys.readouterr().out
    assert "a new holder now gets skipped_paid without a call" in text
    assert "with SOCIAL_RECORDING_ENABLE_PAID=true where the jobs run, the retry job calls it" in text


def test_url_that_is_not_a_url_is_refused_naming_it(seeded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "not a url"]) == 2
    err = capsys.readouterr().err
    assert "--url 'not a url'" in err


def _held_skipped_paid(path: Path, holders: int) -> None:
    now = utcnow()
    store = SqliteStore(path)
    try:
        for i in range(holders):
            address = f"TokPaid{i}" + "p" * 36
            store.create_pending_token(TokenProfile(address=address, urls=[X1]), now=now - 3 * HOUR)
            _write(store, address, X1, "x", FetchStatus.SKIPPED_PAID, now - 2 * HOUR, cause=Cause.PAID_DISABLED,
                   detail="paid calls are disabled")
    finally:
        store.close()


def test_it_reads_the_settings_make_dev_started_dagster_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`SOCIAL_RECORDING_ENABLE_PAID=true make dev` then a plain `make status`: the command reads the
    settings `make dev` recorded beside its instance (the environment still wins), says where each
    came from, and lists the skipped_paid URLs the retry job now takes."""
    from social_recording.settings import instance_env_file, record_settings

    home = tmp_path / "dagster_home"
    store = home / "social_recording" / "social_recording.db"
    store.parent.mkdir(parents=True)
    _held_skipped_paid(store, 4)
    apply_env(monkeypatch, {"SOCIAL_RECORDING_ENABLE_PAID": "true", "SOCIAL_RECORDING_TRACKER_API_KEY": "tracker-S3cret",
                            "SOCIAL_RECORDING_LOCK_URL": "redis://:lock-S3cret@127.0.0.1:6379/0"})
    recorded = record_settings(instance_env_file(home))  # what `make dev` does before it starts Dagster
    assert recorded == {"SOCIAL_RECORDING_ENABLE_PAID": "true"}  # no secret, no URL with a password
    assert "S3cret" not in instance_env_file(home).read_text()
    apply_env(monkeypatch, {"DAGSTER_HOME": str(home)})  # `make status`: a shell without the variable

    assert main([]) == 0
    out = capsys.readouterr().out
    assert f"settings (the environment, over {instance_env_file(home)} (what `make dev` started Dagster with))" in out
    assert f"  SOCIAL_RECORDING_ENABLE_PAID=true  ({instance_env_file(home)})" in out
    assert "not skipped_paid" not in out and "4 element(s) due now: 4 skipped_paid" in out
    assert sum(1 for line in out.splitlines() if line.split()[:3] == ["due", "now", "skipped_paid"]) == 4
    assert main(["--url", X1]) == 0
    assert "a new holder now gets pending (its recording calls)" in capsys.readouterr().out

    monkeypatch.setenv("SOCIAL_RECORDING_ENABLE_PAID", "false")  # the environment wins over the file
    assert main(["--url", X1, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["settings"]["values"]["SOCIAL_RECORDING_ENABLE_PAID"] == {"value": "false", "from": "environment"}
    assert report["stands_at"] == "skipped_paid" and report["calls"] is False
    assert len(report["holders"]) == 4 and {h["status"] for h in report["holders"]} == {"skipped_paid"}


def test_the_next_step_of_a_url_in_every_state() -> None:
    """Every way `decide` and the recorder's gates can go for a new holder, in words that say what
    happens next."""
    from social_recording.domain.models import PaidRequest, UrlState
    from social_recording.domain.url_machine import Rules
    from social_recording.domain.urls import Platform
    from social_recording.next_step import next_step

    now = utcnow()
    rules = Rules(max_attempts=5, min_interval=HOUR)
    every = frozenset(Platform)

    def state(status: FetchStatus, **fields: object) -> UrlState:
        return UrlState(url=GH, platform="github", status=status, **fields)  # type: ignore[arg-type]

    def step(at: UrlState | None, platform: Platform = Platform.GITHUB, **kw: object) -> tuple[str, bool, str]:
        args: dict = {"enable_paid": False, "paid": False, "usable": every, **kw}
        got = next_step(at, GH, platform, now=now, rules=rules, **args)
        return got.new_holder.value, got.calls, got.action

    assert step(None)[:2] == ("pending", True)
    ok = state(FetchStatus.OK, answer=FetchStatus.OK, answered_at=now - HOUR, source_token=A, attempted_at=now - HOUR,
               attempts=1)
    assert step(ok)[:2] == ("ok", False) and "reused without a call until" in step(ok)[2]
    spent = state(FetchStatus.EXHAUSTED, streak=5, attempts=5, attempted_at=now - HOUR)
    assert step(spent)[:2] == ("exhausted", False) and "statuses: [exhausted]" in step(spent)[2]
    failed = state(FetchStatus.ERROR, streak=1, attempts=1, attempted_at=now - timedelta(minutes=10))
    assert step(failed)[:2] == ("error", False) and "back-off ends at" in step(failed)[2]
    past = state(FetchStatus.ERROR, streak=1, attempts=1, attempted_at=now - 2 * HOUR)
    assert step(past)[:2] == ("pending", True) and "after 1 failed call(s) in a row" in step(past)[2]
    assert step(None, Platform.X, paid=True)[:2] == ("skipped_paid", False)
    assert step(None, Platform.X, paid=True, enable_paid=True)[:2] == ("pending", True)
    assert step(None, usable=frozenset())[:2] == ("unsupported", False)
    opened = past.model_copy(update={"request": PaidRequest(provider="urlscan", request_id="scan-1",
                                                             submitted_at=now - HOUR)})
    resumed = step(opened, paid=True, enable_paid=True)
    assert resumed[:2] == ("pending", True) and "resumes urlscan request scan-1" in resumed[2]


def test_the_command_never_imports_dagster(seeded: Path) -> None:
    """`status` answers at any store size without Dagster's import (most of a second and more spent
    before the store is read): `python -X importtime` names every module a process loaded, and none
    of them is Dagster's. How fast it starts is measured, beside `import dagster`, by
    bench/p12_status_start.py (a benchmark: a test never compares timings)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for args in (["status"], ["status", "--json"], ["status", "--url", GH]):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "social_recording", *args], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        loaded = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
        assert len(loaded) > 100 and not [m for m in loaded if m.split(".")[0] in ("dagster", "dagster_shared")], args
