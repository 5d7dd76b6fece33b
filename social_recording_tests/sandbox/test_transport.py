"""SandboxTransport: routing, provider shapes per outcome, ledger lines, determinism, cross-process flaky."""

from __future__ import annotations

import json
import multiprocessing
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from social_recording.platforms.web.fake import urlscan_uuid
from social_recording.sandbox import TRACKER_BASE_URL, Ledger, SandboxTransport, sandbox_resolve_host
from social_recording_tests.sandbox._helpers import KEY, make, scenario, token
from social_recording_tests.sandbox._workers import call_flaky

TW = "https://api.twitterapi.io/twitter"
APIFY = "https://api.apify.com/v2/acts"
APIFY_RUNS = "https://api.apify.com/v2/actor-runs"
YT = "https://www.googleapis.com/youtube/v3"
GH = "https://api.github.com"


def last_entry(ledger: Ledger) -> Any:
    return ledger.read()[-1]


# ------------------------------------------------------------------ tracker


TOKENS = [
    token("A1", last="2026-11-01T00:00:00Z", investors=5, website="TBA", twitter="https://t.co/abc", telegram=None),
    token("A2", last="2026-11-01T23:59:59Z", investors=2, discord="https://discord.gg/x"),
    token("A3", last="2026-11-02T00:00:00Z", investors=9),  # end is exclusive
    token("A4", last="2026-11-01T12:00:00Z", investors=1),  # the upstream pre-filter drops investorCount <= 1
    token("A5", last="2026-10-31T23:59:59Z", investors=7),
]


def test_tracker_range_filters_by_last_transfer_and_investors(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario(tokens=TOKENS))
    r = client.get(f"{TRACKER_BASE_URL}/api/v1/tokens", headers={"X-API-Key": KEY},
                   params={"startDate": "2026-11-01T00:00:00.000Z", "endDate": "2026-11-02T00:00:00.000Z",
                           "afGroupIds": "g1,g2"})
    assert r.status_code == 200
    data = r.json()["data"]
    assert [d["tokenAddress"] for d in data] == ["A1", "A2"]
    assert data[0]["investorCount"] == 5 and data[0]["lastTransferAt"] == "2026-11-01T00:00:00.000Z"
    assert data[0]["firstTransferAt"] == "2026-11-01T00:00:00.000Z" and data[0]["tokenSymbol"] == "A1"
    entry = last_entry(ledger)
    assert (entry.service, entry.subject, entry.paid) == (
        "tracker", "range:2026-11-01T00:00:00.000Z/2026-11-02T00:00:00.000Z", False)


def test_tracker_range_answer_streams_as_a_server_sends_a_large_body(tmp_path: Path) -> None:
    """The range answer is made while it is read (chunked, no Content-Length), in chunks of at most
    200 items, so the sandbox, in a run's own process, never holds a whole window's answer."""
    many = [token(f"S{i:04d}", last="2026-11-01T06:00:00Z") for i in range(450)]
    _, _, client, _ = make(tmp_path, scenario(tokens=many))
    with client.stream("GET", f"{TRACKER_BASE_URL}/api/v1/tokens", headers={"X-API-Key": KEY},
                       params={"startDate": "2026-11-01", "endDate": "2026-11-02", "afGroupIds": "g"}) as r:
        assert r.status_code == 200 and "content-length" not in r.headers
        chunks = list(r.iter_raw())
    assert len(chunks) == 5  # the opening, three chunks of items (200, 200, 50), the closing
    data = json.loads(b"".join(chunks))["data"]
    assert [d["tokenAddress"] for d in data] == [f"S{i:04d}" for i in range(450)]


@pytest.mark.parametrize(
    ("params", "headers", "status"),
    [({"startDate": "2026-11-01", "endDate": "2026-11-02"}, {"X-API-Key": KEY}, 400),  # afGroupIds missing
     ({"startDate": "2026-11-01", "endDate": "2026-11-02", "afGroupIds": " , "}, {"X-API-Key": KEY}, 400),
     ({"startDate": "yesterday", "endDate": "2026-11-02", "afGroupIds": "g"}, {"X-API-Key": KEY}, 400),
     ({"startDate": "2026-11-03", "endDate": "2026-11-02", "afGroupIds": "g"}, {"X-API-Key": KEY}, 400),
     ({"endDate": "2026-11-02", "afGroupIds": "g"}, {"X-API-Key": KEY}, 400),
     ({"startDate": "2026-11-01", "endDate": "2026-11-02", "afGroupIds": "g"}, {}, 401),
     ({"startDate": "2026-11-01", "endDate": "2026-11-02", "afGroupIds": "g"}, {"X-API-Key": " "}, 401)],
)
def test_tracker_range_rejects_bad_requests(tmp_path: Path, params: dict[str, str], headers: dict[str, str],
                                            status: int) -> None:
    _, ledger, client, _ = make(tmp_path, scenario(tokens=TOKENS))
    r = client.get(f"{TRACKER_BASE_URL}/api/v1/tokens", params=params, headers=headers)
    assert r.status_code == status
    assert r.json()["statusCode"] == status
    assert last_entry(ledger).status == status


def test_tracker_by_addresses_returns_raw_values(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario(tokens=TOKENS))
    r = client.post(f"{TRACKER_BASE_URL}/api/v1/tokens/by-addresses", headers={"X-API-Key": KEY},
                    json={"addresses": ["A1", "nope", "A2"]})
    assert r.status_code == 200
    data = r.json()["data"]
    assert [d["tokenAddress"] for d in data] == ["A1", "A2"]
    a1 = data[0]
    assert {k: a1[k] for k in ("tokenSymbol", "tokenName", "imageUrl", "website", "twitter", "telegram", "discord")} == {
        "tokenSymbol": "A1", "tokenName": "Token A1", "imageUrl": "https://img.example/A1.png", "website": "TBA",
        "twitter": "https://t.co/abc", "telegram": None, "discord": None}
    assert last_entry(ledger).subject == "token:A1,nope,A2"
    bad = client.post(f"{TRACKER_BASE_URL}/api/v1/tokens/by-addresses", headers={"X-API-Key": KEY}, json={"addresses": []})
    assert bad.status_code == 400
    assert client.post(f"{TRACKER_BASE_URL}/api/v1/tokens/by-addresses", json={"addresses": ["A1"]}).status_code == 401


def test_tracker_base_url_is_configurable(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario(tokens=TOKENS), tracker_base_url="https://tracker.internal:8443/base")
    r = client.post("https://tracker.internal:8443/base/api/v1/tokens/by-addresses", headers={"X-API-Key": KEY},
                    json={"addresses": ["A3"]})
    assert r.json()["data"][0]["tokenAddress"] == "A3"
    with pytest.raises(httpx.ConnectError):
        client.post(f"{TRACKER_BASE_URL}/api/v1/tokens/by-addresses", json={"addresses": ["A3"]})


# ------------------------------------------------------------------ shortlinks, routing, dns


def test_shortlinks_redirect_on_head_and_get(tmp_path: Path) -> None:
    sc = scenario(redirects={"https://t.co/abc": "https://x.com/a/status/1?s=20",
                             "https://bit.ly/yt/": "https://youtu.be/dQw4w9WgXcQ"})
    _, ledger, client, _ = make(tmp_path, sc)
    head = client.head("https://t.co/abc")
    assert head.status_code == 301 and head.headers["location"] == "https://x.com/a/status/1?s=20"
    assert client.get("https://t.co/abc/").headers["location"] == "https://x.com/a/status/1?s=20"  # trailing slash
    assert client.get("https://bit.ly/yt").headers["location"] == "https://youtu.be/dQw4w9WgXcQ"
    assert client.get("https://t.co/unknown").status_code == 404  # a shortener host, but no such code
    entries = ledger.read()
    assert [(e.service, e.method, e.subject, e.status) for e in entries] == [
        ("shortlink", "HEAD", "short:https://t.co/abc", 301),
        ("shortlink", "GET", "short:https://t.co/abc/", 301),
        ("shortlink", "GET", "short:https://bit.ly/yt", 301),
        ("shortlink", "GET", "short:https://t.co/unknown", 404),
    ]


def test_unknown_host_is_a_connect_error_and_not_ledgered(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    with pytest.raises(httpx.ConnectError, match="no route to host"):
        client.get("https://example.org/")
    with pytest.raises(httpx.ConnectError):
        client.get("https://x.com/foo")  # the platform's site itself is not an API the sandbox serves
    assert ledger.read() == []


def test_resolve_host_gives_one_public_address() -> None:
    import ipaddress

    for host in ("t.co", "bit.ly", "anything.example"):
        addresses = sandbox_resolve_host(host)
        assert len(addresses) == 1 and ipaddress.ip_address(addresses[0]).is_global


# ------------------------------------------------------------------ twitterapi.io


def tweets(client: httpx.Client, ids: str) -> httpx.Response:
    return client.get(f"{TW}/tweets", params={"tweet_ids": ids}, headers={"X-API-Key": KEY})


def test_twitter_ok_tweet_shape_and_author_from_the_tokens_raw_url(tmp_path: Path) -> None:
    """The canonical tweet form x.com/i/status/<id> has no handle: the author comes from the raw URL a
    token carries (directly or at the end of a redirect), so answers agree with what the tracker said."""
    raw = token("T1", last="2026-11-01T00:00:00Z", twitter="https://twitter.com/SolDog/status/1851234567890123456?s=20")
    sc = scenario({"https://x.com/i/status/1851234567890123456": "ok"}, tokens=[raw])
    _, ledger, client, _ = make(tmp_path, sc)
    body = tweets(client, "1851234567890123456").json()
    assert body["status"] == "success" and len(body["tweets"]) == 1
    t = body["tweets"][0]
    for field in ("id", "url", "text", "createdAt", "lang", "author", "likeCount", "retweetCount", "replyCount",
                  "quoteCount", "viewCount", "bookmarkCount", "isReply", "inReplyToId", "inReplyToUserId",
                  "quoted_tweet", "retweeted_tweet", "entities"):
        assert field in t, field
    assert t["id"] == "1851234567890123456" and t["author"]["userName"] == "SolDog"
    assert t["author"]["id"].isdigit() and {"userName", "name", "id"} <= set(t["author"])
    assert t["createdAt"].endswith("2024")  # from the snowflake id: Oct 2024
    entry = last_entry(ledger)
    assert (entry.service, entry.subject, entry.paid, entry.status) == ("twitterapi", "tweet:1851234567890123456", True, 200)


def test_twitter_quote_chains_are_deterministic_and_bounded(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    depths = []
    for i in range(40):
        t = tweets(client, str(1851234567890123400 + i)).json()["tweets"][0]
        depth = 0
        while t["quoted_tweet"] is not None:
            depth += 1
            assert int(t["quoted_tweet"]["id"]) < int(t["id"])  # a quoted tweet predates its quote
            t = t["quoted_tweet"]
        depths.append(depth)
    assert set(depths) == {0, 1, 2}
    assert 4 <= sum(1 for d in depths if d) <= 20  # about one in four


def test_twitter_author_hint_through_a_redirect_and_without_any(tmp_path: Path) -> None:
    raw = token("T1", last="2026-11-01T00:00:00Z", twitter="https://t.co/abc")
    sc = scenario(tokens=[raw], redirects={"https://t.co/abc": "https://fxtwitter.com/Frog_Dev/status/1851234567890123499/photo/1"})
    _, _, client, _ = make(tmp_path, sc)
    assert tweets(client, "1851234567890123499").json()["tweets"][0]["author"]["userName"] == "Frog_Dev"
    # a tweet no raw URL names: a generated author, the same one for every sandbox instance
    first = tweets(client, "1851234567890123400").json()["tweets"][0]["author"]["userName"]
    _, _, other, _ = make(tmp_path / "other", scenario())
    assert tweets(other, "1851234567890123400").json()["tweets"][0]["author"]["userName"] == first


def test_twitter_same_author_id_everywhere(tmp_path: Path) -> None:
    raw = token("T1", last="2026-11-01T00:00:00Z", twitter="https://x.com/soldog/status/1851234567890123456")
    sc = scenario({"https://x.com/i/status/1851234567890123456": "ok"}, tokens=[raw])
    _, _, client, _ = make(tmp_path, sc)
    in_tweet = tweets(client, "1851234567890123456").json()["tweets"][0]["author"]["id"]
    profile = client.get(f"{TW}/user/info", params={"userName": "SolDog"}, headers={"X-API-Key": KEY}).json()
    assert profile["status"] == "success" and profile["data"]["id"] == in_tweet
    assert profile["data"]["unavailable"] is False


@pytest.mark.parametrize(
    ("outcome", "status", "check"),
    [("not_found", 200, lambda b: b["tweets"] == []),
     ("blocked", 200, lambda b: b["tweets"] == []),
     ("error", 503, lambda b: b["status"] == "error"),
     ("rate_limited", 429, lambda b: b["status"] == "error"),
     ("credit_exhausted", 402, lambda b: "Credits is not enough" in b["msg"])],
)
def test_twitter_tweet_outcomes(tmp_path: Path, outcome: str, status: int, check: Any) -> None:
    _, ledger, client, _ = make(tmp_path, scenario({"https://x.com/i/status/77": outcome}))
    r = tweets(client, "77")
    assert r.status_code == status and check(r.json())
    assert last_entry(ledger).status == status


def test_twitter_invalid_is_a_quote_cycle(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario({"https://x.com/i/status/1851234567890123456": "invalid"}))
    a = tweets(client, "1851234567890123456").json()["tweets"][0]
    b = a["quoted_tweet"]
    assert b["id"] != a["id"] and b["quoted_tweet"]["id"] == a["id"]


@pytest.mark.parametrize(
    ("outcome", "status", "check"),
    [("ok", 200, lambda b: b["data"]["userName"] == "foo" and b["data"]["id"].isdigit()),
     ("not_found", 200, lambda b: b["status"] == "error" and "data" not in b),
     ("blocked", 200, lambda b: b["data"]["unavailable"] is True and b["data"]["unavailableReason"] == "Suspended"),
     ("rate_limited", 429, lambda b: True),
     ("credit_exhausted", 402, lambda b: True)],
)
def test_twitter_user_outcomes(tmp_path: Path, outcome: str, status: int, check: Any) -> None:
    _, ledger, client, _ = make(tmp_path, scenario({"https://x.com/foo": outcome}))
    r = client.get(f"{TW}/user/info", params={"userName": "foo"}, headers={"X-API-Key": KEY})
    assert r.status_code == status and check(r.json())
    assert last_entry(ledger).subject == "user:foo"


def test_twitter_requires_a_key(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    assert client.get(f"{TW}/tweets", params={"tweet_ids": "1"}).status_code == 401
    assert last_entry(ledger).status == 401


# ------------------------------------------------------------------ apify


def start_run(client: httpx.Client, actor: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(f"{APIFY}/{actor}/runs", params={"timeout": "90"}, json=body,
                       headers={"Authorization": f"Bearer {KEY}"})


def run_actor(client: httpx.Client, actor: str, body: dict[str, Any]) -> httpx.Response:
    """The whole asynchronous flow: start the run, read its status until it finished, read its
    dataset; the failing answer when the start is refused."""
    started = start_run(client, actor, body)
    if started.status_code != 201:
        return started
    run = started.json()["data"]
    assert run["status"] == "READY" and run["id"] and run["defaultDatasetId"]
    statuses = [client.get(f"{APIFY_RUNS}/{run['id']}", params={"waitForFinish": "60"}).json()["data"]["status"]
                for _ in range(2)]
    assert statuses == ["RUNNING", "SUCCEEDED"]
    return client.get(f"https://api.apify.com/v2/datasets/{run['defaultDatasetId']}/items",
                      params={"clean": "true", "format": "json"})


def submitted(ledger: Ledger) -> list[Any]:
    """The billed run starts (not the free status and dataset reads)."""
    return [e for e in ledger.read() if e.service == "apify" and e.subject.startswith("apify:")]


def test_apify_tiktok_post_and_profile(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    r = run_actor(client, "clockworks~tiktok-scraper", {"postURLs": ["https://tiktok.com/@/video/7301234567890123456"]})
    assert r.status_code == 200
    (item,) = r.json()
    author = item["authorMeta"]["name"]
    assert item["id"] == "7301234567890123456" and author
    for field in ("text", "createTime", "createTimeISO", "webVideoUrl", "playCount", "diggCount", "commentCount",
                  "shareCount", "collectCount"):
        assert field in item, field
    assert {"id", "name", "nickName", "verified", "signature", "fans", "following", "heart", "video",
            "privateAccount", "avatar"} <= set(item["authorMeta"])
    assert submitted(ledger)[-1].subject == "apify:https://tiktok.com/@/video/7301234567890123456"
    profile = run_actor(client, "clockworks~tiktok-scraper", {"profiles": [author], "resultsPerPage": 1}).json()
    assert profile[0]["authorMeta"]["id"] == item["authorMeta"]["id"]
    assert submitted(ledger)[-1].subject == f"apify:https://tiktok.com/@{author}"
    # the author belongs to the post: a URL naming another handle gets the same post and author
    (again,) = run_actor(client, "clockworks~tiktok-scraper",
                         {"postURLs": ["https://www.tiktok.com/@whale/video/7301234567890123456"]}).json()
    assert (again["id"], again["authorMeta"]["id"]) == (item["id"], item["authorMeta"]["id"])


def test_apify_instagram_post_reel_profile(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    post = run_actor(client, "apify~instagram-scraper", {"directUrls": ["https://instagram.com/p/C9xYz"],
                                                         "resultsType": "posts", "resultsLimit": 1}).json()[0]
    assert {"id", "shortCode", "url", "type", "productType", "caption", "timestamp", "ownerId", "ownerUsername",
            "likesCount", "commentsCount", "displayUrl"} <= set(post)
    assert post["shortCode"] == "C9xYz" and post["productType"] == "feed"
    # every media's canonical URL is /p/<code>: the kind belongs to the code (sandbox: "R…" codes are reels)
    reel = run_actor(client, "apify~instagram-scraper", {"directUrls": ["https://instagram.com/p/RC9abc"],
                                                         "resultsType": "posts"}).json()[0]
    assert reel["productType"] == "clips" and "videoViewCount" in reel
    for url in ("https://instagram.com/reel/C9abc", "https://instagram.com/tv/C9abc", "https://instagram.com/p/C9abc"):
        item = run_actor(client, "apify~instagram-scraper", {"directUrls": [url], "resultsType": "posts"}).json()[0]
        assert item["productType"] == "feed" and item["shortCode"] == "C9abc"
    via_reel = run_actor(client, "apify~instagram-scraper", {"directUrls": ["https://instagram.com/reel/RC9abc"]}).json()[0]
    assert via_reel["id"] == reel["id"] and via_reel["productType"] == "clips"
    profile = run_actor(client, "apify~instagram-scraper", {"directUrls": ["https://instagram.com/someone"],
                                                            "resultsType": "details"}).json()[0]
    assert {"id", "username", "fullName", "biography", "followersCount", "followsCount", "postsCount", "verified",
            "private", "externalUrl"} <= set(profile)
    assert profile["private"] is False


def test_apify_reddit_post_community_user(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())

    def run(url: str) -> dict[str, Any]:
        items = run_actor(client, "trudax~reddit-scraper-lite",
                          {"startUrls": [{"url": url}], "maxItems": 1, "skipComments": True}).json()
        assert len(items) == 1
        return dict(items[0])

    post = run("https://reddit.com/comments/1gk2x7q")
    assert post["dataType"] == "post" and post["id"] == "t3_1gk2x7q" and post["parsedId"] == "1gk2x7q"
    sub = post["parsedCommunityName"]
    assert sub and post["communityName"] == f"r/{sub}"  # the post's subreddit, from the post, not the URL
    for other in ("https://reddit.com/r/elsewhere/comments/1gk2x7q/slug", "https://redd.it/1gk2x7q"):
        same = run(other)
        assert (same["id"], same["parsedCommunityName"]) == (post["id"], sub)
    assert {"url", "title", "body", "username", "userId", "createdAt", "upVotes", "numberOfComments", "over18"} <= set(post)
    assert run("https://reddit.com/r/solana")["dataType"] == "community"
    assert run("https://reddit.com/user/someone")["username"] == "someone"
    assert ledger.read()[0].subject == "apify:https://reddit.com/comments/1gk2x7q"


@pytest.mark.parametrize(
    ("outcome", "status", "check"),
    [("not_found", 200, lambda b: b == []),
     ("blocked", 200, lambda b: "private" in b[0]["error"] and b[0]["errorDescription"]),
     ("error", 503, lambda b: b["error"]["type"]),
     ("rate_limited", 429, lambda b: b["error"]["type"] == "rate-limit-exceeded"),
     ("credit_exhausted", 402, lambda b: b["error"]["type"])],
)
def test_apify_outcomes(tmp_path: Path, outcome: str, status: int, check: Any) -> None:
    url = "https://tiktok.com/@/video/7302222222222222222"
    _, _, client, _ = make(tmp_path, scenario({url: outcome}))
    r = run_actor(client, "clockworks~tiktok-scraper", {"postURLs": [url]})
    assert r.status_code == status and check(r.json())


def test_apify_matches_the_target_through_canonicalisation_and_blocks_profiles_as_private(tmp_path: Path) -> None:
    sc = scenario({"https://tiktok.com/@cat": "blocked", "https://instagram.com/priv": "blocked"})
    _, _, client, _ = make(tmp_path, sc)
    tiktok = run_actor(client, "clockworks~tiktok-scraper", {"profiles": ["@Cat"]}).json()
    assert tiktok[0]["authorMeta"]["privateAccount"] is True
    ig = run_actor(client, "apify~instagram-scraper", {"directUrls": ["https://www.instagram.com/Priv/"],
                                                       "resultsType": "details"}).json()
    assert ig[0]["private"] is True


def test_apify_auth_actor_and_input_errors(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    assert client.post(f"{APIFY}/clockworks~tiktok-scraper/runs",
                       json={"postURLs": ["https://tiktok.com/@/video/1"]}).status_code == 401
    assert client.post(f"{APIFY}/clockworks~tiktok-scraper/runs",
                       params={"token": KEY}, json={"postURLs": ["https://tiktok.com/@/video/1"]}).status_code == 201
    assert start_run(client, "someone~other-actor", {}).status_code == 404
    assert start_run(client, "clockworks%2Ftiktok-scraper", {"postURLs": ["https://tiktok.com/@/video/1"]}).status_code == 201
    assert start_run(client, "trudax~reddit-scraper-lite", {"maxItems": 1}).status_code == 400
    assert client.get(f"{APIFY_RUNS}/NoSuchRun0000000").json()["error"]["type"] == "record-not-found"
    assert client.get("https://api.apify.com/v2/datasets/NoSuchSet00000000/items").status_code == 404


# ------------------------------------------------------------------ youtube


def yt(client: httpx.Client, endpoint: str, **params: str) -> httpx.Response:
    return client.get(f"{YT}/{endpoint}", params={"part": "snippet,statistics", "key": "SECRET-KEY", **params})


def test_youtube_video_and_channels(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    video = yt(client, "videos", id="dQw4w9WgXcQ").json()
    assert video["kind"] == "youtube#videoListResponse"
    (item,) = video["items"]
    assert item["id"] == "dQw4w9WgXcQ" and item["snippet"]["channelId"].startswith("UC")
    assert len(item["snippet"]["channelId"]) == 24
    assert {"title", "description", "publishedAt", "channelTitle"} <= set(item["snippet"])
    assert all(isinstance(v, str) for v in item["statistics"].values())  # numbers as strings
    by_handle = yt(client, "channels", forHandle="@goatsoltv").json()["items"][0]
    assert by_handle["snippet"]["customUrl"] == "@goatsoltv"
    assert {"subscriberCount", "hiddenSubscriberCount", "viewCount", "videoCount"} <= set(by_handle["statistics"])
    by_id = yt(client, "channels", id="UC1234567890abcdefghijkl").json()["items"][0]
    assert by_id["id"] == "UC1234567890abcdefghijkl"
    assert yt(client, "channels", forUsername="legacy").json()["items"][0]["id"].startswith("UC")
    subjects = [e.subject for e in ledger.read()]
    assert subjects == ["video:dQw4w9WgXcQ", "channel:@goatsoltv", "channel:UC1234567890abcdefghijkl", "channel:legacy"]
    assert "SECRET-KEY" not in ledger.path.read_text()


@pytest.mark.parametrize(
    ("target", "request_", "status", "check"),
    [("https://youtube.com/watch?v=aaaaaaaaaaa", ("videos", {"id": "aaaaaaaaaaa"}), 200,
      lambda b: b["items"] == [] and b["pageInfo"]["totalResults"] == 0),
     ("https://youtube.com/@gone", ("channels", {"forHandle": "@gone"}), 200, lambda b: "items" not in b),
     ("https://youtube.com/channel/UCxxxxxxxxxxxxxxxxxxxxxx", ("channels", {"id": "UCxxxxxxxxxxxxxxxxxxxxxx"}), 200,
      lambda b: "items" not in b)],
)
def test_youtube_not_found_is_200_without_items(tmp_path: Path, target: str, request_: tuple[str, dict[str, str]],
                                                status: int, check: Any) -> None:
    _, _, client, _ = make(tmp_path, scenario({target: "not_found"}))
    r = yt(client, request_[0], **request_[1])
    assert r.status_code == status and check(r.json())


@pytest.mark.parametrize(
    ("outcome", "status", "reason"),
    [("credit_exhausted", 403, "quotaExceeded"), ("rate_limited", 429, "rateLimitExceeded"), ("error", 503, "backendError")],
)
def test_youtube_failures(tmp_path: Path, outcome: str, status: int, reason: str) -> None:
    _, _, client, _ = make(tmp_path, scenario({"https://youtube.com/watch?v=bbbbbbbbbbb": outcome}))
    r = yt(client, "videos", id="bbbbbbbbbbb")
    assert r.status_code == status and r.json()["error"]["errors"][0]["reason"] == reason


def test_youtube_needs_a_key(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    r = client.get(f"{YT}/videos", params={"part": "snippet", "id": "x"})
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"


# ------------------------------------------------------------------ github


def test_github_repo_and_user(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    repo = client.get(f"{GH}/repos/pandasol/panda-token").json()
    assert repo["full_name"] == "pandasol/panda-token" and isinstance(repo["id"], int)
    assert {"id", "login", "type"} <= set(repo["owner"]) and repo["owner"]["type"] in ("User", "Organization")
    for field in ("description", "html_url", "created_at", "pushed_at", "fork", "archived", "stargazers_count", "forks_count"):
        assert field in repo, field
    user = client.get(f"{GH}/users/pandasol").json()
    assert user["id"] == repo["owner"]["id"] and user["type"] == repo["owner"]["type"]
    for field in ("login", "name", "bio", "blog", "twitter_username", "created_at", "followers", "public_repos"):
        assert field in user, field
    assert [e.subject for e in ledger.read()] == ["repo:pandasol/panda-token", "github-user:pandasol"]


@pytest.mark.parametrize(
    ("outcome", "status", "remaining"),
    [("not_found", 404, "59"), ("blocked", 451, "59"), ("rate_limited", 429, "0"), ("credit_exhausted", 403, "0"),
     ("error", 503, "59")],
)
def test_github_outcomes(tmp_path: Path, outcome: str, status: int, remaining: str) -> None:
    _, _, client, _ = make(tmp_path, scenario({"https://github.com/o/r": outcome}))
    r = client.get(f"{GH}/repos/o/r")
    assert r.status_code == status and r.headers["x-ratelimit-remaining"] == remaining
    if outcome == "blocked":
        assert r.json()["block"]["reason"] == "dmca"


def test_bluesky_rate_limit_names_its_reset_as_the_appview_does(tmp_path: Path) -> None:
    """No retry-after: the `ratelimit-*` headers, the reset in epoch seconds, which the client's
    limiter reads as the wait (outbound/limits.py, penalty_seconds)."""
    from social_recording.outbound.limits import penalty_seconds
    from social_recording.platforms.bluesky.fake import SCRIPTED_RESET_S

    _, _, client, _ = make(tmp_path, scenario({"https://bsky.app/profile/busy.bsky.social": "rate_limited"}))
    before = time.time()
    r = client.get("https://public.api.bsky.app/xrpc/app.bsky.actor.getProfile", params={"actor": "busy.bsky.social"})
    assert r.status_code == 429 and "retry-after" not in r.headers
    assert (r.headers["ratelimit-limit"], r.headers["ratelimit-remaining"]) == ("3000", "0")
    assert before + SCRIPTED_RESET_S - 1 <= int(r.headers["ratelimit-reset"]) <= time.time() + SCRIPTED_RESET_S + 1
    assert SCRIPTED_RESET_S - 2 <= (penalty_seconds(r.status_code, r.headers) or 0) <= SCRIPTED_RESET_S + 1


# ------------------------------------------------------------------ telegram


def test_telegram_public_pages(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    channel = client.get("https://t.me/durovnews").text
    for needle in ('property="og:title"', 'property="og:description"', 'property="og:image"', 'class="tgme_page_title"',
                   'class="tgme_page_extra"', 'class="tgme_page_description"', "tgme_action_button_new"):
        assert needle in channel, needle
    group = client.get("https://t.me/solchat").text
    assert "members," in group and "online" in group and "View in Telegram" in group and "Preview channel" not in group
    bot = client.get("https://t.me/helperbot").text
    assert "Send Message" in bot and "@helperbot" in bot
    assert [e.subject for e in ledger.read()] == ["telegram:durovnews", "telegram:solchat", "telegram:helperbot"]


def test_telegram_channel_page_has_preview_and_spaced_counts(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    from social_recording.platforms.telegram.fake import telegram_kind

    name = next(n for n in (f"chan{i}" for i in range(50)) if telegram_kind(n) == "channel")
    page = client.get(f"https://t.me/{name}").text
    assert "Preview channel" in page and "subscribers" in page


def test_telegram_not_found_and_blocked(tmp_path: Path) -> None:
    sc = scenario({"https://t.me/ghostname": "not_found", "https://t.me/privatechan": "blocked"})
    _, _, client, _ = make(tmp_path, sc)
    missing = client.get("https://t.me/ghostname")
    assert missing.status_code == 200
    assert '<meta property="og:title" content="Telegram: Contact @ghostname">' in missing.text
    assert "tgme_page_title" not in missing.text
    blocked = client.get("https://t.me/PrivateChan").text  # usernames match case-insensitively
    assert "Join Channel" in blocked
    assert "Join" in client.get("https://t.me/+AbCdEf").text
    assert client.get("https://t.me/ghostname").status_code == 200


# ------------------------------------------------------------------ urlscan + rdap


def submit(client: httpx.Client, url: str) -> httpx.Response:
    return client.post("https://urlscan.io/api/v1/scan/", json={"url": url, "visibility": "unlisted"},
                       headers={"API-Key": KEY})


def test_urlscan_submit_then_poll_404_then_result(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario())
    r = submit(client, "https://bonkdog.io")
    assert r.status_code == 200
    body = r.json()
    scan_uuid = body["uuid"]
    assert body["api"] == f"https://urlscan.io/api/v1/result/{scan_uuid}/" and scan_uuid == urlscan_uuid("https://bonkdog.io")
    first = client.get(body["api"])
    assert first.status_code == 404
    result = client.get(body["api"])
    assert result.status_code == 200
    data = result.json()
    assert data["task"]["uuid"] == scan_uuid and data["task"]["url"] == "https://bonkdog.io"
    assert {"url", "domain", "apexDomain", "ip", "country", "asn", "asnname", "server", "title", "status",
            "tlsIssuer", "tlsValidFrom", "tlsValidDays", "tlsAgeDays"} <= set(data["page"])
    assert {"ips", "domains", "certificates"} <= set(data["lists"])
    assert data["verdicts"]["overall"]["malicious"] is False and "score" in data["verdicts"]["overall"]
    assert [(e.subject, e.status, e.paid) for e in ledger.read()] == [
        ("scan:https://bonkdog.io", 200, True), (f"result:{scan_uuid}", 404, True), (f"result:{scan_uuid}", 200, True)]
    assert ledger.repeated_paid_subjects() == {}
    # a new submission of the same URL restarts the poll sequence
    submit(client, "https://bonkdog.io")
    assert client.get(body["api"]).status_code == 404
    assert ledger.repeated_paid_subjects() == {("urlscan", "scan:https://bonkdog.io"): 2}
    assert client.get("https://urlscan.io/api/v1/result/00000000-0000-0000-0000-000000000000/").status_code == 404


@pytest.mark.parametrize(
    ("outcome", "status", "needle", "window"),
    [("not_found", 400, "DNS Error - Could not resolve domain", None), ("blocked", 400, "blacklist", None),
     ("rate_limited", 429, "Rate limit", "minute"), ("credit_exhausted", 429, "quota", "day"),
     ("error", 503, "Service Unavailable", None)],
)
def test_urlscan_outcomes(tmp_path: Path, outcome: str, status: int, needle: str, window: str | None) -> None:
    _, _, client, _ = make(tmp_path, scenario({"https://rug.example": outcome}))
    r = submit(client, "https://rug.example")
    assert r.status_code == status and needle in r.text
    assert r.headers.get("x-rate-limit-window") == window


def test_urlscan_requires_a_key(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario())
    assert client.post("https://urlscan.io/api/v1/scan/", json={"url": "https://a.example"}).status_code == 401


def test_rdap_redirects_to_the_registry(tmp_path: Path) -> None:
    _, ledger, client, _ = make(tmp_path, scenario({"https://gone.example.com/page": "not_found"}))
    hop = client.get("https://rdap.org/domain/bonkdog.io")
    assert hop.status_code == 302
    record = client.get(hop.headers["location"])
    assert record.status_code == 200 and record.headers["content-type"].startswith("application/rdap+json")
    events = {e["eventAction"]: e["eventDate"] for e in record.json()["events"]}
    assert events["registration"].endswith("Z")
    gone = client.get(client.get("https://rdap.org/domain/example.com").headers["location"])
    assert gone.status_code == 404
    assert client.get(client.get("https://rdap.org/domain/example.net").headers["location"]).status_code == 200
    assert {e.subject for e in ledger.read()} == {"rdap:bonkdog.io", "rdap:example.com", "rdap:example.net"}
    assert not any(e.paid for e in ledger.read())


# ------------------------------------------------------------------ cross-cutting


def test_same_request_twice_gives_the_same_body_even_across_instances(tmp_path: Path) -> None:
    sc = scenario({"https://x.com/i/status/1851234567890123403": "ok"})
    _, _, client1, _ = make(tmp_path / "one", sc)
    _, _, client2, _ = make(tmp_path / "two", sc)
    requests = [
        ("GET", f"{TW}/tweets?tweet_ids=1851234567890123403", None, {"X-API-Key": KEY}),
        ("GET", f"{TW}/user/info?userName=someone", None, {"X-API-Key": KEY}),
        ("GET", f"{YT}/videos?id=dQw4w9WgXcQ&key=k", None, {}),
        ("GET", f"{GH}/repos/a/b", None, {}),
        ("GET", "https://t.me/somechannel", None, {}),
        ("GET", "https://rdap.verisign.com/com/v1/domain/example.com", None, {}),
    ]
    for method, url, body, headers in requests:
        bodies = {c.request(method, url, json=body, headers=headers).content for c in (client1, client2, client1)}
        assert len(bodies) == 1, url


def test_apify_runs_are_new_per_submission_and_their_items_the_same(tmp_path: Path) -> None:
    body = {"startUrls": [{"url": "https://reddit.com/comments/b1"}]}
    _, ledger, client1, _ = make(tmp_path / "one", scenario())
    _, _, client2, _ = make(tmp_path / "two", scenario())
    runs = [start_run(c, "trudax~reddit-scraper-lite", body).json()["data"] for c in (client1, client1, client2)]
    assert runs[0]["id"] != runs[1]["id"] and runs[0]["defaultDatasetId"] != runs[1]["defaultDatasetId"]
    assert runs[0]["id"] == runs[2]["id"]  # deterministic: the first submission of a fresh state is the same run
    items = {run_actor(c, "trudax~reddit-scraper-lite", body).content for c in (client1, client2)}
    assert len(items) == 1
    subjects = [e.subject for e in ledger.read()]
    assert subjects.count("apify:https://reddit.com/comments/b1") == 3  # billed: every start
    assert ledger.repeated_paid_subjects() == {("apify", "apify:https://reddit.com/comments/b1"): 3}
    reads = [e for e in ledger.read() if not e.subject.startswith("apify:")]
    assert reads and all(not e.paid for e in reads)  # status and dataset reads are free
    assert {e.subject.split(":")[0] for e in reads} == {"apify-run", "apify-dataset"}


def test_latency_is_slept_with_the_injected_sleep(tmp_path: Path) -> None:
    sc = scenario({"https://x.com/slow": {"outcome": "ok", "latency_ms": 1500}}, default_latency_ms=20)
    _, _, client, sleeps = make(tmp_path, sc)
    client.get(f"{TW}/user/info", params={"userName": "slow"}, headers={"X-API-Key": KEY})
    client.get(f"{TW}/user/info", params={"userName": "other"}, headers={"X-API-Key": KEY})
    assert sleeps == [1.5, 0.02]


def test_flaky_counts_calls_of_the_target(tmp_path: Path) -> None:
    _, _, client, _ = make(tmp_path, scenario({"https://github.com/o/r": "flaky:2"}))
    assert [client.get(f"{GH}/repos/o/r").status_code for _ in range(4)] == [503, 503, 200, 200]
    assert client.get(f"{GH}/repos/o/other").status_code == 200  # other subjects are untouched


def test_flaky_counts_across_two_processes(tmp_path: Path) -> None:
    n = 3
    sc_json = json.dumps({"targets": {"https://x.com/i/status/99": {"outcome": f"flaky:{n}"}}})
    ledger_path = tmp_path / "ledger.jsonl"
    ctx = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"out{i}.json" for i in range(2)]
    procs = [ctx.Process(target=call_flaky, args=(sc_json, str(ledger_path), f"{TW}/tweets?tweet_ids=99", 4, str(o)))
             for o in outs]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    statuses = [s for o in outs for s in json.loads(o.read_text())]
    assert len(statuses) == 8
    assert statuses.count(503) == n and statuses.count(200) == 8 - n
    assert sorted(e.status for e in Ledger(ledger_path).read()) == sorted(statuses)


def test_without_a_ledger_nothing_is_written(tmp_path: Path) -> None:
    transport = SandboxTransport(scenario({"https://github.com/o/r": "flaky:1"}), None, sleep=lambda s: None)
    with httpx.Client(transport=transport) as client:
        assert [client.get(f"{GH}/repos/o/r").status_code for _ in range(2)] == [503, 200]
    assert list(tmp_path.iterdir()) == []
