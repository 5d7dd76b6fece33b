"""Canonical URLs: transform only at the entry, read everywhere else.

Two kinds of function, never mixed (one function that did both would let non-canonical URLs be
"fixed" silently deep inside the pipeline, and nobody would see which path broke the rule):

* `to_canonical(raw)` TRANSFORMS. Only the entry (TokenProfileReader, generators' outbound links,
  the shortlink resolver's caller) may call it.
* `parse_canonical(url)` / `platform_of(url)` READ. They raise `NonCanonicalUrl` for anything that
  `to_canonical` would change, and never fix it.

The canonical form (every rule is idempotent: `to_canonical(to_canonical(x)) == to_canonical(x)`):

Generic rules, every host
  - Input is stripped of surrounding whitespace; ASCII tab/CR/LF anywhere are removed (as browsers
    do); other control characters are percent-encoded in the path and query, and rejected in the host.
  - Only http(s): the value must carry an `http:`/`https:` scheme (any case; browsers'
    `https:\\host` and `https:host` spellings included). Scheme-less values ("x.com/foo",
    "www.example.com", "//host/x", "@handle") raise like any other junk ("none", "TBA", "-", "N/A",
    "javascript:", "mailto:", "ftp://", "tg://"): `ValueError` naming the (redacted, truncated)
    value (shown through `domain.redaction`). Reading a messy tracker value as a URL is the entry's
    job (TokenProfileReader prefixes `https://` itself), never a silent guess here.
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
    matched case-insensitively); unknown parameters kept (a miss costs a call, a wrong strip merges
    different targets). Order: kept as given on web hosts (sites may care), sorted by
    key (stable) on platform hosts so equal targets give equal strings.

Platform hosts (HOST_ALIASES, one row per alias, folded to the canonical host of the service; `m.`/
`mobile.` are removed only through this table, never on an arbitrary site where `m.` may be another
site): each platform's path rules live in its own module (`x`, `youtube`, `instagram`, `reddit`,
`github`, `telegram`, `tiktok`, `discord`), with the reserved first segments the generators and the
sandbox read too (`X_RESERVED`, `GITHUB_RESERVED`, ...); in short:
  - x: ONE form per tweet, `x.com/i/status/<id>`: `/<any handle>/status/<id>` (X serves a tweet
    under any handle; the id is the identity), `/statuses/<id>`, `/i/web/status/<id>`,
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

Modules: `model` (types), `tables` (hosts, aliases, tracking parameters), `normalise` (the generic
rules), one module per platform, `canonical` (the public functions). Also here: `to_canonical_all`
(many untrusted links -> canonical, junk skipped, de-duplicated) and
`is_shortlink` / `SHORTENER_HOSTS` (what the entry resolves by redirect before canonicalising;
shortlink hosts are never folded here). IP-literal hosts are accepted as URLs: refusing non-public
addresses is the shortlink resolver's and the fetchers' job, not a question of form.
"""

from social_recording.domain.redaction import redact_url
from social_recording.domain.urls.canonical import (
    is_shortlink,
    parse_canonical,
    platform_of,
    to_canonical,
    to_canonical_all,
)
from social_recording.domain.urls.github import GITHUB_RESERVED
from social_recording.domain.urls.instagram import INSTAGRAM_RESERVED
from social_recording.domain.urls.model import CanonicalUrl, NonCanonicalUrl, Platform
from social_recording.domain.urls.reddit import REDDIT_POST_VIEW_PARAMS
from social_recording.domain.urls.tables import (
    GLOBAL_TRACKING_PARAMS,
    HOST_ALIASES,
    PLATFORM_HOSTS,
    PLATFORM_TRACKING_PARAMS,
    SHORTENER_HOSTS,
)
from social_recording.domain.urls.telegram import (
    TELEGRAM_NON_CHAT_PATHS,
    TELEGRAM_PRIVATE_PATHS,
    TELEGRAM_USERNAME_RE,
    TELEGRAM_VENUE_PREFIXES,
)
from social_recording.domain.urls.tiktok import TIKTOK_NON_POST_PATHS
from social_recording.domain.urls.x import X_HANDLE_RE, X_RESERVED
from social_recording.domain.urls.youtube import (
    YOUTUBE_EMBED_PLAYER_PARAMS,
    YOUTUBE_VIDEO_PATHS,
    YOUTUBE_VIDEO_TARGET_PARAMS,
)

__all__ = [
    "GITHUB_RESERVED",
    "GLOBAL_TRACKING_PARAMS",
    "HOST_ALIASES",
    "INSTAGRAM_RESERVED",
    "PLATFORM_HOSTS",
    "PLATFORM_TRACKING_PARAMS",
    "REDDIT_POST_VIEW_PARAMS",
    "SHORTENER_HOSTS",
    "TELEGRAM_NON_CHAT_PATHS",
    "TELEGRAM_PRIVATE_PATHS",
    "TELEGRAM_USERNAME_RE",
    "TELEGRAM_VENUE_PREFIXES",
    "TIKTOK_NON_POST_PATHS",
    "X_HANDLE_RE",
    "X_RESERVED",
    "YOUTUBE_EMBED_PLAYER_PARAMS",
    "YOUTUBE_VIDEO_PATHS",
    "YOUTUBE_VIDEO_TARGET_PARAMS",
    "CanonicalUrl",
    "NonCanonicalUrl",
    "Platform",
    "is_shortlink",
    "parse_canonical",
    "platform_of",
    "redact_url",
    "to_canonical",
    "to_canonical_all",
]
