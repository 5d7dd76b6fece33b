"""Host and parameter tables: the generic ones, and the per-platform ones gathered from every
platform's URL rules (each platform's rows live in its own package)."""

from __future__ import annotations

from social_recording.domain.platform import Platform
from social_recording.platforms.catalogue import CATALOGUE

GENERIC_SHORTENER_HOSTS: frozenset[str] = frozenset(
    {
        "t.co", "bit.ly", "tinyurl.com", "goo.gl", "ow.ly", "buff.ly", "is.gd", "v.gd", "rebrand.ly",
        "cutt.ly", "lnkd.in", "t.ly", "shorturl.at", "tiny.cc", "rb.gy", "dlvr.it", "trib.al", "fb.me",
        "s.id", "surl.li",
    }
)  # fmt: skip
"""Shorteners of no platform: t.co keeps platform `web` (its target can be any site)."""

GLOBAL_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "fbclid", "gclid", "dclid", "msclkid", "yclid", "twclid", "ttclid", "gbraid", "wbraid",
        "mc_cid", "mc_eid", "_ga", "_gl", "srsltid", "mkt_tok", "_hsenc", "_hsmi",
    }
)  # fmt: skip
"""Stripped on every host, plus every `utm_*`."""

HOST_ALIASES: dict[str, str] = {alias: host for d in CATALOGUE for alias, host in d.urls.aliases.items()}
"""Alias host (after `www.` removal) -> canonical host of the same service."""

PLATFORM_HOSTS: dict[str, Platform] = {host: d.platform for d in CATALOGUE for host in d.urls.hosts}
"""Canonical host -> platform. Exact hosts only: a subdomain of a platform's host is a website."""

SHORTENER_HOSTS: frozenset[str] = GENERIC_SHORTENER_HOSTS.union(*(d.urls.shortlink_hosts for d in CATALOGUE))
"""Hosts whose every path is a redirect to be resolved by the entry (canonical host form). A host that
folds to its platform's own form (an alias) is not one."""

PLATFORM_TRACKING_PARAMS: dict[Platform, frozenset[str]] = {
    d.platform: d.urls.tracking_params for d in CATALOGUE if d.urls.tracking_params
}
"""Stripped on that platform's hosts only (on an arbitrary site `s`, `t` or `ref` may be content)."""
