"""GitHub, through its REST API: free, an hourly limit. Its descriptor and URL rules; its generator and
sandbox fake are in `social_recording.platforms.github` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: github.com path rules: owner and repo lower-cased, a repo URL targets the repo whatever sub-page
it shows."""

from __future__ import annotations

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import Pairs, UrlRules, strip_params

PACKAGE = "social_recording.platforms.github"
"""The platform's package: its generator and its sandbox fake."""

GITHUB_RESERVED: frozenset[str] = frozenset(
    {"about", "account", "apps", "blog", "codespaces", "collections", "contact", "copilot",
     "customer-stories", "dashboard", "education", "enterprise", "enterprises", "events", "explore", "features",
     "git-guides", "github-copilot", "home", "issues", "join", "login", "logout", "marketplace",
     "mobile", "models", "new", "nonprofit", "notifications", "organizations", "orgs",
     "password_reset", "premium-support", "pricing", "pulls", "readme", "resources", "search",
     "security", "sessions", "settings", "signup", "site", "solutions", "sponsors", "stars", "team",
     "topics", "trending", "users", "watching"}
)  # fmt: skip
"""First path segments that are GitHub's own pages, never a user or org login. `orgs/<org>` and
`sponsors/<login>` name an account and are read before this set. The canonicaliser, the GitHub
generator and the sandbox read this one set."""


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """GitHub names are case-insensitive; a repo URL targets the repo, whatever sub-page it shows."""
    if not segs:
        return segs, pairs
    first = segs[0].lower()
    if first == "orgs" and len(segs) >= 2:
        return [segs[1].lower()], strip_params(pairs, frozenset({"tab"}))
    if first in GITHUB_RESERVED:
        segs[0] = first
        return segs, pairs
    if len(segs) == 1:
        return [first], strip_params(pairs, frozenset({"tab"}))
    repo = segs[1].lower()
    while repo.endswith(".git") and len(repo) > 4:
        repo = repo[:-4]
    return [first, repo], []


URL_RULES = UrlRules(hosts=frozenset({"github.com"}), path=rules)
"""Exact host: gist.github.com and *.github.io are websites."""

GITHUB = ProviderAccount(
    name="github",
    paid=False,
    key_variable="GITHUB_TOKEN",
    key_optional=True,
    # 5,000 requests an hour with a token, 60 without (per address); secondary limits on bursts answer
    # 403/429 with `retry-after`, which every process honours.
    rates=(Rate(5000, 3600),),
    rates_without_key=(Rate(60, 3600),),
    concurrency=16,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.GITHUB, GITHUB, URL_RULES, package=PACKAGE, title="GitHub")
