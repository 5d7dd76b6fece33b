"""The application's MongoDB user follows the store URL's password (store/mongo_app_user.py), run as
the deployment's migrate step runs it: on a FerretDB with authentication on, the user is created,
the application connects; the password is rotated in the URL's secret file, the step runs again, the
new password works and the old one is refused; a third run changes nothing. The roles FerretDB
lacks are checked on the commands sent to a MongoDB."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient
from pymongo.errors import OperationFailure

from social_recording.store.mongo_app_user import AppUser, app_user_from_url, user_command
from test_support.ferretdb_server import running_ferretdb

pytestmark = pytest.mark.integration

ROOT = ("sr_root", "root-Pw-4c1")
REPO = Path(__file__).resolve().parents[2]


def _sync(store_url_file: Path, port: int, root_password_file: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOCIAL_RECORDING_", "MONGO_"))}
    env.update({
        "PYTHONPATH": str(REPO), "SOCIAL_RECORDING_STORE_URL_FILE": str(store_url_file),
        "MONGO_ROOT_USER": ROOT[0], "MONGO_ROOT_PASSWORD_FILE": str(root_password_file),
        "MONGO_APP_DATABASES": "social_recording_dryrun",
    })
    return subprocess.run([sys.executable, "-m", "social_recording.store.mongo_app_user"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _can_write(url: str) -> bool:
    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        client.get_default_database()["probe"].insert_one({"ok": 1})
        return True
    except OperationFailure:
        return False
    finally:
        client.close()


def test_the_app_users_password_follows_the_store_urls_secret(tmp_path: Path) -> None:
    root_file = tmp_path / "mongo_root_password"
    root_file.write_text(ROOT[1] + "\n")
    url_file = tmp_path / "store_url"
    with running_ferretdb(admin=ROOT) as server:
        old = f"mongodb://sr_app:first-Pw-1@127.0.0.1:{server.port}/social_recording?authSource=admin"
        new = old.replace("first-Pw-1", "second-Pw-2")
        url_file.write_text(old + "\n")
        done = _sync(url_file, server.port, root_file)
        assert done.returncode == 0, done.stderr
        assert "created MongoDB user sr_app" in done.stdout
        assert _can_write(old)

        url_file.write_text(new + "\n")  # the rotation: a new password in the secret
        done = _sync(url_file, server.port, root_file)
        assert done.returncode == 0 and "updated MongoDB user sr_app" in done.stdout, done.stderr
        assert _can_write(new)
        assert not _can_write(old)

        again = _sync(url_file, server.port, root_file)  # idempotent
        assert again.returncode == 0 and "updated" in again.stdout and _can_write(new)
        for out in (done.stdout + done.stderr, again.stdout + again.stderr):
            assert "second-Pw-2" not in out and ROOT[1] not in out


def test_a_wrong_root_password_fails_without_showing_it(tmp_path: Path) -> None:
    root_file = tmp_path / "mongo_root_password"
    root_file.write_text("wrong-Root-Pw")
    url_file = tmp_path / "store_url"
    with running_ferretdb(admin=ROOT) as server:
        url_file.write_text(f"mongodb://sr_app:app-Pw-3@127.0.0.1:{server.port}/social_recording?authSource=admin")
        done = _sync(url_file, server.port, root_file)
    assert done.returncode != 0
    assert "wrong-Root-Pw" not in done.stderr and "app-Pw-3" not in done.stderr


def test_the_commands_give_readwrite_on_the_store_and_the_dry_run_only() -> None:
    user = app_user_from_url("mongodb://sr_app:pw%2Fx@mongodb:27017/social_recording?authSource=admin",
                             "social_recording_dryrun social_recording")
    assert user == AppUser("sr_app", "pw/x", ("social_recording", "social_recording_dryrun"))
    assert "pw/x" not in repr(user)
    roles = [{"role": "readWrite", "db": "social_recording"}, {"role": "readWrite", "db": "social_recording_dryrun"}]
    assert user_command(user, exists=False) == {"createUser": "sr_app", "pwd": "pw/x", "roles": roles}
    assert user_command(user, exists=True) == {"updateUser": "sr_app", "pwd": "pw/x", "roles": roles}
    assert user_command(user, exists=True, roles_supported=False) == {"updateUser": "sr_app", "pwd": "pw/x",
                                                                       "roles": []}


@pytest.mark.parametrize(("url", "names"), [
    ("mongodb://mongodb:27017/social_recording", "no user and password"),
    ("mongodb://u:p@mongodb:27017/", "no database"),
])
def test_a_store_url_without_credentials_or_database_is_refused_naming_the_variable(url: str, names: str) -> None:
    with pytest.raises(ValueError, match=f"SOCIAL_RECORDING_STORE_URL names {names}"):
        app_user_from_url(url)
