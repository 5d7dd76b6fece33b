"""The `fresh13` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the thirteenth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The three promises", "Recording one URL", "The
per-URL state machine", "Back-off: one due time", "Settled numbers", "Locks and fencing", "Fencing",
"Backend outages", "No payment without a record", "Outbound requests", "Provider concurrency and rates",
"Spend budgets", "Retry selection", "Live", "Reconcile", "Runs tell the truth", "Health", "Health
figures", "Providers in one place"; operations.md's "Providers", "Provider concurrency and rates", "Spend
budgets" and "Health"). Written and checked as every batch is (bench/unseen_mutants.py); a comment above
a mutant says when only some settings or interleavings tell it apart. Scope, the same as fresh12's so the
measures compare: a sample of the rules the engine keeps, spread as a reviewer asking "what wrong line
here would break a documented rule?" would spread them, proportionate to where the rules live and at most
four per file, any file of social_recording/ allowed: the lease's renewal and the lock backends, provider
concurrency and rates (the shared limiter, the outbound client, the redirect guard, the provider
descriptors), the call guard's order around a request and the paid-request record, the spend budgets and
the spend report, recording one URL (its call slot, its dates, the spool), both stores' URL writes,
ledger and counters, retry selection and the retry sensor, reconcile, the live feed, the runs' figures
and the health checks. Pure presentation, response parsers' field extraction and dead code are left out;
no mutant repeats an earlier batch's or the project's list, nor yields the source one of them yields.
Its writer wrote 50; one of them (a renewal the backend refuses not losing the lease) turned out to yield
the very source a mutant added to the project's list the same afternoon yields, written by someone
building the model's lease checks, and was dropped before any run, leaving 49.
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CANDIDATES,
    CONCURRENCY,
    EXTENDER,
    FARCASTER_SPEC,
    HEALTH,
    HEALTH_REPORT,
    JOB_POOL,
    LIVE_FEED,
    LIVE_JOB,
    MONGO_COUNTS,
    MONGO_QUERIES,
    MONGO_SELECT,
    MONGO_STATES,
    OUTBOUND_CLIENT,
    OUTBOUND_GUARD,
    OUTCOMES,
    PLATFORM_HTTP,
    POLICY,
    RATE_LIMITS,
    RECONCILE,
    REDIS_LOCKS,
    RETRY,
    RETRY_JOB,
    RUN_STATE,
    SPEND,
    SPEND_BUDGET,
    SPEND_REPORT,
    SPOOL,
    SQLITE_COUNTS,
    SQLITE_HEALTH,
    SQLITE_LOCKS,
    SQLITE_QUERIES,
    SQLITE_SELECTION,
    SQLITE_WRITE,
    URL_RECORDER,
    X_SPEC,
    Mutant,
)

FRESH13: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the lease's renewal and the lock backends
    # Only a lease held about a TTL or longer (a slow call, a long token): its key expires before its
    # first renewal is sent, and the lease is lost.
    "a lease's first renewal is due at its expiry": Mutant(
        EXTENDER, "self._push(entry, acquired_at + entry.interval)", "self._push(entry, acquired_at + entry.ttl)"),
    # Only a take repeated after a lock backend outage that applied the first try and lost its answer.
    "a take repeated after an outage keeps its own earlier key": Mutant(
        EXTENDER, "            if tried:\n                self.release(key, owner)\n",
        "            if False:\n                self.release(key, owner)\n"),
    # Only a holder whose renewal lands after its SQLite key expired, before another holder took it
    # (a paused holder): its lease comes back instead of being lost.
    "a SQLite lease past its expiry is renewed": Mutant(
        SQLITE_LOCKS, "(now + ttl, key, owner, now),", "(now + ttl, key, owner, 0.0),"),
    # Only a URL lock left by a dead holder (expired, its row still there) that another worker waits for.
    "a SQLite waiter never takes over a dead holder's expired key": Mutant(
        SQLITE_LOCKS, "return row is None or float(row[0]) <= time.time()", "return row is None"),
    # Only on a Redis lock backend, a lease whose key another holder took after it expired.
    "a Redis renewal extends the key whoever holds it": Mutant(
        REDIS_LOCKS, "  return redis.call('pexpire', KEYS[1], ARGV[2])\nend\nreturn 0",
        "  return redis.call('pexpire', KEYS[1], ARGV[2])\nend\nreturn redis.call('pexpire', KEYS[1], ARGV[2])"),
    # Only a job lock left by a crashed run (a re-execution right after it): the wait ends before the
    # dead run's lock expires and the run ends "already running".
    "a run gives up on its job lock before a crashed run's lock expires": Mutant(
        JOB_POOL, "JOB_LOCK_WAIT_S = JOB_LOCK_TTL_S + 30.0", "JOB_LOCK_WAIT_S = JOB_LOCK_TTL_S - 30.0"),
    # Only a holder that crashed (or a pending element aged past the stuck bound's lock part).
    "the URL lock's TTL is a minute": Mutant(
        URL_RECORDER, "URL_LOCK_TTL_S = 180.0", "URL_LOCK_TTL_S = 60.0"),
    # ---------------------------------------------------------------- provider concurrency, rates and descriptors
    # Only a provider asking for a pause (429 with retry-after, a spent window) on the SQLite lock backend.
    "a provider's pause holds no request on SQLite": Mutant(
        RATE_LIMITS, "            if row is not None and float(row[0]) > now:\n                return float(row[0]) - now",
        "            if False:\n                return float(row[0]) - now"),
    # Only on a Redis lock backend, a service sending more requests in a window than its rate allows.
    "a Redis rate window keeps one admitted request fewer than its bound": Mutant(
        RATE_LIMITS, "redis.call('ltrim', KEYS[i], 0, requests - 1)", "redis.call('ltrim', KEYS[i], 0, requests - 2)"),
    # Only Apify's platforms (TikTok, Instagram, Reddit) called together past 4, or X past 4 calls at once.
    "a call slot is taken per platform, not per provider account": Mutant(
        ATTEMPT, "with self._run.calls.slot(provider), observing(spend):",
        "with self._run.calls.slot(self.platform.value), observing(spend):"),
    # Only a token holding several URLs (they are recorded one after another).
    "a token's URLs are recorded one at a time": Mutant(
        CONCURRENCY, "URLS_PER_TOKEN_AT_ONCE = 8", "URLS_PER_TOKEN_AT_ONCE = 1"),
    # Only more than 4 X calls at once in one run.
    "X takes the default calls at once": Mutant(X_SPEC, "    concurrency=8,\n", "    concurrency=4,\n"),
    # Only Neynar requests past its rate in a second (270) rather than a minute.
    "Neynar's rate is 300 a second": Mutant(FARCASTER_SPEC, "rates=(Rate(300, 60),),", "rates=(Rate(300, 1),),"),
    # Only a paid provider's transient failure (5xx, timeout): it is sent again, and paid again.
    "a paid provider is retried as a free one": Mutant(
        PLATFORM_HTTP, "self._retry = RetryPolicy(attempts=policy.attempts, delay_s=policy.backoff_s)",
        "self._retry = RetryPolicy(attempts=FREE_PROVIDER.attempts, delay_s=policy.backoff_s)"),
    # Only a request the shared limiter holds back (a wait past its bound, the limiter unreachable): its
    # budget slot and its paid call's record are taken though nothing is sent.
    "the request observer is asked before the rate limiter": Mutant(
        OUTBOUND_CLIENT,
        "        self.limiter.acquire(self.service)\n        observe.before_request(service=self.service, paid=self.paid)\n",
        "        observe.before_request(service=self.service, paid=self.paid)\n        self.limiter.acquire(self.service)\n"),
    # Only an answer reached through exactly as many redirects as allowed (3).
    "the last allowed redirect is refused": Mutant(
        OUTBOUND_CLIENT, "if hops > max_redirects:", "if hops >= max_redirects:"),
    # Only a provider answering 429 with a retry-after (or a spent window's reset).
    "a provider's retry-after holds no process": Mutant(
        OUTBOUND_CLIENT, "            self._report_rate_limit(response)\n", ""),
    # Only a request held back by its rate several times in a row: its waits add up past the minute.
    "a request's rate waits are bounded one by one, not in total": Mutant(
        RATE_LIMITS, "if self._clock() + wait > deadline:", "if wait > self._max_wait_s:"),
    # Only a redirect to a host resolving to a public address first and a non-public one after it.
    "a redirect's host is judged by its first address": Mutant(
        OUTBOUND_GUARD, "    for address in addresses:\n", "    for address in addresses[:1]:\n"),
    # ---------------------------------------------------------------- spend budgets and the spend report
    # Only a budget whose month limit equals its day limit (refused at load).
    "a month budget equal to its day budget is refused": Mutant(
        SPEND, "if day is not None and month is not None and month < day:",
        "if day is not None and month is not None and month <= day:"),
    # Only a budget used between 80 % and 90 %.
    "the budget check warns at 90 %": Mutant(SPEND_REPORT, "WARN_AT = 0.8", "WARN_AT = 0.9"),
    # Only a budget of zero paid requests for a period.
    "a budget of zero is never reported used up": Mutant(
        SPEND_REPORT, "return 1.0 if limit == 0 else self.requests.get(period, 0) / limit",
        "return 0.0 if limit == 0 else self.requests.get(period, 0) / limit"),
    # Only ledger lines on an earlier day of the month.
    "the day's spend counts the whole month": Mutant(
        SPEND_REPORT, "today = [r for r in mine if r.day == day]", "today = mine"),
    # Only a paid account answering several platforms (Apify) with paid requests on two of them.
    "the ledger's reconciliation keeps one platform per account": Mutant(
        SPEND_REPORT, "by_account[account] = by_account.get(account, 0) + n", "by_account[account] = n"),
    # Only on a Redis lock backend, a month budget met on a later day than the requests it counts: its
    # counter expires with the day.
    "a Redis month budget's counter lives a day": Mutant(
        SPEND_BUDGET, "seconds_left(MONTH, now) + KEEP_AFTER_PERIOD_S)", "seconds_left(DAY, now) + KEEP_AFTER_PERIOD_S)"),
    # Only a ledger line on the first day of a month.
    "the SQLite month's spend leaves out its first day": Mutant(
        SQLITE_HEALTH, '"WHERE day >= ? ORDER BY account, day"', '"WHERE day > ? ORDER BY account, day"'),
    # Only a ledger line on the first day of a month.
    "the Mongo month's spend leaves out its first day": Mutant(
        MONGO_COUNTS, 'find({"day": {"$gte": since_day}})', 'find({"day": {"$gt": since_day}})', "mongomock"),
    # ---------------------------------------------------------------- recording one URL and both stores' writes
    # Only a recording without a call (a reuse, an adoption) of an element called before: its last
    # recording stays at its last call, so a run that selected it before does not see it changed.
    "a recording without a call leaves checked_at at the last call": Mutant(
        ATTEMPT, "checked_at=self._now, cause=el.cause, detail=el.detail,",
        "checked_at=el.attempted_at or self._now, cause=el.cause, detail=el.detail,"),
    # Only a paid answer the store could not take: filed under its token, the URL's next recording
    # does not find it and pays again.
    "a spooled answer is filed under its token, not its URL": Mutant(
        SPOOL, "os.replace(tmp, self._path(answer.url))", "os.replace(tmp, self._path(answer.address))"),
    # Only a URL whose first state is a paid call's record (nothing recorded for it before).
    "the SQLite store counts a call in a URL's first record": Mutant(
        SQLITE_WRITE, 'marks = ", ".join(["?", "?", "?", "0", "?",', 'marks = ", ".join(["?", "?", "?", "1", "?",'),
    # Only a URL whose first state is a paid call's record (nothing recorded for it before).
    "the Mongo store counts a call in a URL's first record": Mutant(
        MONGO_STATES,
        '"attempted_at": None, "attempts": 0, "source_token": None, "answer": None,\n'
        '                                 "answered_at": None, "streak": 0, "engine_failures": 0, "request": None},',
        '"attempted_at": None, "attempts": 1, "source_token": None, "answer": None,\n'
        '                                 "answered_at": None, "streak": 0, "engine_failures": 0, "request": None},',
        "mongomock"),
    # Only a submission save repeated after its acknowledgement was lost (a store outage mid-write): the
    # repeat matches nothing and the call is vetoed instead of going on.
    "a repeated Mongo submission save reads as fenced": Mutant(
        MONGO_STATES, "        if not applied:\n            applied = self._saved_by(url, fence) == request.request_id\n",
        "        if False:\n            applied = self._saved_by(url, fence) == request.request_id\n", "mongomock"),
    # Only links deleted (a URL's links replaced, a link written twice).
    "the SQLite counters count a deleted row up": Mutant(
        SQLITE_COUNTS,
        'out.append(f"CREATE TRIGGER counted_{table}_delete AFTER DELETE ON {table} BEGIN {_bump(key, -1)} END")',
        'out.append(f"CREATE TRIGGER counted_{table}_delete AFTER DELETE ON {table} BEGIN {_bump(key, 1)} END")'),
    # ---------------------------------------------------------------- runs: retry, reconcile, live and their figures
    # Only a retry run whose min_interval_minutes differs from the default: its selected elements are
    # checked again at the default interval, and those due only at the run's are dropped (or kept).
    "a retry's second look at its selection uses the default interval": Mutant(
        RETRY, "min_interval_minutes=selection.min_interval_minutes,",
        "min_interval_minutes=DEFAULT_MIN_INTERVAL_MINUTES,"),
    # Only more raw values due than a retry run's limit: the newest are tried first.
    "the kept raw values are tried newest first": Mutant(
        SQLITE_QUERIES, '"WHERE checked_at <= ? ORDER BY checked_at, address, field LIMIT ?",',
        '"WHERE checked_at <= ? ORDER BY checked_at DESC, address, field LIMIT ?",'),
    # Only a token holding a raw value due and another tried within the interval.
    "the Mongo store hands out every raw value of a token with one due": Mutant(
        MONGO_SELECT, '            if _checked_out(_opt_utc(raw.get("checked_at"))) <= cutoff\n', "", "mongomock"),
    # Only a retry run still running when the sensor ticks with due elements.
    "the retry sensor launches beside a running retry run": Mutant(
        RETRY_JOB, "    DagsterRunStatus.STARTED,\n", ""),
    # Only a retry run configured to take more than 200 URLs (refused at launch).
    "a retry run may take 2000 URLs": Mutant(CANDIDATES, "MAX_LIMIT = 200", "MAX_LIMIT = 2000"),
    # Only a live run still queued when the sensor ticks with new tokens.
    "the live sensor launches while a live run is queued": Mutant(
        LIVE_JOB, "[DagsterRunStatus.NOT_STARTED, DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING]",
        "[DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING]"),
    # Only a run keeping no per-URL outcomes (a large window), stopped by its limit or deadline.
    "a reconcile run counts as remaining the tokens it only counted": Mutant(
        RECONCILE, "remaining=len(targets) - pool.started,", "remaining=len(targets) - len(tokens),"),
    # Only two tokens launched with the same last-trade instant: the second is launched again next read.
    "the live cursor keeps one address at its instant": Mutant(
        LIVE_FEED, "elif last_transfer_at == self.ts and address not in self.at_ts:",
        "elif last_transfer_at == self.ts and address in self.at_ts:"),
    "a run counts its calls as reuses": Mutant(
        RUN_STATE, "self._reused += int(outcome.reused)", "self._reused += int(outcome.attempted)"),
    # Only a URL becoming exhausted (its figure, and a retry's converged count).
    "a URL becoming exhausted is not counted as converged": Mutant(
        OUTCOMES, "return isinstance(self.status, FetchStatus) and self.status in ABSORBING and self.status != self.previous",
        "return isinstance(self.status, FetchStatus) and self.status in ABSORBING"
        " and self.status is not FetchStatus.EXHAUSTED and self.status != self.previous"),
    # ---------------------------------------------------------------- health
    # Only an exhausted growth between 25 and 50 per hour.
    "the exhausted growth bound defaults to 50 an hour": Mutant(
        POLICY, "DEFAULT_MAX_EXHAUSTED_PER_HOUR = 25", "DEFAULT_MAX_EXHAUSTED_PER_HOUR = 50"),
    # Only an exhausted growth of exactly its bound.
    "an exhausted growth at its bound fails": Mutant(HEALTH, "passed = growth <= allowed", "passed = growth < allowed"),
    # Only a counter that differed from its recount and was repaired.
    "a repaired counter passes the recount check": Mutant(
        HEALTH, "return HealthCheck(COUNTS_MATCH, not diffs, Severity.WARN, summary, figures)",
        "return HealthCheck(COUNTS_MATCH, not drift.unrepaired, Severity.WARN, summary, figures)"),
    # Only a never-recorded element (pending, due at once) read by the SQLite health checks: it is
    # counted in the recorded range too, as waiting since forever.
    "the SQLite health checks read never-recorded elements as recorded": Mutant(
        SQLITE_SELECTION, 'clauses.append("due_at > ? AND due_at <= ?")', 'clauses.append("due_at >= ? AND due_at <= ?")'),
    # Only a never-recorded element (pending, due at once) read by the Mongo health checks: it is counted
    # in the recorded range too, as waiting since forever.
    "the Mongo health checks read never-recorded elements as recorded": Mutant(
        MONGO_QUERIES, 'flt["due_at"] = {"$gt": NEVER, "$lte": since_before}',
        'flt["due_at"] = {"$gte": NEVER, "$lte": since_before}', "mongomock"),
    # Only observations less than an hour apart: the growth is measured against the latest one.
    "the exhausted growth is compared with the latest observation": Mutant(
        HEALTH_REPORT, "cutoff = (now - EXHAUSTED_WINDOW).timestamp()", "cutoff = now.timestamp()"),
}
