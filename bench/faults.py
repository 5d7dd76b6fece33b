"""Benchmark: paid calls per distinct paid subject under faults (not a test).

    python bench/faults.py [--tokens 12] [--latency-ms 300] [--ttl 1.5]

Each scenario records the same workload twice (a first run, hit by the fault, then a second run
that completes what the first left), with the real generators on the sandbox (its ledger counts
every paid request when it arrives), a SQLite store and Redis locks (a redis-server this script
starts). Tokens share paid URLs in pairs: an X tweet (one call) and a website (an urlscan scan:
submit, then poll). Printed per scenario: paid requests (polls aside), distinct paid subjects, their
ratio — 1.00 means nothing was paid twice —, the most any one subject was paid, and the final
statuses. The no-fault run is the baseline.

Faults:
- pause: the first run is stopped (SIGSTOP) inside its calls for longer than the lease TTL, a second
  run takes the URLs, then the first is resumed (fencing: its late writes are refused; ownership is
  re-checked before each paid request);
- renewal: Redis pauses writes (CLIENT PAUSE) longer than the client's socket timeout while calls are
  in flight (renewals fail, are retried, and paid results are kept);
- restart: Redis is killed and started empty mid-run, and a second run starts right after
  (fencing tokens keep growing across the restart);
- crash-mid-poll: the first run is killed (SIGKILL) after urlscan billed a scan and before its poll
  (the next holder resumes the recorded scan);
- store busy: another connection holds the store file's write lock for 2 s while the first run is
  inside its paid calls (its busy timeout is 0.1 s), once with the engine's write repeats and once
  with them off (the baseline of that fault: paid results meeting the busy store are lost and paid
  again by the second run).
The documented residual window (a pause or restart between a provider receiving a request and our
write) may cost one extra call for a URL caught in it; everything else should print 1.00.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import redis  # noqa: E402

from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger  # noqa: E402
from social_recording.store.sqlite import SqliteStore  # noqa: E402
from test_support.sqlite_faults import hold_write_lock  # noqa: E402

WORKER = Path(__file__).with_name("_fault_worker.py")
GUARD_S = 120.0


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """A redis-server without persistence on a fixed port, which can be killed and started empty."""

    def __init__(self, workdir: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise SystemExit("redis-server not found on PATH")
        self.binary, self.workdir, self.port = binary, workdir, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        _wait(lambda: _pings(client), "redis-server")
        client.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.exceptions.ConnectionError:
        return False


def _wait(cond: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.02)


def _tokens(n: int) -> list[tuple[str, list[str]]]:
    """n tokens; pairs share one paid tweet and one website (urlscan)."""
    return [(f"FaultTok{i:03d}", [f"https://x.com/i/status/{9000 + i // 2}", f"https://fault{i // 2}.example/page"])
            for i in range(n)]


class Scenario:
    def __init__(self, root: Path, name: str, args: argparse.Namespace, lock_url: str) -> None:
        self.dir = root / name
        self.dir.mkdir()
        self.scenario = self.dir / "scenario.json"
        self.scenario.write_text(json.dumps({"tokens": [], "default_latency_ms": args.latency_ms}))
        self.ledger = self.dir / "ledger.jsonl"
        self.store = self.dir / "store.db"
        SqliteStore(self.store).close()
        self.lock_url = lock_url
        self.args = args
        self.tokens = _tokens(args.tokens)

    def spawn(self, *, sleep_scale: float = 0.01, marker: Path | None = None,
              lock_url: str | None = None, **extra: Any) -> subprocess.Popen[str]:
        cfg = {"store_path": str(self.store), "lock_url": lock_url or self.lock_url, "scenario": str(self.scenario),
               "ledger": str(self.ledger), "tokens": self.tokens, "sleep_scale": sleep_scale,
               "url_lock_ttl": self.args.ttl, "token_lock_ttl": self.args.ttl, "url_lock_wait": 30.0,
               "marker": str(marker) if marker else None, "max_workers": 4, **extra}
        return subprocess.Popen([sys.executable, str(WORKER), json.dumps(cfg)], cwd=REPO, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def paid_lines(self) -> int:
        return sum(1 for e in Ledger(self.ledger).read() if e.paid and not e.subject.startswith(POLL_PREFIXES))

    def report(self, name: str) -> dict[str, Any]:
        paid = Counter((e.service, e.subject) for e in Ledger(self.ledger).read()
                       if e.paid and not e.subject.startswith(POLL_PREFIXES))
        store = SqliteStore(self.store)
        try:
            counts = store.status_counts().by_status()
        finally:
            store.close()
        requests, distinct = sum(paid.values()), len(paid)
        return {"fault": name, "paid": requests, "distinct": distinct,
                "ratio": requests / distinct if distinct else 0.0, "max": max(paid.values(), default=0),
                "statuses": {s.value: n for s, n in counts.items() if n}}


def _finish(proc: subprocess.Popen[str]) -> None:
    out, err = proc.communicate(timeout=GUARD_S)
    if proc.returncode not in (0, -signal.SIGKILL):
        raise SystemExit(f"worker failed ({proc.returncode}):\n{err[-3000:]}")


def run_baseline(s: Scenario) -> None:
    _finish(s.spawn())
    _finish(s.spawn())


def run_pause(s: Scenario) -> None:
    first = s.spawn()
    _wait(lambda: s.paid_lines() >= 2, "the first run inside its paid calls")
    os.kill(first.pid, signal.SIGSTOP)
    try:
        time.sleep(s.args.ttl * 2.5)
        _finish(s.spawn())
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _finish(first)
    _finish(s.spawn())


def run_renewal(s: Scenario, admin_url: str) -> None:
    admin = redis.Redis.from_url(admin_url)
    try:
        first = s.spawn(lock_url=s.lock_url + "?socket_timeout=0.2")
        _wait(lambda: s.paid_lines() >= 2, "the first run inside its paid calls")
        admin.execute_command("CLIENT", "PAUSE", str(int(s.args.ttl * 800)), "WRITE")
        _finish(first)
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
    _finish(s.spawn())


def run_restart(s: Scenario, server: RedisServer) -> None:
    first = s.spawn(lock_url=server.url + "?socket_timeout=0.5&socket_connect_timeout=0.5")
    _wait(lambda: s.paid_lines() >= 2, "the first run inside its paid calls")
    server.kill()
    server.start()
    second = s.spawn(lock_url=server.url + "?socket_timeout=0.5&socket_connect_timeout=0.5")
    _finish(first)
    _finish(second)
    _finish(s.spawn(lock_url=server.url))


def run_crash_mid_poll(s: Scenario) -> None:
    marker = s.dir / "inside-a-scan"
    first = s.spawn(sleep_scale=0.5, marker=marker)  # urlscan's first wait: 10 s x 0.5
    _wait(marker.exists, "a billed scan waiting for its poll")
    os.kill(first.pid, signal.SIGKILL)
    _finish(first)
    time.sleep(s.args.ttl * 1.5)
    _finish(s.spawn())


def run_store_busy(s: Scenario, write_retry_s: float) -> None:
    first = s.spawn(store_busy_timeout=0.1, write_retry_s=write_retry_s)
    _wait(lambda: s.paid_lines() >= 2, "the first run inside its paid calls")
    started = threading.Event()
    blocker = threading.Thread(target=hold_write_lock, args=(s.store, 2.0, started))
    blocker.start()
    started.wait(GUARD_S)
    _finish(first)
    blocker.join(GUARD_S)
    _finish(s.spawn())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--latency-ms", type=int, default=300)
    parser.add_argument("--ttl", type=float, default=1.5, help="URL and token lease TTL in seconds")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="sr-faults-"))
    main_server = RedisServer(root)
    main_server.start()
    restart_server = RedisServer(root)
    restart_server.start()
    rows = []
    try:
        for name, fn in (
            ("none (baseline)", lambda s: run_baseline(s)),
            ("pause past TTL", lambda s: run_pause(s)),
            ("renewal failures", lambda s: run_renewal(s, main_server.url)),
            ("lock server restart", lambda s: run_restart(s, restart_server)),
            ("crash mid-poll", lambda s: run_crash_mid_poll(s)),
            ("store busy", lambda s: run_store_busy(s, write_retry_s=60.0)),
            ("store busy, no repeat", lambda s: run_store_busy(s, write_retry_s=0.0)),
        ):
            scenario = Scenario(root, name.replace(" ", "-").replace(",", ""), args, main_server.url)
            client = redis.Redis.from_url(main_server.url)
            client.flushall()
            client.close()
            started = time.monotonic()
            fn(scenario)
            row = scenario.report(name)
            row["wall_s"] = round(time.monotonic() - started, 1)
            rows.append(row)
    finally:
        main_server.kill()
        restart_server.kill()
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.tokens} tokens sharing {args.tokens // 2} paid tweets and {args.tokens // 2} paid scans; "
          f"latency {args.latency_ms} ms; lease TTL {args.ttl} s")
    print(f"{'fault':<24}{'paid':>6}{'distinct':>10}{'paid/distinct':>15}{'max':>5}{'wall_s':>8}  final statuses")
    for r in rows:
        print(f"{r['fault']:<24}{r['paid']:>6}{r['distinct']:>10}{r['ratio']:>15.2f}{r['max']:>5}{r['wall_s']:>8}  "
              f"{r['statuses']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
