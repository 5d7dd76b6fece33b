"""Provider payloads in the real providers' shapes (PLATFORMS.md), generated deterministically.

Every value is a pure function of the target (tweet id, handle, canonical URL, ...): the same request
always gets the same bytes, ids are stable, an author keeps its id wherever it appears. Field names,
nesting, string-vs-number choices and error bodies follow what each provider really sends, so the
real clients parse these exactly as they would parse production answers.
"""

from __future__ import annotations

import html
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from social_recording.sandbox._det import EPOCH_END, EPOCH_START, Det, iso_ms, iso_s, twitter_date
from social_recording.sandbox.subjects import registrable_domain

# ------------------------------------------------------------------------------------------ text

_ADJ = ("based", "degen", "cosmic", "tiny", "golden", "sleepy", "hyper", "lunar", "rapid", "quiet",
        "wild", "frozen", "solar", "happy", "brave", "neon")
_NOUN = ("dog", "cat", "frog", "whale", "ape", "moon", "rocket", "pepe", "bonk", "wizard", "panda",
         "otter", "shiba", "hamster", "duck", "goat")
_FIRST = ("Alex", "Sam", "Jordan", "Kai", "Mina", "Leo", "Yuna", "Noah", "Ava", "Theo", "Ines", "Ravi")
_PLACES = ("Miami", "Seoul", "Berlin", "Lisbon", "Singapore", "Dubai", "Austin", "Tokyo", "", "Solana")
_PHRASES = (
    "gm frens, the chart is looking healthy today",
    "community takeover is live, join the movement",
    "we just got listed, thank you all for the support",
    "new roadmap drop this week, stay tuned",
    "this is the most fun community on solana",
    "devs are cooking something big",
    "holders meeting tonight in the telegram",
    "meme contest winners announced",
    "liquidity locked and contract renounced",
    "art reveal at 100k market cap",
)
_TOPICS = ("solana", "memecoin", "crypto", "web3", "defi", "nft", "community", "trading")
_LANGS = ("TypeScript", "Rust", "Python", "JavaScript", "Go", None)
_COUNTRIES = ("US", "KR", "DE", "SG", "GB", "JP", "AE", "BR")


def handle_for(det: Det, label: str = "handle") -> str:
    """A plausible lower-case handle (letters, digits, underscore; ≤ 15 characters)."""
    base = f"{det.pick(label + '.a', _ADJ)}{det.pick(label + '.n', _NOUN)}"
    return f"{base}{det.num(label + '.d', 1, 999)}"[:15]


def _display_name(det: Det, handle: str) -> str:
    if det.chance("name.kind", 1, 2):
        return f"{det.pick('name.first', _FIRST)} {det.pick('name.noun', _NOUN).title()}"
    return handle.replace("_", " ").title()


def _sentence(det: Det, label: str) -> str:
    return det.pick(label, _PHRASES)


def _created(det: Det, label: str = "created", *, before: datetime | None = None) -> datetime:
    end = min(EPOCH_END, before) if before is not None else EPOCH_END
    return det.date(label, EPOCH_START, max(EPOCH_START, end))


def _site_for(name: str) -> str:
    slug = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "project"
    return f"https://{slug}.io"


# ------------------------------------------------------------------------------------------ x


def x_user_id(handle: str) -> str:
    """The account's immutable numeric id: derived from the handle, case-insensitively."""
    return Det("x-user", handle.lower()).digits("id", 18)


def x_user(handle: str) -> dict[str, Any]:
    """A twitterapi.io user object (the `author` of a tweet and the `data` of /twitter/user/info)."""
    det = Det("x-user", handle.lower())
    uid = x_user_id(handle)
    site = _site_for(handle)
    short = f"https://t.co/{det.alnum('tco', 10)}"
    bio = f"{_sentence(det, 'bio')} | {det.pick('topic', _TOPICS)}"
    url_entity = {"display_url": site.removeprefix("https://"), "expanded_url": site, "url": short,
                  "indices": [0, 23]}
    return {
        "type": "user",
        "userName": handle,
        "url": f"https://x.com/{handle}",
        "twitterUrl": f"https://twitter.com/{handle}",
        "id": uid,
        "name": _display_name(det, handle),
        "isVerified": False,
        "isBlueVerified": det.chance("blue", 1, 3),
        "verifiedType": None,
        "profilePicture": f"https://pbs.twimg.com/profile_images/{det.digits('pic', 19)}/{det.alnum('picname', 8)}_normal.jpg",
        "coverPicture": f"https://pbs.twimg.com/profile_banners/{uid}/{det.num('banner', 1_600_000_000, 1_790_000_000)}",
        "description": bio,
        "location": det.pick("place", _PLACES),
        "followers": det.skewed("followers", 2_000_000),
        "following": det.skewed("following", 5_000),
        "status": "",
        "canDm": det.chance("dm", 1, 2),
        "canMediaTag": True,
        "createdAt": twitter_date(_created(det)),
        "entities": {"description": {"urls": []}, "url": {"urls": [url_entity]}},
        "fastFollowersCount": 0,
        "favouritesCount": det.skewed("favourites", 100_000),
        "hasCustomTimelines": det.chance("timelines", 1, 4),
        "isTranslator": False,
        "mediaCount": det.skewed("media", 5_000),
        "statusesCount": det.skewed("statuses", 50_000),
        "withheldInCountries": [],
        "affiliatesHighlightedLabel": {},
        "possiblySensitive": False,
        "pinnedTweetIds": [],
        "profile_bio": {
            "description": bio,
            "entities": {"description": {}, "url": {"urls": [url_entity]}},
        },
        "isAutomated": False,
        "automatedBy": None,
    }


def x_user_info(handle: str, *, unavailable_reason: str | None = None) -> dict[str, Any]:
    """`GET /twitter/user/info` body. A suspended account keeps its id but is `unavailable`."""
    data = x_user(handle)
    if unavailable_reason is None:
        data.update({"unavailable": False, "unavailableReason": "", "message": ""})
    else:
        data = {
            "id": data["id"],
            "userName": handle,
            "unavailable": True,
            "unavailableReason": unavailable_reason,
            "message": f"User is {unavailable_reason.lower()}",
        }
    return {"data": data, "status": "success", "msg": "success"}


_SNOWFLAKE_EPOCH_MS = 1_288_834_974_657


def _tweet_time(tweet_id: str, det: Det) -> datetime:
    """A tweet's time from its snowflake id (as on X); a non-snowflake id gets a derived date."""
    try:
        ms = (int(tweet_id) >> 22) + _SNOWFLAKE_EPOCH_MS
        when = datetime.fromtimestamp(ms / 1000, tz=UTC).replace(microsecond=0)
        if datetime(2012, 1, 1, tzinfo=UTC) <= when <= datetime(2030, 1, 1, tzinfo=UTC):
            return when
    except (ValueError, OverflowError):
        pass
    return _created(det, "created")


def _snowflake_before(seed: str, when: datetime) -> str:
    """A tweet id whose snowflake time is a little before `when` (a quoted tweet predates its quote)."""
    det = Det("x-snowflake", seed)
    earlier = when - timedelta(seconds=det.num("gap", 600, 40 * 86_400))
    ms = int(earlier.timestamp() * 1000) - _SNOWFLAKE_EPOCH_MS
    return str((max(ms, 0) << 22) | det.num("low", 0, (1 << 22) - 1))


def quote_plan(tweet_id: str) -> list[tuple[str, str]]:
    """The (id, author handle) chain this tweet quotes on the sandbox's X: about one tweet in four
    quotes another, depth 1 or 2. Deterministic from the id."""
    det = Det("x-tweet", tweet_id)
    if not det.chance("quotes", 1, 4):
        return []
    chain: list[tuple[str, str]] = []
    when = _tweet_time(tweet_id, det)
    current = tweet_id
    for level in range(det.num("depth", 1, 2)):
        qid = _snowflake_before(f"{current}/{level}", when)
        qdet = Det("x-tweet", qid)
        chain.append((qid, handle_for(qdet, "author")))
        when = _tweet_time(qid, qdet)
        current = qid
    return chain


def x_tweet(tweet_id: str, handle: str | None, *, quotes: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """A twitterapi.io tweet with its author; `quotes` is the chain it quotes, outermost first (None:
    the tweet's own deterministic plan; pass a chain to build a cycle for `invalid`)."""
    det = Det("x-tweet", tweet_id)
    author_handle = handle or handle_for(det, "author")
    author = x_user(author_handle)
    chain = quote_plan(tweet_id) if quotes is None else quotes
    when = _tweet_time(tweet_id, det)
    text = _sentence(det, "text")
    urls: list[dict[str, Any]] = []
    if det.chance("link", 1, 3):
        site = _site_for(author_handle)
        short = f"https://t.co/{det.alnum('tco', 10)}"
        start = len(text) + 1
        text = f"{text} {short}"
        urls.append({"display_url": site.removeprefix("https://"), "expanded_url": site, "url": short,
                     "indices": [start, start + len(short)]})
    tweet: dict[str, Any] = {
        "type": "tweet",
        "id": tweet_id,
        "url": f"https://x.com/{author_handle}/status/{tweet_id}",
        "twitterUrl": f"https://twitter.com/{author_handle}/status/{tweet_id}",
        "text": text,
        "source": det.pick("source", ("Twitter for iPhone", "Twitter Web App", "Twitter for Android")),
        "retweetCount": det.skewed("retweets", 20_000),
        "replyCount": det.skewed("replies", 5_000),
        "likeCount": det.skewed("likes", 100_000),
        "quoteCount": det.skewed("quotes.n", 2_000),
        "viewCount": det.skewed("views", 5_000_000),
        "createdAt": twitter_date(when),
        "lang": "en",
        "bookmarkCount": det.skewed("bookmarks", 3_000),
        "isReply": False,
        "inReplyToId": None,
        "conversationId": tweet_id,
        "displayTextRange": [0, len(text)],
        "inReplyToUserId": None,
        "inReplyToUsername": None,
        "author": author,
        "extendedEntities": {},
        "card": None,
        "place": {},
        "entities": {"hashtags": [], "urls": urls, "user_mentions": []},
        "quoted_tweet": None,
        "retweeted_tweet": None,
        "isLimitedReply": False,
        "article": None,
    }
    if chain:
        (qid, qhandle), rest = chain[0], chain[1:]
        tweet["quoted_tweet"] = x_tweet(qid, qhandle, quotes=rest)
    return tweet


def x_quote_cycle(tweet_id: str, handle: str | None) -> dict[str, Any]:
    """The `invalid` payload: tweet A quotes B, which quotes A again (a cycle no real chain can have)."""
    det = Det("x-tweet", tweet_id)
    other = _snowflake_before(f"{tweet_id}/cycle", _tweet_time(tweet_id, det))
    author = handle or handle_for(det, "author")
    return x_tweet(tweet_id, author, quotes=[(other, handle_for(Det("x-tweet", other), "author")), (tweet_id, author)])


def x_tweets(tweets: list[dict[str, Any]], message: str = "") -> dict[str, Any]:
    return {"tweets": tweets, "status": "success", "message": message}


def x_error(message: str) -> dict[str, Any]:
    return {"status": "error", "msg": message, "message": message}


# ------------------------------------------------------------------------------------------ tiktok


def tiktok_author(handle: str, *, private: bool = False) -> dict[str, Any]:
    det = Det("tiktok-user", handle.lower())
    uid = det.digits("id", 19)
    avatar = f"https://p16-sign-va.tiktokcdn.com/tos-maliva-avt-0068/{det.hexstr('avatar', 32)}~c5_100x100.jpeg"
    return {
        "id": uid,
        "name": handle,
        "profileUrl": f"https://www.tiktok.com/@{handle}",
        "nickName": _display_name(det, handle),
        "verified": det.chance("verified", 1, 10),
        "signature": f"{_sentence(det, 'bio')} {_site_for(handle)}",
        "bioLink": None,
        "originalAvatarUrl": avatar.replace("100x100", "1080x1080"),
        "avatar": avatar,
        "commerceUserInfo": {"commerceUser": False},
        "privateAccount": private,
        "region": det.pick("region", _COUNTRIES),
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
    det = Det("tiktok-post", video_id)
    author = tiktok_author(handle)
    when = _created(det)
    cover = f"https://p16-sign-va.tiktokcdn.com/obj/tos-maliva-p-0068/{det.hexstr('cover', 32)}"
    return {
        "id": video_id,
        "text": f"{_sentence(det, 'text')} #{det.pick('tag', _TOPICS)}",
        "textLanguage": "en",
        "createTime": int(when.timestamp()),
        "createTimeISO": iso_ms(when),
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
        "hashtags": [{"name": det.pick("tag", _TOPICS)}],
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
    det = Det("tiktok-user", handle.lower())
    return [tiktok_item(det.digits("latest", 19), handle, photo=False, input_value=handle)]


# ------------------------------------------------------------------------------------------ instagram

_IG_CDN = "https://scontent-iad3-1.cdninstagram.com/v/t51.29350-15"


def instagram_user_id(username: str) -> str:
    return Det("ig-user", username.lower()).digits("id", 11)


def instagram_post(url: str, code: str, *, reel: bool) -> dict[str, Any]:
    det = Det("ig-post", code)
    owner = handle_for(det, "owner")
    when = _created(det)
    display = f"{_IG_CDN}/{det.digits('img', 9)}_{det.digits('img2', 17)}_n.jpg?stp=dst-jpg_e35&_nc_ht=scontent-iad3-1.cdninstagram.com"
    item: dict[str, Any] = {
        "inputUrl": url,
        "id": det.digits("id", 19),
        "type": "Video" if reel else "Image",
        "shortCode": code,
        "caption": f"{_sentence(det, 'caption')} #{det.pick('tag', _TOPICS)}",
        "hashtags": [det.pick("tag", _TOPICS)],
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
        "timestamp": iso_ms(when),
        "childPosts": [],
        "ownerFullName": _display_name(Det("ig-user", owner), owner),
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
    det = Det("ig-user", username.lower())
    site = _site_for(username)
    pic = f"https://scontent-iad3-1.cdninstagram.com/v/t51.2885-19/{det.digits('pic', 9)}_n.jpg"
    return {
        "inputUrl": url,
        "id": instagram_user_id(username),
        "username": username,
        "url": f"https://www.instagram.com/{username}",
        "fullName": _display_name(det, username),
        "biography": f"{_sentence(det, 'bio')} 👇",
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


def reddit_post(url: str, sub: str | None, post_id: str) -> dict[str, Any]:
    det = Det("reddit-post", post_id)
    subreddit = sub or det.pick("sub", ("solana", "CryptoCurrency", "memecoins", "SolanaMemeCoins"))
    author = handle_for(det, "author")
    slug = "_".join(_sentence(det, "title").split()[:6])
    when = _created(det)
    return {
        "id": f"t3_{post_id}",
        "parsedId": post_id,
        "url": f"https://www.reddit.com/r/{subreddit}/comments/{post_id}/{slug}/",
        "username": author,
        "userId": f"t2_{Det('reddit-user', author.lower()).base36('id', 8)}",
        "title": _sentence(det, "title").capitalize(),
        "communityName": f"r/{subreddit}",
        "parsedCommunityName": subreddit,
        "body": f"{_sentence(det, 'body')}. Website: {_site_for(subreddit)}",
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
        "createdAt": iso_ms(when),
        "scrapedAt": iso_ms(when + timedelta(days=det.num("scraped", 30, 400))),
        "dataType": "post",
    }


def reddit_community(sub: str) -> dict[str, Any]:
    det = Det("reddit-sub", sub.lower())
    when = _created(det)
    return {
        "id": det.base36("id", 5),
        "name": f"t5_{det.base36('id', 5)}",
        "title": f"{sub} community",
        "headerImage": f"https://b.thumbs.redditmedia.com/{det.alnum('header', 43)}.png",
        "description": f"{_sentence(det, 'desc')}. Official links: {_site_for(sub)}",
        "over18": False,
        "createdAt": iso_ms(when),
        "scrapedAt": iso_ms(when + timedelta(days=det.num("scraped", 30, 400))),
        "numberOfMembers": det.skewed("members", 3_000_000),
        "url": f"https://www.reddit.com/r/{sub}/",
        "dataType": "community",
    }


def reddit_user(name: str) -> dict[str, Any]:
    det = Det("reddit-user", name.lower())
    when = _created(det)
    return {
        "id": det.base36("id", 8),
        "url": f"https://www.reddit.com/user/{name}/",
        "username": name,
        "userIcon": f"https://styles.redditmedia.com/t5_{det.base36('icon', 6)}/styles/profileIcon_{det.alnum('icon2', 12)}.png",
        "postKarma": det.skewed("post", 100_000),
        "commentKarma": det.skewed("comment", 200_000),
        "description": _sentence(det, "desc"),
        "over18": False,
        "createdAt": iso_ms(when),
        "scrapedAt": iso_ms(when + timedelta(days=det.num("scraped", 30, 400))),
        "dataType": "user",
    }


def apify_error_item(url: str, error: str, description: str) -> dict[str, Any]:
    """How actors report a failed target: a dataset item with `error` (PLATFORMS.md: unconfirmed)."""
    return {"url": url, "inputUrl": url, "error": error, "errorDescription": description}


def apify_error(error_type: str, message: str) -> dict[str, Any]:
    return {"error": {"type": error_type, "message": message}}


# ------------------------------------------------------------------------------------------ youtube


def youtube_channel_id(seed: str) -> str:
    return "UC" + Det("yt-channel", seed.lower().lstrip("@")).b64url("id", 22)


def _yt_thumbs_video(video_id: str) -> dict[str, Any]:
    base = f"https://i.ytimg.com/vi/{video_id}"
    return {
        "default": {"url": f"{base}/default.jpg", "width": 120, "height": 90},
        "medium": {"url": f"{base}/mqdefault.jpg", "width": 320, "height": 180},
        "high": {"url": f"{base}/hqdefault.jpg", "width": 480, "height": 360},
        "standard": {"url": f"{base}/sddefault.jpg", "width": 640, "height": 480},
        "maxres": {"url": f"{base}/maxresdefault.jpg", "width": 1280, "height": 720},
    }


def youtube_video(video_id: str) -> dict[str, Any]:
    det = Det("yt-video", video_id)
    channel_handle = handle_for(det, "channel")
    title = _sentence(det, "title").capitalize()
    description = f"{_sentence(det, 'desc')}\n\nWebsite: {_site_for(channel_handle)}\nX: https://x.com/{channel_handle}"
    stats: dict[str, str] = {"viewCount": str(det.skewed("views", 20_000_000))}
    if not det.chance("hide_likes", 1, 6):  # likeCount is missing when the owner hides it
        stats["likeCount"] = str(det.skewed("likes", 500_000))
    stats["favoriteCount"] = "0"
    stats["commentCount"] = str(det.skewed("comments", 20_000))
    return {
        "kind": "youtube#video",
        "etag": det.etag(),
        "id": video_id,
        "snippet": {
            "publishedAt": iso_s(_created(det)),
            "channelId": youtube_channel_id(channel_handle),
            "title": title,
            "description": description,
            "thumbnails": _yt_thumbs_video(video_id),
            "channelTitle": _display_name(det, channel_handle),
            "tags": [det.pick("tag", _TOPICS), "solana"],
            "categoryId": det.pick("category", ("22", "24", "28")),
            "liveBroadcastContent": "none",
            "defaultAudioLanguage": "en",
            "localized": {"title": title, "description": description},
        },
        "statistics": stats,
    }


def youtube_channel(channel_id: str, handle: str) -> dict[str, Any]:
    det = Det("yt-channel", channel_id)
    title = _display_name(det, handle)
    description = f"{_sentence(det, 'desc')}. {_site_for(handle)}"
    hidden = det.chance("hidden", 1, 8)
    avatar = f"https://yt3.ggpht.com/{det.b64url('avatar', 60)}"
    return {
        "kind": "youtube#channel",
        "etag": det.etag(),
        "id": channel_id,
        "snippet": {
            "title": title,
            "description": description,
            "customUrl": f"@{handle.lower()}",
            "publishedAt": iso_ms(_created(det)),
            "thumbnails": {
                "default": {"url": f"{avatar}=s88-c-k-c0x00ffffff-no-rj", "width": 88, "height": 88},
                "medium": {"url": f"{avatar}=s240-c-k-c0x00ffffff-no-rj", "width": 240, "height": 240},
                "high": {"url": f"{avatar}=s800-c-k-c0x00ffffff-no-rj", "width": 800, "height": 800},
            },
            "localized": {"title": title, "description": description},
            "country": det.pick("country", _COUNTRIES),
        },
        "statistics": {
            "viewCount": str(det.skewed("views", 900_000_000)),
            "subscriberCount": "0" if hidden else str(det.skewed("subs", 5_000_000)),
            "hiddenSubscriberCount": hidden,
            "videoCount": str(det.skewed("videos", 3_000)),
        },
    }


def youtube_playlist(playlist_id: str) -> dict[str, Any]:
    det = Det("yt-playlist", playlist_id)
    channel_handle = handle_for(det, "channel")
    title = _sentence(det, "title").capitalize()
    return {
        "kind": "youtube#playlist",
        "etag": det.etag(),
        "id": playlist_id,
        "snippet": {
            "publishedAt": iso_s(_created(det)),
            "channelId": youtube_channel_id(channel_handle),
            "title": title,
            "description": _sentence(det, "desc"),
            "thumbnails": _yt_thumbs_video(det.b64url("cover", 11)),
            "channelTitle": _display_name(det, channel_handle),
            "localized": {"title": title, "description": _sentence(det, "desc")},
        },
        "contentDetails": {"itemCount": det.num("items", 1, 200)},
    }


def youtube_list(kind: str, items: list[dict[str, Any]], seed: str, *, omit_empty_items: bool) -> dict[str, Any]:
    """A `*ListResponse`. The API omits `items` for channels when nothing matches, sends `[]` for videos."""
    body: dict[str, Any] = {"kind": f"youtube#{kind}ListResponse", "etag": Det("yt-list", seed).etag()}
    body["pageInfo"] = {"totalResults": len(items), "resultsPerPage": max(len(items), 5 if omit_empty_items else 0)}
    if items or not omit_empty_items:
        body["items"] = items
    return body


def google_error(code: int, status: str, message: str, reason: str, domain: str = "global") -> dict[str, Any]:
    return {"error": {"code": code, "message": message,
                      "errors": [{"message": message, "domain": domain, "reason": reason}], "status": status}}


# ------------------------------------------------------------------------------------------ github


def github_id(login: str) -> int:
    return Det("gh-user", login.lower()).num("id", 1_000_000, 199_999_999)


def github_type(login: str) -> str:
    return "Organization" if Det("gh-user", login.lower()).chance("org", 1, 3) else "User"


def _github_owner(login: str) -> dict[str, Any]:
    uid = github_id(login)
    api = f"https://api.github.com/users/{login}"
    return {
        "login": login,
        "id": uid,
        "node_id": ("O_kgDO" if github_type(login) == "Organization" else "U_kgDO") + Det("gh-user", login.lower()).b64url("node", 8),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"https://github.com/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": github_type(login),
        "user_view_type": "public",
        "site_admin": False,
    }


def github_repo(owner: str, name: str) -> dict[str, Any]:
    det = Det("gh-repo", f"{owner.lower()}/{name.lower()}")
    full = f"{owner}/{name}"
    api = f"https://api.github.com/repos/{full}"
    created = _created(det)
    pushed = det.date("pushed", created, EPOCH_END)
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
        "description": f"{_sentence(det, 'desc').capitalize()}.",
        "fork": det.chance("fork", 1, 10),
        "url": api,
        "forks_url": f"{api}/forks",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "created_at": iso_s(created),
        "updated_at": iso_s(pushed),
        "pushed_at": iso_s(pushed),
        "git_url": f"git://github.com/{full}.git",
        "ssh_url": f"git@github.com:{full}.git",
        "clone_url": f"https://github.com/{full}.git",
        "svn_url": f"https://github.com/{full}",
        "homepage": _site_for(name) if det.chance("homepage", 2, 3) else None,
        "size": det.num("size", 10, 200_000),
        "stargazers_count": stars,
        "watchers_count": stars,
        "language": det.pick("lang", _LANGS),
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
        "topics": [det.pick("topic", _TOPICS), "solana"],
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
    det = Det("gh-user", login.lower())
    created = _created(det)
    body = _github_owner(login)
    body.update({
        "name": _display_name(det, login),
        "company": None if github_type(login) == "Organization" else det.pick("company", (None, "@solana-labs", "Freelance")),
        "blog": _site_for(login).removeprefix("https://") if det.chance("blog", 2, 3) else "",
        "location": det.pick("place", _PLACES) or None,
        "email": None,
        "hireable": None,
        "bio": _sentence(det, "bio"),
        "twitter_username": login if det.chance("twitter", 1, 2) else None,
        "public_repos": det.skewed("repos", 300),
        "public_gists": det.skewed("gists", 50),
        "followers": det.skewed("followers", 20_000),
        "following": det.skewed("following", 300),
        "created_at": iso_s(created),
        "updated_at": iso_s(det.date("updated", created, EPOCH_END)),
    })
    return body


def github_error(message: str, doc: str, status: int) -> dict[str, Any]:
    return {"message": message, "documentation_url": f"https://docs.github.com/rest/{doc}", "status": str(status)}


# ------------------------------------------------------------------------------------------ telegram


def telegram_kind(name: str) -> str:
    """channel / group / user / bot for a public username on the sandbox's Telegram. Readable rule so
    scenario authors can choose: a name ending in "bot" is a bot; one containing "chat", "group",
    "community" or "talk" is a group; otherwise 4 in 5 are channels and 1 in 5 are users (by hash)."""
    low = name.lower()
    if low.endswith("bot"):
        return "bot"
    if any(word in low for word in ("chat", "group", "community", "talk")):
        return "group"
    return "user" if Det("tg", low).chance("user", 1, 5) else "channel"


def _spaced(n: int) -> str:
    """Telegram's thousands separator is a space: 12 345."""
    return f"{n:,}".replace(",", " ")


_TG_HEAD_TAIL = """    <meta property="twitter:site" content="@Telegram">
    <meta property="al:ios:app_store_id" content="686449807">
    <meta property="al:ios:app_name" content="Telegram Messenger">
    <meta property="al:ios:url" content="tg://resolve?domain={name}">
    <meta property="al:android:url" content="tg://resolve?domain={name}">
    <meta property="al:android:app_name" content="Telegram">
    <meta property="al:android:package" content="org.telegram.messenger">
    <meta name="twitter:card" content="summary">
    <meta name="twitter:site" content="@Telegram">
    <meta name="twitter:description" content="{description}">
    <meta name="robots" content="noindex, nofollow">
    <link rel="icon" type="image/svg+xml" href="//telegram.org/img/website_icon.svg?4">
    <link rel="apple-touch-icon" sizes="180x180" href="//telegram.org/img/apple-touch-icon.png">
    <link rel="icon" type="image/png" sizes="32x32" href="//telegram.org/img/favicon-32x32.png">
    <link rel="icon" type="image/png" sizes="16x16" href="//telegram.org/img/favicon-16x16.png">
    <link rel="alternate icon" href="//telegram.org/img/favicon.ico" type="image/x-icon" />
    <link href="//telegram.org/css/font-roboto.css?1" rel="stylesheet" type="text/css">
    <link href="//telegram.org/css/bootstrap.min.css?3" rel="stylesheet">
    <link href="//telegram.org/css/telegram.css?240" rel="stylesheet" media="screen">
    <script>window.matchMedia&&window.matchMedia('(prefers-color-scheme: dark)').matches&&document.documentElement&&document.documentElement.classList&&document.documentElement.classList.add('theme_dark');</script>
  </head>
  <body class="no_transition">
    <div class="tgme_background_wrap">
      <canvas id="tgme_background" class="tgme_background default" width="50" height="50" data-colors="dbddbb,6ba587,d5d88d,88b884"></canvas>
      <div class="tgme_background_pattern default"></div>
    </div>
    <div class="tgme_page_wrap">
      <div class="tgme_head_wrap">
        <div class="tgme_head">
          <a href="//telegram.org/" class="tgme_head_brand">
            <i class="tgme_logo"></i>
          </a>
          <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={dl}">
            Download
          </a>
        </div>
      </div>
      <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={dl}">
        Don't have <strong>Telegram</strong> yet? Try it now!<i class="tgme_icon_arrow"></i>
      </a>
      <div class="tgme_body_wrap">
        <div class="tgme_page">
"""

_TG_FOOT = """        </div>
      </div>
    </div>
    <div id="tgme_frame_cont"></div>
    <script src="//telegram.org/js/tgwallpaper.min.js?3"></script>
    <script type="text/javascript">
var protoUrl = "tg:\\/\\/resolve?domain={name}";
if (false) {{
  var iframeContEl = document.getElementById('tgme_frame_cont') || document.body;
  var iframeEl = document.createElement('iframe');
  iframeContEl.appendChild(iframeEl);
  var pageHidden = false;
  window.addEventListener('pagehide', function () {{ pageHidden = true; }}, false);
  window.addEventListener('blur', function () {{ pageHidden = true; }}, false);
  if (iframeEl !== null) {{ iframeEl.src = protoUrl; }}
}}
TWallpaper.init(document.getElementById('tgme_background'));
    </script>
  </body>
</html>
"""


def _tg_head(name: str, title_tag: str, og_title: str, description: str, image: str) -> str:
    e = html.escape
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n"
        f"    <title>{e(title_tag)}</title>\n"
        "    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0, minimum-scale=1.0, "
        "maximum-scale=1.0, user-scalable=no\" />\n"
        f"    <meta property=\"og:title\" content=\"{e(og_title)}\">\n"
        f"    <meta property=\"og:image\" content=\"{e(image)}\">\n"
        "    <meta property=\"og:site_name\" content=\"Telegram\">\n"
        f"    <meta property=\"og:description\" content=\"{e(description)}\">\n"
        f"    <meta property=\"twitter:title\" content=\"{e(og_title)}\">\n"
        f"    <meta property=\"twitter:image\" content=\"{e(image)}\">\n"
        + _TG_HEAD_TAIL.format(name=e(name), description=e(description), dl=e(name))
    )


def telegram_page(name: str, *, kind: str | None = None, private_invite: bool = False) -> str:
    """The t.me/<name> preview page of a public chat (`kind` channel/group/user/bot), or with
    `private_invite` the page of a chat only an invite opens ("Join Channel"/"Join Group")."""
    det = Det("tg", name.lower())
    kind = kind or telegram_kind(name)
    e = html.escape
    title = f"{det.pick('adj', _ADJ).title()} {det.pick('noun', _NOUN).title()} {'Bot' if kind == 'bot' else 'Official'}"
    site = _site_for(name)
    description = f"{_sentence(det, 'desc').capitalize()}. Website: {site}"
    image = f"https://cdn4.cdn-telegram.org/file/{det.b64url('photo', 86)}.jpg"
    if kind == "channel":
        extra = f"{_spaced(det.skewed('subs', 3_000_000))} subscribers"
    elif kind == "group":
        members = det.skewed("members", 500_000)
        extra = f"{_spaced(members)} members, {_spaced(det.num('online', 0, max(1, members // 20)))} online"
    else:
        extra = f"@{name}"
    body_description = (f"{e(_sentence(det, 'desc').capitalize())}.<br/>Website: "
                        f"<a href=\"{e(site)}\" target=\"_blank\" rel=\"noopener\">{e(site.removeprefix('https://'))}</a>")
    resolve = f"tg://resolve?domain={e(name)}"
    if private_invite:
        button = "Join Group" if kind == "group" else "Join Channel"
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">{button}</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can view and join <br><strong>{e(title)}</strong> right away.
          </div>
"""
    elif kind in ("channel", "group"):
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">View in Telegram</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can view and join <br><strong>{e(title)}</strong> right away.
          </div>
"""
        if kind == "channel":
            actions += f"""          <div class="tgme_page_context_link_wrap">
            <a class="tgme_page_context_link" href="/s/{e(name)}">Preview channel</a>
          </div>
"""
    else:
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">Send Message</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can contact <a class="tgme_username_link" href="{resolve}">{e(title)}</a> right away.
          </div>
"""
    title_tag = f"Telegram: {'View' if kind in ('channel', 'group') and not private_invite else 'Contact'} @{name}"
    page = f"""          <div class="tgme_page_photo">
            <a href="{resolve}"><img class="tgme_page_photo_image" src="{e(image)}"></a>
          </div>
          <div class="tgme_page_title" dir="auto"><span dir="auto">{e(title)}</span></div>
          <div class="tgme_page_extra">
            {e(extra)}
          </div>
          <div class="tgme_page_description" dir="auto">{body_description}</div>
{actions}"""
    return _tg_head(name, title_tag, title, description, image) + page + _TG_FOOT.format(name=e(name))


def telegram_not_found_page(name: str) -> str:
    """What t.me answers for a username nobody holds: a generic "Contact @name" page, no title block."""
    e = html.escape
    resolve = f"tg://resolve?domain={e(name)}"
    page = f"""          <div class="tgme_page_photo">
            <a href="{resolve}"><i class="tgme_page_photo_image bgcolor0" data-content="{e(name[:1].upper())}"></i></a>
          </div>
          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">Send Message</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can contact <a class="tgme_username_link" href="{resolve}">@{e(name)}</a> right away.
          </div>
"""
    return (_tg_head(name, f"Telegram: Contact @{name}", f"Telegram: Contact @{name}",
                     f"You can contact @{name} right away.", "https://telegram.org/img/t_logo.png")
            + page + _TG_FOOT.format(name=e(name)))


def plain_error_page(status: int, reason: str) -> str:
    """The nginx error page t.me (and most sites) send for 5xx / 429."""
    return (f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
            f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


# ------------------------------------------------------------------------------------------ urlscan


def urlscan_uuid(url: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sandbox-urlscan:{url}"))


def urlscan_submission(url: str, scan_uuid: str, visibility: str) -> dict[str, Any]:
    return {
        "message": "Submission successful",
        "uuid": scan_uuid,
        "result": f"https://urlscan.io/result/{scan_uuid}/",
        "api": f"https://urlscan.io/api/v1/result/{scan_uuid}/",
        "visibility": visibility,
        "options": {"useragent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                                 "Chrome/130.0.0.0 Safari/537.36"},
        "url": url,
        "country": "us",
    }


def urlscan_result(url: str, scan_uuid: str) -> dict[str, Any]:
    det = Det("urlscan", url)
    host = re.sub(r"^https?://", "", url).split("/", 1)[0].split("?", 1)[0].split(":", 1)[0].lower()
    apex = registrable_domain(host)
    ip = f"104.21.{det.num('ip3', 0, 255)}.{det.num('ip4', 1, 254)}"
    scanned = det.date("time", datetime(2026, 10, 26, tzinfo=UTC), datetime(2026, 10, 31, tzinfo=UTC))
    tls_from = scanned - timedelta(days=det.num("tls_age", 1, 80))
    title = f"{apex.split('.')[0].title()} | {_sentence(det, 'title').capitalize()}"
    links = [
        {"href": f"https://x.com/{apex.split('.')[0][:15].replace('-', '_')}", "text": "X"},
        {"href": f"https://t.me/{apex.split('.')[0].replace('-', '_')}", "text": "Telegram"},
    ]
    return {
        "data": {"requests": [], "cookies": [], "console": [], "links": links, "timing": {}, "globals": []},
        "lists": {
            "ips": [ip],
            "countries": ["US"],
            "asns": ["13335"],
            "domains": sorted({host, "fonts.googleapis.com", "cdnjs.cloudflare.com"}),
            "servers": ["cloudflare"],
            "urls": [url],
            "linkDomains": ["x.com", "t.me"],
            "certificates": [{"subjectName": host, "issuer": "WE1", "validFrom": int(tls_from.timestamp()),
                              "validTo": int((tls_from + timedelta(days=90)).timestamp())}],
            "hashes": [det.hexstr("hash", 64)],
        },
        "meta": {"processors": {}},
        "page": {
            "url": url,
            "domain": host,
            "apexDomain": apex,
            "ip": ip,
            "country": "US",
            "asn": "AS13335",
            "asnname": "CLOUDFLARENET, US",
            "server": "cloudflare",
            "title": title,
            "status": "200",
            "mimeType": "text/html",
            "redirected": "off-domain" if det.chance("redirected", 1, 10) else None,
            "tlsIssuer": "WE1",
            "tlsValidFrom": iso_ms(tls_from),
            "tlsValidDays": 89,
            "tlsAgeDays": (scanned - tls_from).days,
            "umbrellaRank": None,
            "city": "",
            "ptr": "",
        },
        "stats": {"uniqIPs": 3, "uniqCountries": 1, "dataLength": det.num("bytes", 20_000, 900_000),
                  "encodedDataLength": det.num("enc", 10_000, 400_000), "requests": det.num("requests", 5, 90),
                  "malicious": 0, "adBlocked": 0, "securePercentage": 100, "securityBlocked": 0, "IPv6Percentage": 50},
        "submitter": {"country": "US"},
        "task": {
            "uuid": scan_uuid,
            "time": iso_ms(scanned),
            "url": url,
            "visibility": "unlisted",
            "method": "api",
            "source": "sandbox",
            "tags": [],
            "reportURL": f"https://urlscan.io/result/{scan_uuid}/",
            "screenshotURL": f"https://urlscan.io/screenshots/{scan_uuid}.png",
            "domURL": f"https://urlscan.io/dom/{scan_uuid}/",
            "apexDomain": apex,
            "domain": host,
        },
        "verdicts": {
            "overall": {"score": 0, "categories": [], "brands": [], "tags": [], "malicious": False,
                        "hasVerdicts": False},
            "urlscan": {"score": 0, "categories": [], "brands": [], "tags": [], "malicious": False,
                        "hasVerdicts": False},
            "engines": {"score": 0, "categories": [], "enginesTotal": 0, "maliciousTotal": 0, "benignTotal": 0,
                        "maliciousVerdicts": [], "benignVerdicts": [], "malicious": False, "hasVerdicts": False},
            "community": {"score": 0, "categories": [], "votesTotal": 0, "votesMalicious": 0, "votesBenign": 0,
                          "tags": [], "malicious": False, "hasVerdicts": False},
        },
    }


def urlscan_message(status: int, message: str, description: str) -> dict[str, Any]:
    return {"message": message, "description": description, "status": status}


# ------------------------------------------------------------------------------------------ rdap

RDAP_REGISTRIES: dict[str, str] = {
    "com": "https://rdap.verisign.com/com/v1",
    "net": "https://rdap.verisign.com/net/v1",
    "org": "https://rdap.publicinterestregistry.org/rdap",
}
RDAP_DEFAULT_REGISTRY = "https://rdap.identitydigital.services/rdap"


def rdap_registry_url(domain: str) -> str:
    tld = domain.rsplit(".", 1)[-1].lower()
    return f"{RDAP_REGISTRIES.get(tld, RDAP_DEFAULT_REGISTRY)}/domain/{domain}"


def rdap_domain(domain: str) -> dict[str, Any]:
    det = Det("rdap", domain.lower())
    registered = det.date("registered", datetime(2015, 1, 1, tzinfo=UTC), datetime(2026, 10, 1, tzinfo=UTC))
    changed = det.date("changed", registered, datetime(2026, 10, 20, tzinfo=UTC))
    expires = registered.replace(year=registered.year + det.num("years", 1, 5))
    registrar = det.pick("registrar", (("NameCheap, Inc.", "1068"), ("GoDaddy.com, LLC", "146"),
                                       ("Porkbun LLC", "1861"), ("Cloudflare, Inc.", "1910")))
    return {
        "objectClassName": "domain",
        "handle": f"{det.digits('handle', 10)}_DOMAIN_{domain.rsplit('.', 1)[-1].upper()}-VRSN",
        "ldhName": domain.upper(),
        "links": [{"value": rdap_registry_url(domain), "rel": "self", "href": rdap_registry_url(domain),
                   "type": "application/rdap+json"}],
        "status": ["client transfer prohibited"],
        "entities": [{
            "objectClassName": "entity",
            "handle": registrar[1],
            "roles": ["registrar"],
            "publicIds": [{"type": "IANA Registrar ID", "identifier": registrar[1]}],
            "vcardArray": ["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", registrar[0]]]],
        }],
        "events": [
            {"eventAction": "registration", "eventDate": iso_s(registered)},
            {"eventAction": "expiration", "eventDate": iso_s(expires)},
            {"eventAction": "last changed", "eventDate": iso_s(changed)},
            {"eventAction": "last update of RDAP database", "eventDate": "2026-10-31T00:00:00Z"},
        ],
        "secureDNS": {"delegationSigned": False},
        "nameservers": [
            {"objectClassName": "nameserver", "ldhName": f"{det.pick('ns1', ('ADA', 'BEN', 'CODY'))}.NS.CLOUDFLARE.COM"},
            {"objectClassName": "nameserver", "ldhName": f"{det.pick('ns2', ('MAX', 'NORA', 'OWEN'))}.NS.CLOUDFLARE.COM"},
        ],
        "rdapConformance": ["rdap_level_0", "icann_rdap_technical_implementation_guide_0",
                            "icann_rdap_response_profile_0"],
        "notices": [{"title": "Terms of Use", "description": ["Service subject to Terms of Use."],
                     "links": [{"href": "https://www.verisign.com/domain-names/registration-data-access-protocol/terms-service/index.xhtml",
                                "type": "text/html"}]}],
    }


def rdap_not_found(domain: str) -> dict[str, Any]:
    return {"errorCode": 404, "title": "Not Found", "description": [f"The domain {domain} was not found."],
            "rdapConformance": ["rdap_level_0"]}
