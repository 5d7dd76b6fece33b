"""The canonical URL's types: the platform a host belongs to, the parsed form, the reader's error."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from social_recording.domain.platform import Platform

__all__ = ["CanonicalUrl", "NonCanonicalUrl", "Platform"]


class NonCanonicalUrl(ValueError):
    """A URL that is not in canonical form reached a reader: a bug upstream of the reader."""


@dataclass(frozen=True)
class CanonicalUrl:
    """A parsed canonical URL (only `parse_canonical` builds these).

    `path` is the raw (percent-encoded) path, "" for a host root; `query` holds the decoded
    (form-decoding: `+` is a space) pairs in URL order; `host` has no port (IPv6 keeps brackets).
    """

    url: str
    host: str
    path: str
    query: tuple[tuple[str, str], ...]
    platform: Platform
    port: int | None = None

    @property
    def segments(self) -> tuple[str, ...]:
        """Decoded path segments ("/a%20b/c" -> ("a b", "c")); empty segments are skipped."""
        return tuple(unquote(s) for s in self.path.split("/") if s)

    @property
    def query_string(self) -> str:
        """The raw query as it appears in the URL ("" when there is none)."""
        _, sep, rest = self.url.partition("?")
        return rest if sep else ""

    @property
    def query_dict(self) -> dict[str, str]:
        """Decoded query as a dict (first value wins for repeated keys)."""
        out: dict[str, str] = {}
        for key, value in self.query:
            out.setdefault(key, value)
        return out

    def param(self, name: str, default: str | None = None) -> str | None:
        """First decoded value of a query parameter, or `default`."""
        for key, value in self.query:
            if key == name:
                return value
        return default

    def params(self, name: str) -> tuple[str, ...]:
        """Every decoded value of a repeated query parameter, in URL order."""
        return tuple(value for key, value in self.query if key == name)
