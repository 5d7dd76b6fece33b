"""The providers behind the real HTTP layer (docs/architecture.md, "Outbound requests", "Providers in one
place", "Spend budgets"): URLs recorded by the real engine through the REAL platform adapters (the
registry built from the catalogue, the real clients on `platforms/http.py`) over the sandbox's transport,
where the model's own ones replace the adapters everywhere else. What the model expects comes from its
own table of the providers' keys (`KEYS`, as docs/operations.md's "Providers" lists them):

- a key goes only to its provider's own hosts, over https: never to a host a redirect leads to, never
  over http after an https start (the provider "moved": its API answers a redirect, the Location
  echoing the request's query, key included); a key set reaches its provider on the call's first request;
- a provider whose key is optional records without it (the call goes out, no key on it); one whose key
  is required and unset is `unsupported` naming the variable, and no request leaves;
- the engine's spend ledger holds one payment per paid call, a two-step one (Apify: run start, status
  and dataset reads; urlscan: submit and polls) too, and the health check's paid figures folded from the
  sandbox's bill say the same: as many payments, none paid again.

Each recording runs on a store, lock file and ledger of its own (under the machine's directory), so the
model's invariants over its own store stay as they were. A mixin of the model
(test_support/url_machine_model.py); its walks are `HTTP_WALKS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import httpx

from social_recording.domain.models import TokenProfile
from social_recording.domain.provider_keys import ProviderKeys
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import build_engine
from social_recording.recording.run_state import RunState
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import parse_scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import T0, FakeProfiles, StepClock

if TYPE_CHECKING:
    from test_support.url_machine_model import World


@dataclass(frozen=True)
class Key:
    """A provider key as the operator's table says it: its variable, its provider's own hosts (the only
    ones it may reach, over https), whether the provider works without it, and the account it bills
    (None: a free provider)."""

    variable: str
    hosts: frozenset[str]
    optional: bool = False
    bills: str | None = None


KEYS: Mapping[Platform, Key] = {
    Platform.GITHUB: Key("GITHUB_TOKEN", frozenset({"api.github.com"}), optional=True),
    Platform.YOUTUBE: Key("YOUTUBE_API_KEY", frozenset({"www.googleapis.com", "youtube.googleapis.com"})),
    Platform.X: Key("TWITTERAPI_IO_KEY", frozenset({"api.twitterapi.io"}), bills="twitterapi"),
    Platform.TIKTOK: Key("APIFY_TOKEN", frozenset({"api.apify.com"}), bills="apify"),
    Platform.WEB: Key("URLSCAN_API_KEY", frozenset({"urlscan.io"}), bills="urlscan"),
}
"""The model's table of the keys (docs/operations.md, "Providers"; which hosts are each provider's own)."""

URLS: Mapping[Platform, str] = {
    Platform.GITHUB: "https://github.com/model-org/repo{n}",
    Platform.YOUTUBE: "https://youtube.com/@modelchannel{n}",
    Platform.X: "https://x.com/i/status/2{n}",
    Platform.TIKTOK: "https://tiktok.com/@modeldancer{n}",
    Platform.WEB: "https://model-site-{n}.example",
}
"""Each case's URL (`n`: the case's number): a URL of its own, never an answer another case left."""
ELSEWHERE = "api.elsewhere.example"
"""A host that is no provider's: where a moved provider may send its clients."""
MOVES = ("to http on its own host", "to another host")


def secret(variable: str) -> str:
    """The model's key for `variable`: a text found nowhere else, so any request carrying it is seen."""
    return f"model-key-of-{variable.lower().replace('_', '-')}"


class MovedProviders(httpx.BaseTransport):
    """The sandbox's transport as the model sees it: every request handed to it is kept (scheme, host,
    headers, the raw URL), and a provider that moved answers a request to a host and path prefix with a
    301 to the same request's URL on another scheme or host (its query echoed, key included)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[httpx.Request] = []
        self.moved: dict[tuple[str, str], str] = {}
        """(host, path prefix) -> "http" (the same host over http) or another host."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        move = next((to for (host, prefix), to in self.moved.items() if request.url.scheme == "https"
                     and request.url.host == host and request.url.path.startswith(prefix)), None)
        if move is not None:
            location = request.url.copy_with(scheme="http") if move == "http" else request.url.copy_with(host=move)
            return httpx.Response(301, headers={"location": str(location)}, request=request)
        if request.url.host == ELSEWHERE:
            return httpx.Response(404, json={"message": "Not Found"}, request=request)
        return self.inner.handle_request(request)


class HttpRules:
    """URLs recorded through the real providers over the sandbox. Expects the model's `dir`, `world` and `limits`."""

    dir: Path
    world: World
    limits: ClassVar[Any]

    def recorded_through_the_real_providers(self, keys: frozenset[Platform],
                                            cases: list[tuple[Platform, str | None]],
                                            blank: frozenset[Platform] = frozenset()) -> None:
        """The keys of the platforms in `keys` are set, those in `blank` set to blanks (an empty secret file:
        none), the others unset; each case records the platform's URL for a token of its own, its provider
        moved as said (None: where it is), and is checked."""
        from social_recording.dagster_defs.health_report import ledger_figures

        v = self.world.violations
        root = self.dir / f"http-{len(list(self.dir.glob('http-*')))}"
        root.mkdir()
        store = SqliteStore(root / "store.db")
        locks = SqliteLockManager(root / "locks.db")
        ledger = Ledger(root / "ledger.jsonl")
        transport = MovedProviders(SandboxTransport(parse_scenario({}), ledger, sleep=lambda _s: None))
        set_keys = ProviderKeys({**{KEYS[p].variable: " \n" for p in blank},
                                 **{KEYS[p].variable: secret(KEYS[p].variable) for p in keys}})
        registry = build_registry(set_keys, transport=transport, sleep=lambda _s: None,
                                  resolve_host=sandbox_resolve_host)
        clock = StepClock(T0)
        engine = build_engine(store, locks, registry, FakeProfiles(), enable_paid=True, clock=clock,
                              max_attempts=self.deployed.max_attempts, backoff=self.deployed.backoff)
        payments: Counter[str] = Counter()
        # The model's checks of every decision read which generators are usable: this registry's, meanwhile.
        model_unavailable, self.world.unavailable = self.world.unavailable, registry.unavailable
        try:
            for n, (platform, move) in enumerate(cases):
                key, url, address = KEYS[platform], URLS[platform].format(n=n), f"H{n:03d}"
                transport.seen.clear()
                transport.moved.clear()
                if move is not None:
                    for host in key.hosts:  # every path of the provider's API answers the redirect
                        transport.moved.update({(host, p): "http" if move == MOVES[0] else ELSEWHERE
                                                for p in _paths(platform)})
                store.create_pending_token(TokenProfile(address=address, symbol="H", urls=[url]), clock())
                out = engine.processor.record_urls(address, [url], RunState())[0]
                el = store.find_element(address, url)
                what = f"{platform.value} ({key.variable} {'set' if platform in keys else 'unset'}, moved {move})"
                self._check_keys(transport.seen, what)
                if platform not in keys and not key.optional:
                    if transport.seen or el is None or el.status is not FetchStatus.UNSUPPORTED \
                            or key.variable not in (el.detail or "") or el.attempts:
                        v.append(f"{what}: its key is required and unset, so nothing may be sent and the URL is "
                                 f"unsupported naming {key.variable}; {len(transport.seen)} request(s) left, the "
                                 f"element is {el!r}")
                    continue
                first = transport.seen[0] if transport.seen else None
                if first is None or not out.attempted:
                    v.append(f"{what}: its provider is usable, yet no request left ({out!r})")
                    continue
                if platform in keys and secret(key.variable) not in _carried(first):
                    v.append(f"{what}: its key is set, yet the call's first request to {first.url.host} lacks it")
                if platform not in keys and any(secret(k.variable) in _carried(first) for k in KEYS.values()):
                    v.append(f"{what}: its key is unset, yet the first request carries one")
                followed = [r for r in transport.seen if (r.url.scheme, r.url.host) in
                            (("http", h) for h in key.hosts) or r.url.host == ELSEWHERE]
                if move is not None and not followed:  # the guard lets a public http(s) target through
                    v.append(f"{what}: the provider's redirect to a public http(s) address was not followed")
                if move is None and (el is None or el.status is not FetchStatus.OK):
                    v.append(f"{what}: the provider answers, yet the element is {el!r}")
                if key.bills is not None:  # no move leads a paid call's first request away
                    payments[key.bills] += 1
            self._check_payments(store, ledger_figures(ledger), payments)
        finally:
            self.world.unavailable = model_unavailable
            transport.close()
            locks.close()
            store.close()

    def _check_keys(self, seen: list[httpx.Request], what: str) -> None:
        """Each key only on its provider's own hosts, over https."""
        for request in seen:
            for key in KEYS.values():
                if secret(key.variable) in _carried(request) and (
                        request.url.scheme != "https" or request.url.host not in key.hosts):
                    self.world.violations.append(
                        f"{what}: {key.variable} went to {request.url.scheme}://{request.url.host} (its hosts: "
                        f"{sorted(key.hosts)}, over https only)")

    def _check_payments(self, store: Any, figures: Any, payments: Counter[str]) -> None:
        """One payment per paid call, in the engine's spend ledger and in the health check's paid figures."""
        entered = dict(store.spend_totals().ledger)
        if entered != {a: n for a, n in payments.items() if n}:
            self.world.violations.append(f"the spend ledger holds {entered}; the paid calls made were {dict(payments)}"
                                         f", one payment each")
        total = sum(payments.values())
        if (figures.paid_requests, figures.distinct_subjects, figures.after_answer) != (total, total, 0):
            self.world.violations.append(
                f"the health check's figures from the sandbox's bill say {figures.paid_requests} payment(s) for "
                f"{figures.distinct_subjects} subject(s), {figures.after_answer} paid again; the paid calls made "
                f"were {dict(payments)}, one payment each")


def _carried(request: httpx.Request) -> str:
    """Everything a request carries that may hold a key: its URL (query) and its header values."""
    return " ".join([str(request.url), *request.headers.values()])


def _paths(platform: Platform) -> tuple[str, ...]:
    """The API path prefixes a moved provider redirects (the model's knowledge of each API): a free
    provider's every request; a paid two-step call's later ones (its run's status and dataset reads), so
    its paid start reaches the provider (and is billed) and its key must not follow the rest."""
    return {
        Platform.GITHUB: ("/repos/",),
        Platform.YOUTUBE: ("/youtube/v3/",),
        Platform.TIKTOK: ("/v2/actor-runs/", "/v2/datasets/"),
    }[platform]


def _walk(keys: frozenset[Platform], cases: list[tuple[Platform, str | None]],
          blank: frozenset[Platform] = frozenset()) -> Callable[[Any], list[Callable[[], object]]]:
    return lambda m: [lambda: m.recorded_through_the_real_providers(keys, cases, blank)]


HTTP_WALKS: tuple[tuple[str, Callable[[Any], list[Callable[[], object]]]], ...] = (
    ("the real providers with their keys, some moved", _walk(frozenset(KEYS), [
        (Platform.GITHUB, None), *((p, move) for p in (Platform.GITHUB, Platform.YOUTUBE, Platform.TIKTOK) for move in MOVES),
        (Platform.TIKTOK, None), (Platform.WEB, None), (Platform.X, None)])),
    ("the real providers without their keys", _walk(frozenset(), [
        (Platform.GITHUB, None), (Platform.YOUTUBE, None), (Platform.TIKTOK, None), (Platform.X, None)],
        blank=frozenset({Platform.YOUTUBE, Platform.TIKTOK}))),
)
"""(name, steps) of each walk (test_support/url_machine_walks.py lists them)."""
