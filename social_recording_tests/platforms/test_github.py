"""GitHub generator: repo and account shapes, identity by numeric ids (never the login), redirects
followed to the final repo, rate limits kept apart from blocks, the token scoped to api.github.com."""

from __future__ import annotations

import httpx
import pytest

from social_recording.domain.graph import ObjectKind, plan, planned_links
from social_recording.domain.urls import Platform
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    Generator,
)
from social_recording.platforms.github.generator import API_BASE, make_generator
from social_recording.platforms.http import MAX_RESPONSE_BYTES
from social_recording_tests.platforms.mocks import (
    MINT,
    ScriptedProvider,
    Sleeps,
    assert_zero_call,
    fixture_json,
    fixture_response,
    generate_error,
    json_response,
    oversized,
    scripted_generator,
)

TOKEN = "ghp_testtoken0123456789abcdef"
CTX = GenerateContext(token_address=MINT)
REPO = f"{API_BASE}/repos/octocat/hello-world"
USER = f"{API_BASE}/users/octocat"


def _gen(provider: ScriptedProvider, sleeps: Sleeps | None = None, token: str | None = TOKEN) -> Generator:
    return scripted_generator(make_generator, provider, sleeps, github_token=token)


def _fail(gen: Generator, url: str) -> ExternalFetchError:
    return generate_error(gen, url, CTX, secret=TOKEN)


# ------------------------------------------------------------------------------------ success


def test_repo_one_call_venue_and_owner_keyed_by_numeric_ids() -> None:
    provider = ScriptedProvider().on("GET", REPO, fixture_response("github", "repo.json"))
    gen = _gen(provider)
    assert gen.platform is Platform.GITHUB
    result = gen.generate("https://github.com/octocat/hello-world", CTX)

    assert result.attempted is True and result.requests == 1
    (request,) = provider.requests
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["authorization"] == f"Bearer {TOKEN}"

    links = planned_links(plan(result.graph))
    assert {(link.kind, link.depth) for link in links} == {(ObjectKind.ACCOUNT, 0), (ObjectKind.VENUE, 0)}
    root = result.graph.groups[0]
    assert root.venue is not None and root.account is not None and root.content is None
    assert root.venue.platform_key == "github:1296269"
    assert root.venue.subtype == "repo"
    assert root.venue.metrics == {"stars": 2874.0, "forks": 2741.0, "open_issues": 1203.0, "watchers": 1731.0}
    # the homepage (scheme-less as GitHub stores it) and links in the description, canonical
    assert root.venue.outbound_urls == [
        "https://octocat.github.io/Hello-World",
        "https://docs.github.com/en/get-started",
    ]
    # the owner is keyed by its numeric id, never its (renamable) login
    assert root.account.platform_key == "github:583231"
    assert "octocat" not in root.account.platform_key
    assert root.account.subtype == "user"
    assert root.account.fields["login"] == "octocat"
    assert root.account.avatar_url == "https://avatars.githubusercontent.com/u/583231?v=4"


def test_org_owned_repo_owner_subtype_organization() -> None:
    provider = ScriptedProvider().on(
        "GET", f"{API_BASE}/repos/nodejs/node", fixture_response("github", "repo_org.json")
    )
    result = _gen(provider).generate("https://github.com/nodejs/node", CTX)
    account = result.graph.groups[0].account
    assert account is not None
    assert account.subtype == "organization"
    assert account.platform_key == "github:9950313"


def test_renamed_repo_301_is_followed_and_the_final_repo_id_is_used() -> None:
    moved = {**fixture_json("github", "repo.json"), "id": 99887766, "full_name": "octocat/new-name"}
    provider = (
        ScriptedProvider()
        .on(
            "GET",
            REPO,
            httpx.Response(
                301,
                json=fixture_json("github", "moved.json"),
                headers={"location": f"{API_BASE}/repositories/99887766"},
            ),
        )
        .on("GET", f"{API_BASE}/repositories/99887766", json_response(200, moved))
    )
    result = _gen(provider).generate("https://github.com/octocat/hello-world", CTX)
    assert result.requests == 2
    venue = result.graph.groups[0].venue
    assert venue is not None and venue.platform_key == "github:99887766"
    # the token followed the redirect because it stayed on api.github.com
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in provider.requests)


def test_redirect_to_a_foreign_host_drops_the_token() -> None:
    provider = (
        ScriptedProvider()
        .on("GET", REPO, httpx.Response(301, headers={"location": "https://mirror.example/repos/octocat/x"}))
        .on(
            "GET",
            "https://mirror.example/repos/octocat/x",
            json_response(200, fixture_json("github", "repo.json")),
        )
    )
    result = _gen(provider).generate("https://github.com/octocat/hello-world", CTX)
    assert result.requests == 2
    first, second = provider.requests
    assert first.headers["authorization"] == f"Bearer {TOKEN}"
    assert second.url.host == "mirror.example"
    assert "authorization" not in second.headers
    assert TOKEN not in repr(_gen(provider))


def test_user_account_with_canonical_outbound_links() -> None:
    provider = ScriptedProvider().on("GET", USER, fixture_response("github", "user.json"))
    result = _gen(provider).generate("https://github.com/octocat", CTX)
    assert result.requests == 1
    plan(result.graph)
    root = result.graph.groups[0]
    assert root.account is not None and root.venue is None and root.content is None
    account = root.account
    assert account.platform_key == "github:583231"
    assert account.subtype == "user"
    assert account.outbound_urls == ["https://github.blog", "https://x.com/github", "https://docs.github.com"]
    assert account.metrics == {"followers": 17000.0, "following": 9.0, "public_repos": 8.0}
    assert account.avatar_url == "https://avatars.githubusercontent.com/u/583231?v=4"


def test_anonymous_without_token_sends_no_authorization() -> None:
    provider = ScriptedProvider().on(
        "GET", f"{API_BASE}/users/solana-labs", fixture_response("github", "org.json")
    )
    result = _gen(provider, token=None).generate("https://github.com/solana-labs", CTX)
    assert "authorization" not in provider.requests[0].headers
    account = result.graph.groups[0].account
    assert account is not None
    assert account.subtype == "organization"
    assert account.platform_key == "github:35608259"
    assert account.outbound_urls == ["https://solanalabs.com"]  # scheme-less blog read as https


def test_sponsors_page_is_the_sponsored_account() -> None:
    provider = ScriptedProvider().on("GET", USER, fixture_response("github", "user.json"))
    result = _gen(provider).generate("https://github.com/sponsors/octocat", CTX)
    assert provider.requests[0].url.path == "/users/octocat"
    assert result.graph.groups[0].account is not None


@pytest.mark.parametrize(
    ("url", "subtype"),
    [
        ("https://github.com/topics/solana", "topic"),
        ("https://github.com/search?q=solana", "search"),
        ("https://github.com/explore", "page"),
        ("https://github.com/trending", "page"),
        ("https://github.com/marketplace", "page"),
        ("https://github.com/features/actions", "page"),
        ("https://github.com", "page"),
    ],
)
def test_reserved_pages_are_zero_call(url: str, subtype: str) -> None:
    provider = ScriptedProvider()
    assert_zero_call(_gen(provider).generate(url, CTX), len(provider.requests), "github", url, subtype)


# ------------------------------------------------------------------------------------ failures


@pytest.mark.parametrize(
    ("url", "api"), [("https://github.com/octocat/hello-world", REPO), ("https://github.com/octocat", USER)]
)
def test_404_missing_or_private_is_not_found(url: str, api: str) -> None:
    provider = ScriptedProvider().on("GET", api, fixture_response("github", "not_found.json", 404))
    err = _fail(_gen(provider), url)
    assert err.code is ErrorCode.NOT_FOUND and err.attempted is True
    assert len(provider.requests) == 1


def test_451_dmca_is_blocked() -> None:
    provider = ScriptedProvider().on("GET", REPO, fixture_response("github", "dmca.json", 451))
    err = _fail(_gen(provider), "https://github.com/octocat/hello-world")
    assert err.code is ErrorCode.TARGET_BLOCKED and err.attempted is True
    assert len(provider.requests) == 1


def test_403_repository_access_blocked_is_blocked() -> None:
    provider = ScriptedProvider().on("GET", REPO, fixture_response("github", "tos_blocked.json", 403))
    err = _fail(_gen(provider), "https://github.com/octocat/hello-world")
    assert err.code is ErrorCode.TARGET_BLOCKED and err.attempted is True


@pytest.mark.parametrize(
    ("status", "fixture", "headers"),
    [
        (403, "rate_limited.json", {"x-ratelimit-remaining": "0", "x-ratelimit-limit": "60"}),
        (429, "rate_limited.json", {"x-ratelimit-remaining": "0"}),
        (429, "secondary_rate_limited.json", {}),
        (403, "secondary_rate_limited.json", {"retry-after": "60"}),
    ],
)
def test_rate_limit_is_rate_limited_not_blocked(status: int, fixture: str, headers: dict[str, str]) -> None:
    provider = ScriptedProvider().on("GET", USER, fixture_response("github", fixture, status, headers))
    err = _fail(_gen(provider), "https://github.com/octocat")
    assert err.code is ErrorCode.RATE_LIMITED and err.attempted is True
    assert len(provider.requests) == 1


def test_other_403_is_upstream() -> None:
    provider = ScriptedProvider().on(
        "GET", REPO, fixture_response("github", "forbidden.json", 403, {"x-ratelimit-remaining": "4999"})
    )
    err = _fail(_gen(provider), "https://github.com/octocat/hello-world")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True


def test_payload_without_owner_id_is_upstream() -> None:
    body = fixture_json("github", "repo.json")
    del body["owner"]["id"]
    provider = ScriptedProvider().on("GET", REPO, json_response(200, body))
    err = _fail(_gen(provider), "https://github.com/octocat/hello-world")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert "owner.id" in str(err)


def test_oversized_body_is_upstream() -> None:
    provider = ScriptedProvider().on("GET", REPO, oversized(MAX_RESPONSE_BYTES + 1))
    err = _fail(_gen(provider), "https://github.com/octocat/hello-world")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 1
