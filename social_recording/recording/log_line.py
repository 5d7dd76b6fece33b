"""The one formatter of structured log lines: `event key=value key="value with spaces" ...`.

The engine's own log lines and the run-log lines the Dagster layer writes per URL share it, so an
operator greps one format everywhere. A line never spans two lines: a value's line breaks become
spaces (the run log may batch several lines into one message, one line per URL).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["kv", "kv_fields"]


def _value(value: object) -> str:
    text = "" if value is None else str(value)
    text = text.replace("\r", " ").replace("\n", " ")
    if not text or any(c.isspace() for c in text) or '"' in text:
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def kv_fields(event: str | None, fields: Mapping[str, object]) -> str:
    """`event` (a bare first word, when given) then `key=value` per field, in order; empty values
    and values with spaces or quotes are quoted."""
    parts = [event] if event else []
    parts.extend(f"{key}={_value(value)}" for key, value in fields.items())
    return " ".join(parts)


def kv(event: str | None = None, /, **fields: object) -> str:
    """`kv("url_outcome", token=..., url=...)`; without a bare event word, `kv(event="x", ...)`
    writes `event=x ...` like any other field."""
    return kv_fields(event, fields)
