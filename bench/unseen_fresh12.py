"""The `fresh12` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the twelfth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The three promises", "Data model", "Recording
one URL", "The per-URL state machine", "Back-off: one due time", "Settled numbers", "Locks and fencing",
"Fencing", "No payment without a record", "Outbound requests", "Provider concurrency and rates", "Spend budgets", "The dedupe
gate", "Reconcile", "Retry selection", "Live", "Runs tell the truth", "Health", "Health figures",
"Providers in one place"; operations.md's "Provider concurrency and rates" and "Spend budgets").
Written and checked as every batch is (bench/unseen_mutants.py); a comment above a mutant says when only
some settings or interleavings tell it apart. Scope: a sample of the rules the engine keeps, spread as a
reviewer asking "what wrong line here would break a documented rule?" would spread them, proportionate
to where the rules live and at most four per file, any file of social_recording/ allowed: the per-URL
state machine and its policy (back-off, reuse window, named retries, open requests), the call guard and
the paid-request record, the spend check and the shared budgets, fencing and the lease's renewal,
provider concurrency and rates, the provider descriptors and where their keys go, recording one URL and its graph, both stores'
URL writes, ledger and counters, retry selection, reconcile, the live feed, the runs' figures and the
health checks. Pure presentation, response parsers' field extraction and dead code are left out; no
mutant repeats an earlier batch's or the project's list. Its writer wrote 50; four of them turned out to
yield the very source an earlier mutant yields (two named-retry edits, the engine-failure budget, a
vetoed request's slot) and were dropped before any run, leaving 46.
"""

from __future__ import annotations

from test_support.mutants import (
    APIFY_SPEC,
    ATTEMPT,
    CALL_GUARD,
    CONCURRENCY,
    DESCRIPTORS,
    EXTENDER,
    HEALTH,
    LIVE_FEED,
    LIVE_JOB,
    MONGO_COUNTS,
    MONGO_STATES,
    MONGO_WRITE,
    PLATFORM_HTTP,
    POLICY,
    PROCESSOR,
    RATE_LIMITS,
    RECONCILE,
    RETRY,
    RUN_STATE,
    SPEND,
    SPEND_BUDGET,
    SQLITE_GRAPH,
    SQLITE_WRITE,
    URL_RECORDER,
    Mutant,
)

FRESH12: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine and its policy
    "the AF floor is four investors": Mutant(
        POLICY, "DEFAULT_AF_INVESTOR_THRESHOLD = 3", "DEFAULT_AF_INVESTOR_THRESHOLD = 4"),
    # ---------------------------------------------------------------- the spend budgets
    # Only a month budget met on a later day than the requests it counts.
    "a month budget's counter restarts every day": Mutant(
        SPEND, "return day_key(now) if period == DAY else month_key(now)", "return day_key(now)"),
    # Only a budget naming both a day and a month limit (different ones) tells it apart.
    "a budget's day and month limits are read the other way round": Mutant(
        SPEND, "return Budget(account, per_day=day, per_month=month)",
        "return Budget(account, per_day=month, per_month=day)"),
    # Only on a Redis lock backend, with a budget of zero paid requests for a period.
    "a Redis budget of zero refuses nothing": Mutant(
        SPEND_BUDGET, "if limit >= 0 and tonumber(redis.call('get', KEYS[i]) or '0') >= limit then",
        "if limit > 0 and tonumber(redis.call('get', KEYS[i]) or '0') >= limit then"),
    # Only on a Redis lock backend, once as many seconds have passed as the budget's limit.
    "a Redis budget counter lives as many seconds as its limit": Mutant(
        SPEND_BUDGET, "redis.call('expire', KEYS[i], tonumber(ARGV[i + 2]))",
        "redis.call('expire', KEYS[i], tonumber(ARGV[i]))"),
    # ---------------------------------------------------------------- the call guard and the paid-request record
    # Only a call of several paid requests whose holder dies (or is fenced out) before its result.
    "a call's later paid requests are recorded only after its submission": Mutant(
        CALL_GUARD, "            if self.submitted_request is None:\n",
        "            if self.submitted_request is not None:\n"),
    # Only a two-step paid call (urlscan, Apify) tells it apart: its requests are entered with its
    # saved submission and again with its result.
    "a saved submission's requests are entered in the ledger twice": Mutant(
        CALL_GUARD, "            self.entered += spend.requests\n", "            self.entered += 0\n"),
    # Only a holder that dies (or is fenced out) right after saving a two-step submission tells it
    # apart: nobody enters the requests that paid for it.
    "a saved submission carries no ledger line": Mutant(
        CALL_GUARD, "        spend = self.unentered()\n", "        spend = None\n"),
    # ---------------------------------------------------------------- recording one URL
    # Only a late holder's write between this call's read and its result's write tells it apart: the
    # paid answer is retried on the state it first read until the attempt gives up.
    "a call's result meeting a late write is not read again": Mutant(
        ATTEMPT, "                element, state = read\n                continue",
        "                continue"),
    # Only a reuse or an adoption meeting a late holder's write between its read and its write tells it
    # apart: it is reported lost instead of being decided again on the newer state.
    "a write without a call meeting a late write is not decided again": Mutant(
        ATTEMPT, "            if written.result is not WriteResult.STALE:\n                return self._written(",
        "            if True:\n                return self._written("),
    # Only a decision taken again after a stale write, with a clock that moved on, tells it apart.
    "a decision taken anew keeps the attempt's first moment": Mutant(
        ATTEMPT, "self._now = max(self._now, self._clock())", "self._now = self._now"),
    # Only a run whose paid request a spend budget held back tells it apart (its figure).
    "a run never counts the URLs its spend budget held": Mutant(
        ATTEMPT, "            self._run.note_budget_held()\n", ""),
    # Only two holders of one URL meeting at its lock (the second waits for the first's answer).
    "a second worker does not wait for a URL's lock": Mutant(
        URL_RECORDER, "URL_LOCK_WAIT_S = 180.0", "URL_LOCK_WAIT_S = 0.0"),
    # ---------------------------------------------------------------- fencing, the lease and the stores' writes
    # Only a lease held about a TTL or longer (a slow call, a long token) tells it apart: its key can
    # expire before the renewal lands, and the lease is lost.
    "a lease is renewed once per TTL": Mutant(
        EXTENDER, "self.interval = ttl / 3.0", "self.interval = ttl"),
    # Only a renewal that fails once (a socket error, a busy database) with expiry still far.
    "one failed renewal loses the lease": Mutant(
        EXTENDER, "            if left <= entry.margin:\n                self._lose(",
        "            if True:\n                self._lose("),
    "the SQLite store's reuse copies no links": Mutant(
        SQLITE_WRITE,
        "links = tuple(self._copy_links(conn, write.address, write.url, write.copy_links_from, write.now))",
        "links = ()"),
    # Only a URL state whose saved request is closed (answered, or past retention) by a later write.
    "the SQLite store keeps a closed request on the URL state": Mutant(
        SQLITE_WRITE, '"request_submitted_at = excluded.request_submitted_at, updated_at = excluded.updated_at, "',
        '"updated_at = excluded.updated_at, "'),
    "the SQLite ledger never enters a recorded call's requests": Mutant(
        SQLITE_WRITE, "                if write.spend is not None:\n                    self._add_spend(conn, write.spend)",
        "                if False:\n                    self._add_spend(conn, write.spend)"),
    # Only links written twice for one (token, URL) (a repeat of a write, a reuse after links were
    # written) tells it apart.
    "the SQLite store adds a URL's links beside the old ones": Mutant(
        SQLITE_GRAPH, "        conn.execute(*q_delete_links(address, url))\n", ""),
    "the Mongo store's reuse copies no links": Mutant(
        MONGO_WRITE, "links = tuple(self._copied_links(write.address, write.url, write.copy_links_from, write.now))",
        "links = ()", "mongomock"),
    "a Mongo element write never counts its new status": Mutant(
        MONGO_WRITE, '            deltas[url_key(before.get("platform"), e.status.value)] += 1\n', "",
        "mongomock"),
    # Only another holder's open call removed by a fenced write (its holder died or was fenced out).
    "the Mongo store never enters another holder's unanswered call": Mutant(
        MONGO_STATES, "        if before is not None:\n            self._enter_unanswered(",
        "        if False:\n            self._enter_unanswered(", "mongomock"),
    # Only a counter that drifted from its recount (a write between its document and its `$inc`).
    "the Mongo counters' repair adds the recount instead of the difference": Mutant(
        MONGO_COUNTS, "self._inc({key: counted - was})", "self._inc({key: counted})", "mongomock"),
    # ---------------------------------------------------------------- provider concurrency, rates and descriptors
    "a provider's rate is enforced at its documented value": Mutant(
        RATE_LIMITS, "HEADROOM = 0.9", "HEADROOM = 1.0"),
    # Only a service sending more requests in one window than its rate allows.
    "a rate window admits one request more than its bound": Mutant(
        RATE_LIMITS, "(w.key(service), w.requests - 1)).fetchone()", "(w.key(service), w.requests)).fetchone()"),
    # Only a shorter pause asked while a longer one holds the service.
    "a shorter pause cuts a longer one short": Mutant(
        RATE_LIMITS, '"until = max(rate_pauses.until, excluded.until)"', '"until = excluded.until"'),
    # Only a provider whose bound differs from 4 (X 8, GitHub and YouTube 16, Telegram and Discord 2).
    "every provider account gets the default calls at once": Mutant(
        CONCURRENCY, "return self.bounds.get(provider, OTHER_PROVIDER_CONCURRENCY)",
        "return OTHER_PROVIDER_CONCURRENCY"),
    # Only a provider with a key whose rate differs without one (GitHub: 5000/h with a key, 60/h without).
    "a provider with its key set is held to the keyless rate": Mutant(
        DESCRIPTORS, "if not has_key and self.rates_without_key is not None:",
        "if self.rates_without_key is not None:"),
    # Only a provider whose key is optional (GitHub) run without its key.
    "a provider whose key is optional requires it": Mutant(
        DESCRIPTORS, "return self.key_variable is not None and not self.key_optional",
        "return self.key_variable is not None"),
    # Only a provider's redirect from https to http on one of its own hosts.
    "a provider's key follows a redirect from https to http": Mutant(
        PLATFORM_HTTP, 'return not (start_scheme == "https" and url.scheme != "https")', "return True"),
    # Only a provider's redirect to a host that is not its own.
    "a provider's key follows a redirect to any host": Mutant(
        PLATFORM_HTTP, '        if wire_host(url).rstrip(".") not in self._auth_hosts:\n            return False\n', ""),
    # Only an Apify call that reads its dataset (the sandbox's paid tally and the health check).
    "an Apify dataset read counts as a payment of its own": Mutant(
        APIFY_SPEC, 'second_steps=("apify-run:", "apify-dataset:"),', 'second_steps=("apify-run:",),'),
    # ---------------------------------------------------------------- runs: retry, reconcile, live and their figures
    # Only an element recorded before (a checked_at) selected by a retry tells it apart.
    "a retry judges every element as if never recorded": Mutant(
        RETRY, "seen = {c.url: Selected(c.status, c.checked_at) for c in candidates}",
        "seen = {c.url: Selected(c.status, None) for c in candidates}"),
    # Only a selection with more due than its limit tells it apart (its figure).
    "a retry counts its own selection as remaining": Mutant(
        RETRY, "remaining=len(found) - min(len(found), checked_limit),", "remaining=len(found),"),
    # Only two partitions of reconcile run at once.
    "every reconcile partition shares one job lock": Mutant(
        RECONCILE, 'return JOB_LOCK_PREFIX if partition_key is None else f"{JOB_LOCK_PREFIX}:{partition_key}"',
        "return JOB_LOCK_PREFIX"),
    # Only a read finding more qualifying tokens than its cap tells it apart: the older are skipped.
    "the live feed hands out the newest trades first": Mutant(
        LIVE_FEED, "ordered = sorted(fresh.values(), key=lambda t: (t.last_transfer_at or now, t.address))",
        "ordered = sorted(fresh.values(), key=lambda t: (t.last_transfer_at or now, t.address), reverse=True)"),
    # Only a live read finding more than 20 qualifying tokens tells it apart.
    "the live sensor launches batches of 40 tokens": Mutant(
        LIVE_JOB, "LIVE_BATCH_SIZE = 20", "LIVE_BATCH_SIZE = 40"),
    # Only a trade the tracker shows late (inside the rescan margin, behind a complete read).
    "the live cursor moves to the end of a complete read": Mutant(
        LIVE_FEED, "floor = self.read_until - LIVE_RESCAN", "floor = self.read_until"),
    # Only a shortlink failing transiently on every retry run tells it apart: it is never dropped.
    "a kept raw value's failed resolution counts no attempt": Mutant(
        PROCESSOR, "attempts = value.attempts + 1", "attempts = value.attempts"),
    # Only a token holding more URLs than a run's URLs per token at once.
    "a token's URLs are all recorded at once whatever the run's bound": Mutant(
        PROCESSOR, "at_once = min(run.calls.per_token, len(urls))", "at_once = len(urls)"),
    "a run counts every URL as attempted": Mutant(
        RUN_STATE, "self._attempted += int(outcome.attempted)", "self._attempted += 1"),
    "a run counts one paid request per call, paid or not": Mutant(
        RUN_STATE, "self._paid_requests += n", "self._paid_requests += 1"),
    # Only a URL ending in an engine failure tells it apart: the run no longer fails.
    "a run never counts its engine failures": Mutant(
        RUN_STATE, "self._engine_failures += int(outcome.engine_failure)", "self._engine_failures += 0"),
    # ---------------------------------------------------------------- health
    # Only a growth check whose baseline is less than an hour old.
    "the exhausted growth bound shrinks below an hour": Mutant(
        HEALTH, "allowed = max_per_hour * max(1.0, window_h)", "allowed = max_per_hour * window_h"),
    # Only a pending element aged between the longest run and that plus the URL lock's TTL (3 min).
    "a pending element is stuck as soon as the longest run has passed": Mutant(
        HEALTH, "STUCK_PENDING_AFTER = timedelta(seconds=URL_LOCK_TTL_S) + LONGEST_RUN",
        "STUCK_PENDING_AFTER = LONGEST_RUN"),
    "a due element starves after one retry cycle": Mutant(
        HEALTH, "STARVED_AFTER_CYCLES = 2", "STARVED_AFTER_CYCLES = 1"),
}
