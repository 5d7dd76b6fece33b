"""What a backup directory holds, as `manifest.json`: written last by `backup`, so a directory without
one is an interrupted backup; read first by `restore`, which refuses what it does not describe."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

MANIFEST = "manifest.json"
FORMAT = 1
SQLITE_FILE = "store.sqlite3"
MONGO_DIR = "mongodb"
POSTGRES_FILE = "dagster.pgdump"


class BackupError(RuntimeError):
    """A backup or restore that cannot go on; the message says why and never carries a password."""


class StorePart(BaseModel):
    kind: Literal["sqlite", "mongodb"]
    source: str
    """The store URL dumped, password masked."""
    schema_version: int | None
    counts: dict[str, int]
    """Rows (SQLite tables) or documents (MongoDB collections) dumped, by name."""


class DagsterPart(BaseModel):
    kind: Literal["postgresql"]
    source: str
    """host, port, user and database (no password)."""


class BackupManifest(BaseModel):
    format: Literal[1] = 1
    created_at: datetime
    store: StorePart
    dagster: DagsterPart | None
    """None: the instance is not on PostgreSQL (`make dev`'s SQLite instance: copy DAGSTER_HOME while stopped)."""
    seconds: float

    def write(self, directory: Path) -> None:
        (directory / MANIFEST).write_text(self.model_dump_json(indent=1) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, directory: Path) -> BackupManifest:
        path = directory / MANIFEST
        if not path.is_file():
            raise BackupError(f"{directory} holds no {MANIFEST}: not a backup, or a backup that did not finish")
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise BackupError(f"{path} is not a backup manifest of format {FORMAT}: {exc.errors()[0]['msg']}") from None
