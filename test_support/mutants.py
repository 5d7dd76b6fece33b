"""The project's mutants: plausible wrong rules in the state machine, the back-off policy, the call
guard, the spend check and both stores, each one line of the source changed. The model test alone
must fail on every one (social_recording_tests/recording/test_mutants.py runs it in CI;
`python bench/model_test.py --mutant NAME` runs it longer). A mutant that survives means a rule the
model does not check (docs/architecture.md, "The per-URL state machine").
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutant:
    path: str
    """The file, from the repository's root."""
    original: str
    """The text as written: found exactly once in the file."""
    mutant: str
    store: str = "sqlite"
    """The store the model runs on to meet it: "sqlite", or "mongomock" for the Mongo store's code."""


# The files the mutants change (this list's and bench/unseen_*.py's batches alike).
MACHINE = "social_recording/domain/url_machine.py"
DEDUPE = "social_recording/domain/dedupe.py"
POLICY = "social_recording/domain/policy.py"
SPEND = "social_recording/domain/spend.py"
CALL_GUARD = "social_recording/recording/call_guard.py"
SPEND_CHECK = "social_recording/recording/spend_check.py"
ATTEMPT = "social_recording/recording/attempt.py"
SQLITE_WRITE = "social_recording/store/sqlite/url_write.py"
SQLITE_ROWS = "social_recording/store/sqlite/rows.py"
MONGO_STATES = "social_recording/store/mongo/url_states.py"
MONGO_WRITE = "social_recording/store/mongo/url_write.py"
MONGO_DOCS = "social_recording/store/mongo/documents.py"
MONGO_QUERIES = "social_recording/store/mongo/queries.py"
REFUSAL = "social_recording/store/write_refusal.py"
MODELS = "social_recording/domain/models.py"
SPEND_BUDGET = "social_recording/locks/spend_budget.py"
CANDIDATES = "social_recording/recording/candidates.py"
SQLITE_SELECTION = "social_recording/store/sqlite/queries_selection.py"
SQLITE_SELECT = "social_recording/store/sqlite/selection.py"
PROCESSOR = "social_recording/recording/processor.py"
STATUS = "social_recording/domain/status.py"
RETRY = "social_recording/recording/retry.py"
URL_RECORDER = "social_recording/recording/url_recorder.py"
SPOOL = "social_recording/recording/answer_spool.py"
MONGO_SELECT = "social_recording/store/mongo/selection.py"
LIVE_FEED = "social_recording/recording/live_feed.py"
SPEND_REPORT = "social_recording/recording/spend_report.py"
RECONCILE = "social_recording/recording/reconcile.py"
RUN_STATE = "social_recording/recording/run_state.py"
RUN_DRIVER = "social_recording/recording/run_driver.py"
CONCURRENCY = "social_recording/recording/concurrency.py"
OUTCOMES = "social_recording/recording/outcomes.py"
CODEC = "social_recording/store/_codec.py"
HEALTH = "social_recording/recording/health.py"
SQLITE_GRAPH = "social_recording/store/sqlite/graph_write.py"
MONGO_LINKS = "social_recording/store/mongo/links.py"
TELEGRAM_SPEC = "social_recording/platforms/telegram/spec.py"
SQLITE_LOCKS = "social_recording/locks/sqlite.py"
REDIS_LOCKS = "social_recording/locks/redis.py"
LEASE = "social_recording/locks/base.py"
JOB_POOL = "social_recording/recording/job_pool.py"
JOB_LOCK = "social_recording/recording/job_lock.py"
ENGINE = "social_recording/recording/engine.py"
WRITER = "social_recording/recording/writer.py"
GRAPH = "social_recording/domain/graph.py"
SQLITE_TOKENS = "social_recording/store/sqlite/tokens.py"
SQLITE_QUERIES = "social_recording/store/sqlite/queries.py"
SQLITE_COUNTS = "social_recording/store/sqlite/count_triggers.py"
MONGO_TOKENS = "social_recording/store/mongo/tokens.py"
MONGO_GRAPH = "social_recording/store/mongo/graph.py"
PLATFORM_BASE = "social_recording/platforms/base.py"
WEB_SPEC = "social_recording/platforms/web/spec.py"
STORE_TRANSIENT = "social_recording/store/transient.py"
RATE_LIMITS = "social_recording/locks/rate_limits.py"
EXTENDER = "social_recording/locks/extender.py"
MONGO_COUNTS = "social_recording/store/mongo/counts.py"
DESCRIPTORS = "social_recording/domain/platform.py"
APIFY_SPEC = "social_recording/platforms/apify/spec.py"
PLATFORM_HTTP = "social_recording/platforms/http.py"
LIVE_JOB = "social_recording/dagster_defs/jobs/live.py"
STORE_RETRY = "social_recording/recording/store_retry.py"
OUTBOUND_CLIENT = "social_recording/outbound/client.py"
OUTBOUND_GUARD = "social_recording/outbound/guard.py"
FARCASTER_SPEC = "social_recording/platforms/farcaster/spec.py"
X_SPEC = "social_recording/platforms/x/spec.py"
SQLITE_HEALTH = "social_recording/store/sqlite/health.py"
RETRY_JOB = "social_recording/dagster_defs/jobs/retry.py"
HEALTH_REPORT = "social_recording/dagster_defs/health_report.py"
REGISTRY = "social_recording/platforms/registry.py"
SETTINGS = "social_recording/settings.py"
APIFY_CLIENT = "social_recording/platforms/apify/client.py"
OUTBOUND_LIMITS = "social_recording/outbound/limits.py"
LOCK_OUTAGE = "social_recording/locks/outage.py"
STORE_COUNTS = "social_recording/store/counts.py"
GITHUB_SPEC = "social_recording/platforms/github/spec.py"
BLUESKY_SPEC = "social_recording/platforms/bluesky/spec.py"
YOUTUBE_SPEC = "social_recording/platforms/youtube/spec.py"
CANONICAL = "social_recording/domain/urls/canonical.py"
SHORTLINKS = "social_recording/upstream/shortlinks.py"
TRACKER = "social_recording/upstream/tracker.py"
PROFILE = "social_recording/upstream/profile.py"
RECONCILE_JOB = "social_recording/dagster_defs/jobs/reconcile.py"
BACKFILL_WATCH = "social_recording/dagster_defs/backfill_watch.py"

MUTANTS: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    "answers spend the budget": Mutant(
        MACHINE, "source_token=source, streak=0,", "source_token=source, streak=before.streak + 1,"),
    "a later not_found replaces a fresh ok": Mutant(
        MACHINE, "better_stands = before.answer is not None and rank(before.answer) > rank(this_answer) and (",
        "better_stands = this_answer is not FetchStatus.NOT_FOUND and before.answer is not None"
        " and rank(before.answer) > rank(this_answer) and ("),
    "the streak survives an answer": Mutant(
        MACHINE, "source_token=source, streak=0,", "source_token=source, streak=before.streak,"),
    "an open paid request is dropped on a failed call": Mutant(
        MACHINE, "engine_failures=0,\n        request=_request_after(before, outcome))", "engine_failures=0,\n        request=None)"),
    "the streak never expires": Mutant(
        MACHINE, "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if False:"),
    "a spent streak expires a day late": Mutant(
        MACHINE, "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl + timedelta(1):"),
    "a holder pays beside an open call": Mutant(
        MACHINE, "if decision.calls and settled is not None and settled.open_call is not None:", "if False:"),
    "an open call never times out": Mutant(
        MACHINE, "if state is None or state.open_call is None or now - state.open_call.started_at < rules.call_timeout:",
        "if True:"),
    "a failing URL is called inside its back-off": Mutant(
        MACHINE, "if streak > 0 and (called or not may_call_again(s, now, rules)):", "if streak > 0 and called:"),
    "an element's due time ignores the streak": Mutant(
        MACHINE, "return rules.backoff.next_due(now, streak)", "return rules.backoff.next_due(now, 0)"),
    "an answer leaves the engine-failure count as it was": Mutant(
        MACHINE, "streak=0, engine_failures=0,\n        request=None,", "streak=0,\n        request=None,"),
    "the reuse window is a tick longer": Mutant(
        DEDUPE, "if state.answered_at is not None and now - state.answered_at >= ttl:",
        "if state.answered_at is not None and now - state.answered_at > ttl:"),
    "an engine failure counts twice": Mutant(
        MACHINE, "engine_failures = before.engine_failures + 1", "engine_failures = before.engine_failures + 2"),
    "a failed call leaves the last call where it was": Mutant(
        MACHINE, "attempted_at=_last_call(before, now), engine_failures=0,",
        "attempted_at=before.attempted_at, engine_failures=0,"),
    "the last call moves backwards": Mutant(
        MACHINE, "return now if base.attempted_at is None or base.attempted_at < now else base.attempted_at",
        "return now"),
    "a call that reads nothing is not counted": Mutant(
        MACHINE, "               if outcome.called else None)", "               if False else None)"),
    "a failed call hides the window's fresh answer": Mutant(
        MACHINE, "fresh = fresh_answer(_state_of(next_state), now, rules)", "fresh = None"),
    "an open call times out a tick late": Mutant(
        MACHINE, "if state is None or state.open_call is None or now - state.open_call.started_at < rules.call_timeout:",
        "if state is None or state.open_call is None or now - state.open_call.started_at <= rules.call_timeout:"),
    "a run buys again what its own call could not read": Mutant(
        "social_recording/recording/attempt.py", "self._run.note_read_nothing(self.url)", "pass"),
    # ---------------------------------------------------------------- the back-off policy
    "the back-off never grows": Mutant(POLICY, "if self.growth == 1.0 or streak <= 1:", "if True:"),
    "the back-off grows one failure late": Mutant(
        POLICY, "factor = self.growth ** min(streak - 1, 64)", "factor = self.growth ** min(streak - 2, 64)"),
    "a run's interval is ignored": Mutant(POLICY, "return now + (backoff.base - run_interval)", "return now"),
    # ---------------------------------------------------------------- the call guard
    "the timed-out call a record replaced is forgotten": Mutant(
        CALL_GUARD, "replaced=self._seen_open_call,", "replaced=None,"),
    "a paid call leaves without its record": Mutant(
        CALL_GUARD, "if paid and self._record_paid is not None:", "if False:"),
    "a refused record does not stop the call": Mutant(
        CALL_GUARD, "        if not result.applied:\n            raise CallVetoed(f\"a newer holder of the URL wrote first",
        "        if False:\n            raise CallVetoed(f\"a newer holder of the URL wrote first"),
    "a submission is forgotten by its own attempt": Mutant(
        CALL_GUARD, "        self.submitted_request = request\n", "        self.submitted_request = None\n"),
    # ---------------------------------------------------------------- the settings a deployment runs with
    "the settings' AF floor defaults to one below the policy's": Mutant(
        SETTINGS, "af_investor_threshold: int = Field(default=DEFAULT_AF_INVESTOR_THRESHOLD, ge=1)",
        "af_investor_threshold: int = Field(default=DEFAULT_AF_INVESTOR_THRESHOLD - 1, ge=1)"),
    # ---------------------------------------------------------------- reconcile's job lock per day
    "a reconcile run goes on when its day's job lock is held": Mutant(
        RECONCILE, "            if not job.held:\n", "            if False:\n"),
    # ---------------------------------------------------------------- the spend check
    "the spend budget is never asked": Mutant(
        SPEND_CHECK, "if new and self._budgets is not None and self._budgets.bounds(service):", "if False:"),
    "a request past the budget is sent anyway": Mutant(
        SPEND_CHECK, "raise SpendHeld(str(reached), reached)", "pass"),
    "a poll of an open request is new spending": Mutant(
        SPEND_CHECK, "return paid and not (service in POLLS_ON_PAID_CLIENT and self._holds_open())", "return paid"),
    # ---------------------------------------------------------------- the spend report and the live feed
    "the budget check fails only past a budget": Mutant(
        SPEND_REPORT, "level = max(level, 2 if used >= 1.0 else 1)", "level = max(level, 2 if used > 1.0 else 1)"),
    "a live read out of time counts as complete": Mutant(
        LIVE_FEED, "            cut = True\n            break\n        page_end", "            break\n        page_end"),
    # ---------------------------------------------------------------- both stores
    "the SQLite store's paid-call records accept a lower fence": Mutant(
        SQLITE_WRITE, "refused, stored_call = self._state_fence_refusal(conn, url, fence)",
        "refused, stored_call = None, self._state_fence_refusal(conn, url, fence)[1]"),
    "the SQLite store forgets the engine failures": Mutant(
        SQLITE_WRITE, "s.engine_failures, None if s.open_call is None else s.open_call.model_dump_json(), paid],",
        "0, None if s.open_call is None else s.open_call.model_dump_json(), paid],"),
    "the SQLite store forgets the streak": Mutant(
        SQLITE_WRITE, "opt_dt_to_text(s.answered_at), s.streak,", "opt_dt_to_text(s.answered_at), 0,"),
    "the Mongo store forgets the streak": Mutant(
        MONGO_WRITE, '"streak": s.streak, "engine_failures": s.engine_failures,',
        '"streak": 0, "engine_failures": s.engine_failures,', "mongomock"),
    "the Mongo store's open-call write accepts a lower fence": Mutant(
        MONGO_STATES, 'url,\n            fence,\n            {\n                "$set": {"fence": fence, "open_call"',
        'url,\n            2**62,\n            {\n                "$set": {"fence": fence, "open_call"', "mongomock"),
    "the Mongo store forgets the engine failures": Mutant(
        MONGO_WRITE, '"streak": s.streak, "engine_failures": s.engine_failures,', '"streak": s.streak, "engine_failures": 0,',
        "mongomock"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    "an ok element is replaced": Mutant(REFUSAL, "if element.status == KEPT_STATUS.value:", "if False:"),
    "a write decided on an old version lands": Mutant(
        REFUSAL, "if expect_version is not None and state.version != expect_version:", "if False:"),
    # ---------------------------------------------------------------- the health report
    "the stuck pending check leaves non-canonical elements out": Mutant(
        HEALTH, "    found = store.waiting_elements(query, canonical_only=False)\n    bound = hours_text(after)",
        "    found = store.waiting_elements(query)\n    bound = hours_text(after)"),
    "the health checks leave out a never-recorded element created at their cutoff": Mutant(
        SQLITE_SELECTION, 'clauses.append(f"{_NEVER_RECORDED} AND created_at <= ?")',
        'clauses.append(f"{_NEVER_RECORDED} AND created_at < ?")'),
    # Only the first hour of observations tells it apart: the growth is compared with the latest, not the first.
    "the growth check with no hour-old observation takes the latest": Mutant(
        HEALTH_REPORT, "records = instance.fetch_observations(TOKEN_SOCIAL_URLS, limit=1, ascending=True).records",
        "records = instance.fetch_observations(TOKEN_SOCIAL_URLS, limit=1, ascending=False).records"),
    # ---------------------------------------------------------------- the sensors' guards (the model's sensor walks)
    # Only a retry run still queued when the sensor ticks tells it apart: a second one is launched beside it.
    "the retry sensor launches beside a queued retry run": Mutant(RETRY_JOB, "    DagsterRunStatus.QUEUED,\n", ""),
    # ---------------------------------------------------------------- a run's own limits
    "a run whose job lock is lost goes on starting units": Mutant(
        JOB_POOL, "            elif lock_lost():", "            elif False:"),
    "a job's provider concurrency is dropped when set on its run": Mutant(
        RUN_STATE, "self.calls = CallSlots(provider_concurrency, per_token=self.calls.per_token)",
        "self.calls = CallSlots(None, per_token=self.calls.per_token)"),
    # ---------------------------------------------------------------- the answer spool
    "a paid answer the store refused is never spooled": Mutant(
        ATTEMPT, "if answer is not None and self._spool is not None and self._spool.put(answer):",
        "if answer is not None and self._spool is not None and False:"),
    "a spooled answer the store still refuses is dropped": Mutant(
        ATTEMPT, "            except Exception as exc:\n                return self.outcome(EngineOutcome.DEFERRED,",
        "            except Exception as exc:\n                self._spool.done(self.url)\n"
        "                return self.outcome(EngineOutcome.DEFERRED,"),
    # ---------------------------------------------------------------- the token's fence, the graph contract
    "the SQLite store takes a raw value's write under a smaller token fence": Mutant(
        SQLITE_TOKENS, "        refused = fence_refusal(row[0], fence)\n", "        refused = None\n"),
    "a group holding no object is planned": Mutant(GRAPH, "        if not g.objects():\n", "        if False:\n"),
    # ---------------------------------------------------------------- the URL locks (the Redis one: the model's Redis walks)
    "a SQLite lock is taken over only while its key is still held": Mutant(
        SQLITE_LOCKS, '"WHERE locks.expires_at <= ?",', '"WHERE locks.expires_at >= ?",'),
    "a Redis lock is taken whoever holds its key": Mutant(
        REDIS_LOCKS, "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
        "redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])"),
    # ---------------------------------------------------------------- a lease over time (the model's lock clock)
    # Only renewals failing until the expiry tell it apart: the holder learns it lost the key as it runs out.
    "a failing renewal holds on until its key runs out": Mutant(
        EXTENDER, "self.margin = ttl * RENEW_GIVE_UP_FRACTION", "self.margin = 0.0"),
    # Only a key another holder took while its holder worked: the old holder keeps calling under it.
    "a renewal refused by the backend loses nothing": Mutant(
        EXTENDER, '        if not still_owner:\n            self._lose(entry, "renewal refused',
        '        if False:\n            self._lose(entry, "renewal refused'),
    # ---------------------------------------------------------------- the lock backends' own expiries (url_machine_expiry.py)
    # Only a lock taken a minute or more after the backend's last sweep while another key is live (a
    # re-executed run's first call lasting over a minute): the sweep of dead holders' rows takes live ones.
    "SQLite's sweep of dead holders' rows deletes live keys": Mutant(
        SQLITE_LOCKS, '"DELETE FROM locks WHERE expires_at <= ? AND key <> ?"',
        '"DELETE FROM locks WHERE expires_at >= ? AND key <> ?"'),
    # Only a run started while another run's job lock is held (a re-execution right after a crash).
    "a run tries its job lock once instead of waiting for it": Mutant(
        JOB_LOCK, "return self.locks.hold_within(key, self.ttl, self.wait)", "return self.locks.try_hold(key, self.ttl)"),
    # ---------------------------------------------------------------- store outages
    # Only a store busy for a moment (another writer holding its file) tells it apart: the write fails at once.
    "a busy store is not waited out": Mutant(
        STORE_TRANSIENT, "if is_busy(exc) or is_disk_full(exc):", "if is_disk_full(exc):"),
    # Only a store outage longer than a sixtieth of the write's bound tells it apart.
    "a write's repeats stop after a second, not a minute": Mutant(
        STORE_RETRY, "stop=lambda _state: monotonic() - started >= retry_s,",
        "stop=lambda _state: monotonic() - started >= retry_s / 60,"),
    # ---------------------------------------------------------------- our shared rate limiter (the model's rate walks)
    "a rate window still holds a request at its window's length": Mutant(
        RATE_LIMITS, "if oldest is not None and float(oldest[0]) > now - w.seconds:",
        "if oldest is not None and float(oldest[0]) >= now - w.seconds:"),
    "a provider's pause holds every provider": Mutant(
        RATE_LIMITS, 'return f"{KEY_PREFIX}:{{{service}}}:pause"', 'return f"{KEY_PREFIX}:pause"'),
    # ---------------------------------------------------------------- the stores' bookkeeping
    # Only links held (an ok element's): the health figure of links stays at zero.
    "the SQLite links are not counted": Mutant(SQLITE_COUNTS, '    ("token_links", _literal(LINKS_KEY)),\n', ""),
    # Only a paid call's open call saved over a state that has one (its first record counts none either).
    "the SQLite open call's record counts its call": Mutant(
        SQLITE_WRITE, 'updates = ", ".join(f"{name} = excluded.{name}" for name in ["fence", *names, "updated_at"])',
        'updates = ", ".join(f"{name} = excluded.{name}" for name in ["fence", *names, "updated_at"])'
        ' + ", attempts = url_states.attempts + 1"'),
    # ---------------------------------------------------------------- the providers behind the real HTTP layer
    # Only a provider's redirect to another host or to http tells it apart: its key headers go along.
    "a provider's key headers go to every redirect hop": Mutant(
        PLATFORM_HTTP, "            if authed:\n                hop_headers.update(self._auth_headers)",
        "            hop_headers.update(self._auth_headers)"),
    # Only a required key set to blanks (an empty secret file) tells it apart: its platform counts as usable.
    "a blank provider key counts as set": Mutant(
        REGISTRY, "keys.value(d.account.key_variable) is None", "keys.secret(d.account.key_variable) is None"),
    # ---------------------------------------------------------------- the outbound path (the model's outbound walks)
    # Only a provider's redirect to a host whose name resolves to a non-public address tells it apart.
    "a provider's redirect target is judged without resolving its host": Mutant(
        PLATFORM_HTTP, "check_target(str(target), self._out.resolve_host)", "check_target(str(target), None)"),
    # Only a chain of more redirects than allowed (3) tells it apart: the 4th is followed.
    "a redirect past the allowed count is followed": Mutant(
        OUTBOUND_CLIENT, "            if hops > max_redirects:\n                raise TooManyRedirects(max_redirects)\n",
        "            if hops > max_redirects + 1:\n                raise TooManyRedirects(max_redirects)\n"),
}


def apply(name: str, into: Path, mutants: dict[str, Mutant] = MUTANTS) -> Path:
    """A copy of the package under `into` with mutant `name` (of `mutants`) applied; returns the changed file."""
    m = mutants[name]
    shutil.copytree(REPO / "social_recording", into / "social_recording", ignore=shutil.ignore_patterns("__pycache__"))
    path = into / m.path
    source = path.read_text()
    if source.count(m.original) != 1:
        raise ValueError(f"{name}: {m.original!r} found {source.count(m.original)} times in {m.path}")
    path.write_text(source.replace(m.original, m.mutant))
    return path
