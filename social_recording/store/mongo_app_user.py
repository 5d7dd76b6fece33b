"""The application's MongoDB user, kept equal to the store URL's credentials: created when missing,
its password and roles set again when present. The deployment's one-shot `migrate` step runs it as
the MongoDB administrator before the code server starts, so a password changed in the store URL's
secret is changed in MongoDB too instead of locking the application out (docs/operations.md,
"Secrets"). Idempotent: running it twice changes nothing the second time.

    MONGO_ROOT_USER=… MONGO_ROOT_PASSWORD_FILE=… SOCIAL_RECORDING_STORE_URL_FILE=… \\
        python -m social_recording.store.mongo_app_user

FerretDB has no roles (every authenticated user may do everything; it requires `roles` and refuses
any but an empty list): there the user is created and updated with none.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from pymongo import MongoClient
from pymongo.errors import PyMongoError
from pymongo.uri_parser import parse_uri

from social_recording.secret_files import SecretFileError, load_secret_files

STORE_URL_VAR = "SOCIAL_RECORDING_STORE_URL"
ROOT_USER_VAR = "MONGO_ROOT_USER"
ROOT_PASSWORD_VAR = "MONGO_ROOT_PASSWORD"
DATABASES_VAR = "MONGO_APP_DATABASES"
"""Databases the user may read and write besides the store URL's own (space separated)."""
AUTH_DATABASE = "admin"
TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class AppUser:
    name: str
    password: str
    databases: tuple[str, ...]

    def __repr__(self) -> str:
        return f"AppUser(name={self.name!r}, password='**********', databases={self.databases!r})"


def app_user_from_url(store_url: str, extra_databases: str = "") -> AppUser:
    """The user, password and databases a store URL implies (ValueError naming the variable if none)."""
    parsed = parse_uri(store_url)
    if not parsed.get("username") or not parsed.get("password"):
        raise ValueError(f"{STORE_URL_VAR} names no user and password (mongodb://USER:PASSWORD@host/db)")
    if not parsed.get("database"):
        raise ValueError(f"{STORE_URL_VAR} names no database (mongodb://…/DATABASE)")
    databases = dict.fromkeys([parsed["database"], *extra_databases.split()])
    return AppUser(parsed["username"], parsed["password"], tuple(databases))


def user_command(user: AppUser, *, exists: bool, roles_supported: bool = True) -> dict[str, Any]:
    """createUser or updateUser, with readWrite on the user's databases only (no admin rights)."""
    roles = [{"role": "readWrite", "db": db} for db in user.databases] if roles_supported else []
    return {"updateUser" if exists else "createUser": user.name, "pwd": user.password, "roles": roles}


def sync_app_user(admin: MongoClient[dict[str, Any]], user: AppUser) -> str:
    """Create or update `user` through an administrator's client; "created" or "updated"."""
    admin_db = admin[AUTH_DATABASE]
    exists = bool(admin_db.command("usersInfo", user.name)["users"])
    roles_supported = "ferretdbVersion" not in admin_db.command("buildInfo")
    admin_db.command(user_command(user, exists=exists, roles_supported=roles_supported))
    return "updated" if exists else "created"


def admin_client(store_url: str, root_user: str, root_password: str) -> MongoClient[dict[str, Any]]:
    """A client on the store URL's hosts and options, authenticated as the administrator."""
    parsed = parse_uri(store_url)
    options = {k: v for k, v in parsed["options"].items() if k.lower() != "authsource"}
    hosts = [f"{host}:{port}" for host, port in parsed["nodelist"]]
    return MongoClient(hosts, username=root_user, password=root_password, authSource=AUTH_DATABASE,
                       serverSelectionTimeoutMS=TIMEOUT_MS, **options)


def admin_from_environment() -> tuple[str, str] | None:
    """The administrator's user and password from MONGO_ROOT_USER and MONGO_ROOT_PASSWORD (or its _FILE,
    read here), as the migrate step has them; None when either is not given."""
    load_secret_files([ROOT_PASSWORD_VAR])
    user, password = os.environ.get(ROOT_USER_VAR), os.environ.get(ROOT_PASSWORD_VAR)
    return (user, password) if user and password else None


def ensure_app_user(store_url: str, admin: tuple[str, str], extra_databases: str = "") -> str:
    """Create or update the store URL's user as `admin`; the line saying which (ValueError for a URL
    without a user, PyMongoError naming the server's answer)."""
    user = app_user_from_url(store_url, extra_databases)
    client = admin_client(store_url, *admin)
    try:
        done = sync_app_user(client, user)
    finally:
        client.close()
    return f"{done} MongoDB user {user.name} with readWrite on {', '.join(user.databases)}"


def main() -> int:
    try:
        load_secret_files([STORE_URL_VAR])
        admin = admin_from_environment()
        missing = [v for v in (STORE_URL_VAR, ROOT_USER_VAR, ROOT_PASSWORD_VAR) if not os.environ.get(v)]
        if missing or admin is None:
            raise ValueError(f"{', '.join(missing)} must be set (or their _FILE variables)")
        store_url = os.environ[STORE_URL_VAR]
        app_user_from_url(store_url)
    except (SecretFileError, ValueError) as exc:
        print(f"mongo_app_user: {exc}", file=sys.stderr)
        return 64
    try:
        done = ensure_app_user(store_url, admin, os.environ.get(DATABASES_VAR, ""))
    except PyMongoError as exc:  # its messages carry the server's answer, never the command sent
        print(f"mongo_app_user: could not create or update MongoDB user {app_user_from_url(store_url).name} as "
              f"{admin[0]}: {exc}", file=sys.stderr)
        return 1
    print(f"mongo_app_user: {done}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
