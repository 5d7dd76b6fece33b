"""Secrets from files: every secret variable NAME may instead be given as NAME_FILE, the path of a
file holding the value (compose `secrets:` mounts them under /run/secrets), so that no secret sits
in a container's configuration (`docker inspect`) or on a command line (docs/operations.md,
"Secrets").

The file's value is put into this process's own environment under NAME before the settings are
read: Dagster resolves the resources' `EnvVar`s from it in every run process, which inherits it.
A file that is missing, unreadable or not text stops the process with an error naming the variable
and the path, never the value.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, MutableMapping
from pathlib import Path

FILE_SUFFIX = "_FILE"


class SecretFileError(ValueError):
    """A NAME_FILE that cannot supply NAME; the message names both and the path, never a value."""


def read_secret_file(name: str, path: str) -> str:
    """The value in `path` for variable `name` (one trailing newline dropped, as editors add one)."""
    variable = f"{name}{FILE_SUFFIX}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SecretFileError(f"{variable}: no such file {path!r}") from None
    except IsADirectoryError:
        raise SecretFileError(f"{variable}: {path!r} is a directory, not a file") from None
    except PermissionError:
        raise SecretFileError(f"{variable}: {path!r} is not readable by this process (uid {os.getuid()})") from None
    except UnicodeDecodeError:
        raise SecretFileError(f"{variable}: {path!r} is not UTF-8 text") from None
    except OSError as exc:
        raise SecretFileError(f"{variable}: cannot read {path!r} ({exc.strerror})") from None
    return text.removesuffix("\n").removesuffix("\r")


def load_secret_files(names: Iterable[str], environ: MutableMapping[str, str] | None = None) -> list[str]:
    """For each NAME with NAME_FILE set, put the file's value into `environ` (os.environ by default);
    the names set. The file wins over a NAME already there: a run process inherits the value its code
    server read at start, and after a rotation the file holds the new one. An empty file means unset."""
    env = os.environ if environ is None else environ
    loaded = []
    for name in names:
        path = env.get(f"{name}{FILE_SUFFIX}", "").strip()
        if not path:
            continue
        value = read_secret_file(name, path)
        if value.strip():
            env[name] = value
            loaded.append(name)
        else:
            env.pop(name, None)
    return loaded
