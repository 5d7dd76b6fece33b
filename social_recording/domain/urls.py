"""Canonical URLs: transform only at the entry, read everywhere else (seed 003, DESIGN §3).

Two kinds of function, never mixed (seed 003: one `normalizeUrl()` that did both let non-canonical
URLs be "fixed" silently deep inside the pipeline, so nobody saw which path broke the rule):

* `to_canonical(raw)` TRANSFORMS. Only the entry (TokenProfileReader, generators' outbound links,
  the shortlink resolver's caller) may call it.
* `parse_canonical(url)` / `platform_of(url)` READ. They raise `NonCanonicalUrl` for anything that
  `to_canonical` would change, and never fix it.

The canonical form (every rule is idempotent: `to_canonical(to_canonical(x)) == to_canonical(x)`):

Generic rules, every host
  - Input is stripped of surrounding whitespace; ASCII tab/CR/LF anywhere are removed (as browsers
    do); other control characters are percent-encoded in the path and query, and rejected in the host.
  - Only http(s) (DESIGN §12): the value must carry an `http:`/`https:` scheme (any case; browsers'
    `https:\\host` and `https:host` spellings included). Scheme-less values ("x.com/foo",
    "www.example.com", "//host/x", "@handle") raise like any other junk ("none", "TBA", "-", "N/A",
    "javascript:", "mailto:", "ftp://", "tg://"): `ValueError` naming the (redacted, truncated)
    value. Reading a messy tracker value as a URL is the entry's job (TokenProfileReader prefixes
    `https://` itself), never a silent guess here.
  - The host must be public-looking: at least two labels and an alphabetic TLD (or an IP literal).
    "https://localhost" and "https://tba" are rejected as junk.
  - Userinfo (`user:pass@`) is STRIPPED, not rejected: the target is the host, and credentials must
    never be stored. ("name@host.tld" has no scheme: rejected like every scheme-less value.)
  - Scheme is always `https`; host lower-cased, IDNA (stdlib codec, IDNA 2003) to punycode, trailing
    dot removed, every leading `www.` dropped; default ports :443 and :80 dropped. (ß and ς are
    kept, as browsers do, not mapped to ss/σ as the IDNA 2003 codec would: see `_idna_label`.)
  - Fragment dropped (except X's old `#!/path` form, which carries the path).
  - Path: percent-encoding normalised (uppercase hex, unreserved characters decoded, reserved ones
    kept encoded, anything else UTF-8 percent-encoded), dot segments resolved, trailing slashes
    dropped (a host root is `https://host`, no slash). Duplicate slashes are collapsed on platform
    hosts only: on an arbitrary site `//` can be meaningful (web.archive.org/web/*/https://...).
  - Query: empty pairs dropped; tracking parameters removed (GLOBAL_TRACKING_PARAMS, `utm_*`,
    matched case-insensitively); unknown parameters kept (seed 003: a miss costs a call, a wrong
    strip merges different targets). Order: kept as given on web hosts (sites may care), sorted by
    key (stable) on platform hosts so equal targets give equal strings.

Platform hosts (HOST_ALIASES, one row per alias, folded to the canonical host of the service; `m.`/
`mobile.` are removed only through this table, never on an arbitrary site where `m.` may be another
site): see the `_rules_*` functions for the path rules of each platform; in short:
  - x: ONE form per tweet, `x.com/i/status/<id>`: `/<any handle>/status/<id>` (X serves a tweet
    under any handle; the id is the identity, PLATFORMS.md), `/statuses/<id>`, `/i/web/status/<id>`,
    on x.com and every alias/mirror host. View suffixes of a tweet (`/photo/N`, `/video/N`,
    `/analytics`, ...) are dropped. Profiles: `x.com/<handle>`, lower-cased, a leading `@` stripped
    (`x.com/@Handle`), tabs (`/media`, `/with_replies`, ...) dropped: the target is the account.
  - youtube: `youtu.be/ID`, `/embed/ID`, `/shorts/ID`, `/live/ID`, `/v/ID`, `/e/ID` ->
    `youtube.com/watch?v=ID` (same video object); `/embed/videoseries?list=` -> `/playlist?list=`;
    `@handle` lower-cased; channel tabs (`/videos`, `/about`, ...) dropped.
  - instagram: ONE form per media, `instagram.com/p/<code>`: `/reel/<code>`, `/reels/<code>`,
    `/tv/<code>`, `/<user>/p|reel|tv/<code>` and `/.../<code>/embed` fold to it (instagram.com/p/
    serves reels and IGTV too; the kind comes from the API's `productType`); username lower-cased.
  - reddit: ONE form per post, `reddit.com/comments/<id>`: `/r/<sub>/comments/<id>[/<slug>]`,
    `/user/<name>/comments/<id>/...`, `/gallery/<id>` fold to it (the post id is the identity; the
    subreddit comes from the API), and so do comment permalinks (`.../comments/<id>/<slug>/<cid>`,
    `.../comment/<cid>`): we record the post, not the comment (REDDIT_POST_VIEW_PARAMS such as
    `?context=3` go with them). `/u/` -> `/user/`, subreddit and user names lower-cased. `redd.it`
    and `/r/<sub>/s/<code>` share links stay (resolved by redirect upstream; where they land folds
    to the same post form).
  - github: owner and repo lower-cased (case-insensitive), `.git` dropped, repo sub-paths and query
    dropped (the target is the repo), `/orgs/<org>` -> `/<org>`, `?tab=` dropped on profiles.
  - telegram: `/s/<name>` -> `/<name>`, usernames lower-cased (invite codes keep their case);
    `?single`, `?comment=`, `?start=` kept.
  - tiktok: ONE form per post, `tiktok.com/@/video/<id>` (`/@/photo/<id>` for photo posts):
    `/@<anyone>/video/<id>` and `(m.)tiktok.com/v/<id>.html` fold to it (TikTok serves `/@/video/<id>`;
    the id is the identity). Profiles `tiktok.com/@handle` lower-cased; shortlink hosts and
    `/t/<code>` kept.
  - discord: `discord.gg/<code>` and `discordapp.com` -> `discord.com/invite/<code>`.

Also here: `to_canonical_all` (many untrusted links -> canonical, junk skipped, de-duplicated) and
`is_shortlink` / `SHORTENER_HOSTS` (what the entry resolves by redirect before canonicalising;
shortlink hosts are never folded here). IP-literal hosts are accepted as URLs: refusing non-public
addresses is the shortlink resolver's and the fetchers' job, not a question of form.
"""

from __future__ import annotations

import encodings.idna
import ipaddress
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, unquote_plus


class Platform(StrEnum):
    X = "x"
    TIKTOK = "tiktok"
    INSTAGRAM = "instagram"
    REDDIT = "reddit"
    YOUTUBE = "youtube"
    GITHUB = "github"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    WEB = "web"


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


# --------------------------------------------------------------------------------------------------
# Tables

HOST_ALIASES: dict[str, str] = {
    # x (DESIGN §3: the seed left twitter.com unfolded as a known miss; we fold with a row per alias)
    "twitter.com": "x.com",
    "mobile.twitter.com": "x.com",
    "m.twitter.com": "x.com",
    "mobile.x.com": "x.com",
    "m.x.com": "x.com",
    "fxtwitter.com": "x.com",
    "vxtwitter.com": "x.com",
    "fixupx.com": "x.com",
    "fixvx.com": "x.com",
    # youtube
    "youtu.be": "youtube.com",
    "m.youtube.com": "youtube.com",
    "music.youtube.com": "youtube.com",
    "youtube-nocookie.com": "youtube.com",
    # instagram
    "instagr.am": "instagram.com",
    "m.instagram.com": "instagram.com",
    # reddit (redd.it is a shortlink host: resolved upstream, never folded here)
    "old.reddit.com": "reddit.com",
    "new.reddit.com": "reddit.com",
    "np.reddit.com": "reddit.com",
    "m.reddit.com": "reddit.com",
    "i.reddit.com": "reddit.com",
    "amp.reddit.com": "reddit.com",
    # telegram (www.t.me loses its www. by the generic rule)
    "telegram.me": "t.me",
    "telegram.dog": "t.me",
    # tiktok (vm./vt. are shortlink hosts: kept)
    "m.tiktok.com": "tiktok.com",
    # discord
    "discord.gg": "discord.com",
    "discordapp.com": "discord.com",
    "ptb.discord.com": "discord.com",
    "canary.discord.com": "discord.com",
}
"""Alias host (after `www.` removal) -> canonical host of the same service."""

PLATFORM_HOSTS: dict[str, Platform] = {
    "x.com": Platform.X,
    "tiktok.com": Platform.TIKTOK,
    "vm.tiktok.com": Platform.TIKTOK,
    "vt.tiktok.com": Platform.TIKTOK,
    "instagram.com": Platform.INSTAGRAM,
    "reddit.com": Platform.REDDIT,
    "redd.it": Platform.REDDIT,
    "youtube.com": Platform.YOUTUBE,
    "github.com": Platform.GITHUB,
    "t.me": Platform.TELEGRAM,
    "discord.com": Platform.DISCORD,
}
"""Canonical host -> platform. Exact hosts only: help.x.com, gist.github.com, *.github.io are web."""

SHORTENER_HOSTS: frozenset[str] = frozenset(
    {
        "t.co",
        "bit.ly",
        "tinyurl.com",
        "goo.gl",
        "ow.ly",
        "buff.ly",
        "is.gd",
        "v.gd",
        "rebrand.ly",
        "cutt.ly",
        "lnkd.in",
        "t.ly",
        "shorturl.at",
        "tiny.cc",
        "rb.gy",
        "dlvr.it",
        "trib.al",
        "fb.me",
        "s.id",
        "surl.li",
        "vm.tiktok.com",
        "vt.tiktok.com",
        "redd.it",
        "reddit.app.link",
    }
)
"""Hosts whose every path is a redirect to be resolved by the entry (canonical host form).

youtu.be is not here: it folds directly to youtube.com/watch?v=ID. t.co keeps platform `web`: its
target can be any site."""

GLOBAL_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "fbclid", "gclid", "dclid", "msclkid", "yclid", "twclid", "ttclid", "gbraid", "wbraid",
        "mc_cid", "mc_eid", "_ga", "_gl", "srsltid", "mkt_tok", "_hsenc", "_hsmi",
    }
)  # fmt: skip
"""Stripped on every host (PLATFORMS.md), plus every `utm_*`."""

PLATFORM_TRACKING_PARAMS: dict[Platform, frozenset[str]] = {
    Platform.X: frozenset({"s", "t", "src", "ref_src", "ref_url", "cn"}),
    Platform.YOUTUBE: frozenset({"si", "feature", "pp", "kw"}),
    Platform.INSTAGRAM: frozenset({"igsh", "igshid", "img_index"}),
    Platform.TIKTOK: frozenset(
        {
            "_r", "_t", "_d", "u_code", "share_app_name", "share_iid", "timestamp", "user_id",
            "source", "preview_pb", "is_from_webapp", "sender_device", "is_copy_url",
            # share-sheet parameters seen on real share links (same family as the list above)
            "_s", "checksum", "sec_user_id", "share_app_id", "share_link_id", "share_item_id",
            "social_share_type", "social_sharing", "tt_from", "share_author_id", "enter_from",
            "enter_method", "web_id", "refer",
        }
    ),
    Platform.REDDIT: frozenset({"share_id", "rdt", "ref_source", "ref_campaign", "correlation_id", "ref"}),
}  # fmt: skip
"""Stripped on that platform's hosts only (on an arbitrary site `s`, `t` or `ref` may be content)."""

YOUTUBE_VIDEO_TARGET_PARAMS: frozenset[str] = frozenset({"t", "list", "index", "ab_channel"})
"""Stripped when a youtube URL targets a video (watch?v=...): start time and playlist context."""

YOUTUBE_EMBED_PLAYER_PARAMS: frozenset[str] = frozenset(
    {
        "autoplay", "mute", "controls", "rel", "start", "end", "loop", "playlist", "modestbranding",
        "enablejsapi", "origin", "playsinline", "showinfo", "cc_load_policy", "iv_load_policy", "fs",
        "hl", "color", "widget_referrer", "disablekb", "cc_lang_pref",
    }
)  # fmt: skip
"""Embed player settings: meaningless once `/embed/ID` is folded to the watch form."""

_Pairs = list[tuple[str, str | None]]
"""Query pairs in normalised raw form; a value of None means the key had no `=` (`?single`)."""

_MAX_INPUT_CHARS = 8192
_SHOW_CHARS = 200

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

_SECRET_PARAM_RE = re.compile(
    r"(?i)([?&;][^=&#]*?(?:token|key|secret|pass(?:word)?|pwd|auth|sig(?:nature)?|session|credential)"
    r"[^=&#]*=)[^&#]*"
)
_USERINFO_RE = re.compile(r"^(\s*(?:[A-Za-z][A-Za-z0-9+.\-]*:)?[/\\]*)[^/?#\\]*@")


def redact_url(value: str) -> str:
    """`value` fit for logs and messages: `user:password@` and the values of secret-looking query
    parameters (token, key, secret, password, auth, sig, session, …) replaced by `***`. Works on any
    text that contains a URL (e.g. a lock key `social-url:<url>`)."""
    shown = _USERINFO_RE.sub(r"\1***@", value, count=1)
    return _SECRET_PARAM_RE.sub(r"\1***", shown)


def _show(value: str) -> str:
    """The value for an error message: credentials redacted, then truncated (repr-quoted)."""
    shown = redact_url(value)
    if len(shown) > _SHOW_CHARS:
        shown = shown[:_SHOW_CHARS] + "…"
    return repr(shown)


def _bad(raw: str, why: str) -> ValueError:
    return ValueError(f"not an http(s) URL ({why}): {_show(raw)}")


# --------------------------------------------------------------------------------------------------
# Parsing


@dataclass
class _Parts:
    host: str
    port: int | None
    segments: list[str]
    pairs: _Pairs
    platform: Platform

    def serialise(self) -> str:
        netloc = self.host if self.port is None else f"{self.host}:{self.port}"
        path = "/" + "/".join(self.segments) if self.segments else ""
        query = "&".join(k if v is None else f"{k}={v}" for k, v in self.pairs)
        return f"https://{netloc}{path}" + (f"?{query}" if query else "")


def _normalise_component(raw: str, safe: frozenset[str], original: str) -> str:
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
                raise _bad(original, "invalid character") from exc
            out.append("".join(f"%{b:02X}" for b in encoded))
        i += 1
    return "".join(out)


def _split_input(raw: str) -> tuple[str, str]:
    """(authority, rest) of an http(s) URL; raises for any other input, scheme-less ones included.

    DESIGN §12: only http(s) URLs. Reading "x.com/foo", "www.foo.com", "//host/x" or "@handle" as a
    URL is an interpretation of a messy tracker value: the entry (TokenProfileReader) does that and
    prefixes `https://` itself; here it would guess silently, deep inside (seed 003).
    """
    m = _SCHEME_RE.match(raw)
    if m is None:
        raise _bad(raw, "no http:// or https:// scheme")
    scheme = m.group(1).lower()
    if scheme not in ("http", "https"):
        if "." in scheme and _PORT_AFTER_HOST_RE.match(m.group(2)):
            raise _bad(raw, "no http:// or https:// scheme")  # "example.com:8080/path": a host, a port
        raise _bad(raw, f"unsupported scheme {scheme[:20]!r}")
    body = m.group(2).lstrip("/\\")
    end = len(body)
    for sep in "/\\?#":
        pos = body.find(sep)
        if pos != -1:
            end = min(end, pos)
    return body[:end], body[end:]


def _parse_host(hostport: str, raw: str) -> tuple[str, int | None]:
    """Lower-cased, IDNA-encoded, validated host and the non-default port."""
    if not hostport:
        raise _bad(raw, "no host")
    port_text: str | None = None
    if hostport.startswith("["):
        close = hostport.find("]")
        if close == -1:
            raise _bad(raw, "bad IPv6 host")
        host, after = hostport[1:close], hostport[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise _bad(raw, "bad host")
            port_text = after[1:]
        try:
            addr6 = ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise _bad(raw, "bad IPv6 host") from exc
        canonical_host = f"[{addr6.compressed}]"
    else:
        host, colon, port_part = hostport.partition(":")
        if colon:
            port_text = port_part
        canonical_host = _canonical_hostname(host, raw)
    port: int | None = None
    if port_text:
        if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
            raise _bad(raw, "bad port")
        port = int(port_text)
        if not 0 < port < 65536:
            raise _bad(raw, "bad port")
        if port in (80, 443):
            port = None
    return canonical_host, port


def _canonical_hostname(host: str, raw: str) -> str:
    host = host.translate(_IDNA_DOTS)
    if host.endswith("."):
        host = host[:-1]
    if not host or any(c.isspace() for c in host) or "%" in host:
        raise _bad(raw, "bad host")
    if not host.isascii():
        try:
            host = ".".join(_idna_label(label) for label in host.split("."))
        except UnicodeError as exc:
            raise _bad(raw, "bad international host") from exc
    host = host.lower()
    labels = host.split(".")
    if all(label.isdigit() for label in labels if label):
        try:
            return str(ipaddress.IPv4Address(host))
        except ValueError as exc:
            raise _bad(raw, "bad IPv4 host") from exc
    if len(host) > 253 or len(labels) < 2 or not all(_LABEL_RE.match(label) for label in labels):
        raise _bad(raw, "bad host")
    if not _TLD_RE.match(labels[-1]):
        raise _bad(raw, "bad host")
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


def _path_segments(path: str, collapse: bool, raw: str) -> list[str]:
    """Normalised segments with dot segments resolved and trailing empties removed."""
    path = _normalise_component(path.replace("\\", "/"), _PATH_SAFE, raw)
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


def _query_pairs(query: str, raw: str) -> _Pairs:
    pairs: _Pairs = []
    for item in query.split("&"):
        if not item:
            continue
        key, eq, value = item.partition("=")
        norm_key = _normalise_component(key, _QUERY_KEY_SAFE, raw)
        pairs.append((norm_key, _normalise_component(value, _QUERY_SAFE, raw) if eq else None))
    return pairs


def _key(pair: tuple[str, str | None]) -> str:
    return unquote(pair[0]).lower()


def _strip(pairs: _Pairs, names: frozenset[str]) -> _Pairs:
    return [p for p in pairs if _key(p) not in names]


# --------------------------------------------------------------------------------------------------
# Platform path rules. Each gets (origin host after www. removal, segments, pairs) and returns
# (segments, pairs); the host is already the canonical one.

_Rule = Callable[[str, list[str], _Pairs], tuple[list[str], _Pairs]]

_DIGITS_RE = re.compile(r"^[0-9]+\Z")
_X_HANDLE_RE = re.compile(r"^[A-Za-z0-9_]{1,50}\Z")
_X_RESERVED = frozenset(
    {"i", "home", "explore", "search", "hashtag", "intent", "settings", "messages", "notifications",
     "compose", "login", "logout", "signup", "tos", "privacy", "share", "account", "jobs", "download"}
)  # fmt: skip
_X_TWEET_VIEWS = frozenset({"analytics", "likes", "retweets", "quotes", "history", "photo", "video"})
_X_PROFILE_TABS = frozenset(
    {"with_replies", "media", "likes", "highlights", "articles", "followers", "following",
     "verified_followers", "followers_you_follow", "superfollows"}
)  # fmt: skip


def _rules_x(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """The tweet id is the target: X serves a tweet under ANY handle (`x.com/<anyone>/status/<id>`),
    so the handle is decoration and every tweet URL folds to `/i/status/<id>` (PLATFORMS.md identity:
    content key = tweet id). Views of a tweet fold away too. Handles are case-insensitive; a leading
    `@` (`x.com/@Handle`) is written by people, not by X."""
    if not segs:
        return segs, pairs
    if segs[0].startswith("@") and _X_HANDLE_RE.match(segs[0][1:]):
        segs[0] = segs[0][1:]
    if _X_HANDLE_RE.match(segs[0]):
        segs[0] = segs[0].lower()
    status = ("status", "statuses")
    tweet_at: int | None = None
    if len(segs) >= 4 and segs[0] == "i" and segs[1].lower() == "web" and segs[2].lower() in status:
        tweet_at = 3  # /i/web/status/<id>
    elif len(segs) >= 3 and segs[1].lower() in status:
        tweet_at = 2  # /<any handle>/status/<id>, /i/status/<id>
    elif len(segs) >= 2 and segs[0].lower() in status:
        tweet_at = 1  # the old /statuses/<id>
    if tweet_at is not None and _DIGITS_RE.match(segs[tweet_at]):
        tail = [s.lower() for s in segs[tweet_at + 1 :]]
        is_media = len(tail) == 2 and tail[0] in ("photo", "video") and _DIGITS_RE.match(tail[1])
        is_view = (len(tail) == 1 and tail[0] in _X_TWEET_VIEWS) or tail == ["retweets", "with_comments"]
        segs = ["i", "status", *segs[tweet_at:]]
        if is_media or is_view:
            segs = segs[:3]
    elif len(segs) == 2 and segs[0] not in _X_RESERVED and segs[1].lower() in _X_PROFILE_TABS:
        segs = segs[:1]
    return segs, pairs


_YT_ID_RE = re.compile(r"^[A-Za-z0-9_\-]{11}\Z")
_YT_VIDEO_PREFIXES = frozenset({"embed", "shorts", "live", "v", "e", "watch"})
_YT_EMBED_PREFIXES = frozenset({"embed", "v", "e"})
_YT_CHANNEL_TABS = frozenset(
    {"featured", "videos", "shorts", "streams", "about", "community", "playlists", "podcasts",
     "releases", "channels", "store", "posts"}
)  # fmt: skip


def _rules_youtube(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """Every video URL shape folds to watch?v=ID: the video id is the object, the shape is not."""
    embed = False
    if origin == "youtu.be":
        if segs:
            pairs = [("v", segs[0].replace("&", "%26")), *[p for p in pairs if p[0] != "v"]]
            segs = ["watch"]
    elif len(segs) >= 2 and segs[0].lower() in _YT_VIDEO_PREFIXES:
        prefix = segs[0].lower()
        if prefix == "embed" and segs[1].lower() == "videoseries":
            segs = ["playlist"]
            embed = True
        elif _YT_ID_RE.match(segs[1]):
            pairs = [("v", segs[1]), *[p for p in pairs if p[0] != "v"]]
            segs = ["watch"]
            embed = prefix in _YT_EMBED_PREFIXES
    if embed:
        pairs = _strip(pairs, YOUTUBE_EMBED_PLAYER_PARAMS)
    if segs and segs[0].startswith("@"):
        segs[0] = segs[0].lower()
    is_channel = (segs and segs[0].startswith("@") and len(segs) == 2) or (
        len(segs) == 3 and segs[0].lower() in ("channel", "c", "user")
    )
    if is_channel and segs[-1].lower() in _YT_CHANNEL_TABS:
        segs = segs[:-1]
    if segs == ["watch"] and any(p[0] == "v" for p in pairs):
        pairs = _strip(pairs, YOUTUBE_VIDEO_TARGET_PARAMS)
    return segs, pairs


_IG_MEDIA = frozenset({"p", "reel", "reels", "tv"})
_IG_NOT_USERS = _IG_MEDIA | frozenset({"stories", "explore", "accounts", "share", "direct", "about"})
_IG_CODE_RE = re.compile(r"^[A-Za-z0-9_\-]{1,64}\Z")
_IG_NOT_CODES = frozenset({"audio"})  # instagram.com/reels/audio/<id> is a sound's page, not a reel


def _rules_instagram(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """Usernames are lower-case on Instagram; a shortcode is the media whatever path prefixes it:
    `/reel/`, `/reels/`, `/tv/` and `/<user>/p/` all fold to `/p/<code>` (instagram.com/p/<code>
    serves reels and IGTV too; the media kind comes from the API's `productType`, not the URL)."""
    if not segs:
        return segs, pairs
    segs[0] = segs[0].lower()
    if len(segs) >= 3 and segs[0] not in _IG_NOT_USERS and segs[1].lower() in _IG_MEDIA:
        segs = segs[1:]
        segs[0] = segs[0].lower()
    if len(segs) >= 2 and segs[0] in _IG_MEDIA and _IG_CODE_RE.match(segs[1]) and segs[1] not in _IG_NOT_CODES:
        segs[0] = "p"
        if len(segs) >= 3 and segs[2].lower() == "embed":
            segs = segs[:2]
    return segs, pairs


_REDDIT_ID_RE = re.compile(r"^[a-z0-9]{1,12}\Z")  # as platforms/reddit.py reads it
REDDIT_POST_VIEW_PARAMS: frozenset[str] = frozenset({"context", "sort", "depth"})
"""Comment-thread display settings of a post page: stripped when a reddit URL targets a post."""


def _rules_reddit(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """Subreddit and user names are case-insensitive. A post is its id: every post URL
    (`/r/<sub>/comments/<id>[/<slug>]`, `/user/<name>/comments/<id>/...`, `/gallery/<id>`) folds to
    `reddit.com/comments/<id>` (the subreddit comes from the API). A comment permalink
    (`.../comments/<id>/<slug>/<comment id>`, `.../comment/<comment id>`) folds to its post too: we
    record the post (the generator asks for the post, comments skipped), so keeping the permalink
    would pay again for the same post."""
    if origin == "redd.it" or not segs:
        return segs, pairs
    segs[0] = segs[0].lower()
    if segs[0] == "u":
        segs[0] = "user"
    base = 0
    if segs[0] in ("r", "user") and len(segs) >= 2:
        segs[1] = segs[1].lower()
        base = 2
    post_id: str | None = None
    if len(segs) >= base + 2 and segs[base].lower() == "comments":
        segs[base] = "comments"
        segs[base + 1] = segs[base + 1].lower()
        if _REDDIT_ID_RE.match(segs[base + 1]):
            post_id = segs[base + 1]
        elif len(segs) == base + 3:
            segs = segs[: base + 2]
    elif len(segs) == 2 and segs[0] == "gallery" and _REDDIT_ID_RE.match(segs[1].lower()):
        post_id = segs[1].lower()
    if post_id is not None:
        return ["comments", post_id], _strip(pairs, REDDIT_POST_VIEW_PARAMS)
    return segs, pairs


_GITHUB_RESERVED = frozenset(
    {"about", "account", "apps", "blog", "codespaces", "collections", "contact", "copilot",
     "customer-stories", "dashboard", "education", "enterprise", "events", "explore", "features",
     "git-guides", "github-copilot", "home", "issues", "join", "login", "logout", "marketplace",
     "mobile", "models", "new", "nonprofit", "notifications", "organizations", "orgs",
     "password_reset", "premium-support", "pricing", "pulls", "readme", "resources", "search",
     "security", "sessions", "settings", "signup", "site", "solutions", "sponsors", "stars", "team",
     "topics", "trending", "users", "watching"}
)  # fmt: skip


def _rules_github(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """GitHub names are case-insensitive; a repo URL targets the repo, whatever sub-page it shows."""
    if not segs:
        return segs, pairs
    first = segs[0].lower()
    if first == "orgs" and len(segs) >= 2:
        return [segs[1].lower()], _strip(pairs, frozenset({"tab"}))
    if first in _GITHUB_RESERVED:
        segs[0] = first
        return segs, pairs
    if len(segs) == 1:
        return [first], _strip(pairs, frozenset({"tab"}))
    repo = segs[1].lower()
    while repo.endswith(".git") and len(repo) > 4:
        repo = repo[:-4]
    return [first, repo], []


_TG_USERNAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,31}\Z")


def _rules_telegram(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """`/s/<name>` is the web preview of `/<name>`; usernames are case-insensitive, invites are not."""
    if len(segs) >= 2 and segs[0].lower() == "s":
        segs = segs[1:]
    if segs and _TG_USERNAME_RE.match(segs[0]):
        segs[0] = segs[0].lower()
    return segs, pairs


_TT_V_HTML_RE = re.compile(r"^([0-9]{1,25})(?:\.html)?\Z")


def _rules_tiktok(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """TikTok usernames are case-insensitive; shortlink codes (vm./vt./t/) are case-sensitive. A post
    is its id: TikTok serves `/@/video/<id>` whatever the author, so `/@<anyone>/video/<id>` and the
    old `/v/<id>.html` fold to `tiktok.com/@/video/<id>` (photo posts to `/@/photo/<id>`)."""
    on_main_host = origin in ("tiktok.com", "m.tiktok.com")
    if not on_main_host or not segs:
        return segs, pairs
    if segs[0].startswith("@") or segs[0].lower() in ("t", "v"):
        segs[0] = segs[0].lower()
    if len(segs) == 3 and segs[0].startswith("@") and segs[1].lower() in ("video", "photo") and (
        _DIGITS_RE.match(segs[2])
    ):
        segs = ["@", segs[1].lower(), segs[2]]
    elif len(segs) == 2 and segs[0] == "v" and (m := _TT_V_HTML_RE.match(segs[1])) is not None:
        segs = ["@", "video", m.group(1)]
    elif (
        len(segs) in (2, 3) and segs[0].lower() == "embed" and segs[-1].isdigit()
        and (len(segs) == 2 or segs[1].lower() == "v2")
    ):
        # The embed player `/embed/<id>`, `/embed/v2/<id>` shows the same post.
        segs, pairs = ["@", "video", segs[-1]], []
    return segs, pairs


def _rules_discord(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    """discord.gg/<code> is discord.com/invite/<code>; invite codes are case-sensitive."""
    if segs and segs[0].lower() == "invite":
        segs[0] = "invite"
    elif origin == "discord.gg" and segs:
        segs = ["invite", *segs]
    return segs, pairs


def _rules_none(origin: str, segs: list[str], pairs: _Pairs) -> tuple[list[str], _Pairs]:
    return segs, pairs


_RULES: dict[Platform, _Rule] = {
    Platform.X: _rules_x,
    Platform.YOUTUBE: _rules_youtube,
    Platform.INSTAGRAM: _rules_instagram,
    Platform.REDDIT: _rules_reddit,
    Platform.GITHUB: _rules_github,
    Platform.TELEGRAM: _rules_telegram,
    Platform.TIKTOK: _rules_tiktok,
    Platform.DISCORD: _rules_discord,
    Platform.WEB: _rules_none,
}


def _canonicalise(raw: object) -> _Parts:
    if not isinstance(raw, str):
        raise ValueError(f"not an http(s) URL (expected a string, got {type(raw).__name__})")
    text = raw.strip()
    if not text:
        raise _bad(raw, "empty")
    if len(text) > _MAX_INPUT_CHARS:
        raise _bad(raw, f"longer than {_MAX_INPUT_CHARS} characters")
    text = text.replace("\t", "").replace("\r", "").replace("\n", "")
    authority, rest = _split_input(text)
    hostport = authority.rpartition("@")[2]  # userinfo is stripped (credentials are never stored)
    host, port = _parse_host(hostport, raw)

    rest, _, fragment = rest.partition("#")
    path, _, query = rest.partition("?")

    origin = host
    host = HOST_ALIASES.get(host, host)
    platform = PLATFORM_HOSTS.get(host, Platform.WEB)
    if platform is Platform.X and path.strip("/\\") == "" and fragment.startswith("!/"):
        path, _, frag_query = fragment[1:].partition("?")
        query = query or frag_query  # twitter.com/#!/user/status/1: the old path-in-fragment form

    segments = _path_segments(path, collapse=platform is not Platform.WEB, raw=raw)
    pairs = _query_pairs(query, raw)
    pairs = [p for p in pairs if not _key(p).startswith("utm_") and _key(p) not in GLOBAL_TRACKING_PARAMS]
    segments, pairs = _RULES[platform](origin, segments, pairs)
    pairs = _strip(pairs, PLATFORM_TRACKING_PARAMS.get(platform, frozenset()))
    if platform is not Platform.WEB:
        pairs = sorted(pairs, key=lambda p: p[0])
    return _Parts(host=host, port=port, segments=segments, pairs=pairs, platform=platform)


# --------------------------------------------------------------------------------------------------
# Public API


def to_canonical(raw: str) -> str:
    """TRANSFORM raw input into the canonical URL string (module docstring lists the rules).

    Raises ValueError naming the (credential-redacted, truncated) value for anything that is not an
    http(s) URL with a public-looking host. Only the entry may call this (seed 003).
    """
    return _canonicalise(raw).serialise()


def to_canonical_all(raws: Iterable[str | None]) -> list[str]:
    """TRANSFORM many values that are not ours (links found in a post, a bio, a page: seed 003
    `toCanonicalAll`): junk and None are skipped (a bad outbound link is not an error of the
    target), duplicates after canonicalisation are dropped, first-seen order is kept."""
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
    """
    try:
        parts = _canonicalise(url)
    except ValueError as exc:
        shown = _show(url) if isinstance(url, str) else type(url).__name__
        raise NonCanonicalUrl(f"not a canonical URL (not a URL at all): {shown}") from exc
    canonical = parts.serialise()
    if canonical != url:
        raise NonCanonicalUrl(
            f"not a canonical URL: {_show(url)} (its canonical form is {_show(canonical)}; "
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
    if parts.host == "tiktok.com" and segs[0] == "t" and len(segs) >= 2:
        return True
    if parts.host == "reddit.com" and len(segs) >= 4 and segs[0] == "r" and segs[2] == "s":
        return True
    return parts.host == "instagram.com" and segs[0] == "share" and len(segs) >= 2
