"""What a run process carries (docs/architecture.md, "Run memory"): a run on the SQLite store and
SQLite locks loads neither the MongoDB nor the Redis driver, and a recording run keeps per-token
outcomes only for the tokens worth a line, whatever the window's size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from social_recording_tests.dagster_defs.sandbox_env import make_env, token

REPO = Path(__file__).resolve().parents[2]
DAY = "2026-11-06"

_RUN = """
import json, sys
from dagster import DagsterInstance
from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import load_settings

result = build_definitions(load_settings()).resolve_job_def("reconcile_job").execute_in_process(
    partition_key=sys.argv[1], instance=DagsterInstance.ephemeral())
loaded = {name.split(".")[0] for name in sys.modules}
print(json.dumps({"success": result.success, "drivers": sorted(loaded & {"pymongo", "bson", "redis"})}))
"""


def test_a_run_on_the_sqlite_store_loads_neither_the_mongo_nor_the_redis_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pymongo and bson cost a run process about 9 MB and redis about 6 MB; a deployment on SQLite
    (`make dev`) uses neither. The run records its window (so the store, the locks, the health
    report and the run log all ran) without importing them."""
    env = make_env(tmp_path, monkeypatch, [
        token("MemA0token", f"{DAY}T10:00:00Z", twitter="https://x.com/i/status/7100001",
              telegram="https://t.me/memchan", website="https://github.com/memorg/repo"),
    ])
    done = subprocess.run([sys.executable, "-c", _RUN, DAY], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"success": True, "drivers": []}
    assert {u.url: str(u.status) for u in env.tokens()["MemA0token"].social_urls} == {
        "https://x.com/i/status/7100001": "ok", "https://t.me/memchan": "ok",
        "https://github.com/memorg/repo": "ok",
    }
