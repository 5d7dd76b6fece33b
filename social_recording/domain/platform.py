"""What a platform and its provider account are, as typed records: the facts every table about a
provider is derived from (docs/architecture.md, "Providers in one place").

Pure data: a descriptor names its package (`social_recording/platforms/<platform>/`, whose `spec.py`
holds the descriptor), and the generator and the sandbox fake are found there by
convention (`<package>.generator.make_generator`, `<package>.fake`), imported only by the registry
and the sandbox, so reading a descriptor never loads HTTP or sandbox code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from social_recording.domain.url_rules import UrlRules


class Platform(StrEnum):
    """Every platform, registered by its one line here: the member's value names its package,
    `social_recording/platforms/<value>/` (its spec, generator, fake, fixtures, demo part and README),
    and the catalogue (`social_recording/platforms/catalogue.py`) reads its descriptor from there."""

    X = "x"
    TIKTOK = "tiktok"
    INSTAGRAM = "instagram"
    REDDIT = "reddit"
    YOUTUBE = "youtube"
    GITHUB = "github"
    TELEGRAM = "telegram"
    DISCORD = "discord"
    BLUESKY = "bluesky"
    FARCASTER = "farcaster"
    WEB = "web"


@dataclass(frozen=True)
class Rate:
    """At most `requests` requests in any `per_seconds` seconds."""

    requests: int
    per_seconds: int

    def __post_init__(self) -> None:
        if not isinstance(self.requests, int) or isinstance(self.requests, bool) or self.requests < 1:
            raise ValueError(f"Rate.requests must be an integer >= 1, got {self.requests!r}")
        if not isinstance(self.per_seconds, int) or isinstance(self.per_seconds, bool) or self.per_seconds < 1:
            raise ValueError(f"Rate.per_seconds must be an integer >= 1, got {self.per_seconds!r}")

    def __str__(self) -> str:
        return f"{self.requests}/{self.per_seconds}s"


@dataclass(frozen=True)
class ProviderAccount:
    """One provider account: what bills or limits the calls of the platforms it answers.

    `name` is the outbound service, the ledger service, and the key of rates and concurrency.
    `key_variable` is the environment variable holding its key (None: the provider takes none); a
    `key_optional` key only raises the rates (`rates_without_key` apply without it). `concurrency`
    is the default number of calls at once per run (None: it is never a platform's own account and
    runs inside another one's slot, as RDAP inside urlscan's). `second_steps` are the ledger subject
    prefixes of a two-step call's follow-up requests (never a payment of their own)."""

    name: str
    paid: bool
    key_variable: str | None = None
    key_optional: bool = False
    rates: tuple[Rate, ...] = ()
    rates_without_key: tuple[Rate, ...] | None = None
    concurrency: int | None = None
    second_steps: tuple[str, ...] = ()
    paid_polls: bool = False
    """Its two-step call's polls go out on the paid client (urlscan's result reads): a paid request
    made while the call's submitted request is open is a poll, never new spending (docs/architecture.md,
    "Spend budgets")."""
    unit_price_usd: float | None = None
    """The estimated price of one paid request, in US dollars (the spend ledger's estimated cost);
    None for a free account. Each descriptor names the price's source beside it."""
    package: str = ""
    """Where its sandbox fake lives (`<package>.fake.make_fakes`); empty: no fake of its own."""

    def __post_init__(self) -> None:
        if self.key_optional and self.key_variable is None:
            raise ValueError(f"account {self.name!r}: an optional key needs a key_variable")
        if self.paid != (self.unit_price_usd is not None) or (self.unit_price_usd or 0.0) < 0:
            raise ValueError(f"account {self.name!r}: a paid account declares a unit price >= 0, a free one none, "
                             f"got {self.unit_price_usd!r}")
        if self.concurrency is not None and self.concurrency < 1:
            raise ValueError(f"account {self.name!r}: concurrency must be >= 1, got {self.concurrency!r}")

    @property
    def key_required(self) -> bool:
        return self.key_variable is not None and not self.key_optional

    def rates_for(self, *, has_key: bool) -> tuple[Rate, ...]:
        if not has_key and self.rates_without_key is not None:
            return self.rates_without_key
        return self.rates


@dataclass(frozen=True)
class PlatformDescriptor:
    """Everything about one platform: its URL rules, the account that answers it (and any other it
    calls, as web calls RDAP), whether an answer may be reused by another token (a Telegram username
    can change hands: never), and the package holding its generator and fake."""

    platform: Platform
    account: ProviderAccount
    urls: UrlRules
    package: str
    also_calls: tuple[ProviderAccount, ...] = ()
    reusable: bool = True
    has_generator: bool = True
    title: str = ""
    """How the documents name it ("TikTok"); empty: the platform's value, capitalised."""

    @property
    def display_name(self) -> str:
        return self.title or self.platform.value.capitalize()

    @property
    def paid(self) -> bool:
        return self.account.paid

    @property
    def accounts(self) -> tuple[ProviderAccount, ...]:
        return (self.account, *self.also_calls)


@dataclass(frozen=True)
class Catalogue:
    """Every platform once, in registration order; the tables other modules need, derived."""

    platforms: tuple[PlatformDescriptor, ...]
    by_platform: dict[Platform, PlatformDescriptor] = field(init=False)

    def __post_init__(self) -> None:
        by: dict[Platform, PlatformDescriptor] = {}
        for d in self.platforms:
            if d.platform in by:
                raise ValueError(f"platform {d.platform.value!r} registered twice")
            by[d.platform] = d
        object.__setattr__(self, "by_platform", by)
        missing = set(Platform) - set(by)
        if missing:
            raise ValueError(f"platforms without a descriptor: {sorted(p.value for p in missing)}")
        unbounded = [d.platform.value for d in self.platforms if d.account.concurrency is None]
        if unbounded:
            raise ValueError(f"a platform's own account needs a concurrency bound: {unbounded}")
        names: dict[str, ProviderAccount] = {}
        for account in self.accounts():
            if names.setdefault(account.name, account) != account:
                raise ValueError(f"two different accounts are named {account.name!r}")

    def __getitem__(self, platform: Platform) -> PlatformDescriptor:
        return self.by_platform[platform]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.platforms)

    def accounts(self) -> tuple[ProviderAccount, ...]:
        """Every account once (a platform's own first, then the ones it also calls), in order."""
        seen: dict[str, ProviderAccount] = {}
        for d in self.platforms:
            for account in d.accounts:
                seen.setdefault(account.name, account)
        return tuple(seen.values())

    def platform_accounts(self) -> tuple[ProviderAccount, ...]:
        """The accounts that are some platform's own (those with a concurrency bound per run)."""
        seen: dict[str, ProviderAccount] = {}
        for d in self.platforms:
            seen.setdefault(d.account.name, d.account)
        return tuple(seen.values())

    def second_steps(self) -> tuple[str, ...]:
        """Ledger subject prefixes of two-step calls' follow-up requests, every account's."""
        return tuple(p for a in self.accounts() for p in a.second_steps)

    def paid_accounts(self) -> tuple[ProviderAccount, ...]:
        """The billing accounts that charge per request (the ones a spend budget can bound)."""
        return tuple(a for a in self.accounts() if a.paid)

    def key_variables(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.key_variable for a in self.accounts() if a.key_variable))
