"""P9 — what a provider call costs the client on the real network transport: the process's one connection
pool, shared by every call, against a transport made (and closed) per call, as before (a benchmark, not
a test).

    python bench/p9_connections.py [--urls 200] [--threads 1 4] [--repeat 3]

The real GitHub generator sends on real sockets (httpx's own transport, no stand-in) to a local
HTTP/1.1 server (a process of its own) that answers as the sandbox does for api.github.com. Per URL it prints the calling
thread's CPU time in `generate` (`time.thread_time`: the client's work, the transport's and, per call,
the making of a transport), the wall time, and the TCP connections opened. A transport made per call
loads the CA bundle into a new TLS context (eagerly, even for plain http) and opens a new connection;
a shared one does neither after its first call. On the internet each new connection also costs a TCP
and a TLS handshake, a round trip or more each, which a local server cannot show: the connections
column is what would pay them.

Each row is the median of `--repeat` runs, the two arms alternated.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from _common import REPO, Table, mean, median  # noqa: I001

from social_recording.platforms.base import GenerateContext
from social_recording.platforms.github.generator import GitHubGenerator

ARMS = ("shared transport", "a transport per call")


@contextmanager
def counting_connections() -> Iterator[list[int]]:
    """TCP connections this process opens meanwhile (httpcore's sync backend, whichever pool asks)."""
    import httpcore._backends.sync as backend

    opened = [0]
    lock = threading.Lock()
    original = backend.SyncBackend.connect_tcp

    def connect_tcp(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            opened[0] += 1
        return original(self, *args, **kwargs)

    backend.SyncBackend.connect_tcp = connect_tcp  # type: ignore[method-assign]
    try:
        yield opened
    finally:
        backend.SyncBackend.connect_tcp = original  # type: ignore[method-assign]


def measure(arm: str, base_url: str, n_urls: int, threads: int, run: int) -> tuple[float, float, float]:
    """(CPU ms per URL, wall ms per URL, connections per URL) for `n_urls` distinct repositories."""
    shared = GitHubGenerator("ghp_p9", api_base=base_url)  # no transport: the process's real-network one

    def one(i: int) -> tuple[float, float]:
        started, cpu = time.perf_counter(), time.thread_time()
        if arm == ARMS[0]:
            result = shared.generate(f"https://github.com/p9org{run}x{i}/repo", GenerateContext(token_address="P9"))
        else:  # the code before: each call's client made its own transport and closed it
            with httpx.HTTPTransport(trust_env=False) as own:
                gen = GitHubGenerator("ghp_p9", transport=own, api_base=base_url)
                result = gen.generate(f"https://github.com/p9org{run}x{i}/repo", GenerateContext(token_address="P9"))
        took = (time.thread_time() - cpu) * 1000.0, (time.perf_counter() - started) * 1000.0
        if not result.graph.groups:
            raise SystemExit("P9: a call answered no graph")
        return took

    with counting_connections() as opened, ThreadPoolExecutor(max_workers=threads) as pool:
        took = list(pool.map(one, range(n_urls)))
    return mean([c for c, _ in took]), mean([w for _, w in took]), opened[0] / n_urls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=200)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the row gives their medians")
    args = parser.parse_args(argv)
    if args.urls < 1 or min(args.threads) < 1 or args.repeat < 1:
        parser.error("--urls >= 1, --threads >= 1, --repeat >= 1")
    table = Table("P9", f"the GitHub client per URL on real sockets ({args.urls} URLs, a local HTTP server answering "
                        "as the sandbox)", ["transport", "threads", "CPU ms/URL", "wall ms/URL", "connections/URL"])
    with tempfile.TemporaryDirectory(prefix="bench-p9-") as tmp, subprocess.Popen(
        [sys.executable, "-m", "test_support.http_front", "https://api.github.com",
         str(Path(tmp) / "ledger.jsonl")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
    ) as server:
        assert server.stdout is not None and server.stdin is not None
        base_url = server.stdout.readline().strip()
        if not base_url.startswith("http://"):
            raise SystemExit(f"P9: the local server did not start (said {base_url!r})")
        try:
            measure(ARMS[0], base_url, min(20, args.urls), 1, -1)  # warm up (imports, first TLS context)
            for threads in args.threads:
                runs: dict[str, list[tuple[float, float, float]]] = {arm: [] for arm in ARMS}
                for run in range(args.repeat):
                    for arm in ARMS:
                        runs[arm].append(measure(arm, base_url, args.urls, threads, run * 10 + threads))
                for arm in ARMS:
                    table.add(arm, threads, *(median([r[k] for r in runs[arm]]) for k in range(3)))
        finally:
            server.stdin.close()
    table.notes.append("shared transport: what every client without a transport of its own sends on now (one "
                       "pool per process); a transport per call: the code before (each call's clients made one and "
                       "closed it)")
    table.notes.append("CPU: the calling thread's own CPU time in generate; wall includes the local server's "
                       "answer (a process of its own: at 4 threads its interpreter lock, one answer at a time, "
                       "sets the pace); plain http, so no TLS handshake is in either figure")
    table.notes.append(f"each figure the median of {args.repeat} run(s), the arms alternated")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
