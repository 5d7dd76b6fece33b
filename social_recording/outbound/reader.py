"""The one size-capped body reader.

Why a cap on every body: a provider or tracker answer larger than anything real is a bug or an attack,
and reading it whole would let one response exhaust a worker's memory. The declared Content-Length is
refused before reading; a body without one (chunked) is counted while it streams and abandoned at
the first byte over the cap.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx


class ResponseTooLarge(Exception):
    """The body is larger than the cap. `declared` is the Content-Length when that decided it."""

    def __init__(self, max_bytes: int, declared: int | None = None) -> None:
        shown = f" (Content-Length {declared})" if declared is not None else ""
        super().__init__(f"larger than {max_bytes} bytes{shown}")
        self.max_bytes = max_bytes
        self.declared = declared


def read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The whole (decoded) body of a streamed `response`, or ResponseTooLarge once it exceeds
    `max_bytes`. Transport errors while reading propagate as httpx raises them."""
    return b"".join(iter_capped(response, max_bytes))


def iter_capped(response: httpx.Response, max_bytes: int) -> Iterator[bytes]:
    """The (decoded) body of a streamed `response` chunk by chunk, for a reader that parses as it
    goes and keeps only what it needs; ResponseTooLarge once it exceeds `max_bytes` (a declared
    Content-Length over the cap before anything is read)."""
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ResponseTooLarge(max_bytes, int(declared))
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise ResponseTooLarge(max_bytes)
        yield chunk
