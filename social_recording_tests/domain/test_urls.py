"""Canonical URLs: table-driven shapes per platform, aliases, junk, readers."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from social_recording.domain.urls import (
    GLOBAL_TRACKING_PARAMS,
    HOST_ALIASES,
    PLATFORM_TRACKING_PARAMS,
    SHORTENER_HOSTS,
    CanonicalUrl,
    NonCanonicalUrl,
    Platform,
    is_shortlink,
    parse_canonical,
    platform_of,
    to_canonical,
    to_canonical_all,
)
from social_recording.platforms.catalogue import CATALOGUE

X, TT, IG, RD, YT, GH, TG, DC, WEB = (
    Platform.X,
    Platform.TIKTOK,
    Platform.INSTAGRAM,
    Platform.REDDIT,
    Platform.YOUTUBE,
    Platform.GITHUB,
    Platform.TELEGRAM,
    Platform.DISCORD,
    Platform.WEB,
)

# (raw input, expected canonical, expected platform) — real-world shapes.
# fmt: off
SHAPES: list[tuple[str, str, Platform]] = [
    # --- x -------------------------------------------------------------------------------------
    # a tweet is its id: X serves it under any handle, so every tweet URL is x.com/i/status/<id>
    ("https://x.com/solana/status/1780000000000000000", "https://x.com/i/status/1780000000000000000", X),
    ("https://x.com/Solana/status/1780000000000000000?s=20", "https://x.com/i/status/1780000000000000000", X),
    ("https://twitter.com/elonmusk/status/1519480761749016577?s=21&t=AbCdEf", "https://x.com/i/status/1519480761749016577", X),
    ("https://twitter.com/jack/statuses/20", "https://x.com/i/status/20", X),
    ("https://twitter.com/statuses/20", "https://x.com/i/status/20", X),
    ("https://x.com/@Jack/status/20", "https://x.com/i/status/20", X),
    ("https://x.com/some.one/status/20", "https://x.com/i/status/20", X),
    ("https://x.com/user/status/123/photo/1", "https://x.com/i/status/123", X),
    ("https://x.com/user/status/123/video/2?ref_src=twsrc%5Etfw", "https://x.com/i/status/123", X),
    ("https://x.com/user/status/123/analytics", "https://x.com/i/status/123", X),
    ("https://x.com/user/status/123/retweets/with_comments", "https://x.com/i/status/123", X),
    ("https://x.com/i/web/status/1780000000000000000", "https://x.com/i/status/1780000000000000000", X),
    ("https://twitter.com/i/web/status/99/photo/1", "https://x.com/i/status/99", X),
    ("https://x.com/i/status/99", "https://x.com/i/status/99", X),
    ("https://x.com/I/Status/99", "https://x.com/i/status/99", X),
    ("https://twitter.com/#!/SomeUser/status/12345", "https://x.com/i/status/12345", X),
    ("https://x.com/user/status/notanid", "https://x.com/user/status/notanid", X),
    ("https://x.com/PumpDotFun", "https://x.com/pumpdotfun", X),
    ("https://x.com/PumpDotFun/", "https://x.com/pumpdotfun", X),
    ("https://x.com/@PumpDotFun", "https://x.com/pumpdotfun", X),
    ("https://twitter.com/@SomeToken/media", "https://x.com/sometoken", X),
    ("https://x.com/SomeToken/media", "https://x.com/sometoken", X),
    ("https://x.com/SomeToken/with_replies?lang=en", "https://x.com/sometoken?lang=en", X),
    ("https://x.com/i/communities/1790000000000000000", "https://x.com/i/communities/1790000000000000000", X),
    ("https://x.com/search?q=%24BONK&src=typed_query&f=live", "https://x.com/search?f=live&q=%24BONK", X),
    ("https://x.com/hashtag/Solana?src=hashtag_click", "https://x.com/hashtag/Solana", X),
    ("https://twitter.com/intent/tweet?text=gm&url=https%3A%2F%2Fexample.com", "https://x.com/intent/tweet?text=gm&url=https%3A%2F%2Fexample.com", X),
    ("https://x.com/user/status/123?cn=ZmxleGlibGU&ref_url=abc&keep=1", "https://x.com/i/status/123?keep=1", X),
    ("HTTPS://X.COM/User//status///123/", "https://x.com/i/status/123", X),
    # --- youtube -------------------------------------------------------------------------------
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://youtube.com/watch?v=dQw4w9WgXcQ&t=42s&si=abc&feature=share", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLx&index=3&ab_channel=Rick&pp=ygU", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://youtube.com/watch?app=desktop&v=dQw4w9WgXcQ", "https://youtube.com/watch?app=desktop&v=dQw4w9WgXcQ", YT),
    ("https://youtu.be/dQw4w9WgXcQ?si=Xy12&t=30", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://youtube.com/shorts/dQw4w9WgXcQ?feature=share", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://www.youtube.com/live/dQw4w9WgXcQ?si=abc", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://www.youtube.com/embed/dQw4w9WgXcQ?autoplay=1&start=10&rel=0", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://www.youtube.com/v/dQw4w9WgXcQ", "https://youtube.com/watch?v=dQw4w9WgXcQ", YT),
    ("https://www.youtube.com/embed/videoseries?list=PLabc&autoplay=1", "https://youtube.com/playlist?list=PLabc", YT),
    ("https://www.youtube.com/playlist?list=PLabc&si=zz", "https://youtube.com/playlist?list=PLabc", YT),
    ("https://www.youtube.com/@SolanaFndn", "https://youtube.com/@solanafndn", YT),
    ("https://www.youtube.com/@SolanaFndn/videos?si=1", "https://youtube.com/@solanafndn", YT),
    ("https://www.youtube.com/@SolanaFndn/live", "https://youtube.com/@solanafndn/live", YT),
    ("https://www.youtube.com/channel/UCabcdefghijklmnopqrstuv/featured", "https://youtube.com/channel/UCabcdefghijklmnopqrstuv", YT),
    ("https://www.youtube.com/c/SomeCustomName", "https://youtube.com/c/SomeCustomName", YT),
    ("https://www.youtube.com/user/LegacyName/about", "https://youtube.com/user/LegacyName", YT),
    # --- tiktok --------------------------------------------------------------------------------
    # a post is its id: TikTok serves /@/video/<id> whatever the author
    ("https://www.tiktok.com/@ayseqeo/video/7669905419661233438", "https://tiktok.com/@/video/7669905419661233438", TT),
    ("https://www.tiktok.com/@AyseQeo/video/7669905419661233438?is_from_webapp=1&sender_device=pc&web_id=7", "https://tiktok.com/@/video/7669905419661233438", TT),
    ("https://www.tiktok.com/@user/video/1?_r=1&_t=8kX&_d=x&u_code=1&share_app_name=m&share_iid=2&timestamp=3&user_id=4&source=h5_m&preview_pb=0&is_copy_url=1", "https://tiktok.com/@/video/1", TT),
    ("https://tiktok.com/@/video/7669905419661233438", "https://tiktok.com/@/video/7669905419661233438", TT),
    ("https://www.tiktok.com/@user/photo/7300000000000000000", "https://tiktok.com/@/photo/7300000000000000000", TT),
    ("https://www.tiktok.com/@User/PHOTO/7300000000000000000", "https://tiktok.com/@/photo/7300000000000000000", TT),
    ("https://www.tiktok.com/@SomeUser", "https://tiktok.com/@someuser", TT),
    ("https://m.tiktok.com/v/7123456789012345678.html?_d=abc", "https://tiktok.com/@/video/7123456789012345678", TT),
    ("https://www.tiktok.com/v/7123456789012345678.html", "https://tiktok.com/@/video/7123456789012345678", TT),
    ("https://www.tiktok.com/embed/v2/7123456789012345678?lang=en", "https://tiktok.com/@/video/7123456789012345678", TT),
    ("https://www.tiktok.com/embed/7123456789012345678", "https://tiktok.com/@/video/7123456789012345678", TT),
    ("https://vm.tiktok.com/ZMhAbCdEf/", "https://vm.tiktok.com/ZMhAbCdEf", TT),
    ("https://vt.tiktok.com/ZSAbC123/", "https://vt.tiktok.com/ZSAbC123", TT),
    ("https://www.tiktok.com/t/ZTRAbCdE/", "https://tiktok.com/t/ZTRAbCdE", TT),
    # --- instagram -----------------------------------------------------------------------------
    ("https://www.instagram.com/p/C1aBcDeFgHi/", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/p/C1aBcDeFgHi/?igsh=MTc4&img_index=2", "https://instagram.com/p/C1aBcDeFgHi", IG),
    # a media is its shortcode: instagram.com/p/<code> serves posts, reels and IGTV alike
    ("https://www.instagram.com/reel/C1aBcDeFgHi/?igshid=YmMy&utm_source=ig_web_copy_link", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/reels/C1aBcDeFgHi/", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/tv/CabcDEF123/", "https://instagram.com/p/CabcDEF123", IG),
    ("https://www.instagram.com/SomeUser/p/C1aBcDeFgHi/", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/SomeUser/reel/C1aBcDeFgHi/", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/p/C1aBcDeFgHi/embed/captioned/", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/reel/C1aBcDeFgHi/embed", "https://instagram.com/p/C1aBcDeFgHi", IG),
    ("https://www.instagram.com/SomeUser/reels/", "https://instagram.com/someuser/reels", IG),
    ("https://www.instagram.com/reels/audio/1234567890/", "https://instagram.com/reels/audio/1234567890", IG),
    ("https://www.instagram.com/Solana.Official/", "https://instagram.com/solana.official", IG),
    ("https://www.instagram.com/explore/tags/Solana/", "https://instagram.com/explore/tags/Solana", IG),
    # --- reddit --------------------------------------------------------------------------------
    # a post is its id (the subreddit comes from the API): every post URL is reddit.com/comments/<id>
    ("https://www.reddit.com/r/solana/comments/1abcde/my_token_launch/", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/r/solana/comments/1abcde", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/r/Solana/comments/1ABCDE/slug/?utm_source=share&utm_medium=web3x&utm_name=web3xcss&utm_term=1&utm_content=share_button", "https://reddit.com/comments/1abcde", RD),
    # a comment permalink names the post we record (the generator asks for the post, comments skipped)
    ("https://www.reddit.com/r/solana/comments/1abcde/slug/kxyz123/?context=3", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/r/solana/comments/1abcde/comment/kxyz123/", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/r/solana/comments/1abcde/slug/?sort=new&depth=2&keep=1", "https://reddit.com/comments/1abcde?keep=1", RD),
    ("https://reddit.com/r/solana/comments/1abcde/slug?share_id=abc&rdt=123&ref=share&ref_source=link&ref_campaign=x&correlation_id=y", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/comments/1abcde/slug/", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/comments/1abcde", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/user/SomeUser/comments/1abcde/my_post/", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/gallery/1AbCdE", "https://reddit.com/comments/1abcde", RD),
    ("https://www.reddit.com/r/Solana/comments/", "https://reddit.com/r/solana/comments", RD),
    ("https://www.reddit.com/r/SolanaMemeCoins/", "https://reddit.com/r/solanamemecoins", RD),
    ("https://www.reddit.com/u/SomeUser", "https://reddit.com/user/someuser", RD),
    ("https://www.reddit.com/user/SomeUser/submitted/", "https://reddit.com/user/someuser/submitted", RD),
    ("https://www.reddit.com/r/solana/s/AbCdEfGh12", "https://reddit.com/r/solana/s/AbCdEfGh12", RD),
    ("https://redd.it/1abcde", "https://redd.it/1abcde", RD),
    # --- github --------------------------------------------------------------------------------
    ("https://github.com/solana-labs/solana", "https://github.com/solana-labs/solana", GH),
    ("https://github.com/Solana-Labs/Solana.git", "https://github.com/solana-labs/solana", GH),
    ("https://github.com/a/b/issues/12", "https://github.com/a/b", GH),
    ("https://github.com/solana-labs/solana/tree/master/docs", "https://github.com/solana-labs/solana", GH),
    ("https://github.com/solana-labs/solana/blob/master/README.md#install", "https://github.com/solana-labs/solana", GH),
    ("https://github.com/solana-labs/solana?tab=readme-ov-file", "https://github.com/solana-labs/solana", GH),
    ("https://github.com/Solana-Labs", "https://github.com/solana-labs", GH),
    ("https://github.com/solana-labs?tab=repositories&q=x", "https://github.com/solana-labs?q=x", GH),
    ("https://github.com/orgs/Solana-Labs/repositories", "https://github.com/solana-labs", GH),
    ("https://github.com/sponsors/SomeDev", "https://github.com/sponsors/SomeDev", GH),
    ("https://github.com/topics/Solana", "https://github.com/topics/Solana", GH),
    # --- telegram ------------------------------------------------------------------------------
    ("https://t.me/solana", "https://t.me/solana", TG),
    ("https://t.me/SolanaNews/", "https://t.me/solananews", TG),
    ("https://t.me/SolanaNews", "https://t.me/solananews", TG),
    ("https://t.me/s/SolanaNews", "https://t.me/solananews", TG),
    ("https://t.me/s/SolanaNews/1234", "https://t.me/solananews/1234", TG),
    ("https://t.me/SolanaNews/1234?single", "https://t.me/solananews/1234?single", TG),
    ("https://t.me/SolanaNews/1234?comment=55", "https://t.me/solananews/1234?comment=55", TG),
    ("https://t.me/SomeBot?start=ref_AbC", "https://t.me/somebot?start=ref_AbC", TG),
    ("https://t.me/+AbCdEf123_xyz", "https://t.me/+AbCdEf123_xyz", TG),
    ("https://t.me/joinchat/AAAAAEkk2WdoDrB4-Q8-gg", "https://t.me/joinchat/AAAAAEkk2WdoDrB4-Q8-gg", TG),
    ("https://t.me/c/1234567890/55", "https://t.me/c/1234567890/55", TG),
    # --- discord -------------------------------------------------------------------------------
    ("https://discord.com/invite/AbCdEf", "https://discord.com/invite/AbCdEf", DC),
    ("https://discord.gg/AbCdEf", "https://discord.com/invite/AbCdEf", DC),
    ("https://discord.gg/invite/AbCdEf", "https://discord.com/invite/AbCdEf", DC),
    ("https://discord.com/channels/123/456", "https://discord.com/channels/123/456", DC),
    # --- web: generic rules only ---------------------------------------------------------------
    ("https://pump.fun/coin/AbC123pump", "https://pump.fun/coin/AbC123pump", WEB),
    ("http://www.MyToken.io/", "https://mytoken.io", WEB),
    ("https://www.mytoken.io", "https://mytoken.io", WEB),
    ("https://mytoken.io/About/Team/", "https://mytoken.io/About/Team", WEB),
    ("https:mytoken.io/a", "https://mytoken.io/a", WEB),  # an explicit scheme, spelt as browsers accept
    ("  https://mytoken.io  \n", "https://mytoken.io", WEB),
    ("https://mytoken.io/?utm_source=dexscreener&utm_medium=x&fbclid=abc&gclid=1&ref=dex", "https://mytoken.io?ref=dex", WEB),
    ("https://mytoken.io/page?b=2&a=1&s=keep&t=keep", "https://mytoken.io/page?b=2&a=1&s=keep&t=keep", WEB),
    ("https://mytoken.io/#roadmap", "https://mytoken.io", WEB),
    ("https://mytoken.io:443/a", "https://mytoken.io/a", WEB),
    ("http://mytoken.io:80/a", "https://mytoken.io/a", WEB),
    ("https://mytoken.io:8443/a", "https://mytoken.io:8443/a", WEB),
    ("https://m.mytoken.io/", "https://m.mytoken.io", WEB),
    ("https://mobile.mytoken.io/", "https://mobile.mytoken.io", WEB),
    ("https://www.www.mytoken.io", "https://mytoken.io", WEB),
    ("https://MyToken.io./Path", "https://mytoken.io/Path", WEB),
    ("https://mytoken.io/a/./b/../c", "https://mytoken.io/a/c", WEB),
    ("https://mytoken.io/a%2fb/%7euser/%41%42", "https://mytoken.io/a%2Fb/~user/AB", WEB),
    ("https://mytoken.io/white paper.pdf", "https://mytoken.io/white%20paper.pdf", WEB),
    ("https://mytoken.io/%E2%82%BF?q=%ea%b9%80", "https://mytoken.io/%E2%82%BF?q=%EA%B9%80", WEB),
    ("https://mytoken.io/토큰?이름=값", "https://mytoken.io/%ED%86%A0%ED%81%B0?%EC%9D%B4%EB%A6%84=%EA%B0%92", WEB),
    ("https://bücher.example/", "https://xn--bcher-kva.example", WEB),
    ("https://xn--BCHER-KVA.example/", "https://xn--bcher-kva.example", WEB),
    ("https://Straße.de/", "https://xn--strae-oqa.de", WEB),  # IDNA 2008 / browsers, not IDNA 2003's ss
    ("https://STRASSE.de/", "https://strasse.de", WEB),
    ("https://例え.テスト/パス", "https://xn--r8jz45g.xn--zckzah/%E3%83%91%E3%82%B9", WEB),
    ("https://ｅｘａｍｐｌｅ。com/", "https://example.com", WEB),
    ("https://user:secret@mytoken.io/x", "https://mytoken.io/x", WEB),
    ("https:\\\\mytoken.io\\a\\b", "https://mytoken.io/a/b", WEB),
    ("https://mytoken.io?a=1&&b=2&", "https://mytoken.io?a=1&b=2", WEB),
    ("https://mytoken.io/p?flag&x=", "https://mytoken.io/p?flag&x=", WEB),
    ("https://web.archive.org/web/2024/https://mytoken.io/", "https://web.archive.org/web/2024/https://mytoken.io", WEB),
    ("https://192.168.1.1:80/", "https://192.168.1.1", WEB),
    ("https://[2001:DB8:0:0::1]:8443/x", "https://[2001:db8::1]:8443/x", WEB),
    ("https://help.x.com/en/rules", "https://help.x.com/en/rules", WEB),
    ("https://gist.github.com/Someone/abc123", "https://gist.github.com/Someone/abc123", WEB),
    ("https://someone.github.io/Project/", "https://someone.github.io/Project", WEB),
    ("https://telegram.org/blog", "https://telegram.org/blog", WEB),
    ("https://t.co/AbC123", "https://t.co/AbC123", WEB),
    ("https://www.bit.ly/3AbCdEf", "https://bit.ly/3AbCdEf", WEB),
    ("https://linktr.ee/MyToken", "https://linktr.ee/MyToken", WEB),
    ("https://mytoken.io/?_ga=2.1&_gl=1*x&mc_cid=a&mc_eid=b&msclkid=c&dclid=d&yclid=e&twclid=f&ttclid=g&gbraid=h&wbraid=i&srsltid=j", "https://mytoken.io", WEB),
    ("https://mytoken.io/?UTM_Source=x&Fbclid=y", "https://mytoken.io", WEB),
]
# fmt: on
SHAPES += [(raw, canonical, d.platform) for d in CATALOGUE for raw, canonical in d.urls.examples]
"""A platform brings its own shapes in its spec (`UrlRules.examples`); the rows above predate that."""


@pytest.mark.parametrize(("raw", "expected", "platform"), SHAPES, ids=[r[0][:70] for r in SHAPES])
def test_shape(raw: str, expected: str, platform: Platform) -> None:
    got = to_canonical(raw)
    assert got == expected
    assert to_canonical(got) == got  # idempotent
    assert platform_of(got) is platform
    assert parse_canonical(got).url == got


def test_the_table_is_large_and_covers_every_platform() -> None:
    assert len(SHAPES) >= 80
    covered = {p for _, _, p in SHAPES}
    assert covered == set(Platform), (f"no URL shape of {sorted(p.value for p in set(Platform) - covered)}: add "
                                      "`examples` to the UrlRules in social_recording/platforms/<p>/spec.py")


# --- one row per alias: an alias without a row fails test_every_alias_has_a_row ------------------
# fmt: off
ALIAS_ROWS: list[tuple[str, str, str]] = [
    # (alias host, raw URL on it, expected canonical)
    ("twitter.com", "https://twitter.com/Jack/status/20", "https://x.com/i/status/20"),
    ("mobile.twitter.com", "https://mobile.twitter.com/jack/status/20", "https://x.com/i/status/20"),
    ("m.twitter.com", "https://m.twitter.com/jack/status/20", "https://x.com/i/status/20"),
    ("mobile.x.com", "https://mobile.x.com/jack/status/20", "https://x.com/i/status/20"),
    ("m.x.com", "https://m.x.com/jack", "https://x.com/jack"),
    ("fxtwitter.com", "https://fxtwitter.com/jack/status/20", "https://x.com/i/status/20"),
    ("vxtwitter.com", "https://vxtwitter.com/jack/status/20/photo/1", "https://x.com/i/status/20"),
    ("fixupx.com", "https://fixupx.com/jack/status/20", "https://x.com/i/status/20"),
    ("fixvx.com", "https://www.fixvx.com/jack/status/20", "https://x.com/i/status/20"),
    ("youtu.be", "https://youtu.be/dQw4w9WgXcQ", "https://youtube.com/watch?v=dQw4w9WgXcQ"),
    ("m.youtube.com", "https://m.youtube.com/watch?v=dQw4w9WgXcQ&feature=youtu.be", "https://youtube.com/watch?v=dQw4w9WgXcQ"),
    ("music.youtube.com", "https://music.youtube.com/watch?v=dQw4w9WgXcQ&list=RDAMVM", "https://youtube.com/watch?v=dQw4w9WgXcQ"),
    ("youtube-nocookie.com", "https://www.youtube-nocookie.com/embed/dQw4w9WgXcQ?controls=0", "https://youtube.com/watch?v=dQw4w9WgXcQ"),
    ("instagr.am", "https://instagr.am/p/C1aBcDeFgHi/", "https://instagram.com/p/C1aBcDeFgHi"),
    ("m.instagram.com", "https://m.instagram.com/SomeUser/", "https://instagram.com/someuser"),
    ("old.reddit.com", "https://old.reddit.com/r/solana/comments/1abcde/x/", "https://reddit.com/comments/1abcde"),
    ("new.reddit.com", "https://new.reddit.com/r/solana/", "https://reddit.com/r/solana"),
    ("np.reddit.com", "https://np.reddit.com/r/solana/comments/1abcde/", "https://reddit.com/comments/1abcde"),
    ("m.reddit.com", "https://m.reddit.com/u/Someone", "https://reddit.com/user/someone"),
    ("i.reddit.com", "https://i.reddit.com/r/solana", "https://reddit.com/r/solana"),
    ("amp.reddit.com", "https://amp.reddit.com/r/solana/comments/1abcde/x", "https://reddit.com/comments/1abcde"),
    ("telegram.me", "https://telegram.me/SolanaNews", "https://t.me/solananews"),
    ("telegram.dog", "https://telegram.dog/SolanaNews", "https://t.me/solananews"),
    ("m.tiktok.com", "https://m.tiktok.com/@User/video/123", "https://tiktok.com/@/video/123"),
    ("discord.gg", "https://discord.gg/AbCdEf", "https://discord.com/invite/AbCdEf"),
    ("discordapp.com", "https://discordapp.com/invite/AbCdEf", "https://discord.com/invite/AbCdEf"),
    ("ptb.discord.com", "https://ptb.discord.com/invite/AbCdEf", "https://discord.com/invite/AbCdEf"),
    ("canary.discord.com", "https://canary.discord.com/invite/AbCdEf", "https://discord.com/invite/AbCdEf"),
]
# fmt: on
ALIAS_ROWS += [(host, raw, canonical) for d in CATALOGUE for raw, canonical in d.urls.examples
               for host in [urlsplit(raw).hostname.removeprefix("www.")] if host in d.urls.aliases]  # type: ignore[union-attr]
"""A platform's spec brings its alias rows as examples on the alias host (`UrlRules.examples`)."""


@pytest.mark.parametrize(("alias", "raw", "expected"), ALIAS_ROWS, ids=[r[0] for r in ALIAS_ROWS])
def test_alias_row(alias: str, raw: str, expected: str) -> None:
    assert to_canonical(raw) == expected
    assert HOST_ALIASES[alias] == parse_canonical(expected).host


def test_every_alias_has_a_row() -> None:
    missing = sorted(set(HOST_ALIASES) - {a for a, _, _ in ALIAS_ROWS})
    assert missing == [], (f"no URL on the alias host(s) {missing}: add one to `examples` in the UrlRules of its "
                           "social_recording/platforms/<p>/spec.py")
    assert {a for a, _, _ in ALIAS_ROWS} == set(HOST_ALIASES)


@pytest.mark.parametrize(
    "raw",
    ["https://www.t.me/solana", "https://WWW.T.ME/Solana/", "http://t.me/solana#x", "https://t.me/s/solana"],
)
def test_www_t_me_and_variants_fold_to_t_me(raw: str) -> None:
    assert to_canonical(raw) == "https://t.me/solana"


# --- tracking parameters -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GLOBAL_TRACKING_PARAMS) + ["utm_source", "utm_whatever"])
def test_global_tracking_params_are_stripped_everywhere(name: str) -> None:
    for base, canonical in [
        ("https://mytoken.io/a", "https://mytoken.io/a?keep=1"),
        ("https://x.com/i/status/1", "https://x.com/i/status/1?keep=1"),
        ("https://t.me/solana", "https://t.me/solana?keep=1"),
    ]:
        assert to_canonical(f"{base}?{name}=v&keep=1") == canonical


@pytest.mark.parametrize(
    ("platform", "url"),
    [
        (X, "https://x.com/i/status/1"),
        (YT, "https://youtube.com/@handle"),
        (IG, "https://instagram.com/p/Abc"),
        (TT, "https://tiktok.com/@/video/1"),
        (RD, "https://reddit.com/comments/abc"),
    ],
)
def test_platform_tracking_params_are_stripped_on_their_platform_only(platform: Platform, url: str) -> None:
    for name in sorted(PLATFORM_TRACKING_PARAMS[platform]):
        assert to_canonical(f"{url}?{name}=v&zz=1") == f"{url}?zz=1", name
        # on an arbitrary website the same name may be content: it stays
        assert to_canonical(f"https://mytoken.io/a?{name}=v") == f"https://mytoken.io/a?{name}=v"


def test_youtube_video_target_params_only_when_target_is_a_video() -> None:
    assert to_canonical("https://youtube.com/watch?v=dQw4w9WgXcQ&t=1&list=PL&index=2&ab_channel=A") == (
        "https://youtube.com/watch?v=dQw4w9WgXcQ"
    )
    assert to_canonical("https://youtube.com/playlist?list=PLabc&index=2") == (
        "https://youtube.com/playlist?index=2&list=PLabc"
    )


def test_youtube_param_names_are_case_sensitive() -> None:
    # "V" is not the video parameter: no video target, so `t` stays
    assert (
        to_canonical("https://youtube.com/watch?V=dQw4w9WgXcQ&t=3")
        == "https://youtube.com/watch?V=dQw4w9WgXcQ&t=3"
    )


def test_unknown_params_are_kept_sorted_on_platforms_and_in_order_on_web() -> None:
    assert to_canonical("https://x.com/u?zeta=1&alpha=2&zeta=0") == "https://x.com/u?alpha=2&zeta=1&zeta=0"
    assert (
        to_canonical("https://mytoken.io/u?zeta=1&alpha=2&zeta=0")
        == "https://mytoken.io/u?zeta=1&alpha=2&zeta=0"
    )


def test_paths_collapse_duplicate_slashes_on_platforms_only() -> None:
    assert to_canonical("https://github.com//owner//repo") == "https://github.com/owner/repo"
    assert to_canonical("https://mytoken.io//a//b/") == "https://mytoken.io//a//b"


def test_web_keeps_path_case_and_m_subdomain() -> None:
    assert to_canonical("https://m.MyToken.io/Docs/WhitePaper") == "https://m.mytoken.io/Docs/WhitePaper"


# --- junk ----------------------------------------------------------------------------------------
JUNK = [
    "",
    "   ",
    "none",
    "None",
    "null",
    "TBA",
    "tba",
    "-",
    "N/A",
    "n/a",
    "0",
    "1.5",
    "e.g.",
    "coming soon",
    "@SomeHandle",
    "javascript:alert(1)",
    "JavaScript:void(0)",
    "ftp://files.example.com/x",
    "mailto:team@mytoken.io",
    "tg://resolve?domain=solana",
    "data:text/html,hi",
    "ws://mytoken.io",
    "https://",
    "http:///",
    "https://my token.io",
    "https://mytoken.io:99999",
    "https://mytoken.io:0",
    "https://mytoken.io:http",
    "https://[::1",
    "https://[zz::1]/",
    "https://localhost",
    "https://localhost:3000/x",
    "https://tba",
    "https://mytoken.1",
    "https://999.1.1.1",
    "https://-bad_label-but-no-tld",
    "https://exa%41mple.com",
    "team@mytoken.io",
    "see mytoken.io",
    "https://mytoken\x00.io/",
    "https://" + "a" * 64 + ".com",
    # scheme-less values are not http(s) URLs; the entry prefixes https:// itself
    "example.com",
    "www.mytoken.io",
    "x.com/foo",
    "t.me/SolanaNews",
    "//mytoken.io/x",
    "\\\\mytoken.io\\x",
    "mytoken.io:8080/path",
    "mytoken.io:443",
]


@pytest.mark.parametrize("junk", JUNK, ids=[repr(j)[:40] for j in JUNK])
def test_junk_raises_value_error_naming_the_value(junk: str) -> None:
    with pytest.raises(ValueError) as info:
        to_canonical(junk)
    message = str(info.value)
    assert "not an http(s) URL" in message
    # shown as given: no junk here carries a password (an e-mail address names no secret)
    assert repr(junk)[1:-1][:50] in message


@pytest.mark.parametrize("raw", ["example.com", "x.com/foo", "//host.example/x", "www.foo.com", "mytoken.io:8080/a"])
def test_scheme_less_input_raises_naming_the_value(raw: str) -> None:
    with pytest.raises(ValueError, match=r"no http:// or https:// scheme") as info:
        to_canonical(raw)
    assert repr(raw) in str(info.value)
    assert to_canonical_all([raw]) == []  # skipped like any junk
    assert not is_shortlink(raw)


def test_scheme_less_credentials_are_redacted() -> None:
    with pytest.raises(ValueError) as info:
        to_canonical("admin:hunter2@mytoken.io/x")
    assert "hunter2" not in str(info.value)


@pytest.mark.parametrize("value", [None, 42, b"https://x.com"])
def test_non_strings_raise_value_error(value: object) -> None:
    with pytest.raises(ValueError, match=type(value).__name__):
        to_canonical(value)  # type: ignore[arg-type]


def test_long_junk_is_truncated_in_the_message() -> None:
    junk = "javascript:" + "x" * 5000
    with pytest.raises(ValueError) as info:
        to_canonical(junk)
    assert len(str(info.value)) < 300
    assert "javascript:xxxx" in str(info.value)


def test_too_long_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="longer than"):
        to_canonical("https://mytoken.io/" + "a" * 9000)


def test_secrets_never_appear_in_errors() -> None:
    for raw in [
        "https://admin:hunter2@my token.io/",
        "ftp://admin:hunter2@mytoken.io/",
        "admin:hunter2@mytoken.io",
        "https://my token.io/?api_key=hunter2&x=1",
        "https://my token.io/?access_token=hunter2",
        "https://my token.io/?password=hunter2",
    ]:
        with pytest.raises(ValueError) as info:
            to_canonical(raw)
        assert "hunter2" not in str(info.value), raw
        assert "***" in str(info.value)


def test_userinfo_is_stripped_from_the_canonical_form() -> None:
    assert to_canonical("https://admin:hunter2@mytoken.io/a") == "https://mytoken.io/a"
    # the target of "https://x.com@evil.example" is evil.example, and that is what we record
    assert to_canonical("https://x.com@evil.example/") == "https://evil.example"


def test_tabs_and_newlines_inside_are_removed_like_browsers_do() -> None:
    assert to_canonical("https://my\ttoken.io/a\nb") == "https://mytoken.io/ab"
    # other control characters are percent-encoded outside the host (as browsers do)
    assert to_canonical("https://mytoken.io/a\x00b?q=\x1b") == "https://mytoken.io/a%00b?q=%1B"


# --- readers -------------------------------------------------------------------------------------
NON_CANONICAL = [
    "https://www.mytoken.io",
    "https://MyToken.io",
    "https://mytoken.io/",
    "https://mytoken.io/a/",
    "http://mytoken.io",
    "https://mytoken.io?utm_source=x",
    "https://mytoken.io#top",
    "https://mytoken.io:443",
    "https://twitter.com/jack",
    "https://x.com/Jack",
    "https://x.com/i/status/20?s=20",
    "https://x.com/jack/status/20",
    "https://x.com/@jack",
    "https://instagram.com/reel/Abc",
    "https://instagram.com/tv/Abc",
    "https://tiktok.com/@u/video/1",
    "https://tiktok.com/v/1.html",
    "https://reddit.com/r/solana/comments/abc",
    "https://youtu.be/dQw4w9WgXcQ",
    "https://youtube.com/shorts/dQw4w9WgXcQ",
    "https://reddit.com/comments/abc/slug",
    "https://discord.gg/abc",
    "https://github.com/a/b.git",
    "https://t.me/s/solana",
    "https://mytoken.io/%7e",
    "https://mytoken.io/%c3%a4",
    "https://x.com/u?b=1&a=2",
    " https://mytoken.io",
    "mytoken.io",
    "https://bücher.example",
    "https://user@mytoken.io",
    "none",
    "",
]


@pytest.mark.parametrize("url", NON_CANONICAL)
def test_parse_canonical_rejects_non_canonical(url: str) -> None:
    with pytest.raises(NonCanonicalUrl):
        parse_canonical(url)
    with pytest.raises(NonCanonicalUrl):
        platform_of(url)


def test_non_canonical_is_a_value_error_and_names_the_url() -> None:
    assert issubclass(NonCanonicalUrl, ValueError)
    with pytest.raises(NonCanonicalUrl, match=r"www\.mytoken\.io.*canonical form is 'https://mytoken\.io'"):
        parse_canonical("https://www.mytoken.io")


def test_parse_canonical_splits_parts() -> None:
    c = parse_canonical("https://mytoken.io:8443/a%20b/c%2Fd?q=%24BONK&q=two+words&flag&x=")
    assert isinstance(c, CanonicalUrl)
    assert c.host == "mytoken.io"
    assert c.port == 8443
    assert c.path == "/a%20b/c%2Fd"
    assert c.segments == ("a b", "c/d")
    assert c.query == (("q", "$BONK"), ("q", "two words"), ("flag", ""), ("x", ""))
    assert c.param("q") == "$BONK"
    assert c.params("q") == ("$BONK", "two words")
    assert c.param("missing") is None
    assert c.param("missing", "d") == "d"
    assert c.query_dict == {"q": "$BONK", "flag": "", "x": ""}
    assert c.query_string == "q=%24BONK&q=two+words&flag&x="
    assert c.platform is WEB


def test_parse_canonical_for_generators() -> None:
    tweet = parse_canonical("https://x.com/i/status/1780000000000000000")
    assert tweet.platform is X and tweet.segments == ("i", "status", "1780000000000000000")
    video = parse_canonical("https://youtube.com/watch?v=dQw4w9WgXcQ")
    assert video.param("v") == "dQw4w9WgXcQ" and video.port is None
    root = parse_canonical("https://mytoken.io")
    assert root.path == "" and root.segments == () and root.query == () and root.query_string == ""


@pytest.mark.parametrize(
    ("url", "platform"),
    [
        ("https://x.com", X),
        ("https://tiktok.com/@u", TT),
        ("https://vm.tiktok.com/ZMabc", TT),
        ("https://vt.tiktok.com/ZSabc", TT),
        ("https://instagram.com/p/Abc", IG),
        ("https://reddit.com/r/solana", RD),
        ("https://redd.it/abc", RD),
        ("https://youtube.com/@handle", YT),
        ("https://github.com/a/b", GH),
        ("https://t.me/solana", TG),
        ("https://discord.com/invite/abc", DC),
        ("https://mytoken.io", WEB),
        ("https://t.co/abc", WEB),
        ("https://x.com:8443/jack", X),
    ],
)
def test_platform_of_reads_the_host(url: str, platform: Platform) -> None:
    assert platform_of(url) is platform


# --- shortlinks ----------------------------------------------------------------------------------
def test_shortener_hosts_are_canonical_hosts() -> None:
    for host in [
        "t.co",
        "bit.ly",
        "tinyurl.com",
        "goo.gl",
        "ow.ly",
        "buff.ly",
        "is.gd",
        "rebrand.ly",
        "cutt.ly",
        "lnkd.in",
        "vm.tiktok.com",
        "vt.tiktok.com",
        "redd.it",
        "t.ly",
        "shorturl.at",
    ]:
        assert host in SHORTENER_HOSTS
    assert "youtu.be" not in SHORTENER_HOSTS and "linktr.ee" not in SHORTENER_HOSTS
    for host in SHORTENER_HOSTS:
        assert to_canonical(f"https://{host}/Code") == f"https://{host}/Code"


@pytest.mark.parametrize(
    "url",
    [
        "https://t.co/AbC123",
        "https://bit.ly/3AbCdEf",
        "http://www.bit.ly/3AbCdEf?utm_source=x",
        "https://tinyurl.com/y6abc",
        "https://vm.tiktok.com/ZMhAbCdEf/",
        "https://vt.tiktok.com/ZSAbC/",
        "https://www.tiktok.com/t/ZTRAbCdE/",
        "https://redd.it/1abcde",
        "https://www.reddit.com/r/Solana/s/AbCdEf",
        "https://www.instagram.com/share/reel/BAabc",
        "https://lnkd.in/eAbC",
    ],
)
def test_is_shortlink(url: str) -> None:
    assert is_shortlink(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://x.com/i/status/20",
        "https://youtu.be/dQw4w9WgXcQ",
        "https://youtube.com/watch?v=dQw4w9WgXcQ",
        "https://tiktok.com/@/video/1",
        "https://reddit.com/comments/abc",
        "t.co/AbC123",  # scheme-less: not a URL at all here (the entry prefixes https:// itself)
        "https://linktr.ee/MyToken",
        "https://bit.ly",
        "https://mytoken.io/t/abc",
        "none",
        "",
    ],
)
def test_is_not_shortlink(url: str) -> None:
    assert not is_shortlink(url)


def test_to_canonical_all_skips_junk_and_duplicates_in_order() -> None:
    raws = [
        "https://www.mytoken.io/",
        None,
        "TBA",
        "https://twitter.com/Jack/status/20?s=20",
        "mytoken.io",
        "javascript:void(0)",
        "https://x.com/someone_else/status/20",
        "https://t.me/s/Solana",
        "https://mytoken.io",
    ]
    assert to_canonical_all(raws) == [
        "https://mytoken.io",
        "https://x.com/i/status/20",
        "https://t.me/solana",
    ]
    assert to_canonical_all([]) == []


# --- one target, one canonical URL ----------------------------------------------------------------
# QA found the same paid target under two canonical URLs: the dedupe gate and the URL lock (keyed by
# canonical URL) saw two targets and we paid twice. Each group below is ONE target: every member must
# give the same canonical URL, and that URL is the group's form.
# fmt: off
SAME_TARGET: list[tuple[str, list[str]]] = [
    ("https://x.com/i/status/1910000000000000001", [
        "https://twitter.com/i/web/status/1910000000000000001",
        "https://x.com/someone/status/1910000000000000001",
        "https://fxtwitter.com/other/status/1910000000000000001",
        "https://vxtwitter.com/third/status/1910000000000000001?s=20",
        "https://fixupx.com/a/status/1910000000000000001", "https://fixvx.com/b/status/1910000000000000001",
        "https://twitter.com/QaShared/status/1910000000000000001", "https://x.com/QASHARED/status/1910000000000000001?s=20",
        "https://mobile.twitter.com/x/statuses/1910000000000000001/photo/1", "https://x.com/i/status/1910000000000000001",
        "https://x.com/@QaShared/status/1910000000000000001", "https://twitter.com/#!/QaShared/status/1910000000000000001",
    ]),
    ("https://x.com/qahandle", [
        "https://x.com/@QaHandle", "https://x.com/qahandle", "https://twitter.com/QaHandle/", "https://x.com/@qahandle/media",
    ]),
    ("https://instagram.com/p/QaIgCode1", [
        "https://instagram.com/p/QaIgCode1", "https://www.instagram.com/reel/QaIgCode1/", "https://instagram.com/reels/QaIgCode1",
        "https://www.instagram.com/tv/QaIgCode1/", "https://instagr.am/p/QaIgCode1", "https://instagram.com/SomeOne/reel/QaIgCode1",
        "https://www.instagram.com/p/QaIgCode1/embed/captioned/?igsh=MzRl",
    ]),
    ("https://reddit.com/comments/1abcde", [
        "https://www.reddit.com/r/Solana/comments/1abcde/my_slug/", "https://reddit.com/comments/1abcde",
        "https://old.reddit.com/r/solana/comments/1ABCDE", "https://www.reddit.com/comments/1abcde/slug/",
        "https://www.reddit.com/r/solana/comments/1abcde/slug/kxyz123/?context=3",
        "https://np.reddit.com/user/Someone/comments/1abcde/t/", "https://www.reddit.com/gallery/1abcde",
    ]),
    ("https://tiktok.com/@/video/7410000000000000001", [
        "https://www.tiktok.com/@qa.tt/video/7410000000000000001", "https://tiktok.com/@Another/video/7410000000000000001",
        "https://m.tiktok.com/v/7410000000000000001.html", "https://www.tiktok.com/v/7410000000000000001.html?_d=x",
        "https://tiktok.com/@/video/7410000000000000001",
    ]),
    ("https://tiktok.com/@/photo/7410000000000000002", [
        "https://www.tiktok.com/@qa.tt/photo/7410000000000000002", "https://tiktok.com/@/photo/7410000000000000002",
    ]),
]
# fmt: on


@pytest.mark.parametrize(("canonical", "variants"), SAME_TARGET, ids=[c for c, _ in SAME_TARGET])
def test_one_target_has_one_canonical_url(canonical: str, variants: list[str]) -> None:
    assert {v: to_canonical(v) for v in variants} == dict.fromkeys(variants, canonical)
    assert parse_canonical(canonical).url == canonical
    assert to_canonical_all(variants) == [canonical]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # the QA cases, verbatim
        ("https://twitter.com/i/web/status/1900000000000000001", "https://x.com/someone/status/1900000000000000001"),
        ("https://x.com/someone/status/1900000000000000001", "https://fxtwitter.com/other/status/1900000000000000001"),
        ("https://instagram.com/p/CqAbC123", "https://instagram.com/reel/CqAbC123"),
        ("https://instagram.com/p/CqAbC123", "https://www.instagram.com/tv/CqAbC123/"),
        ("https://www.reddit.com/r/solana/comments/1abcde/some_slug/", "https://reddit.com/comments/1abcde"),
        ("https://www.tiktok.com/@a/video/7400000000000000002", "https://m.tiktok.com/v/7400000000000000002.html"),
    ],
)
def test_qa_regression_same_target_same_key(first: str, second: str) -> None:
    assert to_canonical(first) == to_canonical(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("https://x.com/i/status/1", "https://x.com/i/status/2"),
        ("https://x.com/alpha/status/1", "https://x.com/alpha"),
        ("https://x.com/alpha", "https://x.com/beta"),
        ("https://instagram.com/p/AbC", "https://instagram.com/p/abc"),  # shortcodes are case-sensitive
        ("https://instagram.com/p/AbC", "https://instagram.com/abc"),
        ("https://reddit.com/comments/abc", "https://reddit.com/comments/abd"),
        ("https://reddit.com/r/solana/comments/abc", "https://reddit.com/r/solana"),
        ("https://tiktok.com/@u/video/1", "https://tiktok.com/@u/photo/1"),
        ("https://tiktok.com/@u/video/1", "https://tiktok.com/@u"),
    ],
)
def test_distinct_targets_stay_distinct(first: str, second: str) -> None:
    assert to_canonical(first) != to_canonical(second)


@pytest.mark.parametrize(
    "location",
    [
        # where redd.it/<id> and /r/<sub>/s/<code> share links land (one hop, as reddit answers)
        "https://www.reddit.com/comments/1abcde",
        "https://www.reddit.com/comments/1abcde/",
        "https://www.reddit.com/r/Solana/comments/1abcde/my_token_launch/",
        "https://www.reddit.com/r/solana/comments/1abcde/my_token_launch/?share_id=AbC&utm_content=1&utm_medium=ios_app"
        "&utm_name=ioscss&utm_source=share&utm_term=1",
        "https://old.reddit.com/r/solana/comments/1abcde/",
    ],
)
def test_where_a_reddit_shortlink_lands_is_the_post_form(location: str) -> None:
    assert is_shortlink("https://redd.it/1abcde") and is_shortlink("https://www.reddit.com/r/Solana/s/AbCdEf")
    assert not is_shortlink(location)
    assert to_canonical(location) == "https://reddit.com/comments/1abcde"


def test_parse_canonical_parses_a_url_once_and_never_keeps_a_rejection() -> None:
    """A URL recorded is read by the recorder, the routing and the client: the second read is the
    kept answer; a non-canonical value still raises every time, and what is kept stays bounded."""
    from social_recording.domain.urls import canonical

    url = "https://github.com/keptorg/kept-repo"
    first = parse_canonical(url)
    hits = canonical._parse_canonical_kept.cache_info().hits
    assert parse_canonical(url) is first
    assert canonical._parse_canonical_kept.cache_info().hits == hits + 1
    for _ in range(2):
        with pytest.raises(NonCanonicalUrl, match="its canonical form is"):
            parse_canonical("https://www.github.com/keptorg/kept-repo")
    for i in range(canonical.PARSED_KEPT + 10):
        parse_canonical(f"https://github.com/keptorg/repo-{i}")
    assert canonical._parse_canonical_kept.cache_info().currsize == canonical.PARSED_KEPT
