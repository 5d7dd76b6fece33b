"""What a run process carries (docs/architecture.md, "Run memory"): a run on the SQLite store and
SQLite locks loads neither the MongoDB nor the Redis driver, and its recording threads share
MALLOC_ARENAS malloc arenas instead of one each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from social_recording.malloc_arenas import MALLOC_ARENAS
from test_support.sandbox_env import make_env, token

REPO = Path(__file__).resolve().parents[2]
DAY = "2026-11-06"

_RUN = """
import ctypes, json, re, sys, tempfile
from dagster import DagsterInstance
from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.settings import load_settings

result = build_definitions(load_settings()).resolve_job_def("reconcile_job").execute_in_process(
    partition_key=sys.argv[1], instance=DagsterInstance.ephemeral())
loaded = {name.split(".")[0] for name in sys.modules}
libc = ctypes.CDLL(None)
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
with tempfile.NamedTemporaryFile(suffix=".xml") as info:
    out = libc.fopen(info.name.encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    arenas = len(re.findall(r'<heap nr="[0-9]+"', open(info.name).read()))
print(json.dumps({"success": result.success, "drivers": sorted(loaded & {"pymongo", "bson", "redis"}),
                  "arenas": arenas}))
"""


def test_a_run_on_sqlite_loads_no_mongo_or_redis_driver_and_its_threads_share_two_malloc_arenas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pymongo and bson cost a run process about 9 MB and redis about 6 MB; a deployment on SQLite
    (`make dev`) uses neither. A run records on a few dozen threads, each of which glibc would give
    an arena of its own (up to 8 per core), each keeping what its thread freed. The run records its
    window (so the store, the locks, the health report and the run log all ran) without importing
    the drivers, and ends with MALLOC_ARENAS arenas."""
    tokens = [token(f"MemA{i}token", f"{DAY}T10:00:00Z", twitter=f"https://x.com/i/status/71000{i:02d}",
                    telegram=f"https://t.me/memchan{i}", website=f"https://github.com/memorg{i}/repo")
              for i in range(12)]
    env = make_env(tmp_path, monkeypatch, tokens)
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    done = subprocess.run([sys.executable, "-c", _RUN, DAY], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"success": True, "drivers": [], "arenas": MALLOC_ARENAS}
    stored = env.tokens()
    assert len(stored) == 12
    assert {u.url: str(u.status) for u in stored["MemA3token"].social_urls} == {
        "https://x.com/i/status/7100003": "ok", "https://t.me/memchan3": "ok",
        "https://github.com/memorg3/repo": "ok",
    }
