"""GitHub generator: REST API (free; 60 requests/h anonymous, 5000/h with a token), `https://api.github.com`.

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/github/README.md."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.github import GITHUB
from social_recording.platforms.github.spec import GITHUB_RESERVED
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp

API_BASE = "https://api.github.com"
AUTH_HOSTS = frozenset({"api.github.com"})
SERVICE = GITHUB.name

_ZERO_CALL_SUBTYPES = {"search": "search", "topics": "topic"}
_SPONSOR_PAGES = frozenset({"accounts", "explore", "community"})


# ---------------------------------------------------------------- payloads


class _Owner(BaseModel):
    id: int
    login: str = Field(min_length=1)
    type: str = "User"
    avatar_url: str | None = None
    html_url: str | None = None


class _Repo(BaseModel):
    id: int
    name: str | None = None
    full_name: str | None = None
    description: str | None = None
    html_url: str | None = None
    homepage: str | None = None
    language: str | None = None
    created_at: str | None = None
    pushed_at: str | None = None
    fork: bool | None = None
    archived: bool | None = None
    topics: list[str] = Field(default_factory=list)
    stargazers_count: Any = None
    forks_count: Any = None
    open_issues_count: Any = None
    subscribers_count: Any = None
    owner: _Owner


class _User(BaseModel):
    id: int
    login: str = Field(min_length=1)
    type: str = "User"
    name: str | None = None
    bio: str | None = None
    blog: str | None = None
    twitter_username: str | None = None
    company: str | None = None
    location: str | None = None
    html_url: str | None = None
    avatar_url: str | None = None
    created_at: str | None = None
    followers: Any = None
    following: Any = None
    public_repos: Any = None


# ---------------------------------------------------------------- routing


@dataclass(frozen=True)
class _RepoTarget:
    owner: str
    repo: str


@dataclass(frozen=True)
class _UserTarget:
    login: str


def _route(parsed: CanonicalUrl) -> _RepoTarget | _UserTarget | shaping.ZeroCallShape:
    seg = parsed.segments
    if not seg:
        return shaping.ZeroCallShape("page")
    first = seg[0]
    lowered = first.lower()
    if lowered == "orgs" and len(seg) >= 2:
        return _UserTarget(seg[1])
    if lowered == "sponsors" and len(seg) >= 2 and seg[1].lower() not in _SPONSOR_PAGES:
        return _UserTarget(seg[1])
    if lowered in GITHUB_RESERVED:
        return shaping.ZeroCallShape(_ZERO_CALL_SUBTYPES.get(lowered, "page"), {"section": lowered})
    if len(seg) == 1:
        return _UserTarget(first)
    repo = seg[1]
    if repo.lower().endswith(".git") and len(repo) > 4:
        repo = repo[: -len(".git")]
    return _RepoTarget(first, repo)


# ---------------------------------------------------------------- generator


class GitHubGenerator(shaping.PerCallHttpGenerator[_RepoTarget | _UserTarget]):
    """canonical GitHub URL -> repo venue + owner account, or an account (docs/architecture.md, "Platforms").

    Constructed as `GitHubGenerator(token | None, *, transport=None, sleep=time.sleep, api_base=API_BASE)`."""

    platform: Platform = Platform.GITHUB
    secret_name = "token"
    key_variable = GITHUB.key_variable
    default_base_url = API_BASE

    def route(self, parsed: CanonicalUrl) -> _RepoTarget | _UserTarget | shaping.ZeroCallShape:
        return _route(parsed)

    def fetch(
        self, parsed: CanonicalUrl, target: _RepoTarget | _UserTarget, ctx: GenerateContext
    ) -> GenerateResult:
        token = self._secret
        with closing(
            self._client(
                HttpPolicy.free(SERVICE),
                auth_hosts=AUTH_HOSTS,
                auth_headers={"Authorization": f"Bearer {token}"} if token else None,
                default_headers={
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": "2022-11-28",
                },
            )
        ) as http:
            if isinstance(target, _RepoTarget):
                what = f"repo {target.owner}/{target.repo}"
                path = f"/repos/{quote(target.owner, safe='')}/{quote(target.repo, safe='')}"
                data = self._get(http, path, what)
                graph = _repo_graph(shaping.parse_payload(_Repo, data, SERVICE, http))
            else:
                what = f"user {target.login}"
                data = self._get(http, f"/users/{quote(target.login, safe='')}", what)
                graph = _user_graph(shaping.parse_payload(_User, data, SERVICE, http))
        return shaping.finish(graph, requests=http.requests_made)

    def _get(self, http: ProviderHttp, path: str, what: str) -> Any:
        response = http.get(self._base_url + path)
        _STATUS.check(response, http, what)
        return response.json()


def _message(body: dict[str, Any]) -> str:
    raw = body.get("message")
    return raw if isinstance(raw, str) else ""


def _is_rate_limited(response: HttpResponse, body: dict[str, Any]) -> bool:
    headers = response.headers
    if headers.get("x-ratelimit-remaining", "").strip() == "0":
        return True
    if response.status == 429:
        return True
    # Secondary rate limits: 403 with retry-after and/or a "secondary rate limit" message.
    return "retry-after" in headers or "rate limit" in _message(body).lower()


def _block_reason(response: HttpResponse, body: dict[str, Any]) -> dict[str, str]:
    block = body.get("block")
    reason = block.get("reason") if isinstance(block, dict) else None
    return {"block_reason": reason if isinstance(reason, str) else "-"}


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "github: {what} not found (HTTP {status})", frozenset({404, 410})),
        shaping.StatusRule(
            ErrorCode.TARGET_BLOCKED, "github: {what} unavailable for legal reasons (HTTP 451)", frozenset({451})
        ),
        shaping.StatusRule(
            ErrorCode.RATE_LIMITED, "github: rate limited (HTTP {status})", frozenset({403, 429}), _is_rate_limited
        ),
        shaping.StatusRule(
            ErrorCode.TARGET_BLOCKED,
            "github: {what} access blocked (HTTP 403, reason {block_reason})",
            frozenset({403}),
            lambda response, body: isinstance(body.get("block"), dict),
        ),
    ),
    fallback="github: HTTP {status} for {what}",
    details=_block_reason,
)
"""rate limits are kept apart from blocks (a rate limit is ours, never the target's)."""


def _account_subtype(github_type: str) -> str:
    """owner.type "User" / "Organization" (/ "Bot") -> lowercase subtype."""
    return github_type.strip().lower() or "user"


def _repo_graph(repo: _Repo) -> SocialGraph:
    owner = repo.owner
    venue = SocialObject(
        platform=Platform.GITHUB,
        platform_key=f"github:{repo.id}",
        subtype="repo",
        fields={
            "repo_id": repo.id,
            "name": repo.name,
            "full_name": repo.full_name,
            "description": repo.description,
            "html_url": repo.html_url,
            "homepage": repo.homepage,
            "language": repo.language,
            "topics": list(repo.topics),
            "fork": repo.fork,
            "archived": repo.archived,
            "created_at": repo.created_at,
            "pushed_at": repo.pushed_at,
            "owner_id": owner.id,
            "owner_login": owner.login,
        },
        outbound_urls=shaping.canonical_links([shaping.website_link(repo.homepage), *shaping.urls_in_text(repo.description)]),
        metrics=shaping.metrics(
            {
                "stars": repo.stargazers_count,
                "forks": repo.forks_count,
                "open_issues": repo.open_issues_count,
                "watchers": repo.subscribers_count,
            },
            commas=False,
        ),
    )
    account = SocialObject(
        platform=Platform.GITHUB,
        platform_key=f"github:{owner.id}",
        subtype=_account_subtype(owner.type),
        fields={"user_id": owner.id, "login": owner.login, "html_url": owner.html_url},
        avatar_url=owner.avatar_url,
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, account=account, venue=venue)])


def _user_graph(user: _User) -> SocialGraph:
    twitter = f"https://x.com/{user.twitter_username.strip()}" if user.twitter_username else None
    account = SocialObject(
        platform=Platform.GITHUB,
        platform_key=f"github:{user.id}",
        subtype=_account_subtype(user.type),
        fields={
            "user_id": user.id,
            "login": user.login,
            "name": user.name,
            "bio": user.bio,
            "blog": user.blog,
            "twitter_username": user.twitter_username,
            "company": user.company,
            "location": user.location,
            "html_url": user.html_url,
            "created_at": user.created_at,
        },
        outbound_urls=shaping.canonical_links([shaping.website_link(user.blog), twitter, *shaping.urls_in_text(user.bio)]),
        avatar_url=user.avatar_url,
        metrics=shaping.metrics(
            {"followers": user.followers, "following": user.following, "public_repos": user.public_repos},
            commas=False,
        ),
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, account=account)])


make_generator = GitHubGenerator.make
"""The GitHub generator for the registry; without a token it runs anonymously (60 requests/h)."""
