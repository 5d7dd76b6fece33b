"""A real HTTP/1.1 server on a free local port that answers as a given transport (the sandbox) does for
one origin, so the real network transport (sockets, keep-alive, its connection pool) can be tested and
measured against provider answers. It counts the TCP connections it accepted and the requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

_HOP_HEADERS = frozenset({"connection", "content-length", "transfer-encoding", "content-encoding", "keep-alive"})


@dataclass
class FrontServer:
    base_url: str
    connections: int = 0
    requests: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)


@contextmanager
def serving(transport: httpx.BaseTransport, origin: str) -> Iterator[FrontServer]:
    """Serve `transport`'s answers for `origin` (e.g. "https://api.github.com") on 127.0.0.1."""

    front = FrontServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one connection may carry many requests
        disable_nagle_algorithm = True  # headers and body go out in two writes: no delayed-ACK stall between

        def setup(self) -> None:
            super().setup()
            front.count("connections")

        def _answer(self) -> None:
            front.count("requests")
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = [(k, v) for k, v in self.headers.items() if k.lower() not in ("host", *_HOP_HEADERS)]
            request = httpx.Request(self.command, origin + self.path, headers=headers, content=body)
            response = transport.handle_request(request)
            content = response.read()
            self.send_response(response.status_code)
            for key, value in response.headers.multi_items():
                if key.lower() not in _HOP_HEADERS:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        do_GET = do_POST = do_HEAD = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    front.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="http-front", daemon=True)
    thread.start()
    try:
        yield front
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def main() -> None:
    """`python -m test_support.http_front ORIGIN LEDGER`: serve the sandbox (an empty scenario)
    for ORIGIN in a process of its own, print the base URL, and stop when stdin closes."""
    import sys

    from social_recording.sandbox.ledger import Ledger
    from social_recording.sandbox.scenario import Scenario
    from social_recording.sandbox.transport import SandboxTransport

    origin, ledger = sys.argv[1], sys.argv[2]
    sandbox = SandboxTransport(Scenario.model_validate({"tokens": []}), Ledger(ledger))
    with serving(sandbox, origin) as front:
        print(front.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
