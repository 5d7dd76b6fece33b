"""Start a real `redis-server` on a free loopback port for a test session (never the machine's 6379)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_redis() -> Iterator[str]:
    """Yield `redis://127.0.0.1:<port>/0` of a fresh server; stop it afterwards.

    Fails (never skips) when the binary is missing: `.ci/run` installs Debian's redis-server.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server not found on PATH; install Debian's `redis-server` package")
    workdir = tempfile.mkdtemp(prefix="sr-redis-")
    for _ in range(5):
        port = free_port()
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if client.ping():
                    break
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        else:
            proc.kill()
            proc.wait()
            continue
        try:
            yield url
        finally:
            client.close()
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.rmtree(workdir, ignore_errors=True)
        return
    raise RuntimeError("could not start redis-server on a free port after 5 tries")
