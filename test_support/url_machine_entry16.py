"""The entry as a new user meets it: a token's links read, canonicalised and expanded once, before the
engine records them (docs/architecture.md, "URLs: transformed once, at the entry", "Outbound requests").

The REAL entry (TokenProfileReader over the real TrackerClient and ShortlinkResolver) runs over the
sandbox's transport (its tracker answers the scenario's tokens, its shorteners the scenario's redirects); a
shortener answering 429 or 503 is detoured here. Links are written as people write them, the tokens are
then recorded live by the real engine, and what the store holds is checked:

- a website written with credentials, `www.`, upper case, a trailing slash, `utm_*` parameters and a
  fragment is stored as its canonical form: userinfo stripped (not refused), `utm_*` gone;
- a shortlink chain of 3 hops is followed to its end; one whose third Location is still a shortlink (a 4th
  hop needed) is dropped ("over 3 hops"), its target never stored;
- a shortlink whose shortener answers 429 or 503 when the token is first read keeps its raw value on the
  stored token ("No link lost": 429 and 5xx are transient), to be resolved by a retry;
- a tracker lookup answered 401 (the deployment has no tracker key) is asked once, not three times: a
  retry cannot change it; the token fails and nothing is stored for it.

A mixin of the model (test_support/url_machine_model.py); its walks are `ENTRY16_WALKS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

import httpx
from pydantic import SecretStr

from social_recording.domain.models import TokenProfile, UnresolvedValue
from social_recording.domain.url_machine import Why
from social_recording.recording.outcomes import TokenStatus
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import TRACKER_BASE_URL, SandboxTransport, sandbox_resolve_host
from social_recording.upstream import profile as profile_module
from social_recording.upstream.profile import TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient
from test_support.engine_fakes import RangeItem
from test_support.url_machine_steps import Draws

if TYPE_CHECKING:
    from test_support.url_machine_steps import Steps

WEB = "https://paid-site.example/a"
X_STATUS = "https://x.com/i/status/101"
X_FOURTH = "https://x.com/i/status/102"
YT = "https://youtube.com/watch?v=abcdefghijk"
TG = "https://t.me/modelchat"
"""The model's URLs (url_machine_model.POOL) the links below lead to: its providers answer them."""

BUSY = "https://bit.ly/e16-busy"
DOWN = "https://t.co/e16-down"
DETOURS = {BUSY: 429, DOWN: 503}
"""Shorteners failing transiently when the token is first read: a rate limit, a server error."""

REDIRECTS = {
    # three hops: bit.ly -> t.co -> tinyurl -> the X status (followed to its end)
    "https://bit.ly/e16-three": "https://t.co/e16-3b",
    "https://t.co/e16-3b": "https://tinyurl.com/e16-3c",
    "https://tinyurl.com/e16-3c": X_STATUS,
    # a fourth hop needed: the third Location is still a shortlink (dropped, never followed)
    "https://bit.ly/e16-four": "https://t.co/e16-4b",
    "https://t.co/e16-4b": "https://tinyurl.com/e16-4c",
    "https://tinyurl.com/e16-4c": "https://bit.ly/e16-4d",
    "https://bit.ly/e16-4d": X_FOURTH,
}

WRITTEN: tuple[tuple[dict[str, str], list[str], dict[str, str], set[str]], ...] = (
    ({"website": "https://user:secret@www.Paid-Site.example/a/?utm_source=tg&utm_campaign=launch#top",
      "twitter": "bit.ly/e16-three", "telegram": BUSY, "discord": DOWN},
     [WEB, X_STATUS], {"telegram": BUSY, "discord": DOWN}, set()),
    ({"website": "www.youtube.com/watch?v=abcdefghijk&utm_source=share", "twitter": "https://bit.ly/e16-four",
      "telegram": "@modelchat"},
     [YT, TG], {}, {"twitter"}),
)
"""Each token's fields as people write them; the canonical URLs the docs say it holds (in field order);
its raw values kept for a retry (field -> value); its fields dropped for good."""


class _Detoured(httpx.BaseTransport):
    """The sandbox's transport, but DETOURS answered with their status; every request kept."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, str(request.url)))
        status = DETOURS.get(str(request.url))
        if status is not None:
            return httpx.Response(status, request=request)
        return self.inner.handle_request(request)


def _scenario(fields: dict[str, dict[str, str]]) -> Scenario:
    tokens = [{"address": a, "symbol": a, "image_url": "https://img.example/t.png", "investor_count": 5,
               "first_transfer_at": "2026-01-01T00:00:00Z", "last_transfer_at": "2026-01-01T00:00:00Z", **f}
              for a, f in fields.items()]
    return Scenario.model_validate({"tokens": tokens, "redirects": REDIRECTS})


class Entry16Rules:
    """The entry's steps; expects the model's clock, store, engine, profiles, tracker, tokens and the retry
    mixin's raw-value bookkeeping (`shortener`, `raw_owner`, `raw_model`)."""

    clock: Any
    store: Any
    engine: Any
    profiles: Any
    tracker: Any
    tokens: list[str]
    shortener: dict[str, str]
    raw_owner: dict[str, tuple[str, str]]
    raw_model: dict[tuple[str, str], UnresolvedValue]
    doing: Callable[..., Any]
    live_event: Callable[..., None]
    _run: Callable[[Why], Any]

    def tokens_read_as_people_write_their_links(self) -> None:
        """WRITTEN's tokens read by the real entry over the sandbox, each checked as read (its URLs, raw
        values kept, fields dropped), then recorded live by the engine; the store holds those URLs and
        raw values, and no target of a dropped value."""
        first = len(self.tokens)
        addresses = [f"T{first + i:03d}" for i in range(len(WRITTEN))]
        transport = _Detoured(SandboxTransport(_scenario({a: w[0] for a, w in zip(addresses, WRITTEN, strict=True)}),
                                               None))
        tracker = TrackerClient(TRACKER_BASE_URL, SecretStr("sandbox-key"), ["sandbox"], transport=transport,
                                sleep=lambda _s: None)
        reader = TokenProfileReader(tracker, ShortlinkResolver(transport=transport, resolve_host=sandbox_resolve_host))
        for address, (written, urls, kept, dropped) in zip(addresses, WRITTEN, strict=True):
            with patch.object(profile_module, "utcnow", self.clock):
                profile = reader.read(address)
            assert profile is not None, f"{address}: the tracker's token {written} read as no profile"
            self._check_read(address, written, profile, urls, kept, dropped)
            self.tokens.append(address)
            self.profiles.profiles[address] = profile
            self.tracker.items.append(RangeItem(address, address, 5))
            for v in profile.unresolved:  # the retry mixin follows the raw values from here on
                self.shortener[v.value] = "transient"
                self.raw_owner[v.value] = (address, v.field)
                self.raw_model[(address, v.field)] = v
            self.live_event(Draws(lambda a, address=address: a == address), "none")
            doc = self.store.find_token(address)
            assert doc is not None, f"{address}: not stored by a live run"
            held = sorted(el.url for el in doc.social_urls)
            assert held == sorted(urls), (f"{address}: links written {written} are stored as {held}; the docs "
                                          f"give {sorted(urls)}")
            raw = {v.field: v.value for v in doc.unresolved}
            assert raw == kept, (f"{address}: the stored token keeps the raw values {raw}; a shortlink failing "
                                 f"transiently keeps its value ({kept})")

    @staticmethod
    def _check_read(address: str, written: dict[str, str], profile: TokenProfile, urls: list[str],
                    kept: dict[str, str], dropped: set[str]) -> None:
        assert list(profile.urls) == urls, (
            f"{address}: links written {written} read as {list(profile.urls)}; the docs give {urls} (userinfo "
            "stripped, `utm_*` gone, https, www. and the trailing slash dropped, a 3-hop shortlink followed, one "
            "needing a 4th hop dropped)")
        raw = {v.field: v.value for v in profile.unresolved}
        assert raw == kept, (f"{address}: raw values kept for a retry {raw}; the docs keep {kept} (a shortlink "
                             f"failing transiently, 429 and 5xx included, is not dropped: {profile.dropped})")
        gone = {d.field for d in profile.dropped}
        assert gone == dropped, f"{address}: fields dropped {sorted(gone)}, the docs drop {sorted(dropped)}"

    def a_tracker_without_its_key(self) -> None:
        """A deployment without the tracker's key: the sandbox's tracker answers 401 to the token's lookup.
        A retry cannot change that answer, so it is asked once (not 3 times, no back-off slept); the token
        fails and nothing is stored for it."""
        address = "T-no-key"
        transport = _Detoured(SandboxTransport(_scenario({address: {"website": YT}}), None))
        slept: list[float] = []
        tracker = TrackerClient(TRACKER_BASE_URL, None, ["sandbox"], transport=transport, sleep=slept.append)
        reader = TokenProfileReader(tracker, ShortlinkResolver(transport=transport, resolve_host=sandbox_resolve_host))
        real = self.profiles.read
        self.profiles.read = reader.read
        try:
            with self.doing("live"):
                outcome = self.engine.processor.record(address, address, self._run(Why.LIVE))
        finally:
            self.profiles.read = real
        asked = [url for _m, url in transport.seen if url.startswith(TRACKER_BASE_URL)]
        assert len(asked) == 1 and not slept, (
            f"a tracker lookup answered 401 was asked {len(asked)} time(s), {slept} s slept between: a 4xx other "
            "than 429 fails at once (docs/architecture.md, 'Outbound requests')")
        assert outcome.status is TokenStatus.FAILED, f"a failed tracker lookup recorded {address} as {outcome.status}"
        assert self.store.find_token(address) is None, f"{address}: stored although its lookup failed"

def _entry(m: Any) -> list[Callable[[], object]]:
    """A token holding a model URL, then two tokens read by the real entry and recorded live (about 1 s)."""
    return [lambda: m.some_tokens_and_answers([[X_STATUS]], {}), m.tokens_read_as_people_write_their_links,
            m.a_tracker_without_its_key]


ENTRY16_WALKS: tuple[tuple[str, Steps], ...] = (
    ("links as people write them, read by the real entry over the sandbox, then recorded", _entry),
)
"""(name, steps) of each walk."""
