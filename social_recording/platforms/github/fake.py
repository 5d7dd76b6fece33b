"""Fake GitHub REST API: `GET /repos/<owner>/<repo>` and `GET /users/<login>`, with the rate-limit
headers GitHub sends on every answer (5,000 an hour with a token, 60 without).

Outcomes: not_found -> 404; blocked -> 451 (a DMCA block); error / flaky:N -> 503; rate_limited ->
429 and credit_exhausted -> 403, both with `x-ratelimit-remaining: 0` (GitHub has no credits: a spent
hourly limit is how it says "no more"); invalid -> ok.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.github.spec import GITHUB_RESERVED
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

GITHUB_HOST = "api.github.com"
"""The one address every sandbox host resolves to (the rate-limit message names the caller's address)."""


def github_id(login: str) -> int:
    return api.Det("gh-user", login.lower()).num("id", 1_000_000, 199_999_999)


def github_type(login: str) -> str:
    return "Organization" if api.Det("gh-user", login.lower()).chance("org", 1, 3) else "User"


def _github_owner(login: str) -> dict[str, Any]:
    uid = github_id(login)
    api_url = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": ("O_kgDO" if github_type(login) == "Organization" else "U_kgDO") + api.Det("gh-user", login.lower()).b64url("node", 8),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": api_url,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{api_url}/followers",
        "following_url": f"{api_url}/following{{/other_user}}",
        "gists_url": f"{api_url}/gists{{/gist_id}}",
        "starred_url": f"{api_url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api_url}/subscriptions",
        "organizations_url": f"{api_url}/orgs",
        "repos_url": f"{api_url}/repos",
        "events_url": f"{api_url}/events{{/privacy}}",
        "received_events_url": f"{api_url}/received_events",
        "type": github_type(login),
        "user_view_type": "public",
        "site_admin": False,
    }


def github_repo(owner: str, name: str) -> dict[str, Any]:
    det = api.Det("gh-repo", f"{owner.lower()}/{name.lower()}")
    full = f"{owner}/{name}"
    api_url = f"https://api.github.com/repos/{full}"
    created = fake.created_date(det)
    pushed = det.date("pushed", created, api.EPOCH_END)
    stars = det.skewed("stars", 50_000)
    forks = det.skewed("forks", 5_000)
    issues = det.skewed("issues", 500)
    watchers = det.skewed("watchers", 1_000)
    return {
        "id": det.num("id", 100_000_000, 999_999_999),
        "node_id": "R_kgDO" + det.b64url("node", 8),
        "name": name,
        "full_name": full,
        "private": False,
        "owner": _github_owner(owner),
        "html_url": f"https://github.com/{full}",
        "description": f"{fake.sentence(det, 'desc').capitalize()}.",
        "fork": det.chance("fork", 1, 10),
        "url": api_url,
        "forks_url": f"{api_url}/forks",
        "issues_url": f"{api_url}/issues{{/number}}",
        "pulls_url": f"{api_url}/pulls{{/number}}",
        "created_at": api.iso_s(created),
        "updated_at": api.iso_s(pushed),
        "pushed_at": api.iso_s(pushed),
        "git_url": f"git://github.com/{full}.git",
        "ssh_url": f"git@github.com:{full}.git",
        "clone_url": f"https://github.com/{full}.git",
        "svn_url": f"https://github.com/{full}",
        "homepage": fake.site_for(name) if det.chance("homepage", 2, 3) else None,
        "size": det.num("size", 10, 200_000),
        "stargazers_count": stars,
        "watchers_count": stars,
        "language": det.pick("lang", fake.LANGS),
        "has_issues": True,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": det.chance("wiki", 1, 2),
        "has_pages": False,
        "has_discussions": False,
        "forks_count": forks,
        "mirror_url": None,
        "archived": det.chance("archived", 1, 12),
        "disabled": False,
        "open_issues_count": issues,
        "license": {"key": "mit", "name": "MIT License", "spdx_id": "MIT",
                    "url": "https://api.github.com/licenses/mit", "node_id": "MDc6TGljZW5zZTEz"}
        if det.chance("license", 2, 3) else None,
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [det.pick("topic", fake.TOPICS), "solana"],
        "visibility": "public",
        "forks": forks,
        "open_issues": issues,
        "watchers": stars,
        "default_branch": "main",
        "temp_clone_token": None,
        "network_count": forks,
        "subscribers_count": watchers,
    }


def github_user(login: str) -> dict[str, Any]:
    det = api.Det("gh-user", login.lower())
    created = fake.created_date(det)
    body = _github_owner(login)
    body.update({
        "name": fake.display_name(det, login),
        "company": None if github_type(login) == "Organization" else det.pick("company", (None, "@solana-labs", "Freelance")),
        "blog": fake.site_for(login).removeprefix("https://") if det.chance("blog", 2, 3) else "",
        "location": det.pick("place", fake.PLACES) or None,
        "email": None,
        "hireable": None,
        "bio": fake.sentence(det, "bio"),
        "twitter_username": login if det.chance("twitter", 1, 2) else None,
        "public_repos": det.skewed("repos", 300),
        "public_gists": det.skewed("gists", 50),
        "followers": det.skewed("followers", 20_000),
        "following": det.skewed("following", 300),
        "created_at": api.iso_s(created),
        "updated_at": api.iso_s(det.date("updated", created, api.EPOCH_END)),
    })
    return body


def github_error(message: str, doc: str, status: int) -> dict[str, Any]:
    return {"message": message, "documentation_url": f"https://docs.github.com/rest/{doc}", "status": str(status)}


class GitHubProvider(api.TargetProvider):
    service = "github"
    hosts = frozenset({GITHUB_HOST})

    @staticmethod
    def _segments(request: httpx.Request) -> list[str]:
        raw = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
        return [unquote(s) for s in raw.split("/") if s]

    def describe(self, request: httpx.Request) -> api.Call:
        segs = self._segments(request)
        if len(segs) == 3 and segs[0] == "repos":
            subject = f"repo:{segs[1]}/{segs[2]}"
            doc = "repos/repos#get-a-repository"
        elif len(segs) == 2 and segs[0] == "users":
            subject = f"github-user:{segs[1]}"
            doc = "users/users#get-a-user"
        else:
            return api.Call(self.service, f"path:{request.url.path}")
        return api.Call(self.service, subject, [self._outcomes.target_for(subject)], args={"segs": segs, "doc": doc})

    @staticmethod
    def _headers(request: httpx.Request, *, spent: bool = False) -> dict[str, str]:
        limit = 5000 if request.headers.get("authorization", "").strip() else 60
        return {
            "x-github-api-version-selected": "2022-11-28",
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": "0" if spent else str(limit - 1),
            "x-ratelimit-reset": "1793491200",
            "x-ratelimit-used": str(limit) if spent else "1",
            "x-ratelimit-resource": "core",
        }

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        headers = self._headers(request)
        if "segs" not in call.args:
            return api.json_reply(404, github_error("Not Found", "", 404), headers)
        segs, doc = call.args["segs"], call.args["doc"]
        effect = self._outcomes.effective(call.targets[0])
        failed = api.FailureLadder(
            error=lambda: api.json_reply(503, {"message": "No server is currently available to service your request."},
                                         headers),
            rate_limited=lambda: self._limited(request, 429),
            credit_exhausted=lambda: self._limited(request, 403),
        ).reply(effect)
        if failed is not None:
            return failed
        if effect is api.OutcomeKind.NOT_FOUND:
            return api.json_reply(404, github_error("Not Found", doc, 404), headers)
        if effect is api.OutcomeKind.BLOCKED:
            return api.json_reply(451, {
                "message": "Repository access blocked" if segs[0] == "repos" else "Account access blocked",
                "block": {"reason": "dmca", "created_at": "2026-10-01T00:00:00Z",
                          "html_url": "https://github.com/github/dmca/blob/master/2026/10/2026-10-01-sandbox.md"},
            }, headers)
        if segs[0] == "repos":
            return api.json_reply(200, github_repo(segs[1], segs[2]), headers)
        return api.json_reply(200, github_user(segs[1]), headers)

    def _limited(self, request: httpx.Request, status: int, extra: dict[str, str] | None = None) -> api.Reply:
        message = (f"API rate limit exceeded for {api.SANDBOX_PUBLIC_ADDRESS}. (But here's the good news: "
                   "Authenticated requests get a higher rate limit. Check out the documentation for more details.)")
        return api.json_reply(status, github_error(message, "overview/rate-limits-for-the-rest-api", status),
                              {**self._headers(request, spent=True), **(extra or {})})

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        """A scenario rate limit spent: GitHub's secondary-limit answer (429 with `retry-after`)."""
        return self._limited(request, 429, {"retry-after": str(window.reset_after_s),
                                            "x-ratelimit-reset": str(int(window.reset_at))})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [GitHubProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    """What the generator asks api.github.com about for `parsed` ([] for GitHub's own pages)."""
    seg = parsed.segments
    if not seg:
        return []
    first = seg[0].lower()
    if first in ("orgs", "sponsors"):
        return [f"github-user:{seg[1]}"] if len(seg) >= 2 else []
    if first in GITHUB_RESERVED:
        return []
    if len(seg) == 1:
        return [f"github-user:{seg[0]}"]
    repo = seg[1][:-4] if seg[1].lower().endswith(".git") and len(seg[1]) > 4 else seg[1]
    return [f"repo:{seg[0]}/{repo}"]


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.CREDIT_EXHAUSTED:
        return ("GitHub has no credits: its spent hourly limit (403 + x-ratelimit-remaining: 0) reads as a "
                "rate limit. Use `rate_limited`")
    return None
