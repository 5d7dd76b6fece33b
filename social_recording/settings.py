"""Environment settings (DESIGN §10), read once and validated with messages naming the variable.

TTLs and lock timings are code constants, not settings (seed 002 U-8).
"""

from __future__ import annotations

import os
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from typing_extensions import Annotated

PREFIX = "SOCIAL_RECORDING_"
DEFAULT_PARTITION_START = date(2026, 11, 1)
STORE_FILE_NAME = "social_recording.db"


class SettingsError(ValueError):
    """A wrong environment value; the message names each offending variable (never a secret value)."""


def default_data_dir() -> Path:
    """`$DAGSTER_HOME/social_recording` when DAGSTER_HOME is set, else `./.social_recording`."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        return Path(home) / "social_recording"
    return Path.cwd() / ".social_recording"


def default_sqlite_url() -> str:
    return f"sqlite:///{(default_data_dir() / STORE_FILE_NAME).resolve()}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", case_sensitive=False)

    store_url: str = Field(default_factory=default_sqlite_url)
    lock_url: str | None = None
    upstream: Literal["sandbox", "live"] = "sandbox"
    sandbox_scenario: Path | None = None
    sandbox_ledger: Path | None = None
    tracker_url: str | None = None
    tracker_api_key: SecretStr | None = None
    af_group_ids: Annotated[list[str], NoDecode] = Field(default_factory=list)
    af_investor_threshold: int = Field(default=3, ge=1)
    enable_paid: bool = False
    max_attempts: int = Field(default=5, ge=1, le=100)
    env: Literal["dev", "stage", "prod"] = "dev"
    partition_start: date = DEFAULT_PARTITION_START

    twitterapi_io_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("TWITTERAPI_IO_KEY")
    )
    apify_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("APIFY_TOKEN"))
    youtube_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("YOUTUBE_API_KEY"))
    github_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("GITHUB_TOKEN"))
    urlscan_api_key: SecretStr | None = Field(default=None, validation_alias=AliasChoices("URLSCAN_API_KEY"))

    @field_validator("af_group_ids", mode="before")
    @classmethod
    def _split_ids(cls, v: object) -> object:
        if isinstance(v, str):
            return [part.strip() for part in v.split(",") if part.strip()]
        return v

    @field_validator("store_url")
    @classmethod
    def _store_scheme(cls, v: str) -> str:
        if not v.startswith(("sqlite:///", "mongodb://", "mongodb+srv://", "mongomock://")):
            raise ValueError("expected sqlite:///path or mongodb://host/db")
        return v

    @field_validator("lock_url")
    @classmethod
    def _lock_scheme(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("sqlite:///", "redis://", "rediss://", "unix://")):
            raise ValueError("expected redis://host:port/db or sqlite:///path")
        return v

    @field_validator("tracker_url")
    @classmethod
    def _tracker_scheme(cls, v: str | None) -> str | None:
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError("expected an http(s) URL")
        return v.rstrip("/") if v else v

    @model_validator(mode="after")
    def _live_needs_tracker(self) -> Settings:
        if self.upstream == "live":
            missing = []
            if not self.tracker_url:
                missing.append(f"{PREFIX}TRACKER_URL")
            if not self.af_group_ids:
                missing.append(f"{PREFIX}AF_GROUP_IDS")
            if missing:
                raise ValueError(f"{PREFIX}UPSTREAM=live requires {' and '.join(missing)}")
        return self

    @property
    def effective_lock_url(self) -> str:
        """Default: the store's SQLite file (a `locks` table beside the data)."""
        if self.lock_url:
            return self.lock_url
        if self.store_url.startswith("sqlite:///"):
            return self.store_url
        return default_sqlite_url()

    @property
    def data_dir(self) -> Path:
        return default_data_dir()

    @property
    def effective_ledger(self) -> Path:
        return self.sandbox_ledger or (self.data_dir / "sandbox-ledger.jsonl")


_ALIASES = {
    "twitterapi_io_key": "TWITTERAPI_IO_KEY",
    "apify_token": "APIFY_TOKEN",
    "youtube_api_key": "YOUTUBE_API_KEY",
    "github_token": "GITHUB_TOKEN",
    "urlscan_api_key": "URLSCAN_API_KEY",
}


def env_var_name(field: str) -> str:
    """The environment variable behind a settings field."""
    return _ALIASES.get(field) or f"{PREFIX}{field.upper()}"


def load_settings() -> Settings:
    """Read the environment; raise SettingsError naming every wrong variable (values of secrets omitted)."""
    try:
        return Settings()
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = [str(p) for p in err.get("loc", ()) if p != "__root__"]
            field = loc[0] if loc else ""
            msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
            if field:
                name = env_var_name(field)
                shown = "" if field.endswith(("key", "token")) else f" (got {err.get('input')!r})"
                lines.append(f"{name}: {msg}{shown}")
            else:
                lines.append(msg)
        raise SettingsError("invalid social_recording settings:\n  " + "\n  ".join(lines)) from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Settings read once per process."""
    return load_settings()
