"""A restore onto a fresh stack, by the documented steps alone: a backup of the Mongo store taken while
a writer adds tokens is restored into a new FerretDB with authentication on, where only the
administrator exists (as a fresh `mongodb` volume). Without the administrator's credentials the
restore says what to set and loads nothing; with them (as the migrate step has them) it creates the
application's user first, and the restored store holds every dumped collection with the dumped counts,
and per-status counts (its counters, recounted after the load) equal to the dumped elements'."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bson import json_util
from pymongo import MongoClient

from social_recording.domain.models import TokenProfile
from social_recording.store import open_store
from social_recording.store.mongo.schema import TOKEN_URLS
from social_recording_tests.operations.test_backup_restore import cli, record_demo
from test_support.ferretdb_server import running_ferretdb
from test_support.mongo_server import MongoServer

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server, pytest.mark.heavy]

ROOT = ("sr_root", "root-Pw-7d2")
APP = ("sr_app", "app-Pw-3e9")


class Writer(threading.Thread):
    """Adds pending tokens (one Telegram URL each) until stopped, as a run would while the dump goes on."""

    def __init__(self, store_url: str) -> None:
        super().__init__(daemon=True)
        self.store_url = store_url
        self.stop = threading.Event()
        self.written = 0

    def run(self) -> None:
        store = open_store(self.store_url)
        try:
            while not self.stop.is_set():
                address = f"BkW{self.written}token"
                store.create_pending_token(TokenProfile(address=address, urls=[f"https://t.me/bk_w{self.written}"]))
                self.written += 1
        finally:
            store.close()


def dumped_statuses(directory: Path) -> dict[str, int]:
    lines = (directory / "mongodb" / f"{TOKEN_URLS}.jsonl").read_text().splitlines()
    return dict(Counter(str(json_util.loads(line)["status"]) for line in lines if line.strip()))


def test_restore_into_a_fresh_authenticated_mongodb_creates_the_app_user(
        tmp_path: Path, mongo_server: MongoServer, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    with mongo_server.scratch_db() as db:
        env = {"DAGSTER_HOME": str(home), "SOCIAL_RECORDING_STORE_URL": mongo_server.with_db(db),
               "SOCIAL_RECORDING_UPSTREAM": "sandbox", "SOCIAL_RECORDING_ENABLE_PAID": "true",
               "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp_path / "ledger.jsonl"),
               "SOCIAL_RECORDING_LOCK_URL": f"sqlite:///{tmp_path / 'locks.db'}"}
        record_demo(env, home, monkeypatch)
        writer = Writer(env["SOCIAL_RECORDING_STORE_URL"])
        writer.start()
        try:
            done = cli("backup", str(tmp_path / "backup"), env=env)
        finally:
            writer.stop.set()
            writer.join(60)
        assert done.returncode == 0, done.stderr
        assert writer.written > 0
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    dumped = {name: n for name, n in manifest["store"]["counts"].items()}

    root_file = tmp_path / "mongo_root_password"
    root_file.write_text(ROOT[1] + "\n")
    with running_ferretdb(admin=ROOT) as server:
        store_url = f"mongodb://{APP[0]}:{APP[1]}@127.0.0.1:{server.port}/social_recording?authSource=admin"
        fresh = {**env, "SOCIAL_RECORDING_STORE_URL": store_url}

        refused = cli("restore", str(tmp_path / "backup"), env=fresh)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "MONGO_ROOT_USER" in refused.stderr and "MONGO_ROOT_PASSWORD_FILE" in refused.stderr
        assert APP[1] not in refused.stderr and ROOT[1] not in refused.stderr

        restored = cli("restore", str(tmp_path / "backup"),
                       env={**fresh, "MONGO_ROOT_USER": ROOT[0], "MONGO_ROOT_PASSWORD_FILE": str(root_file)})
        assert restored.returncode == 0, restored.stdout + restored.stderr
        assert f"created MongoDB user {APP[0]}" in restored.stdout
        print(restored.stdout, f"({writer.written} tokens written during the backup)")
        assert APP[1] not in restored.stdout + restored.stderr and ROOT[1] not in restored.stdout + restored.stderr

        client: MongoClient[dict[str, Any]] = MongoClient(store_url, serverSelectionTimeoutMS=10_000)
        try:
            database = client.get_database("social_recording")
            held = {name: database[name].count_documents({}) for name in dumped}
        finally:
            client.close()
        assert held == dumped
        store = open_store(store_url)
        try:
            counts = store.status_counts()
        finally:
            store.close()
        by_status = {status.value: n for status, n in counts.by_status().items() if n}
        assert by_status == dumped_statuses(tmp_path / "backup")
        assert counts.tokens == dumped["tokens"]
