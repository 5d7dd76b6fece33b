"""The `fresh14` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the fourteenth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("Recording one URL", "The per-URL state
machine", "Back-off: one due time", "Settled numbers", "Locks and fencing", "Fencing", "Backend outages",
"No payment without a record", "Outbound requests", "Provider concurrency and rates", "Spend budgets",
"The dedupe gate", "Jobs", "Reconcile", "Retry selection", "Live", "Freshness", "Runs tell the truth",
"Health", "Health figures"; operations.md's headings). Written and checked as every batch is
(bench/unseen_mutants.py); a comment above a mutant says when only some settings or interleavings tell it
apart. Scope, the same as fresh12's and fresh13's so the measures compare: a sample of the rules the
engine keeps, spread as a reviewer asking "what wrong line here would break a documented rule?" would
spread them, proportionate to where the rules live and at most four per file, any file of
social_recording/ allowed: the per-URL state machine and the back-off policy, the call guard and the
lease, the lock backends and the renewal, provider concurrency and rates (the shared limiter, the
outbound client, the redirect guard), the platforms' paid-call flows (the provider client, Apify's
two-step runs), the spend budgets and the spend report, recording one URL (its lock, its writes), both
stores' writes, ledger, counters and selection, retry selection and the retry sensor, reconcile, the
live feed and its sensor, the runs' skeleton and figures, and the health checks. The state machine's,
the dedupe gate's and the write refusal's own lines are the most mined by earlier batches, so fewer new
wrong lines were left there. Pure presentation, response parsers' field extraction and dead code are left
out; no mutant repeats an earlier batch's or the project's list, nor yields the source one of them yields.
"""

from __future__ import annotations

from test_support.mutants import (
    APIFY_CLIENT,
    ATTEMPT,
    CALL_GUARD,
    ENGINE,
    EXTENDER,
    HEALTH,
    JOB_POOL,
    LEASE,
    LIVE_FEED,
    LIVE_JOB,
    MACHINE,
    MONGO_COUNTS,
    MONGO_QUERIES,
    MONGO_SELECT,
    MONGO_STATES,
    OUTBOUND_CLIENT,
    OUTBOUND_GUARD,
    OUTBOUND_LIMITS,
    PLATFORM_HTTP,
    POLICY,
    PROCESSOR,
    RATE_LIMITS,
    RECONCILE,
    RETRY,
    RETRY_JOB,
    RUN_DRIVER,
    RUN_STATE,
    SPEND_BUDGET,
    SPEND_REPORT,
    SQLITE_COUNTS,
    SQLITE_LOCKS,
    SQLITE_WRITE,
    STORE_TRANSIENT,
    URL_RECORDER,
    WRITER,
    Mutant,
)

FRESH14: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine and the back-off policy
    # Only an element another run recorded again with the same status after this run selected it.
    "a selected element recorded since with the same status is recorded again": Mutant(
        MACHINE,
        "if selected is not None and (status, element.checked_at) != (selected.status, selected.checked_at):",
        "if selected is not None and status is not selected.status:"),
    "a call's own open record is not closed by its result": Mutant(
        MACHINE, "if own_call is not None and state is not None and state.open_call == own_call:", "if False:"),
    # Only a named retry of an answer that finds no call possible (paid calls off, credit or budget gone).
    "a named answer with no call possible takes the reason's status": Mutant(
        MACHINE,
        '    if element.status in ABSORBING:\n        return Transition(_kept(element, state, now, rules, f"{outcome.detail}; no call made"), closed)',
        '    if False:\n        return Transition(_kept(element, state, now, rules, f"{outcome.detail}; no call made"), closed)'),
    # Only a URL state written with no answer standing and no failure streak (an engine failure, an
    # expired answer or streak): its stored status reads error instead of pending.
    "a URL with nothing standing is stored as error": Mutant(
        MACHINE, "    return FetchStatus.ERROR if streak else FetchStatus.PENDING", "    return FetchStatus.ERROR"),
    # Only a max_attempts of 9 or more, a back-off growth above 1 and a maximum past the base times
    # growth**6 (a slow growth, a long maximum).
    "a growing back-off stops growing after the seventh failure": Mutant(
        POLICY, "factor = self.growth ** min(streak - 1, 64)", "factor = self.growth ** min(streak - 1, 6)"),
    # ---------------------------------------------------------------- the call guard and the lease
    # Only a free request of a call whose lease was already reported lost.
    "a free request leaves after the lease was lost": Mutant(
        CALL_GUARD, "        if self._lease.lost:\n", "        if False:\n"),
    # Only a lease the lock backend disowns at a paid request's check: the run does not count it lost.
    "a lease the backend disowns is not marked lost": Mutant(
        LEASE, '            self.mark_lost("the backend says the key is no longer ours")\n', "            pass\n"),
    # ---------------------------------------------------------------- the lock backends and the renewal
    # Only two takes of the fence in one microsecond, or a clock stepped back between two takes.
    "a SQLite fence is the clock alone, not larger than the last": Mutant(
        SQLITE_LOCKS,
        '"ON CONFLICT (id) DO UPDATE SET value = max(lock_fence.value + 1, excluded.value) "',
        '"ON CONFLICT (id) DO UPDATE SET value = excluded.value "'),
    "a SQLite take succeeds whoever holds the key": Mutant(
        SQLITE_LOCKS, 'taken = conn.execute("SELECT changes()").fetchone()[0] == 1', "taken = True"),
    # Only a renewal whose answer comes late and whose next ones fail: the lease is held past its key's expiry.
    "a renewal's expiry is measured from its answer, not its sending": Mutant(
        EXTENDER, "entry.expires_at = sent_at + entry.ttl", "entry.expires_at = self.clock() + entry.ttl"),
    # ---------------------------------------------------------------- provider concurrency, rates, outbound
    # Only a rate whose 90 % is not a whole number of requests (e.g. 15 a minute).
    "a rate's headroom is rounded up": Mutant(
        RATE_LIMITS, "return max(1, math.floor(rate.requests * HEADROOM))",
        "return max(1, math.ceil(rate.requests * HEADROOM))"),
    # Only on a Redis lock backend, a short pause asked for while a longer one holds the provider.
    "a Redis pause is shortened by a later shorter one": Mutant(RATE_LIMITS, "if current < untl then", "if true then"),
    # Only a request the transport raised on (a timeout, a reset): it may have reached the provider.
    "a request that raised in the transport is not counted as made": Mutant(
        OUTBOUND_CLIENT,
        "        try:\n            response = self._transport.handle_request(request)\n        finally:\n"
        "            self._sent(count)\n",
        "        response = self._transport.handle_request(request)\n        self._sent(count)\n"),
    "a redirect's target is followed unchecked": Mutant(OUTBOUND_CLIENT, "            check_redirect(url, target)\n", ""),
    # Only a redirect to a non-global address that is neither private, loopback, link-local, multicast,
    # reserved nor unspecified (shared address space, 100.64.0.0/10).
    "a redirect to a shared address is followed": Mutant(OUTBOUND_GUARD, "    if not ip.is_global:\n", "    if False:\n"),
    # Only a spent window answered with an epoch reset (GitHub's, Bluesky's): the pause runs for decades.
    "an epoch window reset is taken as seconds from now": Mutant(
        OUTBOUND_LIMITS, "return max(0.0, seconds - now().timestamp() if epoch else seconds)",
        "return max(0.0, seconds)"),
    # Only a free provider answering HTTP 500 itself: it is not tried again (a paid one never is).
    "a provider's HTTP 500 is an answer, not a transient failure": Mutant(
        PLATFORM_HTTP, "if exchange.status >= 500:", "if exchange.status > 500:"),
    # ---------------------------------------------------------------- the platforms' paid-call flows
    "a started Apify run is not saved for the next holder": Mutant(
        APIFY_CLIENT, "                requests.submitted(PROVIDER, started.id)\n", ""),
    # Only a resumed Apify run that ended without success: it fails every attempt instead of a new run.
    "a resumed Apify run that failed is reported again": Mutant(
        APIFY_CLIENT, '            if resumed:\n                log.info("apify %s: run %s ended',
        '            if False:\n                log.info("apify %s: run %s ended'),
    # ---------------------------------------------------------------- spend budgets and the spend report
    # Only an account given a budget without a limit, while the counter's backend cannot be asked.
    "an account whose budget sets no limit is asked about": Mutant(
        SPEND_BUDGET, "self.budgets = {name: b for name, b in budgets.items() if b.bounded}",
        "self.budgets = dict(budgets)"),
    # Only on a Redis lock backend, a month budget reached before the day's.
    "a Redis budget counts the day alone": Mutant(
        SPEND_BUDGET, "for i = 1, 2 do\n  redis.call('incr', KEYS[i])", "for i = 1, 1 do\n  redis.call('incr', KEYS[i])"),
    # Only ledger lines on an earlier day of the month.
    "the month's spend reads today's lines alone": Mutant(
        SPEND_REPORT, 'rows = store.spend_rows(f"{month}-01")', "rows = store.spend_rows(day)"),
    # Only an account in the ledger that no URL state counts (a write interrupted between the two).
    "a ledger account no URL state counts shows no drift": Mutant(
        SPEND_REPORT, "names = sorted(set(by_account) | set(totals.ledger))", "names = sorted(by_account)"),
    # ---------------------------------------------------------------- recording one URL and both stores' writes
    "a recording's ledger line is not handed to the store": Mutant(
        WRITER, "            spend=spend,\n        )", "            spend=None,\n        )"),
    # Only a call vetoed (its URL lock lost, its record refused) after one of its paid requests left.
    "a vetoed call's paid requests are not counted in the run": Mutant(
        ATTEMPT, "        except CallVetoed as exc:\n            self._run.note_paid_requests(guard.paid_sent)\n",
        "        except CallVetoed as exc:\n"),
    # Only a URL lock whose release the lock backend fails after the URL was recorded.
    "a recorded URL whose lock release failed is counted again as deferred": Mutant(
        URL_RECORDER, "if outcome is not None:  # only the release", "if False:  # only the release"),
    # Only a two-step submission saved over a timed-out open call it carries.
    "the SQLite store drops the timed-out call a submission carries": Mutant(
        SQLITE_WRITE, '"open_call": None if kept is None else kept.model_dump_json()}, kept, spend)',
        '"open_call": None}, kept, spend)'),
    # Only two writers entering the day's first line of one account at once.
    "the Mongo ledger line that lost the day's first insert is dropped": Mutant(
        MONGO_STATES, "                coll.update_one(flt, moves)\n        except PyMongoError",
        "                pass\n        except PyMongoError", "mongomock"),
    # Only a MongoDB error labelled as a transient transaction (not a retryable write).
    "a transient transaction error is not waited out": Mutant(
        STORE_TRANSIENT,
        'return bool(exc.has_error_label("RetryableWriteError") or exc.has_error_label("TransientTransactionError"))',
        'return bool(exc.has_error_label("RetryableWriteError"))'),
    # ---------------------------------------------------------------- counters and selection
    "a SQLite delete leaves its counter where it was": Mutant(
        SQLITE_COUNTS, "BEGIN {_bump(key, -1)} END", "BEGIN {_bump(key, 0)} END"),
    # Only a counter moved by a write while the hourly recount ran.
    "a Mongo counter moved during its recount is repaired": Mutant(
        MONGO_COUNTS, "            if before.get(key, 0) != was or int(", "            if int(", "mongomock"),
    # Only a never-recorded pending element younger than the stuck bound.
    "the Mongo stuck-pending read ignores the creation time": Mutant(
        MONGO_QUERIES, "flt.update(checked_at=NEVER, created_at={\"$lte\": since_before})",
        "flt.update(checked_at=NEVER)", "mongomock"),
    # Only `unsupported` elements not yet due whose cause is not a missing generator.
    "the Mongo held-back count takes every unsupported element of a usable platform": Mutant(
        MONGO_SELECT, "                flt.update(platform=platform, cause=Cause.NO_GENERATOR.value)\n",
        "                flt.update(platform=platform)\n", "mongomock"),
    # ---------------------------------------------------------------- runs: retry, reconcile, live, figures
    # Only a selection that changed (an element recorded since) within the back-off of the last launch.
    "the retry sensor holds back a changed selection": Mutant(
        RETRY_JOB, "        cursor.digest == digest\n        and cursor.launched_at",
        "        cursor.digest is not None\n        and cursor.launched_at"),
    # Only an unchanged selection still due a back-off period after its launch.
    "an unchanged retry selection is never launched again": Mutant(
        RETRY_JOB, 'run_key=f"retry:{digest}:{bucket}",', 'run_key=f"retry:{digest}",'),
    # Only a retry whose job lock is lost while kept raw values are resolved again.
    "a retry that lost its lock resolving raw values says deadline": Mutant(
        RETRY, "if pool.stopped_by == STOPPED_BY_LOCK_LOST or (lost and (cut_in_run or cut_raw)):",
        "if pool.stopped_by == STOPPED_BY_LOCK_LOST:"),
    "reconcile records the tokens already stored": Mutant(
        RECONCILE, "existing = self.store.find_existing_addresses(list(kept)) if kept else set()",
        "existing: set[str] = set()"),
    # Only a reconcile keeping no per-URL outcomes (a large window) with tokens not worth a line.
    "reconcile's processed figure counts the tokens it listed": Mutant(
        RECONCILE, "processed=pool.started,", "processed=len(tokens),"),
    # Only a live cursor older than the feed's longest look-back (two days).
    "a stale live cursor is read from where it stands": Mutant(
        LIVE_FEED, "    elif cursor.ts < floor:\n        start = floor\n", "    elif cursor.ts < floor:\n        start = cursor.ts\n"),
    # Only a live read cut (by the cap or the time budget) whose last launched token is older than its
    # end by more than the rescan.
    "a cut live read moves the cursor past what it did not launch": Mutant(
        LIVE_FEED, "if everything and (new.ts is None or new.ts < floor):", "if new.ts is None or new.ts < floor:"),
    # Only two live batches (in one tick or two) spanning the same first and last trade times.
    "a live run key names only its batch's trade times": Mutant(
        LIVE_JOB, 'return f"live:{first}:{last}:{_digest(sorted(t.address for t in batch))}"',
        'return f"live:{first}:{last}"'),
    # Only a token whose lock is lost while its URLs are being recorded.
    "a token that lost its lock goes on recording its URLs": Mutant(
        PROCESSOR, "outcomes = self.record_targets(token, targets, run, lambda: lease.lost)",
        "outcomes = self.record_targets(token, targets, run, lambda: False)"),
    # Only a token whose lock is lost before all its URLs were started: the token is reported recorded.
    "a token that lost its lock part way is reported recorded": Mutant(
        PROCESSOR, "        if len(outcomes) < len(targets):\n", "        if False:\n"),
    # Only a run given a deadline that passes with units not started.
    "a run past its deadline goes on starting units": Mutant(JOB_POOL, "            elif deadline_reached():\n", "            elif False:\n"),
    # Only a run whose job lock is lost while it records.
    "a run that lost its job lock is not stopped": Mutant(
        RUN_DRIVER, "return self.deadline_reached() or self.lock_lost()", "return self.deadline_reached()"),
    # Only with spend budgets set.
    "the engine's recorder is built without the spend budgets": Mutant(
        ENGINE, '        **({"spend_budgets": spend_budgets} if spend_budgets is not None else {}),\n', "        **{},\n"),
    # Only two holders of one URL in one run, the first of which read nothing: the second pays again.
    "a run forgets that its call of a URL read nothing": Mutant(
        RUN_STATE, "            return url in self._read_nothing\n", "            return False\n"),
    "a run counts every recorded element as converged": Mutant(
        RUN_STATE, "self._converged += int(outcome.converged)", "self._converged += int(outcome.recorded)"),
    # ---------------------------------------------------------------- health
    "a run's figures count its calls as paid": Mutant(HEALTH, "paid_calls=run.paid_requests,", "paid_calls=run.attempted,"),
    # Only in the sandbox, a paid subject requested again after a transient failure (its retry budget).
    "the paid-once check fails on a retry after a transient failure": Mutant(
        HEALTH, "passed = not ledger.repeated", "passed = ledger.paid_requests <= distinct"),
}
