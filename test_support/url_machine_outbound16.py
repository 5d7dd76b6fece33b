"""More of the outbound guard and the spend budgets' notation, as a new user meets them (docs/architecture.md,
"Outbound requests"; docs/operations.md, "Spend budgets"):

- URLs recorded by the real engine through the REAL platform adapters over the sandbox (as
  test_support/url_machine_outbound15.py does), a free provider answering each with a redirect to a target
  the guard refuses: a scheme other than http(s) (`ftp://`, `gopher://`) with a public host; an IPv6 address
  embedding a non-public IPv4 one (IPv4-mapped, 6to4, NAT64); a legacy IPv4 spelling of a loopback address
  (`2130706433`, `0x7f.1`, `127.1`) which the model's DNS, asked as a name, answers with a public address.
  Each is refused: nothing sent there, the URL `blocked`;
- the spend budgets as the operator writes them (`SOCIAL_RECORDING_SPEND_BUDGETS`, read by the settings): an
  account given twice fails at load naming it (JSON alone would keep the last); a limit of 12 digits is
  taken as written, one of 13 refused naming the account and the value;
- the shared limiter on the model's clock (test_support/url_machine_rates.py): YouTube's documented quota
  (10,000/day in docs/operations.md's "Providers" table) filled at one instant still holds a request two
  hours later (a day's window, not an hour's).

A mixin of the model (test_support/url_machine_model.py); its walks are `OUTBOUND16_WALKS`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from social_recording.domain.provider_keys import ProviderKeys
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import build_engine
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import parse_scenario
from social_recording.sandbox.transport import SandboxTransport
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import T0, FakeProfiles, StepClock
from test_support.provider_table import documented_rates
from test_support.url_machine_http import KEYS, URLS, secret
from test_support.url_machine_outbound15 import Detours15, _Recording, dns15
from test_support.url_machine_rates import bound

if TYPE_CHECKING:
    from test_support.url_machine_model import World

REFUSED_LOCATIONS = (
    "ftp://files.example/token.json",
    "gopher://files.example/1",
    "http://[::ffff:127.0.0.1]/",
    "http://[2002:7f00:1::]/",
    "http://[64:ff9b::a00:7]/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://127.1/",
)
"""Redirect targets the guard refuses (docs/architecture.md, "Outbound requests"): a scheme other than
http(s) whose host resolves public; IPv6 addresses embedding 127.0.0.1 or 10.0.0.7 (mapped, 6to4, NAT64);
legacy spellings of 127.0.0.1, which the model's DNS (the sandbox's: every name public) would answer as a
public name."""


class Redirects16(Detours15):
    """Detours15 whose provider hosts answer a redirect to `location`; any request to a redirect target
    (a host outside the sandbox's providers) is kept and answered 200."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        super().__init__(inner)
        self.location = ""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if self.location and url.host in self.hosts:
            self.seen.append(request)
            return httpx.Response(302, headers={"location": self.location}, request=request)
        if self.location and url.host == httpx.URL(self.location).host:
            self.seen.append(request)
            return httpx.Response(200, json={}, request=request)
        return super().handle_request(request)


class _Recording16(_Recording):
    """`_Recording` over `Redirects16`."""

    def __init__(self, root: Path, deployed: Any) -> None:
        self.store, self.locks = SqliteStore(root / "store.db"), SqliteLockManager(root / "locks.db")
        self.transport = Redirects16(SandboxTransport(parse_scenario({}), Ledger(root / "ledger.jsonl"),
                                                      sleep=lambda _s: None))
        self.registry = build_registry(ProviderKeys({k.variable: secret(k.variable) for k in KEYS.values()}),
                                       transport=self.transport, sleep=lambda _s: None, resolve_host=dns15)
        self.clock = StepClock(T0)
        self.engine = build_engine(self.store, self.locks, self.registry, FakeProfiles(), enable_paid=True,
                                   clock=self.clock, max_attempts=deployed.max_attempts, backoff=deployed.backoff)


class Outbound16Rules:
    """The guard's refusals of a redirect's scheme, embedded and legacy addresses; the budgets' notation.
    Expects the model's `dir`, `world`, `deployed` and the outbound15 rules' `_with_registry`."""

    dir: Path
    world: World
    deployed: Any
    _with_registry: Callable[[Any, Callable[[], None]], None]

    def redirects_refused(self, platform: Platform, locations: Sequence[str]) -> None:
        """`platform`'s free provider answers each URL's request with a redirect to one of `locations`:
        the guard refuses it before anything is sent there, the URL `blocked` (docs/architecture.md,
        "Outbound requests"; "Statuses": a refused redirect is not a transient failure)."""
        root = self.dir / f"outbound16-{len(list(self.dir.glob('outbound16-*')))}"
        root.mkdir()
        rec = _Recording16(root, self.deployed)
        v = self.world.violations
        key = KEYS[platform]

        def body() -> None:
            for n, location in enumerate(locations):
                url, address = URLS[platform].format(n=500 + n), f"R{n:03d}"
                rec.transport.hosts, rec.transport.location = key.hosts, location
                rec.record(address, url)
                el = rec.store.find_element(address, url)
                status = None if el is None else el.status
                elsewhere = sorted({str(r.url) for r in rec.transport.seen if r.url.host not in key.hosts})
                if elsewhere or status is not FetchStatus.BLOCKED:
                    v.append(f"{platform.value}'s provider redirected to {location}: the guard refuses it (only "
                             f"http(s), only public addresses, embedded IPv4 and legacy spellings unwrapped), "
                             f"nothing sent there, the URL blocked; requests went to {elsewhere}, the URL {status}")

        self._with_registry(rec, body)

    def budgets_as_written(self) -> None:
        """The operator's `SOCIAL_RECORDING_SPEND_BUDGETS` read by the settings (docs/operations.md, "Spend
        budgets"): an account given twice fails at load naming it; a limit of 12 digits is kept as written;
        one of 13 digits fails naming the account and the value."""
        from test_support.url_machine_settings import deployment_settings

        v = self.world.violations
        account = "twitterapi"

        def load(text: str) -> tuple[Any, str]:
            try:
                return deployment_settings({"spend_budgets": text}).budgets, ""
            except ValueError as exc:  # pydantic's ValidationError is one
                return None, str(exc)

        twice = f'{{"{account}": "5/day", "{account}": "7/day"}}'
        budgets, error = load(twice)
        if budgets is not None or repr(account) not in error:
            v.append(f"SOCIAL_RECORDING_SPEND_BUDGETS={twice}: an account given twice fails at load naming it "
                     f"(JSON alone would keep the last); it loaded {budgets}, said {error!r}")
        twelve, thirteen = "9" * 12, "9" * 13
        written = json.dumps({account: f"{twelve}/day"})
        budgets, error = load(written)
        kept = None if budgets is None or account not in budgets else budgets[account].per_day
        if kept != int(twelve):
            v.append(f"SOCIAL_RECORDING_SPEND_BUDGETS={written}: a limit of 12 digits is taken as written (only "
                     f"more than 12 are refused); it loaded {budgets}, said {error!r}")
        written = json.dumps({account: f"{thirteen}/day"})
        budgets, error = load(written)
        if budgets is not None or repr(account) not in error or thirteen not in error:
            v.append(f"SOCIAL_RECORDING_SPEND_BUDGETS={written}: a limit of more than 12 digits fails at load "
                     f"naming the account and the value; it loaded {budgets}, said {error!r}")


def _youtube_day(m: Any) -> list[Callable[[], object]]:
    """YouTube's documented quota (10,000/day, docs/operations.md's "Providers" table) is a day's: its window
    filled at one instant, a request two hours later is still held (it waits, or is refused, until a day
    after the first); the model's rate log flags one that leaves. On the model's clock, frozen; costs
    about 4 s (9,000 requests through the outbound client)."""
    (rate,) = documented_rates("youtube", True)

    def fill() -> None:
        m.clock.frozen = True
        m.requests_leave(False, "youtube", bound(rate))

    def later() -> None:
        m.clock.advance(timedelta(hours=2))
        m.requests_leave(False, "youtube", 1)

    return [fill, later]


def _step(f: Callable[[Any], object]) -> Callable[[Any], list[Callable[[], object]]]:
    return lambda m: [lambda: f(m)]


OUTBOUND16_WALKS: tuple[tuple[str, Callable[[Any], list[Callable[[], object]]]], ...] = (
    ("redirects to a non-http scheme, an embedded private address and a legacy IPv4 spelling", _step(
        lambda m: m.redirects_refused(Platform.GITHUB, REFUSED_LOCATIONS))),
    ("YouTube's daily quota filled, a request two hours later", _youtube_day),
    ("spend budgets written twice, of 12 and of 13 digits", _step(lambda m: m.budgets_as_written())),
)
"""(name, steps) of each walk (test_support/url_machine_walks.py lists them)."""
