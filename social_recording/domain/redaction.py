"""What a log line, an exception message or run metadata may show of a value that can carry a secret.

Why one module: every place that shows a URL (the canonicaliser's errors, the profile reader's dropped
values, lock keys, store and lock connection URLs, the engine's log lines, the sandbox ledger) must
hide the same things the same way; seven hand-written maskers had drifted apart (one kept the user
name, one masked it; one knew `jwt=`, another not; one stopped a value at a space, another ran on).

The rules, applied to any text (a bare URL, or a message quoting one):

- **userinfo** (`scheme://user:password@host`): the password is replaced by `***` and the user name is
  kept (it names the account, which an operator needs, and is not a secret); a userinfo without a
  password (`https://<token>@host`, how many services take a token) is replaced whole. The userinfo
  ends at the LAST `@` of the authority, so an unencoded `@` inside a password is hidden too. A value
  without `//` is read the same way when it starts with `user:password@` (a URL missing its scheme),
  except an e-mail address (`mailto:`), which names no secret.
- **query and fragment parameters** whose name says it holds a secret (token, key, secret, pass,
  password, pwd, auth, sig, signature, session, credential, jwt, matched anywhere in the name and
  case-insensitively, so `keyword=` is masked too: an over-masked log line costs nothing, a leaked
  key costs the account): the value is replaced by `***`.
- **known secret strings** (a provider key, a URL's password, raw and percent-decoded): replaced by
  `***` wherever they appear (`scrub`).
- **length**: a shown value is capped (`cap`), so a 5 MB junk field cannot flood a log.

The sandbox ledger records the URLs it answered without their credentials at all (`strip_credentials`):
the same secret-name rule, but the pair is dropped, so a recorded URL carries no placeholder either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

MASK = "***"
ELLIPSIS = "…"

SECRET_NAME_WORDS: tuple[str, ...] = (
    "token", "key", "secret", "pass", "pwd", "auth", "sig", "session", "credential", "jwt",
)  # fmt: skip
"""A parameter whose name contains one of these (any case) holds a secret (`pass` covers password,
`sig` covers signature)."""

_SECRET_NAME = re.compile("|".join(SECRET_NAME_WORDS), re.IGNORECASE)
# A secret parameter in a query or fragment: a name holding one of the words, `=`, then the value up to
# the next separator. Whitespace and quotes end a value too: the value may sit inside a sentence or a
# repr. The word is part of the pattern (not checked afterwards) so that a secret nested in another
# parameter's value (`?next=https://h/?key=1`) is found as well.
_PARAM = re.compile(
    r"(?P<head>[?&;#](?P<name>[^=&#;'\"\s]*?(?:" + "|".join(SECRET_NAME_WORDS) + r")[^=&#;'\"\s]*)=)"
    r"(?P<value>[^&#;'\"\s]*)",
    re.IGNORECASE,
)
# `scheme://userinfo@` (or `scheme:/`, `scheme:\\`, `//` at the start), anywhere in the text. The
# userinfo runs greedily to the last `@` before the path, query, fragment or a space.
_AUTHORITY_USERINFO = re.compile(
    r"(?P<head>(?:(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]*:[/\\]+|^\s*[/\\]{2}))(?P<info>[^\s/\\?#]*)@"
)
# A value that starts with `user:password@` and has no `//`: a URL written without its scheme.
_SCHEMELESS_USERINFO = re.compile(r"^(?P<head>\s*)(?P<info>(?!mailto:)[^\s:/\\?#@]+:[^\s/\\?#]*)@", re.IGNORECASE)


def is_secret_param(name: str) -> bool:
    """Whether a query/fragment parameter called `name` (raw or percent-encoded) holds a secret."""
    return _SECRET_NAME.search(unquote_plus(name)) is not None


def _masked_userinfo(info: str) -> str:
    user, colon, password = info.partition(":")
    if not colon:
        return MASK
    return f"{user}:{MASK}" if password else info


def redact_url(value: str) -> str:
    """`value` with every userinfo password and every secret-looking parameter value replaced by `***`
    (see the module doc). Works on any text containing URLs, e.g. a lock key `social-url:<url>`."""
    shown = _AUTHORITY_USERINFO.sub(lambda m: f"{m['head']}{_masked_userinfo(m['info'])}@", value)
    shown = _SCHEMELESS_USERINFO.sub(lambda m: f"{m['head']}{_masked_userinfo(m['info'])}@", shown, count=1)
    return _PARAM.sub(lambda m: f"{m['head']}{MASK}", shown)


def secrets_in(url: str) -> list[str]:
    """The secret values a URL carries (its userinfo password, secret parameter values), each raw and
    percent-decoded, longest first: what `scrub` must hide in a message that may quote them in any
    form. A user name is not among them (replacing every occurrence of a name like "default" would
    wreck the message; `redact_url` still masks a token written as the user of a URL)."""
    found: list[str] = []
    for pattern in (_AUTHORITY_USERINFO, _SCHEMELESS_USERINFO):
        found.extend(m["info"].partition(":")[2] for m in pattern.finditer(url))
    found.extend(m["value"] for m in _PARAM.finditer(url))
    out: list[str] = []
    for secret in found:
        for variant in (secret, unquote(secret)):
            if variant and variant != MASK and variant not in out:
                out.append(variant)
    return sorted(out, key=len, reverse=True)


def scrub(text: str, url: str | None = None, secrets: Iterable[str] = ()) -> str:
    """`text` (typically a driver's or library's error message) without `url`'s credentials, in
    whatever form the message quotes them, without any of the known `secrets`, and redacted."""
    known = [s for s in secrets if s]
    if url:
        text = text.replace(url, redact_url(url))
        known.extend(secrets_in(url))
    for secret in sorted(set(known), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return redact_url(text)


def cap(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with `…` marking the cut."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def show(value: str, limit: int) -> str:
    """A raw value fit for a message: redacted, capped, repr-quoted (so blanks and control characters
    stay visible)."""
    return repr(cap(redact_url(value), limit))


def strip_credentials(url: str) -> str:
    """`url` without its userinfo and without any secret-looking query parameter (the pair is dropped;
    the others are kept byte for byte, never re-encoded). For records of what was requested."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url.split("?", 1)[0]
    netloc = parts.netloc.rsplit("@", 1)[-1]
    kept = [p for p in parts.query.split("&") if p and not is_secret_param(p.split("=", 1)[0])]
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(kept), parts.fragment))
