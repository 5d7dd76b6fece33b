"""Real provider answers as httpx responses: each in its platform's folder
(`social_recording/platforms/<p>/fixtures/`, source and licence in that folder's SOURCES.md), found by
its file name, which is unique across the platforms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

PLATFORMS_DIR = Path(__file__).resolve().parents[2] / "social_recording" / "platforms"


def real_path(name: str) -> Path:
    """The one file named `name` among the platforms' fixtures (an error naming it otherwise)."""
    found = sorted(PLATFORMS_DIR.glob(f"*/fixtures/{name}"))
    if len(found) != 1:
        raise FileNotFoundError(f"real answer {name!r}: {len(found)} files under {PLATFORMS_DIR}/*/fixtures/")
    return found[0]


def real_record(name: str) -> dict[str, Any]:
    """The wrapper of one recorded answer (`exchanges` for a chain)."""
    return dict(json.loads(real_path(name).read_text(encoding="utf-8")))


def real_text(name: str) -> str:
    """A recorded body: the body of a JSON wrapper, or an HTML page as recorded."""
    if name.endswith(".html"):
        return real_path(name).read_text(encoding="utf-8")
    return str(real_record(name)["body_text"])


def real_body(name: str) -> Any:
    return json.loads(real_text(name))


def real_response(name: str, status: int | None = None, exchange: int | None = None) -> httpx.Response:
    """The recorded answer as a response: its status (200 when the record names none, or `status`),
    its recorded headers (hop-by-hop and length headers dropped: the body is served whole)."""
    if name.endswith(".html"):
        return httpx.Response(status or 200, text=real_text(name), headers={"content-type": "text/html; charset=utf-8"})
    record = real_record(name)
    if exchange is not None:
        record = record["exchanges"][exchange]
    headers = {k: v for k, v in (record.get("headers") or {}).items()
               if k.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection")}
    headers.setdefault("content-type", "application/json")
    body = str(record.get("body_text") or "")
    return httpx.Response(status or record.get("status") or 200, content=body.encode("utf-8"), headers=headers)
