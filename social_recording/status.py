"""`python -m social_recording status`: where convergence stands, for terminals and scripts.

Reads the store with the settings the deployment runs with (the environment, over the `.env` that
`make dev` writes beside its Dagster instance; validated as for the jobs, and printed with where each
came from) and prints the token URLs by status and by platform, what the retry job takes next in
the order it takes them, and when it next has work; `--url URL` prints one URL's state and its next
step instead (docs/architecture.md, "The per-URL state machine"). `--json` prints the same as one
JSON document. Nothing is written: a SQLite store that does not exist is reported, not created.
Exit codes: 0 printed, 2 a bad setting or URL, 1 the store could not be read.

Dagster is never imported here: the command starts in a fraction of a second at any store size
(a test keeps it so).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.models import SocialUrl, UrlState, ensure_utc, utcnow
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.domain.redaction import scrub
from social_recording.domain.status import ABSORBING, FetchStatus
from social_recording.domain.urls import platform_of, to_canonical
from social_recording.next_step import NextStep, next_step
from social_recording.platforms.base import PAID_PLATFORMS, ProviderKeys
from social_recording.platforms.registry import usable_platforms
from social_recording.recording._text import safe_url
from social_recording.recording.attempt import rules_for
from social_recording.recording.candidates import default_statuses, describe_default, retry_query, select
from social_recording.recording.health import NextRetry, StoreFigures, next_retry, status_rows
from social_recording.settings import (
    BAD_SETTING_EXIT,
    DEV_HOME,
    PREFIX,
    STORE_FILE_NAME,
    Settings,
    data_dir_of,
    instance_env_file,
    load_settings,
    read_env_file,
    read_for_command,
)
from social_recording.status_spend import read_spend, render_spend
from social_recording.store import mask_url_password, open_store, parse_store_url
from social_recording.store.base import Candidate

DEFAULT_NEXT = 10


class StatusError(Exception):
    """The store could not be read; the message names the variable and never a password."""


def provider_keys(settings: Settings) -> ProviderKeys:
    """The keys the jobs would run with: in the sandbox, a placeholder for every required key left
    unset (what the code location's sandbox upstream hands its platforms), else those configured."""
    configured = ProviderKeys(dict(settings.provider_keys))
    if settings.upstream == "sandbox":
        from social_recording.sandbox.upstream import sandbox_keys

        return sandbox_keys(configured)
    return configured


SHOWN_SETTINGS = ("enable_paid", "max_attempts", "upstream", "env")
"""The settings the command's answers depend on, printed with where each came from (the store, and
how it was found, is the report's first line)."""


@dataclass(frozen=True)
class SettingsUsed:
    """The settings the command read, and where each shown one came from."""

    settings: Settings
    env_file: Path | None = None
    """The `.env` read under the environment (None: the environment alone)."""
    sources: tuple[tuple[str, str, str], ...] = ()
    """(variable, value shown, where from: "environment", the file, or "default")."""

    def lines(self) -> list[str]:
        origin = "the environment" + (f", over {self.env_file} (what `make dev` started Dagster with)"
                                      if self.env_file else "")
        lines = [f"settings ({origin})"]
        lines += [f"  {name}={value}  ({source})" for name, value, source in self.sources]
        return lines

    def as_json(self) -> dict[str, Any]:
        return {"env_file": None if self.env_file is None else str(self.env_file),
                "values": {name: {"value": value, "from": source} for name, value, source in self.sources}}


def _env_file_for(settings: Settings) -> Path | None:
    """The `.env` beside the Dagster instance whose store the command reads: $DAGSTER_HOME's, or,
    with neither DAGSTER_HOME nor a store named, the one `make dev` writes from this directory."""
    home = os.environ.get("DAGSTER_HOME")
    if home:
        path = instance_env_file(Path(home))
    elif "store_url" not in settings.model_fields_set:
        path = instance_env_file(Path.cwd() / DEV_HOME)
    else:
        return None
    return path if path.is_file() else None


def deployment_settings() -> SettingsUsed:
    """The settings the deployment runs with: the environment over the instance's `.env`;
    SettingsError naming a wrong variable (in either)."""
    from_env = load_settings()
    env_file = _env_file_for(from_env)
    settings = load_settings(env_file) if env_file else from_env
    in_file = read_env_file(env_file) if env_file else {}
    sources = []
    for field in SHOWN_SETTINGS:
        name = f"{PREFIX}{field.upper()}"
        value = getattr(settings, field)
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        source = ("environment" if os.environ.get(name, "").strip() else str(env_file) if name in in_file
                  else "default")
        sources.append((name, shown, source))
    return SettingsUsed(settings, env_file, tuple(sources))


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
    takes_next: tuple[Candidate, ...]
    """What the retry job takes next, in its order (due now first, then as they come due)."""
    retry: NextRetry
    retry_statuses: tuple[str, ...]
    retry_takes: str = ""
    """What the default selection takes under these settings, in words."""
    store_found: str = ""
    """How the store was found when the settings did not name it (empty otherwise)."""
    used: SettingsUsed | None = None

    def as_json(self) -> dict[str, Any]:
        f = self.figures
        return {
            "store": self.store,
            "store_found": self.store_found or None,
            "settings": None if self.used is None else self.used.as_json(),
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
            "next_retry": {
                "takes_next": [_candidate_json(c, self.at) for c in self.takes_next],
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


def _candidate_json(c: Candidate, now: datetime) -> dict[str, Any]:
    return {
        "token": c.address,
        "url": safe_url(c.url),
        "status": c.status.value,
        "platform": c.platform,
        "attempts": c.attempts,
        "recorded_at": None if c.checked_at is None else _iso(c.checked_at),
        "due_at": _iso(c.due_time(now)),
        "detail": None if c.detail is None else safe_url(c.detail),
    }


def retry_takes_next(store: Any, now: datetime, limit: int, *, enable_paid: bool,
                     usable: frozenset[Any]) -> tuple[Candidate, ...]:
    """The next `limit` elements of the retry job's default selection in its order (oldest recording
    first, never-recorded first): the same query the job runs, past any back-off, so the ones due
    now come first and the others follow as they come due."""
    far = datetime.max.replace(tzinfo=UTC)
    query = retry_query(now=far, min_interval=timedelta(0), limit=limit, enable_paid=enable_paid,
                        usable_platforms=usable)
    return select(store, query).candidates


def read_report(settings: Settings, *, next_n: int = DEFAULT_NEXT, now: datetime | None = None,
                used: SettingsUsed | None = None) -> StatusReport:
    """Read everything the command prints; StatusError when the store cannot be read."""
    settings, found = locate_store(settings)
    url = settings.store_url
    moment = ensure_utc(now or utcnow())
    usable = usable_platforms(provider_keys(settings))
    store, shown = _open_for_reading(settings)
    try:
        figures = StoreFigures.read(store)
        takes = (retry_takes_next(store, moment, next_n, enable_paid=settings.enable_paid, usable=usable)
                 if next_n > 0 else ())
        retry = next_retry(store, moment, enable_paid=settings.enable_paid, usable_platforms=usable)
    except Exception as exc:
        raise StatusError(f"{PREFIX}STORE_URL={shown!r}: cannot read the store: {_why(exc, url)}") from None
    finally:
        store.close()
    statuses = default_statuses(enable_paid=settings.enable_paid, usable_platforms=usable)
    return StatusReport(shown, moment, figures, takes, retry, tuple(sorted(s.value for s in statuses)),
                        describe_default(enable_paid=settings.enable_paid, usable_platforms=usable), found, used)


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
    next: NextStep
    """What a new holder is recorded as now, and what happens next (the state machine's `decide`
    and the recorder's gates, under the deployment's settings)."""
    max_attempts: int
    holders: tuple[tuple[str, SocialUrl], ...]
    store_found: str = ""
    used: SettingsUsed | None = None

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
            "settings": None if self.used is None else self.used.as_json(),
            "stands_at": self.next.new_holder.value,
            "calls": self.next.calls,
            "next_step": self.next.action,
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
                    now: datetime | None = None, used: SettingsUsed | None = None) -> UrlReport:
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
    rules = rules_for(platform, max_attempts=settings.max_attempts, min_interval=DEFAULT_MIN_INTERVAL,
                      backoff=settings.backoff)
    step = next_step(state, url, platform, now=moment, rules=rules, enable_paid=settings.enable_paid,
                     paid=platform in PAID_PLATFORMS, usable=usable_platforms(provider_keys(settings)), holders=held)
    return UrlReport(shown, moment, url, platform.value, state, step, settings.max_attempts, held, found, used)


def render_url(report: UrlReport) -> str:
    s = report.state
    step = report.next
    lines = [_store_line(report.store, report.store_found, report.at),
             *(report.used.lines() if report.used else []), "",
             f"url {safe_url(report.url)} ({report.platform}): a new holder now gets {step.new_holder.value}"
             + (" (its recording calls)" if step.calls else " without a call"),
             f"  next: {step.action}"]
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


def _summary(report: StatusReport) -> list[str]:
    f = report.figures
    final = f.urls - f.not_converged
    return [
        _store_line(report.store, report.store_found, report.at),
        f"{f.tokens} tokens, {f.urls} token URLs: {final} final, {f.not_converged} a retry can still change",
        f"objects: {', '.join(f'{n} {kind.value}s' for kind, n in f.objects.items())}; "
        f"{f.metrics} metric points; {f.links} token links",
    ]


def _settings(report: StatusReport) -> list[str]:
    return report.used.lines() if report.used else []


def _by_status(report: StatusReport) -> list[str]:
    lines = ["by status"]
    for status in FetchStatus:
        kind = "final" if status in ABSORBING else "retryable"
        lines.append(f"  {status.value:<13} {report.figures.by_status.get(status, 0):>7}   {kind}")
    return lines


def _by_platform(report: StatusReport) -> list[str]:
    rows = list(status_rows(report.figures))
    if not rows:
        return []
    header = ["platform", *(s.value for s in FetchStatus), "total"]
    table = [[platform, *(str(row[s.value]) for s in FetchStatus), str(row["total"])] for platform, row in rows]
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]
    return ["by platform"] + ["  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                                enumerate(zip(cells, widths, strict=True)))
                              for cells in [header, *table]]


def _takes_next(report: StatusReport) -> list[str]:
    lines = [f"what the retry job takes next, in its order (the default selection: {report.retry_takes})"]
    if not report.takes_next:
        lines.append("  none")
    for c in report.takes_next:
        due = c.due_time(report.at)
        when = "due now" if due <= report.at else f"due in {_ago(due, report.at)}"
        recorded = "never recorded" if c.checked_at is None else f"recorded {_ago(report.at, c.checked_at)} ago"
        detail = f" — {safe_url(c.detail)}" if c.detail else ""
        lines.append(f"  {when:<16} {c.status.value:<12} {c.platform or '(not canonical)':<10} attempts={c.attempts} "
                     f"{recorded}  {c.address}  {safe_url(c.url)}{detail}")
    return lines


def _next_retry(report: StatusReport) -> list[str]:
    r = report.retry
    lines = ["next retry"]
    if r.due_now:
        shown = ", ".join(f"{n} {s}" for s, n in r.due_by_status.items())
        lines.append(f"  {'at least ' if r.due_now_capped else ''}{r.due_now} element(s) due now: {shown}")
    elif r.next_due_at is not None:
        lines.append(f"  nothing due now; the next element comes due at {_iso(r.next_due_at)} "
                     f"(in {_ago(r.next_due_at, report.at)})")
    else:
        lines.append("  nothing left for the retry job under this configuration")
    lines.append(f"  retry_schedule's next tick: {_iso(r.next_tick)} (hourly, when the schedule is running)")
    return lines


TEXT_SECTIONS: tuple[Callable[[StatusReport], list[str]], ...] = (
    _summary, _settings, _by_status, _by_platform, _takes_next, _next_retry)
"""The text report, section by section (an empty section is left out); a new section is one more
function here."""


def render_text(report: StatusReport) -> str:
    sections = [lines for section in TEXT_SECTIONS if (lines := section(report))]
    return "\n\n".join("\n".join(lines) for lines in sections)


def main(argv: Sequence[str] | None = None, prog: str = "python -m social_recording status") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON document (for scripts)")
    parser.add_argument("--next", "--oldest", dest="next", type=int, default=DEFAULT_NEXT,
                        help=f"how many of the elements the retry job takes next to list (default {DEFAULT_NEXT})")
    parser.add_argument("--url", help="show one URL's state instead: its answer and anchor, failure streak, calls, "
                                      "open paid request, and its holders (canonicalised as the pipeline does)")
    parser.add_argument("--holders", type=int, default=DEFAULT_HOLDERS,
                        help=f"with --url, how many holders to list (default {DEFAULT_HOLDERS})")
    args = parser.parse_args(argv)
    if args.next < 0:
        parser.error(f"--next must be >= 0, got {args.next}")
    if args.holders < 0:
        parser.error(f"--holders must be >= 0, got {args.holders}")
    used = read_for_command(deployment_settings)
    if used is None:
        return BAD_SETTING_EXIT
    try:
        if args.url is not None:
            one = read_url_report(used.settings, args.url, holders=args.holders, used=used)
            text = json.dumps(one.as_json(), indent=2) if args.json else render_url(one)
        else:
            report = read_report(used.settings, next_n=args.next, used=used)
            located = locate_store(used.settings)[0]
            spend = read_spend(located.store_url, located.effective_lock_url, used.settings.budgets, report.at)
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

