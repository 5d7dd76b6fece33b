"""Settings: defaults, one wrong value per variable named in the error, live-mode
requirements, secrets never printed."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH
from social_recording.settings import Settings, SettingsError, env_var_name, load_settings

VARIABLES = (
    "SOCIAL_RECORDING_STORE_URL", "SOCIAL_RECORDING_LOCK_URL", "SOCIAL_RECORDING_UPSTREAM",
    "SOCIAL_RECORDING_SANDBOX_SCENARIO", "SOCIAL_RECORDING_SANDBOX_LEDGER", "SOCIAL_RECORDING_TRACKER_URL",
    "SOCIAL_RECORDING_TRACKER_API_KEY", "SOCIAL_RECORDING_AF_GROUP_IDS", "SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD",
    "SOCIAL_RECORDING_ENABLE_PAID", "SOCIAL_RECORDING_MAX_ATTEMPTS", "SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR",
    "SOCIAL_RECORDING_ENV", "SOCIAL_RECORDING_PARTITION_START", "SOCIAL_RECORDING_RATE_LIMITS",
    "SOCIAL_RECORDING_LIVE_POLL_SECONDS", "SOCIAL_RECORDING_SPEND_BUDGETS",
    "SOCIAL_RECORDING_RETENTION_DAYS", "SOCIAL_RECORDING_SPOOL_DIR",
    "SOCIAL_RECORDING_BACKOFF_GROWTH", "SOCIAL_RECORDING_BACKOFF_MAX_MINUTES",
    *CATALOGUE.key_variables(),  # the provider keys, one per keyed account of the catalogue
)
SECRET_VARS = ("SOCIAL_RECORDING_TRACKER_API_KEY", *CATALOGUE.key_variables())


@pytest.fixture()
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    return monkeypatch


def test_defaults(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = load_settings()
    db = (tmp_path / "dh" / "social_recording" / "social_recording.db").resolve()
    assert s.store_url == f"sqlite:///{db}"
    assert s.lock_url is None and s.effective_lock_url == s.store_url  # the same SQLite file
    assert s.upstream == "sandbox"
    assert s.sandbox_scenario is None and s.effective_scenario == Path(DEMO_SCENARIO_PATH)
    assert s.sandbox_ledger is None and s.effective_ledger == tmp_path / "dh" / "social_recording" / "sandbox-ledger.jsonl"
    assert s.tracker_url is None and s.tracker_api_key is None and s.af_group_ids == []
    assert s.af_investor_threshold == 3
    assert s.enable_paid is False
    assert s.max_attempts == 5
    assert s.env == "dev"
    assert s.partition_start == date(2026, 11, 1)
    assert s.provider_keys == {}
    assert s.live_poll_seconds == 5  # every loop of Dagster's sensor daemon


def test_default_data_dir_without_dagster_home(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.delenv("DAGSTER_HOME")
    env.chdir(tmp_path)
    assert load_settings().store_url == f"sqlite:///{(tmp_path / '.social_recording' / 'social_recording.db').resolve()}"


def test_values_are_read(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    scenario = tmp_path / "s.json"
    scenario.write_text("{}")
    for name, value in {
        "SOCIAL_RECORDING_STORE_URL": "mongodb://db.internal/social",
        "SOCIAL_RECORDING_LOCK_URL": "redis://redis.internal:6379/2",
        "SOCIAL_RECORDING_UPSTREAM": "live",
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario),
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp_path / "l.jsonl"),
        "SOCIAL_RECORDING_TRACKER_URL": "https://tracker.internal/",
        "SOCIAL_RECORDING_AF_GROUP_IDS": "g1, g2,,g1",
        "SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD": "4",
        "SOCIAL_RECORDING_ENABLE_PAID": "true",
        "SOCIAL_RECORDING_MAX_ATTEMPTS": "7",
        "SOCIAL_RECORDING_ENV": "prod",
        "SOCIAL_RECORDING_PARTITION_START": "2026-01-15",
        "SOCIAL_RECORDING_LIVE_POLL_SECONDS": "30",
        "YOUTUBE_API_KEY": "yt-key",
    }.items():
        env.setenv(name, value)
    s = load_settings()
    assert s.store_url == "mongodb://db.internal/social" and s.effective_lock_url == "redis://redis.internal:6379/2"
    assert s.upstream == "live" and s.tracker_url == "https://tracker.internal" and s.af_group_ids == ["g1", "g2"]
    assert s.sandbox_scenario == scenario and s.effective_ledger == tmp_path / "l.jsonl"
    assert (s.af_investor_threshold, s.enable_paid, s.max_attempts, s.env) == (4, True, 7, "prod")
    assert s.partition_start == date(2026, 1, 15)
    assert s.provider_keys["YOUTUBE_API_KEY"].get_secret_value() == "yt-key"
    assert s.live_poll_seconds == 30


@pytest.mark.parametrize("name, value", [
    ("SOCIAL_RECORDING_STORE_URL", "postgres://db/social"),
    ("SOCIAL_RECORDING_STORE_URL", "mongodb://db.internal"),  # no database name
    ("SOCIAL_RECORDING_LOCK_URL", "memcached://cache:11211"),
    ("SOCIAL_RECORDING_UPSTREAM", "staging"),
    ("SOCIAL_RECORDING_SANDBOX_SCENARIO", "/nonexistent/scenario.json"),
    ("SOCIAL_RECORDING_TRACKER_URL", "tracker.internal"),
    ("SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD", "0"),
    ("SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD", "three"),
    ("SOCIAL_RECORDING_ENABLE_PAID", "maybe"),
    ("SOCIAL_RECORDING_MAX_ATTEMPTS", "0"),
    ("SOCIAL_RECORDING_ENV", "production"),
    ("SOCIAL_RECORDING_PARTITION_START", "yesterday"),
    ("SOCIAL_RECORDING_LIVE_POLL_SECONDS", "4"),  # faster than the daemon's sensor loop
    ("SOCIAL_RECORDING_LIVE_POLL_SECONDS", "3601"),
])
def test_a_wrong_value_names_its_variable(env: pytest.MonkeyPatch, name: str, value: str) -> None:
    env.setenv(name, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert name in str(err.value)
    assert len(str(err.value).splitlines()) == 2  # one problem, one line


@pytest.mark.parametrize("missing, present", [
    (("SOCIAL_RECORDING_TRACKER_URL", "SOCIAL_RECORDING_AF_GROUP_IDS"), {}),
    (("SOCIAL_RECORDING_TRACKER_URL",), {"SOCIAL_RECORDING_AF_GROUP_IDS": "g1"}),
    (("SOCIAL_RECORDING_AF_GROUP_IDS",), {"SOCIAL_RECORDING_TRACKER_URL": "https://tracker.internal"}),
    (("SOCIAL_RECORDING_AF_GROUP_IDS",), {"SOCIAL_RECORDING_TRACKER_URL": "https://tracker.internal",
                                          "SOCIAL_RECORDING_AF_GROUP_IDS": " , "}),
])
def test_live_mode_requires_tracker_url_and_group_ids(env: pytest.MonkeyPatch, missing: tuple[str, ...],
                                                      present: dict[str, str]) -> None:
    env.setenv("SOCIAL_RECORDING_UPSTREAM", "live")
    for k, v in present.items():
        env.setenv(k, v)
    with pytest.raises(SettingsError) as err:
        load_settings()
    message = str(err.value)
    assert "SOCIAL_RECORDING_UPSTREAM=live" in message
    for name in missing:
        assert name in message
    for name in present:
        if name not in missing:
            assert name not in message


def test_sandbox_mode_needs_no_tracker(env: pytest.MonkeyPatch) -> None:
    env.setenv("SOCIAL_RECORDING_UPSTREAM", "sandbox")
    assert load_settings().tracker_url is None


def test_secrets_are_never_printed(env: pytest.MonkeyPatch) -> None:
    for i, name in enumerate(SECRET_VARS):
        env.setenv(name, f"S3cret-{i}")
    env.setenv("SOCIAL_RECORDING_STORE_URL", "mongodb://admin:Pw-S3cret@db.internal/social")
    env.setenv("SOCIAL_RECORDING_LOCK_URL", "redis://:Pw-S3cret@redis.internal:6379/0")
    s = load_settings()
    secrets = [s.tracker_api_key, *s.provider_keys.values()]
    assert len(secrets) == len(SECRET_VARS)
    assert all(secret is not None and secret.get_secret_value().startswith("S3cret-") for secret in secrets)
    shown = repr(s) + str(s) + s.model_dump_json()
    assert "S3cret" not in shown
    assert "admin:***@db.internal" in repr(s)


def test_errors_never_show_secret_values(env: pytest.MonkeyPatch) -> None:
    env.setenv("SOCIAL_RECORDING_STORE_URL", "mongodb://admin:Pw-S3cret@db.internal")  # no database
    env.setenv("SOCIAL_RECORDING_LOCK_URL", "redis://:Pw-S3cret@redis.internal:notaport/0")
    env.setenv("SOCIAL_RECORDING_MAX_ATTEMPTS", "-1")
    with pytest.raises(SettingsError) as err:
        load_settings()
    message = str(err.value)
    for name in ("SOCIAL_RECORDING_STORE_URL", "SOCIAL_RECORDING_LOCK_URL", "SOCIAL_RECORDING_MAX_ATTEMPTS"):
        assert name in message
    assert "S3cret" not in message


def test_env_var_names() -> None:
    assert env_var_name("store_url") == "SOCIAL_RECORDING_STORE_URL"
    assert env_var_name("provider_keys") == ", ".join(CATALOGUE.key_variables())
    for field in set(Settings.model_fields) - {"provider_keys"}:
        assert env_var_name(field) in VARIABLES
    assert set(CATALOGUE.key_variables()) <= set(VARIABLES)


def test_a_mongodb_store_requires_an_explicit_lock_url(env: pytest.MonkeyPatch) -> None:
    """Workers sharing a MongoDB store may sit on several hosts: a local SQLite lock would not
    serialise them, so the lock URL must be named."""
    env.setenv("SOCIAL_RECORDING_STORE_URL", "mongodb://db.internal/social")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "SOCIAL_RECORDING_LOCK_URL" in str(err.value)
    env.setenv("SOCIAL_RECORDING_LOCK_URL", "redis://redis.internal:6379/0")
    assert load_settings().effective_lock_url == "redis://redis.internal:6379/0"


def test_a_tracker_url_with_credentials_is_refused_without_printing_them(env: pytest.MonkeyPatch) -> None:
    env.setenv("SOCIAL_RECORDING_TRACKER_URL", "https://u:SECRETQA@tracker.internal")
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "SOCIAL_RECORDING_TRACKER_URL" in str(err.value) and "SECRETQA" not in str(err.value)


def test_rate_limit_overrides_are_read_and_checked(env: pytest.MonkeyPatch) -> None:
    env.setenv("SOCIAL_RECORDING_RATE_LIMITS", '{"twitterapi": "50/second", "urlscan": "120/minute;1000/hour"}')
    assert load_settings().rate_limits == {"twitterapi": "50/second", "urlscan": "120/minute;1000/hour"}
    env.setenv("SOCIAL_RECORDING_RATE_LIMITS", '{"twitter": "50/second"}')
    with pytest.raises(SettingsError, match="SOCIAL_RECORDING_RATE_LIMITS: rate for unknown service 'twitter'"):
        load_settings()
