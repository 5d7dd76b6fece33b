"""The `fresh15` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the fifteenth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The three promises", "URLs: transformed once, at
the entry", "Recording one URL", "The per-URL state machine", "Back-off: one due time", "Locks and
fencing", "Fencing", "Backend outages", "No payment without a record", "Outbound requests", "Provider
concurrency and rates", "Spend budgets", "Reconcile", "Retry selection", "Freshness", "Runs tell the
truth", "Health", "Health figures"; operations.md's "Configuration", "Providers", "Provider concurrency
and rates", "Spend budgets"). Written and checked as every batch is (bench/unseen_mutants.py); a comment
above a mutant says when only some settings or interleavings tell it apart. Scope, the same as fresh12's,
fresh13's and fresh14's so the measures compare: a sample of the rules the engine keeps, spread as a
reviewer asking "what wrong line here would break a documented rule?" would spread them, proportionate
to where the rules live and at most four per file, any file of social_recording/ allowed: the per-URL
state machine, the lease and the lock backends (their outage handling, renewal and fencing tokens),
provider concurrency and rates (the shared limiter, the redirect guard, the provider client, a spent
window's headers, the providers' documented numbers), the spend budgets' notation, recording one URL
(its attempt and the engine's wiring), both stores' writes, tokens, links, counters and selection, the
store's outage rule, the runs' skeleton, the daily reconcile and the backfill sensor's run keys, the
health checks and their report, the settings, and the entry (canonical URLs, the shortlink resolver, the
token profile reader, the tracker). The state machine's, the dedupe gate's, the write refusal's, the
call guard's and the spend check's own lines are the most mined by earlier batches, so fewer new wrong
lines were left there. Pure presentation, response parsers' field extraction and dead code are left
out; no mutant repeats an earlier batch's or the project's list, nor yields the source one of them yields.
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    BACKFILL_WATCH,
    BLUESKY_SPEC,
    CANONICAL,
    ENGINE,
    EXTENDER,
    GITHUB_SPEC,
    HEALTH,
    HEALTH_REPORT,
    LEASE,
    LOCK_OUTAGE,
    MACHINE,
    MONGO_LINKS,
    MONGO_SELECT,
    MONGO_TOKENS,
    OUTBOUND_GUARD,
    OUTBOUND_LIMITS,
    PLATFORM_HTTP,
    PROFILE,
    RATE_LIMITS,
    RECONCILE_JOB,
    REDIS_LOCKS,
    RUN_DRIVER,
    SETTINGS,
    SHORTLINKS,
    SPEND,
    SQLITE_COUNTS,
    SQLITE_LOCKS,
    SQLITE_SELECTION,
    SQLITE_TOKENS,
    STORE_COUNTS,
    STORE_TRANSIENT,
    TELEGRAM_SPEC,
    TRACKER,
    YOUTUBE_SPEC,
    Mutant,
)

FRESH15: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    "a called ok answer records no links for its token": Mutant(
        MACHINE, "own_links=this_answer is FetchStatus.OK), next_state)", "own_links=False), next_state)"),
    # Only an attempt that could make no call (no generator or key, paid calls off, credit, quota or
    # budget gone, a rate wait): it counts as an engine failure instead of taking the reason's status.
    "a call not possible counts as an engine failure": Mutant(
        MACHINE, "        return _not_called(before, state, element, outcome, now, rules)",
        "        return _engine_failed(before, state, element, outcome, now, rules)"),
    # Only an attempt that learned nothing and sent nothing (the rate limiter or the spend counter could
    # not be asked).
    "an attempt that could not ask a backend counts as an engine failure": Mutant(
        MACHINE, "    if result is Result.DEFERRED:\n        return Transition(None, None)\n", ""),
    # ---------------------------------------------------------------- the lease and the lock backends
    # Only a lock-backend call failing with an error waiting cannot heal (a bug, a refused command):
    # it is waited out for the whole outage bound instead of raised at once.
    "a lock-backend error that waiting cannot heal is waited out": Mutant(
        LOCK_OUTAGE, "            if not is_outage(exc):\n                raise\n", ""),
    # Only on a Redis lock backend that refuses the password (or the command's permission).
    "a refused Redis password is waited out as an outage": Mutant(
        LOCK_OUTAGE, "    if isinstance(exc, rx.AuthenticationError | rx.AuthorizationError):\n        return False\n", ""),
    # Only a lock backend that cannot answer (past the outage bound) the check right before a paid request.
    "an ownership check the lock backend cannot answer lets a paid request leave": Mutant(
        LEASE,
        '            self.lost_reason = self.lost_reason or f"ownership check failed: {type(exc).__name__}"\n'
        "            return False",
        '            self.lost_reason = self.lost_reason or f"ownership check failed: {type(exc).__name__}"\n'
        "            return True"),
    # Only on a Redis lock backend whose fence counter was lost (restarted without persistence): its next
    # fences start again from 1, below every fence the stores hold.
    "a Redis fence is not floored at the server's clock": Mutant(REDIS_LOCKS, "if fence < floor then", "if false then"),
    "a renewed lease is next renewed a whole TTL later": Mutant(
        EXTENDER, "self._schedule(entry, self.clock() + entry.interval)", "self._schedule(entry, self.clock() + entry.ttl)"),
    # Only renewals failing until the lease's expiry: the lease is marked lost only once it expired.
    "a failing renewal is retried up to the lease's very expiry": Mutant(
        EXTENDER, "RENEW_GIVE_UP_FRACTION = 0.1", "RENEW_GIVE_UP_FRACTION = 0.0"),
    # Only a renewal sent after its lease's expiry and before another holder took the key.
    "a SQLite renewal revives an expired lease": Mutant(
        SQLITE_LOCKS, '"UPDATE locks SET expires_at = ? WHERE key = ? AND owner = ? AND expires_at > ?",',
        '"UPDATE locks SET expires_at = ? WHERE key = ? AND owner = ? AND ? > 0",'),
    # ---------------------------------------------------------------- provider concurrency, rates, outbound
    # Only a provider with a rate, on a SQLite lock backend.
    "a SQLite rate window forgets the request it admitted": Mutant(
        RATE_LIMITS,
        '"DELETE FROM rate_entries WHERE key = ? AND ts <= ?", (w.key(service), now - w.seconds))',
        '"DELETE FROM rate_entries WHERE key = ? AND ts <= ?", (w.key(service), now))'),
    # Only on a Redis lock backend, a window already holding its rate's requests.
    "a Redis rate window admits one request more than its rate": Mutant(
        RATE_LIMITS, "local oldest = redis.call('lindex', KEYS[i], requests - 1)",
        "local oldest = redis.call('lindex', KEYS[i], requests)"),
    # Only on a Redis lock backend, two requests of one provider more than a thousandth of their window apart.
    "a Redis rate window expires after its length in milliseconds": Mutant(
        RATE_LIMITS, "redis.call('pexpire', KEYS[i], math.ceil(seconds * 1000))",
        "redis.call('pexpire', KEYS[i], math.ceil(seconds))"),
    # Only a redirect whose Location names a scheme other than http(s): it fails as a transient error
    # (nothing can send it) instead of `blocked`.
    "a redirect to a non-http scheme is followed": Mutant(
        OUTBOUND_GUARD, "    if scheme not in ALLOWED_SCHEMES:\n        raise UnsafeTarget(",
        "    if False:\n        raise UnsafeTarget("),
    # Only a redirect to an IPv6 address embedding a non-public IPv4 one (::ffff:127.0.0.1, 6to4, Teredo, NAT64).
    "a redirect to a private address embedded in IPv6 is followed": Mutant(
        OUTBOUND_GUARD, '            return None if inner is None else f"{inner} (embedded in {shown})"',
        "            return None"),
    # Only a redirect whose host is a legacy IPv4 spelling (2130706433, 0x7f.1, 127.1) the resolver
    # does not answer as the address it spells.
    "a legacy IPv4 spelling is taken for a host name": Mutant(
        OUTBOUND_GUARD, "    if _LEGACY_IPV4.fullmatch(bare):", "    if False:"),
    # Only a provider whose key is a query parameter (YouTube's) redirected to another host with the key
    # echoed in the Location.
    "a provider's key in a redirect's query goes to another host": Mutant(
        PLATFORM_HTTP, "            if not authed:\n                send_url = self._strip_auth(url)",
        "            if not authed:\n                send_url = url"),
    # Only a shared rate limiter that cannot be asked past the outage bound: the URL ends `error`
    # (rate limit) instead of being left as it was.
    "a rate limiter that could not be asked is taken for a rate wait": Mutant(
        PLATFORM_HTTP, "code = ErrorCode.LIMITER_UNAVAILABLE if exc.unavailable else ErrorCode.RATE_LIMITED",
        "code = ErrorCode.RATE_LIMITED"),
    # Only a Bluesky answer saying its window is spent (`ratelimit-remaining: 0`) without a retry-after.
    "Bluesky's spent window holds no process": Mutant(
        OUTBOUND_LIMITS,
        'RATE_LIMIT_REMAINING_HEADERS = ("x-rate-limit-remaining", "x-ratelimit-remaining", "ratelimit-remaining")',
        'RATE_LIMIT_REMAINING_HEADERS = ("x-rate-limit-remaining", "x-ratelimit-remaining")'),
    # Only GitHub without its key.
    "GitHub without a key is held to 60 requests a minute": Mutant(
        GITHUB_SPEC, "    rates_without_key=(Rate(60, 3600),),", "    rates_without_key=(Rate(60, 60),),"),
    "Bluesky's rate is 600 a second": Mutant(BLUESKY_SPEC, "    rates=(Rate(600, 60),),", "    rates=(Rate(600, 1),),"),
    "YouTube's daily quota is held per hour": Mutant(
        YOUTUBE_SPEC, "    rates=(Rate(10_000, 86_400),),", "    rates=(Rate(10_000, 3600),),"),
    "Telegram takes four calls at once": Mutant(TELEGRAM_SPEC, "    concurrency=2,\n", "    concurrency=4,\n"),
    # ---------------------------------------------------------------- spend budgets (the notation)
    # Only a budget setting naming one account twice: the last one is kept silently.
    "an account given two budgets keeps the last": Mutant(SPEND, "        if key in out:\n", "        if False:\n"),
    "a budget limit of twelve digits is refused": Mutant(
        SPEND, "    if len(digits) > MAX_DIGITS:", "    if len(digits) >= MAX_DIGITS:"),
    # ---------------------------------------------------------------- recording one URL
    # Only a paid account whose credit ran out earlier in the run.
    "a paid account out of credit leaves its URLs in error": Mutant(
        ATTEMPT, "            if paid:\n                return self._not_called(FetchStatus.SKIPPED_PAID, Cause.CREDIT_EXHAUSTED,",
        "            if False:\n                return self._not_called(FetchStatus.SKIPPED_PAID, Cause.CREDIT_EXHAUSTED,"),
    # Only a spooled answer whose write meets a URL state another holder moved on: it leaves the spool unwritten.
    "a spooled answer whose write went stale is dropped": Mutant(
        ATTEMPT,
        "            if written.result is WriteResult.STALE:\n                continue\n"
        "            self._spool.done(self.url)",
        "            self._spool.done(self.url)"),
    # Only a max_attempts setting other than the default 5.
    "the engine's recorder ignores the max_attempts setting": Mutant(
        ENGINE, "enable_paid=enable_paid, max_attempts=max_attempts, url_lock_wait=timings.url_lock_wait,",
        "enable_paid=enable_paid, max_attempts=DEFAULT_MAX_ATTEMPTS, url_lock_wait=timings.url_lock_wait,"),
    # ---------------------------------------------------------------- both stores
    # Only a store write failing with the operating system's "no space left" (ENOSPC) rather than
    # SQLite's own "disk is full".
    "a write meeting a full disk's OSError is not repeated": Mutant(
        STORE_TRANSIENT, "    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:\n        return True\n", ""),
    # Only a MongoDB connection error without a retryable label (a server selection timed out, a failover).
    "a lost MongoDB connection is not waited out": Mutant(
        STORE_TRANSIENT,
        "    if isinstance(exc, errors.ConnectionFailure):  # AutoReconnect, NetworkTimeout, ServerSelectionTimeoutError\n"
        "        return True\n",
        "", "mongomock"),
    # Only a URL write repeated under one fence after it failed part way (a store outage between its
    # links and its state): the first try's links stay beside the repeat's, in the store and the figure.
    "the Mongo store keeps a replayed write's earlier links": Mutant(
        MONGO_LINKS, '{"fence": fence, "write": {"$ne": write_id}}]}).deleted_count',
        '{"fence": {"$exists": False}}]}).deleted_count', "mongomock"),
    # Only a raw value dropped for good (a permanent failure, or its last attempt).
    "a SQLite raw value dropped for good stays on the token": Mutant(
        SQLITE_TOKENS, '            if drop:\n                conn.execute("DELETE FROM unresolved_values',
        '            if False:\n                conn.execute("DELETE FROM unresolved_values'),
    # Only a never-recorded element a run did not record right away (a run that died, a resolved raw value).
    "a new Mongo element is due a base interval after its creation": Mutant(
        MONGO_TOKENS, '"due_at": NEVER if attempted_at is None else attempted_at + DEFAULT_MIN_INTERVAL,',
        '"due_at": ensure_utc(created_at) + DEFAULT_MIN_INTERVAL if attempted_at is None'
        ' else attempted_at + DEFAULT_MIN_INTERVAL,', "mongomock"),
    # Only more raw values due than the run's limit.
    "the Mongo store tries the most recently checked raw values first": Mutant(
        MONGO_SELECT, "return heapq.nsmallest(limit, due,", "return heapq.nlargest(limit, due,", "mongomock"),
    # Only a figure with documents but no counter yet (written around the store): it is never repaired.
    "the recount repairs only counters that exist": Mutant(
        STORE_COUNTS, "for k in sorted(set(kept) | set(recounted))", "for k in sorted(kept)"),
    "SQLite's metric points are not counted": Mutant(SQLITE_COUNTS, '    ("metrics", _literal(METRICS_KEY)),\n', ""),
    # Only a stored non-canonical URL (our bug) waiting past the starved bound: the retry selection can
    # never take it, yet the check counts it.
    "the SQLite starved check counts non-canonical elements": Mutant(
        SQLITE_SELECTION, "    elif canonical_only:\n", "    elif False:\n"),
    # ---------------------------------------------------------------- runs, reconcile, health
    # Only a run whose deadline passes (or whose job lock is lost) during its second look at locked-out tokens.
    "a run's second look starts tokens past its deadline": Mutant(
        RUN_DRIVER, "limit=None, deadline_reached=self.stopped,", "limit=None, deadline_reached=lambda: False,"),
    # Only a backfill of more than one partition started by the sensor: its runs after the first are
    # dropped as repeats of one run key.
    "a backfill's runs share one run key": Mutant(
        BACKFILL_WATCH, 'run_key=f"{backfill.backfill_id}:{key}"', 'run_key=f"{backfill.backfill_id}"'),
    "the daily reconcile leaves yesterday out": Mutant(
        RECONCILE_JOB, "    for day in (today - timedelta(days=1), today):", "    for day in (today,):"),
    # Only an `error` element left past the stuck bound: it is reported as a stuck pending one.
    "the stuck-pending check counts error elements too": Mutant(
        HEALTH, "query = CandidateQuery(frozenset({FetchStatus.PENDING}), due_by(now, after), EXAMPLES)",
        "query = CandidateQuery(frozenset({FetchStatus.PENDING, FetchStatus.ERROR}), due_by(now, after), EXAMPLES)"),
    "an element due one retry cycle counts as starved": Mutant(
        HEALTH, "STARVED_AFTER = DEFAULT_MIN_INTERVAL + STARVED_AFTER_CYCLES * RETRY_CYCLE",
        "STARVED_AFTER = STARVED_AFTER_CYCLES * RETRY_CYCLE"),
    # Every recording run's report recounts the store's counters and adds the recount's check; what it
    # repairs differs only on a store whose counters drifted (a write made around the store, a process
    # stopped between a Mongo write and its counter).
    "every recording run repairs the store's counters": Mutant(
        HEALTH_REPORT, "reconciled = check_counts(store.reconcile_counts()) if hourly else None",
        "reconciled = check_counts(store.reconcile_counts())"),
    # ---------------------------------------------------------------- settings and the entry
    "a plain MongoDB store starts without a shared lock": Mutant(
        SETTINGS, 'self.store_url.lower().startswith(("mongodb://", "mongodb+srv://")):',
        'self.store_url.lower().startswith("mongodb+srv://"):'),
    # Only a link carrying a utm_ parameter.
    "a utm_ parameter stays in the canonical URL": Mutant(
        CANONICAL,
        'pairs = [p for p in pairs if not param_key(p).startswith("utm_") and param_key(p) not in GLOBAL_TRACKING_PARAMS]',
        "pairs = [p for p in pairs if param_key(p) not in GLOBAL_TRACKING_PARAMS]"),
    # Only a link carrying credentials (user:password@host): it is dropped instead of stored without them.
    "a link with userinfo is refused instead of stripped": Mutant(
        CANONICAL, 'hostport = authority.rpartition("@")[2]', "hostport = authority"),
    # Only a shortlink that needs a fourth hop.
    "a shortlink's fourth hop is followed": Mutant(
        SHORTLINKS, "            if hops >= self._max_hops:", "            if hops > self._max_hops:"),
    # Only a shortener answering 429.
    "a shortener's 429 drops the link for good": Mutant(
        SHORTLINKS, "transient=status == 429 or status >= 500", "transient=status >= 500"),
    # Only a shortlink failing transiently (a timeout, 5xx, 429) when its token is first read.
    "a shortlink failing transiently at the entry is dropped": Mutant(
        PROFILE, '            if getattr(exc, "transient", False):\n                raise UnresolvedValueError(',
        '            if False:\n                raise UnresolvedValueError('),
    # Only a tracker answering 4xx (other than 429): asked twice more, the same answer each time.
    "the tracker retries an answer a retry cannot change": Mutant(
        TRACKER, "if status in _RETRYABLE_STATUSES or status >= 500:", "if status >= 400:"),
}
