"""The `fresh6` batch of bench/unseen_mutants.py: mutants written on 2026-12-06 (the sixth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The per-URL state machine", "Back-off: one due
time", "The dedupe gate", "Fencing", "No payment without a record", "Spend budgets", "Retry selection",
"Live").
Written and checked as every batch is (bench/unseen_mutants.py); a comment above a mutant says when only
some settings or interleavings tell it apart.
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CALL_GUARD,
    CANDIDATES,
    DEDUPE,
    MACHINE,
    MODELS,
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    PROCESSOR,
    REFUSAL,
    SPEND,
    SPEND_BUDGET,
    SPEND_CHECK,
    SQLITE_ROWS,
    SQLITE_SELECTION,
    SQLITE_WRITE,
    Mutant,
)

FRESH6: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine: decide
    # Only a URL whose 14 days since its last failed call end between the run's start and its recording tells it apart.
    "a failure streak's expiry is judged at the run's start": Mutant(
        MACHINE, "streak = live_streak(s, now, rules)", "streak = live_streak(s, request.since, rules)"),
    # Only a URL without a failure streak called within the base interval and not reused (a platform whose
    # answers are never reused, or a call that read nothing) tells it apart.
    "a URL without a failure streak waits out the back-off too": Mutant(
        MACHINE, "if streak > 0 and (called or not may_call_again(s, now, rules)):",
        "if streak >= 0 and (called or not may_call_again(s, now, rules)):"),
    "a reused ok names no source token": Mutant(
        MACHINE, "return None if hit is None else (hit.status, hit.source_token)", "return None if hit is None else (hit.status, None)"),
    # ---------------------------------------------------------------- the state machine: settle, streak expiry, open calls
    # Only a holder that finds another's open call past its timeout tells it apart.
    "a decision reads the streak before a timed-out call is counted": Mutant(
        MACHINE, "decision = _decide(settled, element, request=request,", "decision = _decide(state, element, request=request,"),
    # Only a streak below the budget whose last call is at least 14 days old tells it apart.
    "only a spent streak expires with the window": Mutant(
        MACHINE, "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if state.streak >= rules.max_attempts and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:"),
    # Only a dead holder's open call found between 4 and 5 minutes after it was opened tells it apart.
    "an open call times out a minute early": Mutant(
        MACHINE, "OPEN_CALL_TIMEOUT = timedelta(minutes=5)", "OPEN_CALL_TIMEOUT = timedelta(minutes=4)"),
    # ---------------------------------------------------------------- the state machine: after (answers, failures, requests) and the merge
    "a better answer that stands is credited to this holder's links": Mutant(
        MACHINE, "answer, source = before.answer, before.source_token", "answer, source = before.answer, address"),
    # Only a better answer no call stood behind (a URL shape that needs no fetch) met by a call's worse answer tells it apart.
    "a better answer without an anchor never stands": Mutant(
        MACHINE, "        before.answered_at is None or now - before.answered_at < rules.ttl\n    )",
        "        before.answered_at is not None and now - before.answered_at < rules.ttl\n    )"),
    # Only a failed call written after a later call of the URL (two holders interleaving) tells it apart.
    "a failed call moves the last call back to its own time": Mutant(
        MACHINE, "attempts=before.attempts + 1, attempted_at=_last_call(before, now), engine_failures=0,",
        "attempts=before.attempts + 1, attempted_at=now, engine_failures=0,"),
    # Only a failed call written after a later call of the URL that failed too (two holders interleaving) tells it apart.
    "a failed call is not counted when a later call is recorded": Mutant(
        MACHINE, "failed_before_answer = before.answered_at is not None and before.answered_at > now",
        "failed_before_answer = before.attempted_at is not None and before.attempted_at > now"),
    # Only a two-step request past its provider's retention, submitted anew and then not answered, tells it apart.
    "a new submission is not kept when an older request was held": Mutant(
        MACHINE, "if outcome.submitted is not None:", "if outcome.submitted is not None and before.request is None:"),
    "a recording without a call keeps the element's old cause": Mutant(
        MACHINE, "NextElement(decision.status, element.attempts, element.attempted_at, decision.cause, decision.detail,",
        "NextElement(decision.status, element.attempts, element.attempted_at, element.cause, decision.detail,"),
    "an engine failure records no cause": Mutant(
        MACHINE, "return Transition(NextElement(status, element.attempts, element.attempted_at, Cause.ENGINE_FAILURE, detail),",
        "return Transition(NextElement(status, element.attempts, element.attempted_at, outcome.cause, detail),"),
    # Only an answer no call stood behind (a URL shape that needs no fetch) tells it apart.
    "the URL's status never shows an answer without an anchor": Mutant(
        MACHINE, "if answer is not None and (anchor is None or now - anchor < rules.ttl):",
        "if answer is not None and (anchor is not None and now - anchor < rules.ttl):"),
    # ---------------------------------------------------------------- back-off and due times
    # Only with a growing back-off (SOCIAL_RECORDING_BACKOFF_GROWTH > 1): flat, every wait is the base.
    "an element recorded without a URL write is due after the base whatever the streak": Mutant(
        MACHINE, "after: UrlState | NextState | None = transition.state if transition.state is not None else state",
        "after: UrlState | NextState | None = transition.state"),
    # Only a run whose interval is longer than the back-off's base tells it apart.
    "a long run interval never narrows what is due": Mutant(
        POLICY, "return now + (backoff.base - run_interval)", "return now + max(backoff.base - run_interval, timedelta(0))"),
    # Only with a growing back-off: the machine's waits stay flat while the setting says they grow.
    "the state machine ignores the configured back-off": Mutant(
        ATTEMPT, "return Rules(max_attempts, min_interval, reusable=CATALOGUE[platform].reusable, backoff=backoff)",
        "return Rules(max_attempts, min_interval, reusable=CATALOGUE[platform].reusable)"),
    # Only a stored token whose element was never recorded, met again by the live path, tells it apart.
    "a never-recorded element is never due": Mutant(
        MODELS, "return self.due_at is None or self.due_at <= moment", "return self.due_at is not None and self.due_at <= moment"),
    # Only a live path whose interval differs from the back-off's base tells it apart.
    "the live path asks what is due by now, whatever its interval": Mutant(
        PROCESSOR, "moment = due_by(self._clock(), self._min_interval)", "moment = self._clock()"),
    # ---------------------------------------------------------------- the dedupe gate
    # Only a recording within the last millisecond of an answer's window tells it apart.
    "the reuse window ends a millisecond early": Mutant(
        DEDUPE, "if state.answered_at is not None and now - state.answered_at >= ttl:",
        "if state.answered_at is not None and now - state.answered_at >= ttl - timedelta(milliseconds=1):"),
    # ---------------------------------------------------------------- no payment without a record; two-step paid calls
    # Only a holder whose URL lock was lost before a free request of its call tells it apart.
    "a free request leaves after the URL lock was lost": Mutant(
        CALL_GUARD, "if self._lease.lost:", "if paid and self._lease.lost:"),
    # Only on the Mongo store, which keeps milliseconds: the record read back is not the one its holder opened.
    "an open call is recorded to the microsecond": Mutant(
        CALL_GUARD, "started_at=as_stored(self._clock()),", "started_at=self._clock(),", "mongomock"),
    # Only a new two-step paid call of an account that polls on its paid client, whose holder died, tells it apart.
    "every open call of an account that polls is a poll": Mutant(
        CALL_GUARD, "new_spending=not (self.resumed is not None and provider in POLLS_ON_PAID_CLIENT))",
        "new_spending=not (self.resumed is not None or provider in POLLS_ON_PAID_CLIENT))"),
    # Only a URL holding a saved two-step request tells it apart.
    "a holder never resumes the URL's open paid request": Mutant(
        ATTEMPT, "state.request if state is not None else None, lambda: self._now,", "None, lambda: self._now,"),
    # Only an account that polls on its paid client, polling the request it has just submitted, tells it apart.
    "a poll of the request just submitted is new spending": Mutant(
        ATTEMPT, "lambda: requests.resumed is not None or requests.submitted_request is not None)",
        "lambda: requests.resumed is not None)"),
    # Only a resumed two-step call (its first paid request a poll) tells it apart.
    "a poll is neither recorded nor checked against the lock": Mutant(
        SPEND_CHECK, "self._inner.before_request(service=service, paid=paid)", "self._inner.before_request(service=service, paid=new)"),
    # ---------------------------------------------------------------- the attempt: what left, what is recorded
    # Only a call whose free request left before a paid one the budget held tells it apart.
    "a call held by its budget after a free request counts no call": Mutant(
        ATTEMPT, "if guard.sent:", "if guard.paid_sent:"),
    # Only a rate limiter that cannot be asked after a request of the call left tells it apart.
    "a limiter outage after a request left leaves the URL as it was": Mutant(
        ATTEMPT, "if exc.code is ErrorCode.LIMITER_UNAVAILABLE and guard.sent == 0:",
        "if exc.code is ErrorCode.LIMITER_UNAVAILABLE:"),
    # ---------------------------------------------------------------- spend budgets and the ledger
    # Only a month budget met by requests of more than one day tells it apart.
    "the month budget is counted per day": Mutant(
        SPEND_BUDGET, "counter_key(account, MONTH, period_key(MONTH, now))", "counter_key(account, MONTH, period_key(DAY, now))"),
    # Only an account with a budget for one period alone tells it apart.
    "a period without a limit refuses every request": Mutant(
        SPEND_BUDGET, "day, month = (UNBOUNDED if (n := budget.limit(p)) is None else n for p in PERIODS)",
        "day, month = (0 if (n := budget.limit(p)) is None else n for p in PERIODS)"),
    # Only a month budget used up before the day's tells it apart (the held URL's detail names the day and its reset).
    "a used-up month budget is reported as the day's": Mutant(
        SPEND_BUDGET, "return i + 1", "return 1"),
    # Only an account with a budget for one period alone tells it apart.
    "a budget for one period alone is no budget": Mutant(
        SPEND, "return self.per_day is not None or self.per_month is not None",
        "return self.per_day is not None and self.per_month is not None"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    # Only an ok element whose URL state a newer holder wrote, or one changed meanwhile, tells it apart (the outcome reported).
    "a URL write is checked against the state before the element": Mutant(
        REFUSAL, "return element_refusal(element, fence) or state_refusal(state, fence, expect_version)",
        "return state_refusal(state, fence, expect_version) or element_refusal(element, fence)"),
    # ---------------------------------------------------------------- the SQLite store
    # Only a write that removes another holder's unanswered open call tells it apart.
    "the SQLite state's paid requests are set to the unanswered ones": Mutant(
        SQLITE_WRITE, "UPDATE url_states SET paid_requests = paid_requests + ? WHERE url = ?",
        "UPDATE url_states SET paid_requests = ? WHERE url = ?"),
    # Only a URL write that removes another holder's unanswered open call tells it apart.
    "the SQLite URL write never enters a removed open call as spent": Mutant(
        SQLITE_WRITE, "write.fence, write.expect_version), open_call", "write.fence, write.expect_version), None"),
    "the SQLite URL write counts its paid requests twice on the state": Mutant(
        SQLITE_WRITE, "self._add_spend(conn, write.spend)", "self._enter_spend(conn, write.url, write.spend)"),
    "the SQLite URL write keeps the old source token": Mutant(
        SQLITE_WRITE, '"source_token = excluded.source_token, fence = excluded.fence, "', '"fence = excluded.fence, "'),
    "the SQLite URL write keeps the state's old status": Mutant(
        SQLITE_WRITE, '"ON CONFLICT (url) DO UPDATE SET status = excluded.status, "', '"ON CONFLICT (url) DO UPDATE SET "'),
    "the SQLite store reads a URL state without its open call": Mutant(
        SQLITE_ROWS, "open_call=None if not open_call else OpenCall.model_validate_json(open_call),", "open_call=None,"),
    "the SQLite store reads a URL state without its source token": Mutant(
        SQLITE_ROWS, "source_token=source_token,", "source_token=None,"),
    # Only a retry meeting an unsupported element of a platform that gained a generator at exactly its due instant.
    "the SQLite unsupported selection takes an element only once past due": Mutant(
        SQLITE_SELECTION, 'f"AND due_at <= ? {_FAIR_ORDER} LIMIT ?",', 'f"AND due_at < ? {_FAIR_ORDER} LIMIT ?",'),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    # Only a two-step submission whose new paid requests are entered with it tells it apart.
    "the Mongo saved submission leaves the state's paid requests": Mutant(
        MONGO_STATES, '"$inc": {"version": 1, "paid_requests": 0 if spend is None else spend.requests},',
        '"$inc": {"version": 1, "paid_requests": 0},', "mongomock"),
    # Only a call with more than one new paid request tells it apart.
    "the Mongo ledger counts one request per line": Mutant(
        MONGO_STATES, 'moves = {"$inc": {"requests": line.requests,', 'moves = {"$inc": {"requests": 1,', "mongomock"),
    # Only a two-step request carried through a later write and then met near its retention tells it apart.
    "the Mongo URL write re-dates the open paid request": Mutant(
        MONGO_WRITE, '"submitted_at": ensure_utc(req.submitted_at)},', '"submitted_at": ensure_utc(write.now)},', "mongomock"),
    "the Mongo store never records an element's cause": Mutant(
        MONGO_WRITE, '"cause": None if e.cause is None else e.cause.value,', '"cause": None,', "mongomock"),
    "the Mongo URL write never counts its paid requests on the state": Mutant(
        MONGO_WRITE, 'moves = {"version": 1, **({"paid_requests": write.spend.requests} if write.spend else {})}',
        'moves = {"version": 1}', "mongomock"),
    "the Mongo store reads an element's due time as its recording": Mutant(
        MONGO_DOCS, 'due_at=_checked_in(el.get("due_at")),', 'due_at=_checked_in(el.get("checked_at")),', "mongomock"),
    # Only a holder whose refusal read came before another holder's ok write, and whose claim came after it
    # (two holders interleaving), tells it apart.
    "the Mongo element claim takes an ok element": Mutant(
        MONGO_QUERIES, 'return {"address": address, "url": url, "fence": {"$lte": fence}, "status": {"$ne": KEPT_STATUS.value}}',
        'return {"address": address, "url": url, "fence": {"$lte": fence}}', "mongomock"),
    # ---------------------------------------------------------------- retry selection
    # Only a retry naming `unsupported` tells it apart.
    "a named retry of unsupported is narrowed like the default": Mutant(
        CANDIDATES, "        unsupported = None", "        unsupported = frozenset(p.value for p in usable_platforms)"),
    # Only a retry with paid calls off tells it apart.
    "the default retry takes skipped_paid while paid calls are off": Mutant(
        CANDIDATES, "    if enable_paid:\n        wanted.add(FetchStatus.SKIPPED_PAID)\n",
        "    wanted.add(FetchStatus.SKIPPED_PAID)\n"),
}
