"""Start a real `redis-server` on a free loopback port for a test session (never the machine's 6379)."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


class RedisProcess:
    """A redis-server of one test that can be stopped and started again on the same port and data
    directory, as a restart or a crash of the production server would (the password, when set, is in
    the server's config file, never on its command line; `include` adds a config file such as
    deploy/redis.conf)."""

    def __init__(self, workdir: Path, *, password: str | None = None, appendonly: bool = True,
                 include: Path | None = None) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server not found on PATH; install Debian's `redis-server` package")
        self.binary = binary
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.password = password
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        lines = [f"include {include}"] if include is not None else []
        lines += [f"port {self.port}", "bind 127.0.0.1", f"dir {workdir}", 'save ""',
                  f"appendonly {'yes' if appendonly else 'no'}", "appendfsync everysec", "protected-mode no"]
        if password is not None:
            lines.append(f'requirepass "{password}"')
        self.config = workdir / "redis.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.config.chmod(0o600)

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password is not None else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, password=self.password, socket_timeout=5, socket_connect_timeout=5)

    def answers(self) -> bool:
        client = self.client()
        try:
            return bool(client.ping())
        except redis.exceptions.RedisError:
            return False
        finally:
            client.close()

    def start(self, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen([self.binary, str(self.config)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start (exit {self.proc.poll()})")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
        """SIGTERM: a clean shutdown (the append-only file is flushed); SIGKILL: a crash."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self, down_s: float, sig: int = signal.SIGTERM) -> float:
        """Stop, stay down `down_s` seconds, start again; returns the seconds it did not answer."""
        stopped = time.monotonic()
        self.stop(sig)
        time.sleep(max(0.0, down_s - (time.monotonic() - stopped)))
        self.start()
        return time.monotonic() - stopped


@contextmanager
def restartable_redis(workdir: Path, **options: object) -> Iterator[RedisProcess]:
    """A started `RedisProcess`, stopped afterwards."""
    server = RedisProcess(workdir, **options)  # type: ignore[arg-type]
    server.start()
    try:
        yield server
    finally:
        server.stop(signal.SIGKILL)
