"""The `fresh11` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the eleventh blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The three promises", "Data model", "Recording
one URL", "The per-URL state machine", "Locks and fencing", "Fencing", "No payment without a record",
"Provider concurrency and rates", "Spend budgets", "Reconcile", "Retry selection", "Live", "Runs tell
the truth", "Health figures", "Providers in one place").
Written and checked as every batch is (bench/unseen_mutants.py); a comment above a mutant says when only
some settings or interleavings tell it apart. Ten batches had mined the state machine, the policy, the
guards and the stores' URL writes line by line, so about half of this one reaches files no batch had
touched: the lock backends and the lease (confirm, release, TTL), the bounded pool and the engine's
wiring, the graph contract, the tokens' raw values and their fence on both stores, the object, metric
and link writes, the generator registry, a provider descriptor and the status counters; the other half
stays on the recording paths (the attempt, the recorder, the token processor, retry, reconcile and
the live feed's cursor).
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CONCURRENCY,
    ENGINE,
    GRAPH,
    JOB_POOL,
    LEASE,
    LIVE_FEED,
    MACHINE,
    MONGO_GRAPH,
    MONGO_TOKENS,
    MONGO_WRITE,
    PLATFORM_BASE,
    PROCESSOR,
    RECONCILE,
    REDIS_LOCKS,
    RETRY,
    RUN_DRIVER,
    RUN_STATE,
    SQLITE_COUNTS,
    SQLITE_GRAPH,
    SQLITE_LOCKS,
    SQLITE_QUERIES,
    SQLITE_TOKENS,
    STORE_TRANSIENT,
    URL_RECORDER,
    WEB_SPEC,
    WRITER,
    Mutant,
)

FRESH11: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the lock backends and the lease
    # Only a holder whose URL lock expired and was taken by another holder before its paid request
    # (a pause past the TTL) tells it apart: the ownership check says yes and the request leaves.
    "the SQLite lock confirms whoever holds the key": Mutant(
        SQLITE_LOCKS, "return row is not None and row[0] == owner and float(row[1]) > time.time()",
        "return row is not None and float(row[1]) > time.time()"),
    # Only a holder whose lease expired and was taken over, leaving afterwards, tells it apart: its
    # release frees the newer holder's key, so a third holder takes it beside the newer one.
    "a SQLite lock's release frees another owner's key": Mutant(
        SQLITE_LOCKS, '"DELETE FROM locks WHERE key = ? AND owner = ?", (key, owner))',
        '"DELETE FROM locks WHERE key = ?", (key,))'),
    # Only on a Redis lock backend, with a holder whose lock was taken over before its paid request.
    "the Redis lock confirms whoever holds the key": Mutant(
        REDIS_LOCKS, "        return (raw.decode() if isinstance(raw, bytes) else str(raw)) == owner\n",
        "        return True\n"),
    # Only on a Redis lock backend, with a holder that leaves after its lease was taken over.
    "a Redis lock's release deletes another owner's key": Mutant(
        REDIS_LOCKS, "  return redis.call('del', KEYS[1])\nend\nreturn 0",
        "  return redis.call('del', KEYS[1])\nend\nreturn redis.call('del', KEYS[1])"),
    # Only on a Redis lock backend, with a holder still working when its TTL's count of milliseconds has
    # passed (a key then expires under it: another holder takes it, its paid request is refused).
    "a Redis lock's TTL is read as milliseconds": Mutant(
        REDIS_LOCKS, "return max(1, int(round(ttl * 1000)))", "return max(1, int(round(ttl)))"),
    # Only a lease marked lost while its backend still names it the owner (renewals that kept failing
    # until its expiry was near, a holder told of its loss) tells it apart: its paid request leaves.
    "a lease reported lost still confirms its ownership": Mutant(
        LEASE, "        if not self.held or self.lost:\n            return False",
        "        if not self.held:\n            return False"),
    # ---------------------------------------------------------------- the run's skeleton and the engine's wiring
    # Only a run with a limit below its units (a reconcile window's `limit`) tells it apart.
    "a run starts one unit past its limit": Mutant(
        JOB_POOL, "if limit is not None and next_index >= limit:", "if limit is not None and next_index > limit:"),
    # Only a job lock lost while its run still has units to start tells it apart.
    "a run goes on starting units after its job lock is lost": Mutant(
        RUN_DRIVER, "return self.job is not None and self.job.lost", "return False"),
    # Only a clock that reaches the deadline exactly as a unit would start (a stepped `monotonic`).
    "a run starts a unit at its deadline's very instant": Mutant(
        RUN_DRIVER, "return self.deadline is not None and self.monotonic() - self.entered >= self.deadline",
        "return self.deadline is not None and self.monotonic() - self.entered > self.deadline"),
    # Only an engine built with its own clock tells it apart: retry selects by the wall clock.
    "a retry dates its selection by the wall clock, not the engine's": Mutant(
        ENGINE, "retry=RetryService(store, processor, job_lock, clock),",
        "retry=RetryService(store, processor, job_lock),"),
    # Only an engine built with a back-off other than the default (growth or cap set).
    "the recorder dates every element by the default back-off": Mutant(
        ENGINE, "url_lock_ttl=timings.url_lock_ttl, clock=clock, spool=spool, backoff=backoff,",
        "url_lock_ttl=timings.url_lock_ttl, clock=clock, spool=spool,"),
    # Only an engine built with a run interval other than the default (the live path's).
    "the live path's token processor takes the default interval": Mutant(
        ENGINE, "token_lock_wait=timings.token_lock_wait, min_interval=min_interval, clock=clock)",
        "token_lock_wait=timings.token_lock_wait, clock=clock)"),
    # Only a run with a provider's concurrency set in its config tells it apart.
    "a run's provider concurrency override is ignored": Mutant(
        CONCURRENCY, "{**DEFAULT_PROVIDER_CONCURRENCY, **check_provider_concurrency(overrides)}",
        "{**check_provider_concurrency(overrides), **DEFAULT_PROVIDER_CONCURRENCY}"),
    # ---------------------------------------------------------------- the graph contract and the graph writes
    # Only a graph deeper than its root (a quote, a post in a venue) tells it apart.
    "every linked object is recorded at the root's depth": Mutant(
        GRAPH, "queue.append((child, depth + 1))", "queue.append((child, depth))"),
    # Only a graph naming one object in two groups (an author quoting themself) tells it apart.
    "an object in two groups is linked twice": Mutant(
        GRAPH, "            if key in seen:\n                continue\n", ""),
    # Only a generator whose graph hangs a group under a group without content tells it apart.
    "a group may hang under a parent without content": Mutant(
        GRAPH, "if parent.content is None:", "if False:"),
    # Only an object (or metric) seen again with another value tells it apart.
    "the SQLite store keeps a metric's latest value": Mutant(
        SQLITE_GRAPH, '"ON CONFLICT (object, object_id, metric) DO NOTHING")',
        '"ON CONFLICT (object, object_id, metric) DO UPDATE SET value = excluded.value")'),
    # Only an object seen again with another body (a later answer naming it) tells it apart.
    "the SQLite store overwrites an object it already holds": Mutant(
        SQLITE_GRAPH, '"VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform_key) DO NOTHING RETURNING id",',
        '"VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform_key) DO UPDATE SET doc = excluded.doc RETURNING id",'),
    # Only a token holding two URLs with links (two ok answers) tells it apart.
    "replacing one URL's links deletes every link of the token": Mutant(
        SQLITE_QUERIES,
        '"DELETE FROM token_links WHERE token_address = ? AND entry_url = ?", [token_address, entry_url]',
        '"DELETE FROM token_links WHERE token_address = ?", [token_address]'),
    "the Mongo store overwrites an object it already holds": Mutant(
        MONGO_GRAPH, '{"$setOnInsert": on_insert},', '{"$set": on_insert},', "mongomock"),
    "the Mongo store keeps a metric's latest value": Mutant(
        MONGO_GRAPH, '{"$setOnInsert": {"value": value, "observed_at": stamp}},',
        '{"$set": {"value": value, "observed_at": stamp}},', "mongomock"),
    # Only links left beside a newer write's (a holder overtaken or interrupted between inserting its
    # links and deleting the older ones) tell it apart.
    "the Mongo store shows every write's links of a URL": Mutant(
        MONGO_GRAPH, "            for d in docs\n            if _write_key(d) == newest\n",
        "            for d in docs\n", "mongomock"),
    # ---------------------------------------------------------------- the tokens' raw values
    # Only a token lock taken over while its first holder still resolves a raw value tells it apart.
    "the SQLite store never raises a token's fence": Mutant(
        SQLITE_TOKENS, '        conn.execute("UPDATE tokens SET fence = ? WHERE address = ?", [fence, address])\n', ""),
    # Only a raw value whose shortlink resolves (after a transient failure) tells it apart.
    "the SQLite store keeps a raw value once resolved": Mutant(
        SQLITE_TOKENS,
        '            conn.execute("DELETE FROM unresolved_values WHERE address = ? AND field = ?", [address, field])\n',
        ""),
    # Only a raw value resolving to a URL its token already holds tells it apart.
    "a resolved URL the token already holds is reopened as pending": Mutant(
        SQLITE_TOKENS, '"ON CONFLICT (address, url) DO NOTHING",',
        '"ON CONFLICT (address, url) DO UPDATE SET status = excluded.status",'),
    # Only a token lock taken over while its first holder still resolves a raw value tells it apart.
    "the Mongo store's raw-value writes ignore the token's fence": Mutant(
        MONGO_TOKENS, 'update_one({"address": address, "fence": {"$lte": fence}}, {"$set": {"fence": fence}})',
        'update_one({"address": address}, {"$set": {"fence": fence}})', "mongomock"),
    # Only a raw value resolved, dropped or tried again tells it apart.
    "the Mongo store keeps a raw value once resolved or dropped": Mutant(
        MONGO_TOKENS, 'kept = [raw for raw in doc.get("unresolved") or [] if raw.get("field") != field]',
        'kept = list(doc.get("unresolved") or [])', "mongomock"),
    # Only a raw value whose shortlink fails for good (404, a refused redirect, too many hops).
    "a raw value that failed for good is kept": Mutant(
        PROCESSOR,
        'reason=str(exc)))\n                result = self._store.update_unresolved(address, value, lease.fence, drop=True)',
        'reason=str(exc)))\n                result = self._store.update_unresolved(address, value, lease.fence, drop=False)'),
    # ---------------------------------------------------------------- the generator registry, a descriptor
    # Only a platform whose required key is not set tells it apart: it is called without its key.
    "a platform whose key is not set is called anyway": Mutant(
        PLATFORM_BASE, "        if platform in self.unavailable:\n            return None\n", ""),
    # Only a platform with a generator but without its key, holding unsupported elements.
    "the default retry reopens unsupported elements of a platform whose key is not set": Mutant(
        PLATFORM_BASE, "return frozenset(p for p in self.generators if p not in self.unavailable)",
        "return frozenset(self.generators)"),
    # Only a two-step urlscan call resuming a submitted request tells it apart: its polls are counted
    # against the budget and entered as spending.
    "urlscan's polls count as new spending": Mutant(
        WEB_SPEC, "    paid_polls=True,\n", "    paid_polls=False,\n"),
    # ---------------------------------------------------------------- the status counters
    # Only the counters (status counts, health) tell it apart.
    "the SQLite status counters never let go of an element's old status": Mutant(
        SQLITE_COUNTS, "f\"BEGIN {_bump(_url_key_sql('old'), -1)} {_bump(_url_key_sql('new'), 1)} END\",",
        "f\"BEGIN {_bump(_url_key_sql('new'), 1)} END\","),
    # Only the counters (status counts, health) tell it apart.
    "the Mongo status counters never let go of an element's old status": Mutant(
        MONGO_WRITE, '            deltas[url_key(before.get("platform"), str(before.get("status")))] -= 1\n', "",
        "mongomock"),
    # ---------------------------------------------------------------- the state machine
    # Only an answer or an unreadable shape reached before any request left tells it apart.
    "an outcome that sent nothing counts a call on the element": Mutant(
        MACHINE, "    if outcome.called:\n        return element.attempts + 1, now",
        "    if True:\n        return element.attempts + 1, now"),
    # ---------------------------------------------------------------- one attempt, the recorder, the writer
    # Only a reuse tells it apart: the run reports no URL as reused.
    "a reuse is not reported as reused": Mutant(
        ATTEMPT, "attempted=False, reused=decision.act is Act.REUSE,", "attempted=False, reused=False,"),
    # Only our own code failing after a request left tells it apart: the run does not fail.
    "an engine failure after a request left does not fail the run": Mutant(
        ATTEMPT, "if engine_failure or outcome.result is Result.ENGINE:", "if outcome.result is Result.ENGINE:"),
    # Only two holders of one URL in one run, the first one's call failing or answering, tell it apart.
    "a run remembers every call as reading nothing": Mutant(
        ATTEMPT, "if outcome.result is Result.UNREADABLE and outcome.called:", "if outcome.called:"),
    # Only a lock server that does not answer past its outage bound tells it apart.
    "a lock server down past its bound fails the URL as our defect": Mutant(
        URL_RECORDER, 'return bare(EngineOutcome.DEFERRED, f"{exc}; left as it was", platform.value, waited_ms)',
        'return bare(EngineOutcome.FAILED, f"{exc}; left as it was", platform.value, waited_ms)'),
    # Only a URL lock held elsewhere for the whole wait tells it apart.
    "a URL whose lock wait ran out is recorded anyway": Mutant(
        URL_RECORDER, "                if not lease.held:\n                    outcome = bare(",
        "                if False:\n                    outcome = bare("),
    # Only a store unavailable for a moment (busy, a failover) tells it apart.
    "a recording's write is not repeated through a store outage": Mutant(
        WRITER, "retry_s=self._retry_s, sleep=self._sleep)", "retry_s=0.0, sleep=self._sleep)"),
    # Only a store write meeting a full disk tells it apart: it fails at once instead of being repeated.
    "a full disk is not waited out": Mutant(
        STORE_TRANSIENT, "if is_busy(exc) or is_disk_full(exc):", "if is_busy(exc):"),
    # ---------------------------------------------------------------- what a run reports
    # Only a URL whose write a newer holder refused (its lease not reported lost) tells it apart.
    "a run's lost count misses URLs a newer holder wrote first": Mutant(
        RUN_STATE, 'self._lost += int(outcome.lease_lost or str(outcome.status) == "lost")',
        "self._lost += int(outcome.lease_lost)"),
    # Only a URL written after its lease was reported lost tells it apart.
    "a retry's lost count misses URLs written after their lock was lost": Mutant(
        RETRY, "self.lost += int(outcome.lease_lost or outcome.status == EngineOutcome.LOST)",
        "self.lost += int(outcome.status == EngineOutcome.LOST)"),
    # Only a retry cut short (its deadline or its job lock lost) tells it apart.
    "a retry cut short reports only what was past its limit as remaining": Mutant(
        RETRY, "remaining=selection.remaining + cut_in_run,", "remaining=selection.remaining,"),
    # Only a deadline, or a job lock lost, before the raw values are tried again tells it apart.
    "a retry resolves raw values past its deadline": Mutant(
        RETRY, "            if deadline_reached() or lock_lost():\n                return dict(counts), True\n", ""),
    # Only a token stored between the window's read and its recording tells it apart.
    "a reconcile does not count the tokens stored meanwhile as seen": Mutant(
        RECONCILE, "already_seen=window.already_seen + len(stored),", "already_seen=window.already_seen,"),
    # ---------------------------------------------------------------- the live feed's cursor
    # Only a token trading at the cursor's instant, not handed out yet, tells it apart: never launched.
    "the feed drops a token at the cursor's instant it did not hand out": Mutant(
        LIVE_FEED, "return last_transfer_at < self.ts or (last_transfer_at == self.ts and address in self.at_ts)",
        "return last_transfer_at <= self.ts"),
    # Only two tokens handed out at one instant tell it apart: the first is handed out again.
    "the cursor keeps only the last token of its instant": Mutant(
        LIVE_FEED, "if self.ts is None or last_transfer_at > self.ts:", "if self.ts is None or last_transfer_at >= self.ts:"),
    # Only a complete read of which the sensor launched a part, its cursor then over an hour behind.
    "the cursor jumps past tokens the sensor did not launch": Mutant(
        LIVE_FEED, "everything = self.complete and len(handed_out) == len(self.tokens)", "everything = self.complete"),
    # Only the feed's first read, with tokens that traded one hour to two days before it.
    "the feed's first read looks back two days": Mutant(
        LIVE_FEED, "start = now - LIVE_INITIAL_LOOKBACK", "start = now - LIVE_MAX_LOOKBACK"),
}
