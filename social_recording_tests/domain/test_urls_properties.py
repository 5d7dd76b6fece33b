"""Properties of the canonical form (transform once at the entry, read everywhere else)."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from social_recording.domain.urls import (
    GLOBAL_TRACKING_PARAMS,
    HOST_ALIASES,
    PLATFORM_HOSTS,
    PLATFORM_TRACKING_PARAMS,
    SHORTENER_HOSTS,
    NonCanonicalUrl,
    Platform,
    parse_canonical,
    platform_of,
    to_canonical,
)

SETTINGS = settings(max_examples=200, deadline=None)

KNOWN_HOSTS = sorted(set(HOST_ALIASES) | set(PLATFORM_HOSTS) | SHORTENER_HOSTS)
WEB_HOSTS = ["mytoken.io", "pump.fun", "m.mytoken.io", "docs.mytoken.xyz", "bücher.example", "xn--p1ai.xn--p1ai",
             "web.archive.org", "1.2.3.4", "[2001:db8::1]", "help.x.com", "sub_domain.example.org"]  # fmt: skip
TRACKING = sorted(
    GLOBAL_TRACKING_PARAMS | {"utm_source", "UTM_Campaign"} | set().union(*PLATFORM_TRACKING_PARAMS.values())
)
WORDS = ["status", "statuses", "photo", "video", "1", "1780000000000000000", "i", "web", "watch", "embed", "shorts",
         "live", "videoseries", "dQw4w9WgXcQ", "@Handle", "s", "r", "comments", "u", "user", "orgs", "tree", "p",
         "reel", "reels", "tv", "invite", "t", "v", "+AbC", "joinchat", "c", "Solana", "repo.git", "media", "videos",
         ".", "..", "", "index.html", "a b", "토큰", "%7e", "%2F", "%zz", "x&y", "a=b", "@", "~", "!$'()*+,;="]  # fmt: skip

label = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)
generated_host = st.builds(lambda labels, tld: ".".join([*labels, tld]), st.lists(label, min_size=1, max_size=3),
                           st.sampled_from(["com", "io", "xyz", "fun", "org", "example"]))  # fmt: skip
host = st.one_of(st.sampled_from(KNOWN_HOSTS), st.sampled_from(WEB_HOSTS), generated_host)
segment = st.one_of(
    st.sampled_from(WORDS), st.text(min_size=0, max_size=8).filter(lambda s: not any(c in s for c in "/?#\\"))
)
value = st.one_of(st.none(), st.text(max_size=8).filter(lambda s: not any(c in s for c in "&#")))
key = st.one_of(st.sampled_from(TRACKING + ["v", "list", "single", "comment", "start", "q", "tab", "a", "Z"]),
                st.text("abcdefghij_", min_size=1, max_size=5))  # fmt: skip


@st.composite
def raw_urls(draw: st.DrawFn) -> str:
    h = draw(host)
    h = draw(st.sampled_from([h, h.upper(), h.title()]))
    if h[0].isalpha() and draw(st.booleans()):  # never before an IP literal
        h = "www." + h
    scheme = draw(st.sampled_from(["https://", "http://", "HTTPS://", "Http://", "https:"]))
    port = draw(st.sampled_from(["", "", ":443", ":80", ":8080"]))
    path = "/".join(draw(st.lists(segment, max_size=5)))
    trailing = draw(st.sampled_from(["", "/"]))
    pairs = draw(st.lists(st.tuples(key, value), max_size=4))
    query = "&".join(k if v is None else f"{k}={v}" for k, v in pairs)
    fragment = draw(st.sampled_from(["", "#top", "#!/Someone/status/5"]))
    url = f"{scheme}{h}{port}"
    if path:
        url += "/" + path
    url += trailing
    if query:
        url += "?" + query
    return url + fragment


@SETTINGS
@given(raw_urls())
def test_to_canonical_accepts_urls_and_is_idempotent(raw: str) -> None:
    canonical = to_canonical(raw)
    assert canonical.startswith("https://")
    assert to_canonical(canonical) == canonical


@SETTINGS
@given(raw_urls())
def test_parse_canonical_accepts_every_canonical_output(raw: str) -> None:
    canonical = to_canonical(raw)
    parsed = parse_canonical(canonical)
    assert parsed.url == canonical
    assert parsed.platform is platform_of(canonical)
    assert isinstance(parsed.platform, Platform)
    assert parsed.host == parsed.host.lower()
    assert not parsed.host.startswith("www.")
    assert parsed.host not in HOST_ALIASES
    assert not canonical.partition("?")[0].endswith("/")
    assert "#" not in canonical


@SETTINGS
@given(raw_urls())
def test_no_tracking_parameter_survives(raw: str) -> None:
    parsed = parse_canonical(to_canonical(raw))
    names = {unquote(k).lower() for k, _ in parsed.query}
    assert not any(n.startswith("utm_") for n in names)
    assert not names & GLOBAL_TRACKING_PARAMS
    assert not names & PLATFORM_TRACKING_PARAMS.get(parsed.platform, frozenset())


@SETTINGS
@given(raw_urls(), st.sampled_from(["www", "upper", "tracking", "http", "slash", "fragment", "space"]))
def test_parse_canonical_rejects_non_canonical_variants(raw: str, how: str) -> None:
    canonical = to_canonical(raw)
    rest = canonical.removeprefix("https://")
    netloc_end = min((i for i in (rest.find("/"), rest.find("?")) if i != -1), default=len(rest))
    netloc, tail = rest[:netloc_end], rest[netloc_end:]
    path, qmark, query = tail.partition("?")
    variant = {
        "www": f"https://www.{netloc}{tail}",
        "upper": f"https://{netloc.upper()}{tail}",
        "tracking": canonical + ("&" if "?" in canonical else "?") + "utm_source=x",
        "http": "http://" + rest,
        "slash": f"https://{netloc}{path}/{qmark}{query}",
        "fragment": canonical + "#frag",
        "space": canonical + " ",
    }[how]
    assume(variant != canonical)
    try:
        parse_canonical(variant)
    except NonCanonicalUrl:
        return
    raise AssertionError(f"accepted non-canonical {variant!r} (canonical {canonical!r})")


@SETTINGS
@given(raw_urls())
def test_platform_of_is_total_on_canonical_input(raw: str) -> None:
    assert platform_of(to_canonical(raw)) in set(Platform)


@SETTINGS
@given(st.text(max_size=60))
def test_arbitrary_text_either_raises_value_error_or_is_canonical(raw: str) -> None:
    try:
        canonical = to_canonical(raw)
    except ValueError:
        return
    assert to_canonical(canonical) == canonical
    assert parse_canonical(canonical).url == canonical


@SETTINGS
@given(raw_urls())
def test_scheme_less_input_always_raises_naming_the_value(raw: str) -> None:
    # only http(s) URLs; the entry (TokenProfileReader) prefixes https:// itself
    for scheme_less in (raw.split(":", 1)[1].lstrip("/"), "//" + raw.split(":", 1)[1].lstrip("/")):
        try:
            to_canonical(scheme_less)
        except ValueError as exc:
            assert "not an http(s) URL" in str(exc)
            continue
        raise AssertionError(f"accepted scheme-less {scheme_less!r}")


@SETTINGS
@given(st.sampled_from(["https://", "http://", "", "//", "HTTPS:"]), st.text(max_size=40))
def test_any_text_after_a_scheme_raises_value_error_or_is_canonical(scheme: str, rest: str) -> None:
    try:
        canonical = to_canonical(scheme + rest)
    except ValueError:
        return
    assert to_canonical(canonical) == canonical
    assert parse_canonical(canonical).url == canonical


@SETTINGS
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=30))
def test_any_path_text_is_canonicalised_idempotently(path: str) -> None:
    for base in ("https://mytoken.io/", "https://x.com/", "https://youtu.be/", "https://github.com/a/"):
        try:
            canonical = to_canonical(base + path)
        except ValueError:
            continue  # e.g. control characters
        assert to_canonical(canonical) == canonical
        parse_canonical(canonical)


tweet_id = st.from_regex(r"\A[1-9][0-9]{0,19}\Z")
any_handle = st.from_regex(r"\A@?[A-Za-z0-9_]{1,20}\Z")
x_hosts = st.sampled_from(["x.com", "twitter.com", "www.twitter.com", "mobile.twitter.com", "m.x.com",
                           "fxtwitter.com", "vxtwitter.com", "fixupx.com", "fixvx.com"])  # fmt: skip
ig_code = st.from_regex(r"\A[A-Za-z0-9_-]{6,14}\Z").filter(lambda c: c != "audio")
reddit_id = st.from_regex(r"\A[a-z0-9]{1,9}\Z")
slug = st.from_regex(r"\A[a-z0-9_]{1,20}\Z")


@SETTINGS
@given(x_hosts, any_handle, tweet_id, st.sampled_from(["status", "statuses", "Status"]),
       st.sampled_from(["", "/", "/photo/1", "/video/2", "/analytics", "?s=20", "?t=x&s=1"]))  # fmt: skip
def test_every_tweet_url_is_x_i_status_id(host: str, handle: str, tid: str, word: str, suffix: str) -> None:
    """The handle in a status URL is decoration: X serves the tweet under any handle."""
    expected = f"https://x.com/i/status/{tid}"
    assert to_canonical(f"https://{host}/{handle}/{word}/{tid}{suffix}") == expected
    assert to_canonical(f"https://{host}/i/web/{word}/{tid}{suffix}") == expected


@SETTINGS
@given(st.sampled_from(["p", "reel", "reels", "tv", "P", "Reel"]), ig_code, st.sampled_from(["", "/", "/embed"]),
       st.one_of(st.just(""), st.from_regex(r"\A[a-z0-9_.]{1,12}/\Z").filter(lambda u: u[:-1] not in
                 {"p", "reel", "reels", "tv", "stories", "explore", "accounts", "share", "direct", "about"})))  # fmt: skip
def test_every_instagram_media_url_is_p_code(prefix: str, code: str, tail: str, user: str) -> None:
    assert to_canonical(f"https://www.instagram.com/{user}{prefix}/{code}{tail}") == f"https://instagram.com/p/{code}"


@SETTINGS
@given(reddit_id, st.sampled_from(["", "r/Solana/", "r/cryptocurrency/", "user/SomeOne/"]),
       st.sampled_from(["", "/", "/{slug}", "/{slug}/", "/{slug}/kxyz12", "/comment/kxyz12"]), slug,
       st.sampled_from(["reddit.com", "www.reddit.com", "old.reddit.com", "np.reddit.com", "m.reddit.com"]))  # fmt: skip
def test_every_reddit_post_url_is_comments_id(pid: str, prefix: str, tail: str, words: str, host: str) -> None:
    raw = f"https://{host}/{prefix}comments/{pid.upper()}{tail.format(slug=words)}"
    assert to_canonical(raw) == f"https://reddit.com/comments/{pid}"


@SETTINGS
@given(st.from_regex(r"\A[A-Za-z0-9_.]{1,24}\Z"), tweet_id, st.sampled_from(["video", "photo", "VIDEO"]),
       st.sampled_from(["tiktok.com", "www.tiktok.com", "m.tiktok.com"]))  # fmt: skip
def test_every_tiktok_post_url_is_at_kind_id(user: str, pid: str, kind: str, host: str) -> None:
    expected = f"https://tiktok.com/@/{kind.lower()}/{pid}"
    assert to_canonical(f"https://{host}/@{user}/{kind}/{pid}") == expected
    if kind.lower() == "video":
        assert to_canonical(f"https://{host}/v/{pid}.html") == expected
