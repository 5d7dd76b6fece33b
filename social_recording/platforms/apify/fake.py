"""Fake Apify: the asynchronous run API and the three actors' datasets (TikTok, Instagram, Reddit).

Endpoints, as Apify documents them:
- `POST /v2/acts/<owner>~<actor>/runs?timeout=<s>` (body = actor input, `Authorization: Bearer` or
  `?token=`) starts a run: 201 `{"data": <run>}` with status READY. This is the billed request; its
  ledger subject is `apify:<url in the actor input>` (several inputs joined with ","). Each submission
  gets a new run (id and dataset id from a counter in the state file: deterministic, distinct between
  two submissions of the same URL, shared across processes).
- `GET /v2/actor-runs/<id>[?waitForFinish=<s>]`: the run, RUNNING on its first read and SUCCEEDED
  after (the sandbox never holds the connection); 404 for an unknown run. Subject `apify-run:<id>`.
- `GET /v2/datasets/<id>/items?clean=true&format=json`: the run's items as a JSON array. Subject
  `apify-dataset:<id>`.
Status reads and dataset reads are free at Apify (it bills the run): they are ledgered as not paid.

Outcomes, decided when the run is submitted: error / flaky:N -> 503 at submit; rate_limited -> 429;
credit_exhausted -> 402 (not enough usage for a paid actor); not_found -> no item for that input (an
empty dataset); blocked -> an error item ("private") or, for a profile, a private account; invalid
-> ok (only X can break the graph contract).
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import parse_canonical
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

APIFY_HOST = "api.apify.com"
TIKTOK_ACTOR = "clockworks~tiktok-scraper"
INSTAGRAM_ACTOR = "apify~instagram-scraper"
REDDIT_ACTOR = "trudax~reddit-scraper-lite"
ACTORS = frozenset({TIKTOK_ACTOR, INSTAGRAM_ACTOR, REDDIT_ACTOR})

RUN_PREFIX = "apify-run:"
DATASET_PREFIX = "apify-dataset:"
"""Ledger subject prefixes of the free reads (run status, dataset items)."""

_RUNS_PATH = re.compile(r"^/v2/acts/([^/]+)/runs/?$")
_RUN_PATH = re.compile(r"^/v2/actor-runs/([A-Za-z0-9]+)/?$")
_ITEMS_PATH = re.compile(r"^/v2/datasets/([A-Za-z0-9]+)/items/?$")
_RUN_SEQUENCE = "apify-run-sequence"


# ------------------------------------------------------------------------------------------ tiktok


def tiktok_author(handle: str, *, private: bool = False) -> dict[str, Any]:
    det = api.Det("tiktok-user", handle.lower())
    uid = det.digits("id", 19)
    avatar = f"https://p16-sign-va.tiktokcdn.com/tos-maliva-avt-0068/{det.hexstr('avatar', 32)}~c5_100x100.jpeg"
    return {
        "id": uid,
        "name": handle,
        "profileUrl": f"https://www.tiktok.com/@{handle}",
        "nickName": fake.display_name(det, handle),
        "verified": det.chance("verified", 1, 10),
        "signature": f"{fake.sentence(det, 'bio')} {fake.site_for(handle)}",
        "bioLink": None,
        "originalAvatarUrl": avatar.replace("100x100", "1080x1080"),
        "avatar": avatar,
        "commerceUserInfo": {"commerceUser": False},
        "privateAccount": private,
        "region": det.pick("region", fake.COUNTRIES),
        "roomId": "",
        "ttSeller": False,
        "following": det.skewed("following", 2_000),
        "friends": det.skewed("friends", 500),
        "fans": det.skewed("fans", 3_000_000),
        "heart": det.skewed("heart", 50_000_000),
        "video": det.skewed("video", 900),
        "digg": det.skewed("digg", 20_000),
    }


def tiktok_item(video_id: str, handle: str, *, photo: bool, input_value: str) -> dict[str, Any]:
    """One clockworks~tiktok-scraper dataset item (a video or a photo post with its authorMeta)."""
    det = api.Det("tiktok-post", video_id)
    author = tiktok_author(handle)
    when = fake.created_date(det)
    cover = f"https://p16-sign-va.tiktokcdn.com/obj/tos-maliva-p-0068/{det.hexstr('cover', 32)}"
    return {
        "id": video_id,
        "text": f"{fake.sentence(det, 'text')} #{det.pick('tag', fake.TOPICS)}",
        "textLanguage": "en",
        "createTime": int(when.timestamp()),
        "createTimeISO": api.iso_ms(when),
        "isAd": False,
        "authorMeta": author,
        "musicMeta": {
            "musicName": f"original sound - {handle}",
            "musicAuthor": author["nickName"],
            "musicOriginal": True,
            "playUrl": f"https://sf16-ies-music-va.tiktokcdn.com/obj/musically-maliva-obj/{det.digits('music', 19)}.mp3",
            "coverMediumUrl": author["avatar"],
            "originalCoverMediumUrl": author["avatar"],
            "musicId": det.digits("music", 19),
        },
        "webVideoUrl": f"https://www.tiktok.com/@{handle}/{'photo' if photo else 'video'}/{video_id}",
        "mediaUrls": [],
        "videoMeta": {
            "height": 1024,
            "width": 576,
            "duration": 0 if photo else det.num("duration", 5, 180),
            "coverUrl": cover,
            "originalCoverUrl": cover,
            "definition": "540p",
            "format": "mp4",
            "subtitleLinks": [],
        },
        "diggCount": det.skewed("likes", 2_000_000),
        "shareCount": det.skewed("shares", 100_000),
        "playCount": det.skewed("plays", 50_000_000),
        "collectCount": det.skewed("saves", 200_000),
        "commentCount": det.skewed("comments", 50_000),
        "mentions": [],
        "detailedMentions": [],
        "hashtags": [{"name": det.pick("tag", fake.TOPICS)}],
        "effectStickers": [],
        "isSlideshow": photo,
        "isPinned": False,
        "isSponsored": False,
        "input": input_value,
    }


def tiktok_profile_items(handle: str, *, private: bool = False) -> list[dict[str, Any]]:
    """A profile run (`profiles: [handle]`): the latest post, or the author alone when private."""
    if private:
        return [{"authorMeta": tiktok_author(handle, private=True), "input": handle}]
    det = api.Det("tiktok-user", handle.lower())
    return [tiktok_item(det.digits("latest", 19), handle, photo=False, input_value=handle)]


# ------------------------------------------------------------------------------------------ instagram


_IG_CDN = "https://scontent-iad3-1.cdninstagram.com/v/t51.29350-15"


def instagram_user_id(username: str) -> str:
    return api.Det("ig-user", username.lower()).digits("id", 11)


def instagram_post(url: str, code: str, *, reel: bool) -> dict[str, Any]:
    det = api.Det("ig-post", code)
    owner = fake.handle_for(det, "owner")
    when = fake.created_date(det)
    display = f"{_IG_CDN}/{det.digits('img', 9)}_{det.digits('img2', 17)}_n.jpg?stp=dst-jpg_e35&_nc_ht=scontent-iad3-1.cdninstagram.com"
    item: dict[str, Any] = {
        "inputUrl": url,
        "id": det.digits("id", 19),
        "type": "Video" if reel else "Image",
        "shortCode": code,
        "caption": f"{fake.sentence(det, 'caption')} #{det.pick('tag', fake.TOPICS)}",
        "hashtags": [det.pick("tag", fake.TOPICS)],
        "mentions": [],
        "url": f"https://www.instagram.com/{'reel' if reel else 'p'}/{code}/",
        "commentsCount": det.skewed("comments", 20_000),
        "firstComment": "",
        "latestComments": [],
        "dimensionsHeight": 1350 if not reel else 1920,
        "dimensionsWidth": 1080,
        "displayUrl": display,
        "images": [],
        "alt": None,
        "likesCount": det.skewed("likes", 1_000_000),
        "timestamp": api.iso_ms(when),
        "childPosts": [],
        "ownerFullName": fake.display_name(api.Det("ig-user", owner), owner),
        "ownerUsername": owner,
        "ownerId": instagram_user_id(owner),
        "productType": "clips" if reel else "feed",
        "isSponsored": False,
    }
    if reel:
        item.update({
            "videoUrl": f"https://scontent-iad3-1.cdninstagram.com/o1/v/t16/f2/m86/{det.hexstr('video', 24)}.mp4",
            "videoViewCount": det.skewed("views", 5_000_000),
            "videoPlayCount": det.skewed("plays", 9_000_000),
            "videoDuration": det.num("duration", 5, 90) + 0.5,
        })
    return item


def instagram_profile(url: str, username: str, *, private: bool = False) -> dict[str, Any]:
    det = api.Det("ig-user", username.lower())
    site = fake.site_for(username)
    pic = f"https://scontent-iad3-1.cdninstagram.com/v/t51.2885-19/{det.digits('pic', 9)}_n.jpg"
    return {
        "inputUrl": url,
        "id": instagram_user_id(username),
        "username": username,
        "url": f"https://www.instagram.com/{username}",
        "fullName": fake.display_name(det, username),
        "biography": f"{fake.sentence(det, 'bio')} 👇",
        "externalUrls": [{"title": "", "lynx_url": f"https://l.instagram.com/?u={site}", "url": site,
                          "link_type": "external"}],
        "externalUrl": site,
        "externalUrlShimmed": f"https://l.instagram.com/?u={site}",
        "followersCount": det.skewed("followers", 5_000_000),
        "followsCount": det.skewed("follows", 3_000),
        "hasChannel": False,
        "highlightReelCount": det.num("highlights", 0, 20),
        "isBusinessAccount": det.chance("business", 1, 3),
        "joinedRecently": False,
        "businessCategoryName": None,
        "private": private,
        "verified": det.chance("verified", 1, 12),
        "profilePicUrl": pic,
        "profilePicUrlHD": pic.replace("_n.jpg", "_hd.jpg"),
        "igtvVideoCount": det.num("igtv", 0, 5),
        "relatedProfiles": [],
        "latestIgtvVideos": [],
        "postsCount": det.skewed("posts", 3_000),
        "latestPosts": [],
    }


# ------------------------------------------------------------------------------------------ reddit


def _reddit_times(det: api.Det) -> dict[str, str]:
    """A Reddit item's `createdAt` and `scrapedAt` (the actor read it 30 to 400 days after it was made)."""
    when = fake.created_date(det)
    return {"createdAt": api.iso_ms(when), "scrapedAt": api.iso_ms(when + timedelta(days=det.num("scraped", 30, 400)))}


def reddit_post(url: str, sub: str | None, post_id: str) -> dict[str, Any]:
    det = api.Det("reddit-post", post_id)
    subreddit = sub or det.pick("sub", ("solana", "CryptoCurrency", "memecoins", "SolanaMemeCoins"))
    author = fake.handle_for(det, "author")
    slug = "_".join(fake.sentence(det, "title").split()[:6])
    return {
        "id": f"t3_{post_id}",
        "parsedId": post_id,
        "url": f"https://www.reddit.com/r/{subreddit}/comments/{post_id}/{slug}/",
        "username": author,
        "userId": f"t2_{api.Det('reddit-user', author.lower()).base36('id', 8)}",
        "title": fake.sentence(det, "title").capitalize(),
        "communityName": f"r/{subreddit}",
        "parsedCommunityName": subreddit,
        "body": f"{fake.sentence(det, 'body')}. Website: {fake.site_for(subreddit)}",
        "html": None,
        "link": url,
        "numberOfComments": det.skewed("comments", 3_000),
        "flair": det.pick("flair", (None, "Discussion", "Meme", "News")),
        "upVotes": det.skewed("upvotes", 50_000),
        "upVoteRatio": det.num("ratio", 50, 100) / 100,
        "isVideo": False,
        "isAd": False,
        "over18": False,
        "thumbnailUrl": "self",
        "imageUrls": [],
        **_reddit_times(det),
        "dataType": "post",
    }


def reddit_community(sub: str) -> dict[str, Any]:
    det = api.Det("reddit-sub", sub.lower())
    return {
        "id": det.base36("id", 5),
        "name": f"t5_{det.base36('id', 5)}",
        "title": f"{sub} community",
        "headerImage": f"https://b.thumbs.redditmedia.com/{det.alnum('header', 43)}.png",
        "description": f"{fake.sentence(det, 'desc')}. Official links: {fake.site_for(sub)}",
        "over18": False,
        **_reddit_times(det),
        "numberOfMembers": det.skewed("members", 3_000_000),
        "url": f"https://www.reddit.com/r/{sub}/",
        "dataType": "community",
    }


def reddit_user(name: str) -> dict[str, Any]:
    det = api.Det("reddit-user", name.lower())
    return {
        "id": det.base36("id", 8),
        "url": f"https://www.reddit.com/user/{name}/",
        "username": name,
        "userIcon": f"https://styles.redditmedia.com/t5_{det.base36('icon', 6)}/styles/profileIcon_{det.alnum('icon2', 12)}.png",
        "postKarma": det.skewed("post", 100_000),
        "commentKarma": det.skewed("comment", 200_000),
        "description": fake.sentence(det, "desc"),
        "over18": False,
        **_reddit_times(det),
        "dataType": "user",
    }


def apify_error_item(url: str, error: str, description: str) -> dict[str, Any]:
    """How actors report a failed target: a dataset item with `error` (its shape is not documented)."""
    return {"url": url, "inputUrl": url, "error": error, "errorDescription": description}


def apify_error(error_type: str, message: str) -> dict[str, Any]:
    return {"error": {"type": error_type, "message": message}}


# ------------------------------------------------------------------------------------------ actors


def actor_inputs(actor: str, body: Any) -> list[tuple[str, str]]:
    """(value, kind) per target in an actor input: kind "url" or "profile" (tiktok handles, read back
    as the profile's URL)."""
    if not isinstance(body, dict):
        return []
    out: list[tuple[str, str]] = []
    if actor == TIKTOK_ACTOR:
        for u in body.get("postURLs") or []:
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
        for h in body.get("profiles") or []:
            if isinstance(h, str) and h.strip():
                out.append((f"https://tiktok.com/@{h.strip().lstrip('@')}", "profile"))
    elif actor == INSTAGRAM_ACTOR:
        for u in body.get("directUrls") or []:
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
    else:
        for entry in body.get("startUrls") or []:
            u = entry.get("url") if isinstance(entry, dict) else entry
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
    return out


def _segments(url: str) -> tuple[str, tuple[str, ...]]:
    """(canonical host, path segments) of an actor input URL; ("", ()) when it is not a URL."""
    canonical = api.canonical_or_none(url)
    if canonical is None:
        return "", ()
    parsed = parse_canonical(canonical)
    return parsed.host, parsed.segments


def instagram_is_reel(code: str) -> bool:
    """Whether the sandbox's media `code` is a reel (productType clips): a code starting with "R" (any
    case) is one, every other code is a feed post. A fixed, visible rule, so a scenario names a reel on
    purpose (the URL cannot say it: every media's canonical form is instagram.com/p/<code>)."""
    return code[:1].lower() == "r"


def actor_items(actor: str, value: str, kind: str, results_type: str, *, blocked: bool) -> list[dict[str, Any]]:
    """The dataset items one input of an actor run produces."""
    host, seg = _segments(value)
    if actor == TIKTOK_ACTOR:
        if kind == "profile":
            return tiktok_profile_items(seg[0].lstrip("@") if seg else value, private=blocked)
        if blocked:
            return [apify_error_item(value, "private", "This account is private")]
        if len(seg) >= 3 and seg[0].startswith("@") and seg[1] in ("video", "photo"):
            # The author belongs to the post, not to the URL (the canonical form is /@/video/<id>, and
            # tiktok.com serves a post under any handle): one post id, one author, whatever URL asks.
            author = fake.handle_for(api.Det("tiktok-post", seg[2]), "author")
            return [tiktok_item(seg[2], author, photo=seg[1] == "photo", input_value=value)]
        det = api.Det("tiktok-short", value)
        return [tiktok_item(det.digits("id", 19), fake.handle_for(det), photo=False, input_value=value)]
    if actor == INSTAGRAM_ACTOR:
        if len(seg) >= 2 and seg[0].lower() in ("p", "reel", "reels", "tv"):
            if blocked:
                return [apify_error_item(value, "restricted", "This content is private or restricted")]
            # The canonical media form is /p/<code> for every kind: whether it is a reel is a property
            # of the media (its code), as on instagram.com, never of the URL that names it.
            return [instagram_post(value, seg[1], reel=instagram_is_reel(seg[1]))]
        if len(seg) == 1:
            if results_type == "details":
                return [instagram_profile(value, seg[0], private=blocked)]
            if blocked:
                return [apify_error_item(value, "private", "This account is private")]
            return [instagram_post(value, api.Det("ig-latest", seg[0].lower()).b64url("code", 11), reel=False)]
        return []
    # reddit
    if blocked:
        return [apify_error_item(value, "private", "This community is private")]
    if host == "redd.it" and seg:
        return [reddit_post(value, None, seg[0])]
    # A post's subreddit belongs to the post (reddit redirects /r/<other>/comments/<id> to it): the
    # canonical form reddit.com/comments/<id> names none, and any other form gets the same answer.
    if len(seg) >= 2 and seg[0] == "comments":
        return [reddit_post(value, None, seg[1])]
    if len(seg) >= 4 and seg[0] in ("r", "user") and seg[2] == "comments":
        return [reddit_post(value, None, seg[3])]
    if len(seg) >= 4 and seg[0] == "r" and seg[2] == "s":
        return [reddit_post(value, seg[1], api.Det("reddit-share", value).base36("id", 7))]
    if len(seg) == 2 and seg[0] == "r":
        return [reddit_community(seg[1])]
    if len(seg) >= 2 and seg[0] in ("user", "u"):
        return [reddit_user(seg[1])]
    return []


# ------------------------------------------------------------------------------------------ runs


def run_object(run_id: str, record: dict[str, Any], status: str) -> dict[str, Any]:
    """An actor run as `GET /v2/actor-runs/<id>` returns it (the `data` member)."""
    seq = str(record["sequence"])
    det = api.Det("apify-run", seq)
    started = fake.created_date(det, "started")
    finished = status in ("SUCCEEDED", "FAILED", "TIMED-OUT", "ABORTED")
    return {
        "id": run_id,
        "actId": api.Det("apify-actor", record["actor"]).alnum("id", 17),
        "userId": "sandboxUser00001",
        "actorTaskId": None,
        "startedAt": api.iso_ms(started),
        "finishedAt": api.iso_ms(started + timedelta(seconds=det.num("secs", 4, 60))) if finished else None,
        "status": status,
        "statusMessage": "Finished!" if status == "SUCCEEDED" else ("Starting the run" if status == "READY" else "Crawling"),
        "isStatusMessageTerminal": finished,
        "meta": {"origin": "API", "userAgent": "python-httpx"},
        "stats": {"inputBodyLen": 64, "restartCount": 0, "resurrectCount": 0, "computeUnits": 0.01},
        "options": {"build": "latest", "timeoutSecs": record["timeout"], "memoryMbytes": 1024, "diskMbytes": 2048},
        "buildId": det.alnum("build", 17),
        "exitCode": 0 if status == "SUCCEEDED" else None,
        "defaultKeyValueStoreId": det.alnum("kvs", 17),
        "defaultDatasetId": record["dataset"],
        "defaultRequestQueueId": det.alnum("queue", 17),
        "buildNumber": "0.0.1",
        "containerUrl": f"https://{det.alnum('container', 12).lower()}.runs.apify.net",
        "usageTotalUsd": 0.005,
    }



_FAILURES = api.FailureLadder(
    error=lambda: api.json_reply(503, apify_error("server-error", "Server is temporarily unavailable, try again later")),
    rate_limited=lambda: api.json_reply(429, apify_error(
        "rate-limit-exceeded", "You have exceeded the rate limit of 30 requests per second")),
    credit_exhausted=lambda: api.json_reply(402, apify_error(
        "not-enough-usage-to-run-paid-actor",
        "By launching this job you will exceed the remaining usage on your plan. Upgrade or wait for the next cycle.",
    )),
)

class ApifyProvider(api.TargetProvider):
    service = "apify"
    hosts = frozenset({APIFY_HOST})

    def _record(self, run_id: str) -> dict[str, Any] | None:
        raw = self._state.recall(RUN_PREFIX + run_id)
        return json.loads(raw) if raw is not None else None

    def describe(self, request: httpx.Request) -> api.Call:
        path = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
        if (m := _RUNS_PATH.match(path)) is not None:
            actor = unquote(m.group(1)).replace("/", "~")
            if actor not in ACTORS:
                return api.Call(self.service, f"actor:{actor}", args={"op": "unknown-actor"})
            body = api.body_json(request)
            inputs = actor_inputs(actor, body)
            targets = [self._outcomes.target_for("apify:" + (api.canonical_or_none(u) or u)) for u, _ in inputs]
            return api.Call(self.service, "apify:" + ",".join(u for u, _ in inputs), targets,
                            args={"op": "submit", "actor": actor, "inputs": inputs, "body": body})
        if (m := _RUN_PATH.match(path)) is not None:
            record = self._record(m.group(1))
            return api.Call(self.service, RUN_PREFIX + m.group(1), list(record["targets"]) if record else [],
                            paid=False, args={"op": "run", "id": m.group(1), "record": record})
        if (m := _ITEMS_PATH.match(path)) is not None:
            run_id = self._state.recall(DATASET_PREFIX + m.group(1))
            record = self._record(run_id) if run_id is not None else None
            return api.Call(self.service, DATASET_PREFIX + m.group(1), list(record["targets"]) if record else [],
                            paid=False, args={"op": "items", "record": record})
        return api.Call(self.service, f"path:{request.url.path}", paid=False, args={"op": "none"})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        op = call.args["op"]
        if op == "none":
            return api.json_reply(404, apify_error("page-not-found", "We have bad news: there is no API endpoint at this URL."))
        if op == "unknown-actor":
            return api.json_reply(404, apify_error("record-not-found", "Actor was not found"))
        if op == "submit":
            return self._submit(request, call)
        record = call.args["record"]
        if record is None:
            what = "Actor run" if op == "run" else "Dataset"
            return api.json_reply(404, apify_error("record-not-found", f"{what} was not found"))
        if op == "run":
            reads = self._state.bump(f"apify-run-reads:{call.args['id']}")
            return api.json_reply(200, {"data": run_object(call.args["id"], record, "RUNNING" if reads == 1 else "SUCCEEDED")})
        items: list[dict[str, Any]] = []
        for (value, kind), effect in zip(record["inputs"], record["effects"], strict=True):
            if effect == api.OutcomeKind.NOT_FOUND.value:
                continue
            items.extend(actor_items(record["actor"], value, kind, record["results_type"],
                                     blocked=effect == api.OutcomeKind.BLOCKED.value))
        return api.json_reply(200, items)

    def _submit(self, request: httpx.Request, call: api.Call) -> api.Reply:
        actor, inputs, body = call.args["actor"], call.args["inputs"], call.args["body"]
        if request.method.upper() != "POST":
            return api.json_reply(405, apify_error("method-not-allowed", "This API endpoint accepts POST only"))
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else request.url.params.get("token", "")
        if not token.strip():
            return api.json_reply(401, apify_error("token-not-provided", "Authentication token was not provided"))
        if not inputs:
            return api.json_reply(400, apify_error("invalid-input", f"Input is not valid: no URL for actor {actor}"))
        effects = self._outcomes.effects(call.targets)
        failed = _FAILURES.reply(api.Outcomes.http_failure(effects))
        if failed is not None:
            return failed
        sequence = self._state.bump(_RUN_SEQUENCE)
        run_id = api.Det("apify-run", str(sequence), call.subject).alnum("id", 17)
        dataset_id = api.Det("apify-dataset", str(sequence), call.subject).alnum("id", 17)
        timeout = request.url.params.get("timeout", "")
        record = {
            "sequence": sequence,
            "actor": actor,
            "inputs": [list(pair) for pair in inputs],
            "effects": [e.value for e in effects],
            "results_type": str(body.get("resultsType", "posts") if isinstance(body, dict) else "posts"),
            "targets": call.targets,
            "dataset": dataset_id,
            "timeout": int(timeout) if timeout.isdigit() else 3600,
        }
        self._state.remember(RUN_PREFIX + run_id, json.dumps(record), reset_counter=f"apify-run-reads:{run_id}")
        self._state.remember(DATASET_PREFIX + dataset_id, run_id)
        return api.json_reply(201, {"data": run_object(run_id, record, "READY")})

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        return api.json_reply(429, apify_error("rate-limit-exceeded", "You have exceeded the rate limit."),
                              {"retry-after": str(window.reset_after_s)})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [ApifyProvider(world.outcomes)]
