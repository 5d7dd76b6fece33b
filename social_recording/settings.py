"""Environment settings, read once and validated with messages naming the variable.

TTLs and lock timings are code constants, not settings (changing one changes what "the same answer" or "a dead holder" means). Secrets are `SecretStr`;
URLs that may carry a password (store, lock) are masked in `repr` and in error messages.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from datetime import UTC, date, datetime
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    Field,
    SecretStr,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from social_recording.domain.policy import (
    DEFAULT_AF_INVESTOR_THRESHOLD,
    DEFAULT_BACKOFF_GROWTH,
    DEFAULT_BACKOFF_MAX_MINUTES,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_EXHAUSTED_PER_HOUR,
    DEFAULT_MIN_INTERVAL_MINUTES,
    MAX_BACKOFF_GROWTH,
    Backoff,
)
from social_recording.domain.spend import Budget, budget_texts, parse_budgets
from social_recording.locks import open_lock_manager
from social_recording.locks.rate_limits import parse_rate_overrides
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.secret_files import SecretFileError, load_secret_files
from social_recording.store import mask_url_password, parse_store_url

PREFIX = "SOCIAL_RECORDING_"

DEFAULT_RETENTION_DAYS = 30
"""Days a finished run, its event log and its compute logs are kept (`SOCIAL_RECORDING_RETENTION_DAYS`)."""
DEFAULT_PARTITION_START = date(2026, 11, 1)
"""First day of `reconcile_job`'s daily partitions unless SOCIAL_RECORDING_PARTITION_START says otherwise."""
STORE_FILE_NAME = "social_recording.db"
DAEMON_SENSOR_LOOP_S = 5
"""Dagster's daemon looks at its sensors once every this many seconds (its sensor loop): no sensor is
evaluated more often, whatever its own interval."""
LIVE_POLL_SECONDS = DAEMON_SENSOR_LOOP_S
"""token_flow_sensor reads the tracker on every loop of the daemon unless SOCIAL_RECORDING_LIVE_POLL_SECONDS
says otherwise (docs/architecture.md, "Live")."""

SECRET_FIELDS = frozenset({"tracker_api_key", "provider_keys"})
URL_FIELDS = frozenset({"store_url", "lock_url", "tracker_url"})
"""May carry `user:password@`: shown masked, never verbatim."""


class SettingsError(ValueError):
    """A wrong environment value; the message names each offending variable (never a secret value)."""


BAD_SETTING_EXIT = 2
"""What a command exits with when its settings (or another input it reads first) are wrong."""

T = TypeVar("T")


def read_for_command(read: Callable[[], T], errors: tuple[type[Exception], ...] = (SettingsError,)) -> T | None:
    """What a command reads before it acts (its settings, a scenario), or None once the error that
    names the bad value is on stderr; the command then returns BAD_SETTING_EXIT."""
    try:
        return read()
    except errors as exc:
        print(exc, file=sys.stderr)
        return None


def env_var_name(field: str) -> str:
    """The environment variable behind a settings field (provider keys: their own variables)."""
    if field == "provider_keys":
        return ", ".join(CATALOGUE.key_variables())
    return f"{PREFIX}{field.upper()}"


def provider_keys_from_env() -> dict[str, SecretStr]:
    """Every provider key variable of the descriptors that is set (non-blank) in the environment."""
    return {
        name: SecretStr(value)
        for name in CATALOGUE.key_variables()
        if (value := os.environ.get(name, "")).strip()
    }


def paid_account_names() -> frozenset[str]:
    """The billing accounts a spend budget may name (the descriptors' paid accounts)."""
    return frozenset(a.name for a in CATALOGUE.paid_accounts())


def secret_variables() -> list[str]:
    """The variables that may carry a secret, each of which may be given as NAME_FILE instead
    (secret_files.py): the secret fields', the URLs' (a password inside) and every provider key."""
    names = [env_var_name(f) for f in sorted((SECRET_FIELDS | URL_FIELDS) - {"provider_keys"})]
    return names + list(CATALOGUE.key_variables())


DEV_HOME = Path(".social_recording") / "dagster_home"
"""The Dagster instance directory `make dev` runs in, relative to the repository root (the Makefile's
DEV_HOME): its processes have DAGSTER_HOME set to it, so they write under `data_dir_of(DEV_HOME)`."""


def data_dir_of(dagster_home: Path) -> Path:
    """Where the processes of the Dagster instance in `dagster_home` keep the default store and ledger."""
    return dagster_home / "social_recording"


def default_data_dir() -> Path:
    """`$DAGSTER_HOME/social_recording` when DAGSTER_HOME is set, else `./.social_recording`."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return data_dir_of(Path(home))
    return Path.cwd() / ".social_recording"


def default_sqlite_url() -> str:
    """An absolute `sqlite:////...` URL: every run process finds the same file whatever its cwd."""
    return f"sqlite:///{(default_data_dir() / STORE_FILE_NAME).resolve()}"


def default_scenario_path() -> Path:
    """The bundled demo scenario (imported lazily: the sandbox is not needed in live mode)."""
    from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH

    return Path(DEMO_SCENARIO_PATH)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=PREFIX, extra="ignore", case_sensitive=False, env_ignore_empty=True
    )

    store_url: str = Field(default_factory=default_sqlite_url)
    lock_url: str | None = None
    upstream: Literal["sandbox", "live"] = "sandbox"
    sandbox_scenario: Path | None = None
    sandbox_ledger: Path | None = None
    tracker_url: str | None = None
    tracker_api_key: SecretStr | None = None
    af_group_ids: Annotated[list[str], NoDecode] = Field(default_factory=list)
    af_investor_threshold: int = Field(default=DEFAULT_AF_INVESTOR_THRESHOLD, ge=1)
    enable_paid: bool = False
    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1, le=100)
    backoff_growth: float = Field(default=DEFAULT_BACKOFF_GROWTH, ge=1.0, le=MAX_BACKOFF_GROWTH)
    """How much each further failed call of a URL multiplies its back-off (1: flat; docs/architecture.md,
    "Back-off: one due time")."""
    backoff_max_minutes: int = Field(default=DEFAULT_BACKOFF_MAX_MINUTES, ge=DEFAULT_MIN_INTERVAL_MINUTES,
                                     le=30 * 24 * 60)
    """The longest wait a growing back-off reaches."""
    max_exhausted_per_hour: int = Field(default=DEFAULT_MAX_EXHAUSTED_PER_HOUR, ge=0)
    env: Literal["dev", "stage", "prod"] = "dev"
    partition_start: date = DEFAULT_PARTITION_START
    live_poll_seconds: int = Field(default=LIVE_POLL_SECONDS, ge=DAEMON_SENSOR_LOOP_S, le=3600)
    """How often token_flow_sensor reads the tracker (one range request per evaluation): freshness
    against the tracker's load. Nothing shorter than the daemon's sensor loop is possible."""
    spool_dir: Path | None = None
    """Where paid answers the store could not take wait for the next run (default: `spool` in the data
    directory; put it on another disk than a SQLite store's file, so a full disk there does not fill it)."""
    retention_days: int = Field(default=DEFAULT_RETENTION_DAYS, ge=1, le=3650)
    """How long finished runs, their event logs and compute logs are kept (housekeeping_schedule)."""
    rate_limits: dict[str, str] = Field(default_factory=dict)
    """Per-service rate overrides as JSON, e.g. {"twitterapi": "50/second", "urlscan": "120/minute;1000/hour"}
    ("none" removes a rate); the documented rates apply otherwise (outbound.limits)."""

    spend_budgets: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)
    """Per paid billing account, its paid requests per UTC day and/or month, as JSON, e.g.
    {"twitterapi": "500/day;10000/month", "urlscan": "200/day"}. An account left out (the default: all
    of them) has no budget (docs/architecture.md, "Spend budgets")."""

    provider_keys: dict[str, SecretStr] = Field(default_factory=provider_keys_from_env)
    """Provider keys by variable (the descriptors' `key_variable`s: TWITTERAPI_IO_KEY, ...)."""

    @property
    def backoff(self) -> Backoff:
        """The back-off policy these settings describe."""
        return Backoff.configured(self.backoff_growth, self.backoff_max_minutes)

    @field_validator("af_group_ids", mode="before")
    @classmethod
    def _split_ids(cls, v: object) -> object:
        if isinstance(v, str):
            return [part.strip() for part in v.split(",") if part.strip()]
        return v

    @field_validator("store_url")
    @classmethod
    def _store_url(cls, v: str) -> str:
        v = v.strip()
        parse_store_url(v)  # scheme, path, database name; never connects
        return v

    @field_validator("lock_url")
    @classmethod
    def _lock_url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        open_lock_manager(v).close()  # parses the URL only; never connects
        return v

    @field_validator("rate_limits")
    @classmethod
    def _rate_limits(cls, v: dict[str, str]) -> dict[str, str]:
        parse_rate_overrides(v)  # service names and notation checked; parsed again where used
        return v

    @field_validator("spend_budgets", mode="before")
    @classmethod
    def _spend_budgets_json(cls, v: object) -> dict[str, str]:
        return budget_texts(v)  # duplicated accounts and values that are not text refused, naming them

    @field_validator("spend_budgets")
    @classmethod
    def _spend_budgets(cls, v: dict[str, str]) -> dict[str, str]:
        parse_budgets(v, paid_account_names())  # account names and notation checked; parsed again where used
        return v

    @property
    def budgets(self) -> dict[str, Budget]:
        """The spend budgets, parsed (accounts without one left out)."""
        return parse_budgets(self.spend_budgets, paid_account_names())

    @field_validator("tracker_url")
    @classmethod
    def _tracker_url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip().rstrip("/")
        if not v.startswith(("http://", "https://")) or len(v.split("://", 1)[1]) == 0:
            raise ValueError("expected an http(s) URL such as https://tracker.internal")
        if "@" in v.split("://", 1)[1].split("/", 1)[0]:
            raise ValueError("must not carry credentials; put the key in SOCIAL_RECORDING_TRACKER_API_KEY")
        return v

    @field_validator("sandbox_scenario")
    @classmethod
    def _scenario_exists(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError("no such scenario file")
        return v

    @field_validator("af_group_ids")
    @classmethod
    def _ids(cls, v: list[str]) -> list[str]:
        return list(dict.fromkeys(v))

    @model_validator(mode="after")
    def _live_needs_tracker(self) -> Settings:
        if self.upstream == "live":
            missing = []
            if not self.tracker_url:
                missing.append(f"{PREFIX}TRACKER_URL")
            if not self.af_group_ids:
                missing.append(f"{PREFIX}AF_GROUP_IDS")
            if missing:
                raise ValueError(f"{PREFIX}UPSTREAM=live requires {' and '.join(missing)} to be set")
        if self.lock_url is None and self.store_url.lower().startswith(("mongodb://", "mongodb+srv://")):
            # A MongoDB store is shared by workers on several hosts; a local SQLite lock file would
            # serialise only one host's workers, and two hosts could pay for the same URL.
            raise ValueError(
                f"{PREFIX}LOCK_URL must be set (e.g. redis://host:6379/0) when {PREFIX}STORE_URL is a MongoDB URL"
            )
        return self

    @field_serializer("store_url", "lock_url")
    def _masked(self, value: str | None) -> str | None:
        """Dumps (JSON, dict) mask `user:password@` like SecretStr fields; attributes keep the value."""
        return None if value is None else mask_url_password(value)

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name in URL_FIELDS and isinstance(value, str):
                yield name, mask_url_password(value)
            else:
                yield name, value

    @property
    def effective_lock_url(self) -> str:
        """Default: the store's SQLite file (a `locks` table beside the data)."""
        if self.lock_url:
            return self.lock_url
        if self.store_url.startswith("sqlite:"):
            return self.store_url
        return default_sqlite_url()

    @property
    def data_dir(self) -> Path:
        return default_data_dir()

    @property
    def effective_spool_dir(self) -> Path:
        return self.spool_dir or (self.data_dir / "spool")

    @property
    def effective_scenario(self) -> Path:
        return self.sandbox_scenario or default_scenario_path()

    @property
    def effective_ledger(self) -> Path:
        return self.sandbox_ledger or (self.data_dir / "sandbox-ledger.jsonl")


def _shown(field: str, value: object) -> str:
    if field in SECRET_FIELDS:
        return ""
    if field in URL_FIELDS and isinstance(value, str):
        return f" (got {mask_url_password(value)!r})"
    shown = repr(value)
    return f" (got {shown if len(shown) <= SHOWN_CHARS else shown[:SHOWN_CHARS] + f'… ({len(shown)} characters)'})"


SHOWN_CHARS = 200
"""A wrong value is echoed up to this many characters: a 5,000-character typo is named, not printed."""


def load_settings(env_file: Path | None = None) -> Settings:
    """Read the environment (secrets given as NAME_FILE first; and `env_file`, a `.env` whose values the
    environment overrides); raise SettingsError naming every wrong variable (secret values omitted)."""
    try:
        load_secret_files(secret_variables())
    except SecretFileError as exc:
        raise SettingsError(f"invalid social_recording settings:\n  {exc}") from None
    try:
        return Settings(_env_file=env_file) if env_file is not None else Settings()
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
            field = loc[0] if loc else ""
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if field:
                name = env_var_name(field)
                if field in SECRET_FIELDS:
                    msg = err.get("type", "invalid value")
                shown = _shown(field, err.get("input"))
                if msg.startswith(name):  # store / lock errors already name their variable
                    lines.append(str(msg))
                else:
                    lines.append(f"{name}: {msg}{shown}")
            else:
                lines.append(msg)
        raise SettingsError("invalid social_recording settings:\n  " + "\n  ".join(lines)) from None


INSTANCE_ENV_FILE = ".env"
"""The settings file beside a Dagster instance (in DAGSTER_HOME): `make dev` writes into it the
settings it starts Dagster with, so that `status` reads what the running deployment reads."""


def instance_env_file(dagster_home: Path) -> Path:
    return dagster_home / INSTANCE_ENV_FILE


def recordable_variables(environ: dict[str, str]) -> dict[str, str]:
    """The settings variables of `environ` that may be written to a file: every non-blank variable
    of a settings field but the secrets and a store or lock URL carrying a password (those stay in
    the environment only). Other SOCIAL_RECORDING_* variables (a test's, a tool's) are not settings."""
    secret = {env_var_name(f) for f in SECRET_FIELDS if f != "provider_keys"}
    urls = {env_var_name(f) for f in URL_FIELDS}
    fields = {env_var_name(f) for f in Settings.model_fields if f != "provider_keys"}
    return {name: value for name, value in sorted(environ.items())
            if name in fields and value.strip() and name not in secret
            and not (name in urls and mask_url_password(value) != value)}


def _dotenv_value(value: str) -> str:
    return value if re.fullmatch(r"[\w./:@,-]*", value) else json.dumps(value)


def record_settings(path: Path) -> dict[str, str]:
    """Validate the environment's settings and write the recordable ones to `path` (`make dev`,
    before it starts Dagster); SettingsError, naming the variable, when one is wrong."""
    load_settings()
    values = recordable_variables(dict(os.environ))
    stamp = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    lines = [f"# The settings `make dev` started Dagster with at {stamp}, rewritten at every start (secrets",
             "# and URLs with a password stay in the environment only). `status` reads this file.",
             *(f"{name}={_dotenv_value(value)}" for name, value in values.items())]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)
    return values


def read_env_file(path: Path) -> dict[str, str]:
    """The variables a `.env` file sets (as pydantic-settings reads it: python-dotenv)."""
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(path).items() if v is not None}


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once per process."""
    return load_settings()
