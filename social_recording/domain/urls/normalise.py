"""Generic normalisation, the same for every host: scheme and host checks, IDNA, ports, percent-
encoding, dot segments, query pairs. Platform rules (one module per platform) work on its output."""

from __future__ import annotations

import encodings.idna
import ipaddress
import re
import unicodedata
from dataclasses import dataclass

from social_recording.domain.platform import Platform
from social_recording.domain.redaction import show
from social_recording.domain.url_rules import Pairs

MAX_INPUT_CHARS = 8192
SHOW_CHARS = 200
"""How much of a rejected value an error message shows."""

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.*)\Z", re.DOTALL)
_PORT_AFTER_HOST_RE = re.compile(r"^\d*(?:[/?#\\]|\Z)")
_LABEL_RE = re.compile(r"^[a-z0-9_\-]{1,63}\Z")
_TLD_RE = re.compile(r"^(?:[a-z]{2,63}|xn--[a-z0-9\-]{1,59})\Z")
_HEX = "0123456789abcdefABCDEF"
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
_PATH_SAFE = _UNRESERVED | _SUB_DELIMS | frozenset(":@/")
_QUERY_SAFE = (_UNRESERVED | _SUB_DELIMS | frozenset(":@/?")) - frozenset("&")
_QUERY_KEY_SAFE = _QUERY_SAFE - frozenset("=")
_IDNA_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


def bad_url(raw: str, why: str) -> ValueError:
    """The error for a value that is not an http(s) URL, naming it (redacted, truncated)."""
    return ValueError(f"not an http(s) URL ({why}): {show(raw, SHOW_CHARS)}")


@dataclass
class Parts:
    host: str
    port: int | None
    segments: list[str]
    pairs: Pairs
    platform: Platform

    def serialise(self) -> str:
        netloc = self.host if self.port is None else f"{self.host}:{self.port}"
        path = "/" + "/".join(self.segments) if self.segments else ""
        query = "&".join(k if v is None else f"{k}={v}" for k, v in self.pairs)
        return f"https://{netloc}{path}" + (f"?{query}" if query else "")


def normalise_component(raw: str, safe: frozenset[str], original: str) -> str:
    """Percent-encoding normal form: %XX uppercased, unreserved characters decoded, reserved ones
    kept as given, everything else (space, non-ASCII, stray %) UTF-8 percent-encoded."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "%":
            if i + 2 < n and raw[i + 1] in _HEX and raw[i + 2] in _HEX:
                code = int(raw[i + 1 : i + 3], 16)
                decoded = chr(code)
                out.append(decoded if decoded in _UNRESERVED else "%" + raw[i + 1 : i + 3].upper())
                i += 3
                continue
            out.append("%25")
        elif ch in safe:
            out.append(ch)
        else:
            try:
                encoded = ch.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise bad_url(original, "invalid character") from exc
            out.append("".join(f"%{b:02X}" for b in encoded))
        i += 1
    return "".join(out)


def split_input(raw: str) -> tuple[str, str]:
    """(authority, rest) of an http(s) URL; raises for any other input, scheme-less ones included.

    Only http(s) URLs. Reading "x.com/foo", "www.foo.com", "//host/x" or "@handle" as a
    URL is an interpretation of a messy tracker value: the entry (TokenProfileReader) does that and
    prefixes `https://` itself; here it would guess silently, deep inside.
    """
    m = _SCHEME_RE.match(raw)
    if m is None:
        raise bad_url(raw, "no http:// or https:// scheme")
    scheme = m.group(1).lower()
    if scheme not in ("http", "https"):
        if "." in scheme and _PORT_AFTER_HOST_RE.match(m.group(2)):
            raise bad_url(raw, "no http:// or https:// scheme")  # "example.com:8080/path": a host, a port
        raise bad_url(raw, f"unsupported scheme {scheme[:20]!r}")
    body = m.group(2).lstrip("/\\")
    end = len(body)
    for sep in "/\\?#":
        pos = body.find(sep)
        if pos != -1:
            end = min(end, pos)
    return body[:end], body[end:]


def parse_host(hostport: str, raw: str) -> tuple[str, int | None]:
    """Lower-cased, IDNA-encoded, validated host and the non-default port."""
    if not hostport:
        raise bad_url(raw, "no host")
    port_text: str | None = None
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1:
            raise bad_url(raw, "bad IPv6 host")
        host, after = hostport[1:close], hostport[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise bad_url(raw, "bad host")
            port_text = after[1:]
        try:
            addr6 = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise bad_url(raw, "bad IPv6 host") from exc
        canonical_host = f"[{addr6.compressed}]"
    else:
        host, colon, port_part = hostport.partition(":")
        if colon:
            port_text = port_part
        canonical_host = _canonical_hostname(host, raw)
    port: int | None = None
    if port_text:
        if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
            raise bad_url(raw, "bad port")
        port = int(port_text)
        if not 0 < port < 65536:
            raise bad_url(raw, "bad port")
        if port in (80, 443):
            port = None
    return canonical_host, port


def _canonical_hostname(host: str, raw: str) -> str:
    host = host.translate(_IDNA_DOTS)
    if host.endswith("."):
        host = host[:-1]
    if not host or any(c.isspace() for c in host) or "%" in host:
        raise bad_url(raw, "bad host")
    if not host.isascii():
        try:
            host = ".".join(_idna_label(label) for label in host.split("."))
        except UnicodeError as exc:
            raise bad_url(raw, "bad international host") from exc
    host = host.lower()
    labels = host.split(".")
    if all(label.isdigit() for label in labels if label):
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError as exc:
            raise bad_url(raw, "bad IPv4 host") from exc
    if len(host) > 253 or len(labels) < 2 or not all(_LABEL_RE.match(label) for label in labels):
        raise bad_url(raw, "bad host")
    if not _TLD_RE.match(labels[-1]):
        raise bad_url(raw, "bad host")
    while host.startswith("www.") and host.count(".") >= 2:
        host = host[4:]
    return host


_IDNA_DEVIATIONS = frozenset("\u00df\u03c2")  # ß, final sigma


def _idna_label(label: str) -> str:
    """One host label to ASCII. The stdlib codec is IDNA 2003, whose nameprep maps the IDNA 2008
    "deviation" characters ß and ς to ss and σ: a different domain from the one browsers (UTS 46,
    non-transitional) visit. Labels holding them are lower-cased, NFKC-normalised and punycoded
    directly, as browsers do; every other label goes through the stdlib ToASCII."""
    if label.isascii():
        return label
    if _IDNA_DEVIATIONS & set(label.lower()):
        mapped = unicodedata.normalize("NFKC", label.lower())
        encoded = "xn--" + mapped.encode("punycode").decode("ascii")
        if len(encoded) > 63:
            raise UnicodeError("label too long")
        return encoded
    return encodings.idna.ToASCII(label).decode("ascii")


def path_segments(path: str, collapse: bool, raw: str) -> list[str]:
    """Normalised segments with dot segments resolved and trailing empties removed."""
    path = normalise_component(path.replace("\\", "/"), _PATH_SAFE, raw)
    stack: list[str] = []
    for seg in path.split("/")[1:] if path.startswith("/") else path.split("/"):
        if seg == ".":
            continue
        if seg == "..":
            if stack:
                stack.pop()
            continue
        if collapse and not seg:
            continue
        stack.append(seg)
    while stack and not stack[-1]:
        stack.pop()
    return stack


def query_pairs(query: str, raw: str) -> Pairs:
    pairs: Pairs = []
    for item in query.split("&"):
        if not item:
            continue
        key, eq, value = item.partition("=")
        norm_key = normalise_component(key, _QUERY_KEY_SAFE, raw)
        pairs.append((norm_key, normalise_component(value, _QUERY_SAFE, raw) if eq else None))
    return pairs
