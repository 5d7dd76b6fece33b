"""github.com path rules: owner and repo lower-cased, a repo URL targets the repo whatever sub-page it shows."""

from __future__ import annotations

from social_recording.domain.url_rules import Pairs, UrlRules, strip_params

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
