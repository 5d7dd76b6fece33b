"""Secrets given as NAME_FILE (compose `secrets:`): the settings read them, a bad file stops the
process naming the variable and never the value, and the value stays out of the environment the
process was started with (what `docker inspect` and /proc/PID/environ show)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from social_recording.platforms.catalogue import CATALOGUE
from social_recording.secret_files import SecretFileError, load_secret_files
from social_recording.settings import SettingsError, load_settings, secret_variables
from test_support.sandbox_env import apply_env

TRACKER_KEY = "SOCIAL_RECORDING_TRACKER_API_KEY"
SECRET = "s3cret-Value-7f1c"

_PROBE = """
import json, os, sys
from social_recording.settings import load_settings
s = load_settings()
print(json.dumps({
    "store_url": s.store_url, "lock_url": s.lock_url,
    "tracker_key": s.tracker_api_key and s.tracker_api_key.get_secret_value(),
    "provider_keys": {k: v.get_secret_value() for k, v in s.provider_keys.items()},
    "initial_environ_has_secret": sys.argv[1].encode() in open("/proc/self/environ", "rb").read(),
    "child_sees": os.environ.get("SOCIAL_RECORDING_TRACKER_API_KEY"),
}))
"""


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    names = set(secret_variables())
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("SOCIAL_RECORDING_", "DAGSTER_")) and k not in names
            and k.removesuffix("_FILE") not in names}
    return {**base, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **extra}


def test_every_secret_variable_may_come_from_a_file() -> None:
    names = secret_variables()
    assert {"SOCIAL_RECORDING_STORE_URL", "SOCIAL_RECORDING_LOCK_URL", TRACKER_KEY} <= set(names)
    assert set(CATALOGUE.key_variables()) <= set(names)


def test_a_process_reads_its_secrets_from_files_and_not_from_its_initial_environment(tmp_path: Path) -> None:
    provider = next(iter(CATALOGUE.key_variables()))
    env = _clean_env({
        "SOCIAL_RECORDING_STORE_URL_FILE": _write(tmp_path / "store_url", f"mongodb://app:{SECRET}@db:27017/sr\n"),
        "SOCIAL_RECORDING_LOCK_URL_FILE": _write(tmp_path / "lock_url", f"redis://:{SECRET}@redis:6379/0"),
        f"{TRACKER_KEY}_FILE": _write(tmp_path / "tracker", SECRET + "\n"),
        f"{provider}_FILE": _write(tmp_path / "provider", SECRET),
    })
    done = subprocess.run([sys.executable, "-c", _PROBE, SECRET], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["store_url"] == f"mongodb://app:{SECRET}@db:27017/sr"  # the trailing newline dropped
    assert seen["lock_url"] == f"redis://:{SECRET}@redis:6379/0"
    assert seen["tracker_key"] == SECRET and seen["provider_keys"] == {provider: SECRET}
    # Dagster's EnvVars resolve it (and run processes inherit it), yet the environment the process
    # was started with, all that `docker inspect` or /proc/PID/environ show, never held it.
    assert seen["child_sees"] == SECRET
    assert seen["initial_environ_has_secret"] is False


def test_a_missing_file_stops_the_process_naming_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    apply_env(monkeypatch, {})
    monkeypatch.setenv(f"{TRACKER_KEY}_FILE", str(tmp_path / "nowhere"))
    with pytest.raises(SettingsError, match=f"{TRACKER_KEY}_FILE: no such file .*nowhere"):
        load_settings()


def test_a_directory_is_refused_naming_the_variable(tmp_path: Path) -> None:
    with pytest.raises(SecretFileError, match=f"{TRACKER_KEY}_FILE: .* is a directory"):
        load_secret_files([TRACKER_KEY], {f"{TRACKER_KEY}_FILE": str(tmp_path)})


def test_a_file_that_is_not_text_is_refused_without_its_content(tmp_path: Path) -> None:
    path = tmp_path / "binary"
    path.write_bytes(b"\xff\xfe" + SECRET.encode())
    with pytest.raises(SecretFileError) as caught:
        load_secret_files([TRACKER_KEY], {f"{TRACKER_KEY}_FILE": str(path)})
    assert "not UTF-8" in str(caught.value) and SECRET not in str(caught.value)


def test_the_file_wins_over_a_value_inherited_from_before_a_rotation_and_an_empty_file_is_unset(tmp_path: Path) -> None:
    env = {TRACKER_KEY: "old-value-9", f"{TRACKER_KEY}_FILE": _write(tmp_path / "k", SECRET + "\n")}
    assert load_secret_files([TRACKER_KEY], env) == [TRACKER_KEY] and env[TRACKER_KEY] == SECRET
    empty = {TRACKER_KEY: "old-value-9", f"{TRACKER_KEY}_FILE": _write(tmp_path / "empty", "")}
    assert load_secret_files([TRACKER_KEY], empty) == [] and TRACKER_KEY not in empty
