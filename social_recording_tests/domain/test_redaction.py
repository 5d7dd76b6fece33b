"""`domain.redaction`: the one masker behind every log line, message and record that shows a URL.

The cases of the seven maskers it replaced are all here (the canonicaliser's `redact_url`, the
profile reader's `mask_secrets`/`show_value`, the engine's `safe_url`, the store's
`mask_url_password`/`_scrub`, the lock URLs' `mask_url`/`scrub`, the ledger's `redact_url`), and the
old names still answer through it."""

from __future__ import annotations

import pytest

from social_recording.domain import redaction
from social_recording.domain.redaction import (
    cap,
    is_secret_param,
    redact_url,
    scrub,
    secrets_in,
    show,
    strip_credentials,
)

SECRET = "S3cr3t-Pw"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        # no secret: unchanged
        ("https://example.com/a?b=1", "https://example.com/a?b=1"),
        ("mongodb://h/db", "mongodb://h/db"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
        ("redis://h:6379/0", "redis://h:6379/0"),
        ("https://medium.com/@author/post", "https://medium.com/@author/post"),
        # userinfo: the password goes, the user name stays
        ("https://user:pw@example.com/a", "https://user:***@example.com/a"),
        ("ftp://user:SeCrEt2@files.example/", "ftp://user:***@files.example/"),
        (f"mongodb://u:{SECRET}@h/db", "mongodb://u:***@h/db"),
        (f"mongodb://u:p@ss{SECRET}@h/db", "mongodb://u:***@h/db"),  # an unencoded '@' in the password
        ("redis://user:p%40ss:w@h:6379/0", "redis://user:***@h:6379/0"),  # ':' in the password
        ("redis://:pw@h", "redis://:***@h"),
        ("redis://u:SECRET@QA@h:6379/0", "redis://u:***@h:6379/0"),
        ("redis://u:@h", "redis://u:@h"),  # an empty password hides nothing
        ("https:\\\\admin:hunter2@mytoken.io/", "https:\\\\admin:***@mytoken.io/"),
        # a userinfo without a password is often a token: hidden whole
        ("https://ghp_T0kEn@github.com/o/r", "https://***@github.com/o/r"),
        # a URL without its scheme, and the browsers' `https:host` spelling
        ("admin:hunter2@mytoken.io/x", "admin:***@mytoken.io/x"),
        ("https:admin:hunter2@mytoken.io", "https:***@mytoken.io"),
        # e-mail addresses and handles name no secret
        ("mailto:team@mytoken.io", "mailto:team@mytoken.io"),
        ("me@alpha.example", "me@alpha.example"),
        ("@SomeHandle", "@SomeHandle"),
        # secret-looking parameters, in the query or the fragment, any case
        ("https://example.com/a?api_key=zzz&b=1", "https://example.com/a?api_key=***&b=1"),
        ("https://example.com/cb?access_token=abc#x", "https://example.com/cb?access_token=***#x"),
        ("https://example.com/?sig=1&Signature=2&session_id=3", "https://example.com/?sig=***&Signature=***&session_id=***"),
        ("https://example.com/cb#id_token=abc&state=1", "https://example.com/cb#id_token=***&state=1"),
        ("https://example.com/?jwt=a.b.c&pwd=x&Credential=y", "https://example.com/?jwt=***&pwd=***&Credential=***"),
        ("https://example.com/monkey?keyword=x", "https://example.com/monkey?keyword=***"),  # errs on the safe side
        ("redis://h:6379/0?db=1&password=pw", "redis://h:6379/0?db=1&password=***"),
        ("https://h/?next=https://o/?key=1", "https://h/?next=https://o/?key=***"),  # nested in another value
        # inside text: a lock key, a sentence, a repr
        ("social-url:https://example.com/a?token=abc", "social-url:https://example.com/a?token=***"),
        ("https://alpha.example/x?api_key=SeCrEt1&page=2 more", "https://alpha.example/x?api_key=***&page=2 more"),
        ("failed: 'https://u:pw@h/x?token=t' refused", "failed: 'https://u:***@h/x?token=***' refused"),
        ("see redis://u:pw@a and mongodb://v:qq@b", "see redis://u:***@a and mongodb://v:***@b"),
    ],
)
def test_redact_url(raw: str, shown: str) -> None:
    assert redact_url(raw) == shown
    assert redact_url(shown) == shown  # idempotent: a redacted value is already safe


@pytest.mark.parametrize("name", ["token", "api_key", "apiKey", "X-Amz-Signature", "client_secret", "password",
                                  "passwd", "pwd", "auth", "sessionid", "credential", "jwt", "api%5Fkey"])
def test_secret_parameter_names(name: str) -> None:
    assert is_secret_param(name)


@pytest.mark.parametrize("name", ["id", "part", "q", "timeout", "forHandle", "format", "clean", "waitForFinish"])
def test_ordinary_parameter_names(name: str) -> None:
    assert not is_secret_param(name)


def test_secrets_in_a_url_raw_and_decoded_longest_first() -> None:
    assert secrets_in("redis://u:p%40ss@h/0?password=zz") == ["p%40ss", "p@ss", "zz"]
    assert secrets_in("redis://default@h") == []  # a user name is not replaced everywhere
    assert secrets_in("https://h/x") == []


def test_scrub_removes_a_urls_password_in_every_form() -> None:
    url = "redis://u:p%40ss@h"
    assert scrub("failed for p@ss and redis://u:p%40ss@h", url) == "failed for *** and redis://u:***@h"
    message = f"Username and password must be escaped: mongodb://u:{SECRET}@h/db ({SECRET})"
    assert SECRET not in scrub(message, f"mongodb://u:{SECRET}@h/db")
    assert scrub("text", None) == "text"


def test_scrub_removes_known_secret_strings() -> None:
    assert scrub("401 for key SeCrEt-KeY at host", secrets=["SeCrEt-KeY", ""]) == "401 for key *** at host"
    assert scrub("Bearer abc.def and abc", secrets=["abc.def"]) == "Bearer *** and abc"


def test_cap_and_show() -> None:
    assert cap("abc", 3) == "abc" and cap("abcd", 3) == "abc…"
    long = "https://example.com/" + "a" * 400 + "?token=secret"
    shown = show(long, 200)
    assert "secret" not in shown and len(shown) == 200 + 1 + 2  # the cut mark and the repr quotes
    assert show("TBA ", 160) == "'TBA '"
    assert show("https://u:pw@h", 160) == "'https://u:***@h'"


@pytest.mark.parametrize(
    ("url", "expected"),
    [("https://h.example/p?key=abc", "https://h.example/p"),
     ("https://h.example/p?a=1&KEY=abc&b=%2C2", "https://h.example/p?a=1&b=%2C2"),
     ("https://h.example/p?api_key=1&access_token=2&part=snippet,statistics", "https://h.example/p?part=snippet,statistics"),
     ("https://user:pw@h.example/p", "https://h.example/p"),
     ("https://h.example/p?keyword=x&id=1", "https://h.example/p?id=1"),  # the same name rule as the logs
     ("https://api.apify.com/v2/acts/x~y/runs?token=T0K&timeout=90", "https://api.apify.com/v2/acts/x~y/runs?timeout=90"),
     ("https://h.example/p", "https://h.example/p")],
)
def test_strip_credentials(url: str, expected: str) -> None:
    assert strip_credentials(url) == expected


def test_the_old_names_answer_through_the_one_module() -> None:
    from social_recording.domain.urls import redact_url as urls_redact_url
    from social_recording.locks._urls import mask_url
    from social_recording.locks._urls import scrub as locks_scrub
    from social_recording.recording._text import safe_url
    from social_recording.sandbox.ledger import redact_url as ledger_redact_url
    from social_recording.store import mask_url_password
    from social_recording.upstream.profile import mask_secrets, show_value

    assert urls_redact_url is redaction.redact_url and mask_secrets is redaction.redact_url
    assert mask_url("redis://user:p%40ss:w@h:6379/0") == "redis://user:***@h:6379/0"
    assert locks_scrub("failed for p@ss", "redis://u:p%40ss@h") == "failed for ***"
    assert mask_url_password(f"mongodb://u:{SECRET}@h/db") == "mongodb://u:***@h/db"
    assert ledger_redact_url is redaction.strip_credentials
    assert safe_url("https://example.com/x?password=hunter2") == "https://example.com/x?password=***"
    long = "https://example.com/" + "a" * 400 + "?token=secret"
    assert "secret" not in safe_url(long) and len(safe_url(long)) <= 301
    assert show_value("https://t.co/x?token=SeCrEt3") == "'https://t.co/x?token=***'"
    assert len(show_value("https://alpha.example/" + "a" * 500)) < 250
