"""One platform's URL rules as a typed record, and the helpers its path rules use.

Pure, and outside the `domain.urls` package on purpose: a platform's spec
(`platforms/<platform>/spec.py`) imports only this module and `domain/platform.py`, so the canonicaliser
can read every platform's rules without an import cycle (docs/architecture.md, "Providers in one place").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

Pairs = list[tuple[str, str | None]]
"""Query pairs in normalised raw form; a value of None means the key had no `=` (`?single`)."""

PathRule = Callable[[str, list[str], Pairs], tuple[list[str], Pairs]]
"""(origin host after `www.` removal, path segments, query pairs) -> (segments, pairs); the host is
already the canonical one."""

ShortlinkRule = Callable[[str, list[str]], bool]
"""(canonical host, segments) -> whether the URL is a redirect the entry resolves first."""

DIGITS_RE = re.compile(r"^[0-9]+\Z")


def param_key(pair: tuple[str, str | None]) -> str:
    return unquote(pair[0]).lower()


def strip_params(pairs: Pairs, names: frozenset[str]) -> Pairs:
    return [p for p in pairs if param_key(p) not in names]


def keep_path(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """No path rule: an arbitrary site's paths mean whatever the site says."""
    return segs, pairs


def no_shortlinks(host: str, segs: list[str]) -> bool:
    return False


@dataclass(frozen=True)
class UrlRules:
    """How one platform's URLs are recognised and folded to their canonical form.

    `hosts` are the canonical hosts that belong to the platform (exact hosts: help.x.com is a website);
    `aliases` fold other hosts of the same service onto one of them (`m.`/`mobile.` only through this
    table); `shortlink_hosts` are this platform's shorteners (resolved by the entry, never folded);
    `is_shortlink` recognises shortlinks by path on the platform's own hosts (a `/t/<code>` share path).
    Every rule is idempotent: applied to its own output it changes nothing."""

    hosts: frozenset[str] = frozenset()
    aliases: Mapping[str, str] = field(default_factory=dict)
    tracking_params: frozenset[str] = frozenset()
    path: PathRule = keep_path
    shortlink_hosts: frozenset[str] = frozenset()
    is_shortlink: ShortlinkRule = no_shortlinks
    path_in_fragment: bool = False
    """A root URL whose fragment is `#!/<path>` means `<path>` (twitter.com's old form)."""
    examples: tuple[tuple[str, str], ...] = ()
    """(a URL as people write it, its canonical form): the platform's URL shapes, kept beside its rules
    and checked with every other platform's (social_recording_tests/domain/test_urls.py, `SHAPES`)."""

    def __post_init__(self) -> None:
        stray = {target for target in self.aliases.values() if target not in self.hosts}
        if stray:
            raise ValueError(f"UrlRules aliases fold onto hosts not in `hosts`: {sorted(stray)}")
