"""The public readers and the transformer: `to_canonical` (the entry only), `parse_canonical` and
`platform_of` (everyone else), `is_shortlink`."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import unquote_plus

from social_recording.domain.redaction import show
from social_recording.domain.url_rules import param_key, strip_params
from social_recording.domain.urls.model import CanonicalUrl, NonCanonicalUrl, Platform
from social_recording.domain.urls.normalise import (
    MAX_INPUT_CHARS,
    SHOW_CHARS,
    Parts,
    bad_url,
    parse_host,
    path_segments,
    query_pairs,
    split_input,
)
from social_recording.domain.urls.tables import (
    GLOBAL_TRACKING_PARAMS,
    HOST_ALIASES,
    PLATFORM_HOSTS,
    PLATFORM_TRACKING_PARAMS,
    SHORTENER_HOSTS,
)
from social_recording.platforms.catalogue import CATALOGUE


def _shown(value: str) -> str:
    return show(value, SHOW_CHARS)


def _canonicalise(raw: object) -> Parts:
    if not isinstance(raw, str):
        raise ValueError(f"not an http(s) URL (expected a string, got {type(raw).__name__})")
    text = raw.strip()
    if not text:
        raise bad_url(raw, "empty")
    if len(text) > MAX_INPUT_CHARS:
        raise bad_url(raw, f"longer than {MAX_INPUT_CHARS} characters")
    text = text.replace("\t", "").replace("\r", "").replace("\n", "")
    authority, rest = split_input(text)
    hostport = authority.rpartition("@")[2]  # userinfo is stripped (credentials are never stored)
    host, port = parse_host(hostport, raw)

    rest, _, fragment = rest.partition("#")
    path, _, query = rest.partition("?")

    origin = host
    host = HOST_ALIASES.get(host, host)
    platform = PLATFORM_HOSTS.get(host, Platform.WEB)
    rules = CATALOGUE[platform].urls
    if rules.path_in_fragment and path.strip("/\\") == "" and fragment.startswith("!/"):
        path, _, frag_query = fragment[1:].partition("?")
        query = query or frag_query

    segments = path_segments(path, collapse=platform is not Platform.WEB, raw=raw)
    pairs = query_pairs(query, raw)
    pairs = [p for p in pairs if not param_key(p).startswith("utm_") and param_key(p) not in GLOBAL_TRACKING_PARAMS]
    segments, pairs = rules.path(origin, segments, pairs)
    pairs = strip_params(pairs, PLATFORM_TRACKING_PARAMS.get(platform, frozenset()))
    if platform is not Platform.WEB:
        pairs = sorted(pairs, key=lambda p: p[0])
    return Parts(host=host, port=port, segments=segments, pairs=pairs, platform=platform)


def to_canonical(raw: str) -> str:
    """TRANSFORM raw input into the canonical URL string (docs/architecture.md lists the rules).

    Raises ValueError naming the (credential-redacted, truncated) value for anything that is not an
    http(s) URL with a public-looking host. Only the entry may call this.
    """
    return _canonicalise(raw).serialise()


def to_canonical_all(raws: Iterable[str | None]) -> list[str]:
    """TRANSFORM many values that are not ours (links found in a post, a bio, a page): junk and None
    are skipped (a bad outbound link is not an error of the target), duplicates after
    canonicalisation are dropped, first-seen order is kept."""
    out: dict[str, None] = {}
    for raw in raws:
        if raw is None:
            continue
        try:
            out.setdefault(to_canonical(raw), None)
        except ValueError:
            continue
    return list(out)


def parse_canonical(url: str) -> CanonicalUrl:
    """READ a canonical URL into its parts; raise NonCanonicalUrl for anything else, never fix it.

    Exact check: `url` must equal `to_canonical(url)`, so every non-canonical variant (www.,
    upper-case host, tracking parameter, http://, trailing slash, alias host, fragment) is rejected.

    Recording one URL reads it three times (the recorder, the routing, the client): the answers of
    the last PARSED_KEPT URLs are kept (a pure function of the string; the result is frozen), so
    the bookkeeping parses a URL once. A rejection is never kept: it raises again each time.
    """
    if not isinstance(url, str):
        return _parse_canonical(url)
    return _parse_canonical_kept(url)


PARSED_KEPT = 1024
"""How many parsed canonical URLs `parse_canonical` keeps (well under a MB; a run's URLs in flight
fit many times over)."""


@lru_cache(maxsize=PARSED_KEPT)
def _parse_canonical_kept(url: str) -> CanonicalUrl:
    return _parse_canonical(url)


def _parse_canonical(url: str) -> CanonicalUrl:
    try:
        parts = _canonicalise(url)
    except ValueError as exc:
        shown = _shown(url) if isinstance(url, str) else type(url).__name__
        raise NonCanonicalUrl(f"not a canonical URL (not a URL at all): {shown}") from exc
    canonical = parts.serialise()
    if canonical != url:
        raise NonCanonicalUrl(
            f"not a canonical URL: {_shown(url)} (its canonical form is {_shown(canonical)}; "
            "only the entry may transform URLs)"
        )
    path = "/" + "/".join(parts.segments) if parts.segments else ""
    query = tuple((unquote_plus(k), unquote_plus(v or "")) for k, v in parts.pairs)
    return CanonicalUrl(
        url=canonical, host=parts.host, path=path, query=query, platform=parts.platform, port=parts.port
    )


def platform_of(url: str) -> Platform:
    """READ the platform from the host of a canonical URL (any unknown host is `web`).

    Raises NonCanonicalUrl only for a non-canonical input: that is our bug, not a routing miss.
    """
    return parse_canonical(url).platform


def is_shortlink(url: str) -> bool:
    """True when the entry should resolve `url` by redirect before canonicalising it.

    Accepts raw or canonical http(s) input (junk, scheme-less values included, is simply not a
    shortlink). A shortener host with no code
    in the path has nothing to resolve.
    """
    try:
        parts = _canonicalise(url)
    except ValueError:
        return False
    segs = parts.segments
    if not segs:
        return False
    if parts.host in SHORTENER_HOSTS:
        return True
    return CATALOGUE[parts.platform].urls.is_shortlink(parts.host, list(segs))
