"""`python -m social_recording status`: where convergence stands, for terminals and scripts.

Reads the configured store (SOCIAL_RECORDING_STORE_URL and the other settings, validated as for the
jobs) and prints the token URLs by status and by platform, the longest-waiting elements a retry can
still change (with their detail), and when the retry job next has work; `--url URL` prints one URL's
state instead (docs/architecture.md, "The per-URL state machine"). `--json` prints the same as one
JSON document. Nothing is written: a SQLite store that does not exist is reported, not created.
Exit codes: 0 printed, 2 a bad setting or URL, 1 the store could not be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.models import SocialUrl, UrlState, ensure_utc, utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.redaction import scrub
from social_recording.domain.status import ABSORBING, RETRYABLE, FetchStatus
from social_recording.domain.url_machine import url_status
from social_recording.domain.urls import platform_of, to_canonical
from social_recording.platforms.base import ProviderKeys
from social_recording.platforms.registry import usable_platforms
from social_recording.recording._text import safe_url
from social_recording.recording.attempt import rules_for
from social_recording.recording.candidates import default_statuses, describe_default
from social_recording.recording.health import (
    NextRetry,
    StoreFigures,
    next_retry,
    oldest_waiting,
    status_rows,
)
from social_recording.settings import (
    DEV_HOME,
    PREFIX,
    STORE_FILE_NAME,
    Settings,
    SettingsError,
    data_dir_of,
    load_settings,
)
from social_recording.status_spend import read_spend, render_spend
from social_recording.store import mask_url_password, open_store, parse_store_url
from social_recording.store.base import WaitingElement

DEFAULT_OLDEST = 10
class StatusError(Exception):
    """The store could not be read; the message names the variable and never a password."""


def provider_keys(settings: Settings) -> ProviderKeys:
    """The keys the jobs would run with: asked of the upstream the code location chooses (in the
    sandbox, a placeholder for every required key left unset)."""
    from social_recording.dagster_defs.definitions_builder import upstream_resource

    return upstream_resource(settings).provider_keys(ProviderKeys(dict(settings.provider_keys)))


MAKE_DEV_STORE = "the store `make dev` writes"


def locate_store(settings: Settings) -> tuple[Settings, str]:
    """The settings to read with, and how the store was found ("" when the settings name it). With
    neither SOCIAL_RECORDING_STORE_URL nor DAGSTER_HOME set, the default store is under
    `./.social_recording/`; when that one does not exist but the one `make dev` writes (its instance
    directory is DEV_HOME) does, that one is read."""
    if "store_url" in settings.model_fields_set or os.environ.get("DAGSTER_HOME"):
        return settings, ""
    parsed = parse_store_url(settings.store_url)
    if parsed.path is None or Path(parsed.path).is_file():
        return settings, ""
    dev = (Path.cwd() / data_dir_of(DEV_HOME) / STORE_FILE_NAME).resolve()
    if not dev.is_file():
        return settings, ""
    return settings.model_copy(update={"store_url": f"sqlite:///{dev}"}), (
        f"{MAKE_DEV_STORE}: {PREFIX}STORE_URL and DAGSTER_HOME are not set")


def _missing_store_hint(settings: Settings) -> str:
    """How to point the command at a store, when the default one does not exist."""
    if "store_url" in settings.model_fields_set or os.environ.get("DAGSTER_HOME"):
        return "nothing recorded yet? run a job first, or point the variable at the store the jobs use"
    dev_home = (Path.cwd() / DEV_HOME).resolve()
    return (f"{PREFIX}STORE_URL and DAGSTER_HOME are not set, and {MAKE_DEV_STORE} from this directory, "
            f"{data_dir_of(dev_home) / STORE_FILE_NAME}, does not exist either. Run the command from the "
            f"repository root after `make dev` recorded something (or `make status`), or point it at the "
            f"store: DAGSTER_HOME=<the Dagster instance directory, e.g. {dev_home}> python -m social_recording "
            f"status, or {PREFIX}STORE_URL=sqlite:////absolute/path/{STORE_FILE_NAME}")


@dataclass(frozen=True)
class StatusReport:
    store: str
    """The store URL, password masked."""
    at: datetime
    figures: StoreFigures
    oldest: tuple[WaitingElement, ...]
    retry: NextRetry
    retry_statuses: tuple[str, ...]
    retry_takes: str = ""
    """What the default selection takes under these settings, in words."""
    store_found: str = ""
    """How the store was found when the settings did not name it (empty otherwise)."""

    def as_json(self) -> dict[str, Any]:
        f = self.figures
        return {
            "store": self.store,
            "store_found": self.store_found or None,
            "at": _iso(self.at),
            "tokens": f.tokens,
            "urls": f.urls,
            "urls_final": f.urls - f.not_converged,
            "urls_not_converged": f.not_converged,
            "by_status": {s.value: f.by_status.get(s, 0) for s in FetchStatus},
            "by_platform": dict(status_rows(f)),
            "objects": {kind.value: n for kind, n in f.objects.items()},
            "metrics": f.metrics,
            "links": f.links,
            "oldest_waiting": [_element_json(e) for e in self.oldest],
            "next_retry": {
                "statuses": list(self.retry_statuses),
                "takes": self.retry_takes,
                "due_now": self.retry.due_now,
                "due_now_by_status": dict(self.retry.due_by_status),
                "due_now_capped": self.retry.due_now_capped,
                "next_due_at": None if self.retry.next_due_at is None else _iso(self.retry.next_due_at),
                "next_schedule_tick": _iso(self.retry.next_tick),
            },
        }


def _iso(value: datetime) -> str:
    return ensure_utc(value).isoformat(timespec="seconds").replace("+00:00", "Z")


def _element_json(e: WaitingElement) -> dict[str, Any]:
    return {
        "token": e.address,
        "url": safe_url(e.url),
        "status": e.status.value,
        "platform": e.platform,
        "attempts": e.attempts,
        "waiting_since": _iso(e.since),
        "recorded": e.recorded,
        "cause": None if e.cause is None else e.cause.value,
        "detail": None if e.detail is None else safe_url(e.detail),
    }


def read_report(settings: Settings, *, oldest: int = DEFAULT_OLDEST, now: datetime | None = None) -> StatusReport:
    """Read everything the command prints; StatusError when the store cannot be read."""
    settings, found = locate_store(settings)
    url = settings.store_url
    moment = ensure_utc(now or utcnow())
    usable = usable_platforms(provider_keys(settings))
    store, shown = _open_for_reading(settings)
    try:
        figures = StoreFigures.read(store)
        waiting = oldest_waiting(store, moment, oldest) if oldest > 0 else ()
        retry = next_retry(store, moment, enable_paid=settings.enable_paid, usable_platforms=usable)
    except Exception as exc:
        raise StatusError(f"{PREFIX}STORE_URL={shown!r}: cannot read the store: {_why(exc, url)}") from None
    finally:
        store.close()
    statuses = default_statuses(enable_paid=settings.enable_paid, usable_platforms=usable)
    return StatusReport(shown, moment, figures, waiting, retry, tuple(sorted(s.value for s in statuses)),
                        describe_default(enable_paid=settings.enable_paid, usable_platforms=usable), found)


DEFAULT_HOLDERS = 20


class BadUrl(ValueError):
    """A `--url` value that is not an http(s) URL."""


@dataclass(frozen=True)
class UrlReport:
    """One URL's state and a few of its holders, as the status command shows them."""

    store: str
    at: datetime
    url: str
    """Canonical."""
    platform: str
    state: UrlState | None
    stands_at: FetchStatus
    """What a new holder would be recorded as now (the state machine's reading of the state)."""
    max_attempts: int
    holders: tuple[tuple[str, SocialUrl], ...]
    store_found: str = ""

    def as_json(self) -> dict[str, Any]:
        s = self.state
        answer_until = None
        if s is not None and s.answer is not None and s.answered_at is not None:
            answer_until = _iso(s.answered_at + DEDUPE_TTL)
        return {
            "store": self.store,
            "store_found": self.store_found or None,
            "at": _iso(self.at),
            "url": safe_url(self.url),
            "platform": self.platform,
            "stands_at": self.stands_at.value,
            "state": None if s is None else {
                "answer": None if s.answer is None else s.answer.value,
                "answered_at": None if s.answered_at is None else _iso(s.answered_at),
                "answer_reusable_until": answer_until,
                "source_token": s.source_token,
                "failure_streak": s.streak,
                "budget": self.max_attempts,
                "last_call_at": None if s.attempted_at is None else _iso(s.attempted_at),
                "calls": s.attempts,
                "engine_failures": s.engine_failures,
                "open_request": None if s.request is None else {
                    "provider": s.request.provider, "request_id": s.request.request_id,
                    "submitted_at": _iso(s.request.submitted_at)},
                "fence": s.fence,
                "version": s.version,
                "updated_at": None if s.updated_at is None else _iso(s.updated_at),
            },
            "holders": [{"token": a, "status": el.status.value, "attempts": el.attempts,
                         "checked_at": None if el.checked_at is None else _iso(el.checked_at),
                         "cause": None if el.cause is None else el.cause.value,
                         "detail": None if el.detail is None else safe_url(el.detail)}
                        for a, el in self.holders],
        }


def read_url_report(settings: Settings, raw_url: str, *, holders: int = DEFAULT_HOLDERS,
                    now: datetime | None = None) -> UrlReport:
    """One URL's state (the value is canonicalised as the pipeline does); BadUrl for a value that is not
    an http(s) URL, StatusError when the store cannot be read."""
    try:
        url = to_canonical(raw_url)
    except ValueError as exc:
        raise BadUrl(f"--url {raw_url!r}: {exc}") from None
    settings, found = locate_store(settings)
    store, shown = _open_for_reading(settings)
    try:
        state = store.find_url_state(url)
        held = tuple(store.find_holders(url, holders))
    except Exception as exc:
        raise StatusError(f"{PREFIX}STORE_URL={shown!r}: cannot read the store: {_why(exc, settings.store_url)}") \
            from None
    finally:
        store.close()
    moment = ensure_utc(now or utcnow())
    platform = platform_of(url)
    rules = rules_for(platform, max_attempts=settings.max_attempts, min_interval=DEFAULT_MIN_INTERVAL)
    stands = FetchStatus.PENDING if state is None else url_status(state, moment, rules)
    return UrlReport(shown, moment, url, platform.value, state, stands, settings.max_attempts, held, found)


def render_url(report: UrlReport) -> str:
    s = report.state
    lines = [_store_line(report.store, report.store_found, report.at),
             f"url {safe_url(report.url)} ({report.platform}): a new holder now gets {report.stands_at.value}"]
    if s is None:
        lines.append("  nothing recorded for this URL yet")
    else:
        if s.answer is None:
            lines.append("  answer: none yet")
        elif s.answered_at is None:
            lines.append(f"  answer: {s.answer.value}, needed no call (reusable without expiry)")
        else:
            until = s.answered_at + DEDUPE_TTL
            fresh = "reusable" if report.at < until else "expired"
            lines.append(f"  answer: {s.answer.value} from the call of {_iso(s.answered_at)} "
                         f"({fresh} until {_iso(until)})" + (f", links of {s.source_token}" if s.source_token else ""))
        lines.append(f"  failure streak: {s.streak} of {report.max_attempts} failed calls since the last answer")
        last = "never" if s.attempted_at is None else _iso(s.attempted_at)
        lines.append(f"  calls: {s.attempts} in all, the last at {last}; engine failures: {s.engine_failures}")
        if s.request is not None:
            lines.append(f"  open paid request: {s.request.provider} {s.request.request_id}, submitted "
                         f"{_iso(s.request.submitted_at)} (a later holder resumes it)")
        else:
            lines.append("  open paid request: none")
        lines.append(f"  fence {s.fence}, version {s.version}")
    lines += ["", f"holders (first {len(report.holders)} by address)"]
    if not report.holders:
        lines.append("  none")
    for address, el in report.holders:
        checked = "never recorded" if el.checked_at is None else f"recorded {_iso(el.checked_at)}"
        detail = f" — {safe_url(el.detail)}" if el.detail else ""
        lines.append(f"  {el.status.value:<12} attempts={el.attempts} {checked}  {address}{detail}")
    return "\n".join(lines)


def _store_line(store: str, found: str, at: datetime) -> str:
    return f"store {store}" + (f" ({found})" if found else "") + f" at {_iso(at)}"


def _open_for_reading(settings: Settings) -> tuple[Any, str]:
    url = settings.store_url
    shown = mask_url_password(url)
    parsed = parse_store_url(url)
    if parsed.kind == "sqlite" and parsed.path is not None and not Path(parsed.path).is_file():
        raise StatusError(
            f"{PREFIX}STORE_URL={shown!r}: no store file at {Path(parsed.path).resolve()} "
            f"({_missing_store_hint(settings)})"
        )
    try:
        return open_store(url), shown
    except Exception as exc:
        raise StatusError(f"{PREFIX}STORE_URL={shown!r}: cannot open the store: {_why(exc, url)}") from None


def _why(exc: BaseException, url: str) -> str:
    return f"{type(exc).__name__}: {scrub(str(exc), url)}"[:300]


def _ago(now: datetime, then: datetime) -> str:
    minutes = int((now - then).total_seconds() // 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours < 48 else f"{hours // 24} days"


def render_text(report: StatusReport) -> str:
    f = report.figures
    final = f.urls - f.not_converged
    lines = [
        _store_line(report.store, report.store_found, report.at),
        f"{f.tokens} tokens, {f.urls} token URLs: {final} final, {f.not_converged} a retry can still change",
        f"objects: {', '.join(f'{n} {kind.value}s' for kind, n in f.objects.items())}; "
        f"{f.metrics} metric points; {f.links} token links",
        "",
        "by status",
    ]
    for status in FetchStatus:
        kind = "final" if status in ABSORBING else "retryable"
        lines.append(f"  {status.value:<13} {f.by_status.get(status, 0):>7}   {kind}")
    rows = list(status_rows(f))
    if rows:
        header = ["platform", *(s.value for s in FetchStatus), "total"]
        table = [[platform, *(str(row[s.value]) for s in FetchStatus), str(row["total"])] for platform, row in rows]
        widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
        lines += ["", "by platform"]
        for cells in [header, *table]:
            lines.append("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                          enumerate(zip(cells, widths, strict=True))))
    lines += ["", "oldest waiting elements (statuses a retry can change: "
              + ", ".join(s.value for s in FetchStatus if s in RETRYABLE) + ")"]
    if not report.oldest:
        lines.append("  none")
    for e in report.oldest:
        since = _ago(report.at, e.since) + ("" if e.recorded else ", never recorded")
        detail = f" — {safe_url(e.detail)}" if e.detail else ""
        lines.append(f"  {e.status.value:<12} {e.platform or '(not canonical)':<10} attempts={e.attempts} "
                     f"waiting {since}  {e.address}  {safe_url(e.url)}{detail}")
    r = report.retry
    lines += ["", "next retry", f"  the default selection takes {report.retry_takes}"]
    if r.due_now:
        shown = ", ".join(f"{n} {s}" for s, n in r.due_by_status.items())
        lines.append(f"  {'at least ' if r.due_now_capped else ''}{r.due_now} element(s) due now: {shown}")
    elif r.next_due_at is not None:
        lines.append(f"  nothing due now; the next element comes due at {_iso(r.next_due_at)} "
                     f"(in {_ago(r.next_due_at, report.at)})")
    else:
        lines.append("  nothing left for the retry job under this configuration")
    lines.append(f"  retry_schedule's next tick: {_iso(r.next_tick)} (hourly, when the schedule is running)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording status") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    parser.add_argument("--oldest", type=int, default=DEFAULT_OLDEST,
                        help=f"how many waiting elements to list (default {DEFAULT_OLDEST})")
    parser.add_argument("--url", help="show one URL's state instead: its answer and anchor, failure streak, calls, "
                                      "open paid request, and its holders (canonicalised as the pipeline does)")
    parser.add_argument("--holders", type=int, default=DEFAULT_HOLDERS,
                        help=f"with --url, how many holders to list (default {DEFAULT_HOLDERS})")
    args = parser.parse_args(argv)
    if args.oldest < 0:
        parser.error(f"--oldest must be >= 0, got {args.oldest}")
    if args.holders < 0:
        parser.error(f"--holders must be >= 0, got {args.holders}")
    try:
        settings = load_settings()
    except SettingsError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        if args.url is not None:
            one = read_url_report(settings, args.url, holders=args.holders)
            text = json.dumps(one.as_json(), indent=2) if args.json else render_url(one)
        else:
            report = read_report(settings, oldest=args.oldest)
            located = locate_store(settings)[0]
            spend = read_spend(located.store_url, located.effective_lock_url, settings.budgets, report.at)
            text = (json.dumps({**report.as_json(), "spend": spend.as_json()}, indent=2) if args.json
                    else f"{render_text(report)}\n\n{render_spend(spend)}")
    except BadUrl as exc:
        print(exc, file=sys.stderr)
        return 2
    except StatusError as exc:
        print(exc, file=sys.stderr)
        return 1
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `status | head`: the reader had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0

