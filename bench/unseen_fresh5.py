"""The `fresh5` batch of bench/unseen_mutants.py: mutants written on 2026-12-06 (the fifth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The per-URL state machine", "The dedupe gate",
"Fencing", "No payment without a record", "Spend budgets", "Retry selection", "Live").
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
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    REFUSAL,
    SPEND,
    SPEND_BUDGET,
    SPEND_CHECK,
    SQLITE_SELECTION,
    SQLITE_WRITE,
    Mutant,
)

FRESH5: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine: decide
    "a URL adopts the back-off only from its second failed call": Mutant(
        MACHINE, "if streak > 0 and (called or not may_call_again(s, now, rules)):",
        "if streak > 1 and (called or not may_call_again(s, now, rules)):"),
    # Only a call within the millisecond of a run's start tells it apart (on the Mongo store, which keeps
    # milliseconds, a run's own call there is taken for an earlier one and bought again).
    "a run's own call is judged against its unfloored start": Mutant(
        MACHINE, "return state is not None and state.attempted_at is not None and state.attempted_at >= as_stored(since)",
        "return state is not None and state.attempted_at is not None and state.attempted_at >= since", "mongomock"),
    # Only a two-step paid call resumed beside another holder's young open call tells it apart.
    "a resume goes ahead beside another holder's open call": Mutant(
        MACHINE, "if decision.calls and settled is not None and settled.open_call is not None:",
        "if decision.act is Act.CALL and settled is not None and settled.open_call is not None:"),
    # Only a named retry of `exhausted` meeting another holder's young open call tells it apart.
    "a named exhausted element beside an open call is made an error": Mutant(
        MACHINE, "        if element.status in ABSORBING:\n            return Decision(Act.LEAVE, element.status, detail=f\"{detail}; kept {element.status.value}\")",
        "        if element.status in REUSABLE:\n            return Decision(Act.LEAVE, element.status, detail=f\"{detail}; kept {element.status.value}\")"),
    # Only a holder that finds a timed-out open call and then reuses or adopts (no call of its own) tells it apart.
    "a decision without a call drops the count of a timed-out open call": Mutant(
        MACHINE, "if settled is not state and decision.act is not Act.LEAVE:",
        "if settled is not state and decision.calls:"),
    # ---------------------------------------------------------------- the state machine: settle (an open call past its timeout)
    # Only a dead holder whose record carried an older timed-out call (two deaths in a row) tells it apart.
    "the timed-out calls a record carried are never counted": Mutant(
        MACHINE, "    if call.replaced is not None:\n        before = settle(before, now, rules) or before",
        "    if call.replaced is None:\n        before = settle(before, now, rules) or before"),
    # Only a timed-out call opened before a later recorded call (an interleaving of two holders) tells it apart.
    "a timed-out call moves the last call back to its opening": Mutant(
        MACHINE, "last = opened if before.attempted_at is None or before.attempted_at < opened else before.attempted_at",
        "last = opened"),
    # Only a holder that died with its paid call open (found past the timeout) tells it apart.
    "a counted timed-out call leaves the URL status as it was": Mutant(
        MACHINE, 'return counted.model_copy(update={"status": url_status(counted, now, rules)})', "return counted"),
    # ---------------------------------------------------------------- the state machine: after (answers, failures, no call) and the merge
    # Only an answer equal to the window's own, fresh, from another holder tells it apart (source token).
    "an equal answer keeps the window's older source token": Mutant(
        MACHINE, "better_stands = before.answer is not None and rank(before.answer) > rank(this_answer) and (",
        "better_stands = before.answer is not None and rank(before.answer) >= rank(this_answer) and ("),
    # Only a worse answer written after a later holder's call (an interleaving) tells it apart.
    "an answer moves the last call back to its own time": Mutant(
        MACHINE, "attempted_at=_last_call(before, now) if outcome.called else before.attempted_at), now, rules)",
        "attempted_at=now if outcome.called else before.attempted_at), now, rules)"),
    # Only a platform whose answers are never reused (Telegram) met by a worse answer tells it apart.
    "a platform whose answers are never reused hands the window's better answer over": Mutant(
        MACHINE, "if better_stands and rules.reusable:", "if better_stands:"),
    # Only a failed call after a streak at least 14 days old tells it apart.
    "a failed call adds to an expired streak": Mutant(
        MACHINE, "streak = live_streak(before, now, rules) + (0 if failed_before_answer else 1)",
        "streak = before.streak + (0 if failed_before_answer else 1)"),
    # Only a two-step call that read nothing after its submission tells it apart.
    "an unreadable answer forgets the request it submitted": Mutant(
        MACHINE, "attempted_at=_last_call(before, now), request=_request_after(before, outcome)),",
        "attempted_at=_last_call(before, now), request=before.request),"),
    # Only a retry while the URL's platform has a generator (unsupported in the default selection) tells it apart.
    "an unreadable answer is recorded as a missing generator": Mutant(
        MACHINE, "return Transition(NextElement(FetchStatus.UNSUPPORTED, attempts, attempted_at, Cause.UNPARSEABLE,",
        "return Transition(NextElement(FetchStatus.UNSUPPORTED, attempts, attempted_at, Cause.NO_GENERATOR,"),
    # Only a two-step paid request past its provider's retention, met when no call can be made, tells it apart.
    "a no-call outcome never closes a request past its retention": Mutant(
        MACHINE, "if request != before.request and state is not None else None)",
        "if request != before.request and state is None else None)"),
    "a no-call outcome records the element's old cause": Mutant(
        MACHINE, "return Transition(NextElement(outcome.status, element.attempts, element.attempted_at, outcome.cause,",
        "return Transition(NextElement(outcome.status, element.attempts, element.attempted_at, element.cause,"),
    # Only a named re-examination meeting a fresh, worse answer in the window tells it apart.
    "a named re-examination takes the window's answer only when better": Mutant(
        MACHINE, "if window is not None and window[0] is not element.status:",
        "if window is not None and rank(window[0]) > rank(element.status):"),
    # ---------------------------------------------------------------- the dedupe gate
    "the reuse window is a day short": Mutant(
        DEDUPE, "DEDUPE_TTL = timedelta(days=14)", "DEDUPE_TTL = timedelta(days=13)"),
    # ---------------------------------------------------------------- back-off and due times
    # Only a streak whose last call is at least 14 days old tells it apart.
    "the next call's wait reads the stored streak, expired or not": Mutant(
        MACHINE, "return rules.backoff.next_due(state.attempted_at, live_streak(state, now, rules))",
        "return rules.backoff.next_due(state.attempted_at, state.streak)"),
    # Only a run interval other than the back-off's base tells it apart.
    "a run's due-by moves the wrong way for its interval": Mutant(
        POLICY, "return now + (backoff.base - run_interval)", "return now - (backoff.base - run_interval)"),
    # Only a recording without a call (reuse, adopt) of a URL called earlier tells it apart.
    "an element is due again from its URL's last call, not from its recording": Mutant(
        MACHINE, "return rules.backoff.next_due(now, streak)",
        "return rules.backoff.next_due(now if after is None or after.attempted_at is None else after.attempted_at, streak)"),
    # ---------------------------------------------------------------- no payment without a record; two-step paid calls
    # Only a resumed two-step call whose holder died tells it apart.
    "a resumed poll's open call counts as new spending": Mutant(
        CALL_GUARD, "new_spending=not (self.resumed is not None and provider in POLLS_ON_PAID_CLIENT))",
        "new_spending=True)"),
    # ---------------------------------------------------------------- spend budgets
    # Only a spend budget met by the requests of a run tells it apart.
    "the SQLite budget admits one request past its limit": Mutant(
        SPEND_BUDGET, "if limits[i] != UNBOUNDED and (0 if row is None else int(row[0])) >= limits[i]:",
        "if limits[i] != UNBOUNDED and (0 if row is None else int(row[0])) > limits[i]:"),
    # Only a month budget met before the day's tells it apart.
    "the SQLite budget counts a request in its day only": Mutant(
        SPEND_BUDGET, '"ON CONFLICT (key) DO UPDATE SET n = n + 1", [(k,) for k in keys])',
        '"ON CONFLICT (key) DO UPDATE SET n = n + 1", [(k,) for k in keys[:1]])'),
    # Only a request admitted then vetoed, with a month budget that is met, tells it apart.
    "a give-back frees the day's slot, never the month's": Mutant(
        SPEND_BUDGET, '"UPDATE spend_budget_counts SET n = n - 1 WHERE key IN (?, ?) AND n > 0", keys)',
        '"UPDATE spend_budget_counts SET n = n - 1 WHERE key = ? AND n > 0", keys[:1])'),
    # ---------------------------------------------------------------- the spend ledger
    # Only a two-step call polling on its paid client tells it apart.
    "a poll is entered in the ledger as a new paid request": Mutant(
        SPEND_CHECK, 'if getattr(self._new, "value", False):', 'if paid or getattr(self._new, "value", False):'),
    # Only a call with more than one new paid request tells it apart.
    "a call's ledger cost is one request's price whatever its requests": Mutant(
        ATTEMPT, "return SpendLine(account.name, day_key(self._now), n, n * (account.unit_price_usd or 0.0))",
        "return SpendLine(account.name, day_key(self._now), n, account.unit_price_usd or 0.0)"),
    # Only a removed record that carried a dead holder's timed-out call (two deaths in a row) tells it apart.
    "a removed record enters its newest call only, not the ones it carried": Mutant(
        SPEND, "for call in stored.chain() if call.fence < fence and call not in still and call.new_spending]",
        "for call in stored.chain()[:1] if call.fence < fence and call not in still and call.new_spending]"),
    # ---------------------------------------------------------------- fencing: the write refusal and the version read
    # Only a stale holder (its lease lost) writing an open call or a paid request tells it apart.
    "the URL state's own writes, decided on no version, are not fenced": Mutant(
        REFUSAL, "    fenced = fence_refusal(state.fence, fence)\n    if fenced is not None:\n        return fenced\n    if expect_version",
        "    fenced = fence_refusal(state.fence, fence) if expect_version is not None else None\n    if fenced is not None:\n"
        "        return fenced\n    if expect_version"),
    # Only two holders racing a URL's first state (an interleaving) tell it apart.
    "a URL's first state is written whatever another holder wrote meanwhile": Mutant(
        ATTEMPT, "expect_version=0 if state is None else state.version,",
        "expect_version=None if state is None else state.version,"),
    # ---------------------------------------------------------------- the SQLite store
    # Only an open call written over a timed-out one (its record then removed) tells it apart.
    "the SQLite open-call write enters the carried timed-out calls at once": Mutant(
        SQLITE_WRITE, "self._settle_unanswered(conn, url, fence, stored_call, kept)",
        "self._settle_unanswered(conn, url, fence, stored_call, None)"),
    "the SQLite state's paid requests restart at each write": Mutant(
        SQLITE_WRITE, "paid_requests = url_states.paid_requests + excluded.paid_requests,",
        "paid_requests = excluded.paid_requests,"),
    # Only a holder that read the state before another's open call was written (an interleaving) tells it apart.
    "the SQLite open-call write leaves the state's version where it was": Mutant(
        SQLITE_WRITE, 'f"ON CONFLICT (url) DO UPDATE SET {updates}, version = url_states.version + 1",',
        'f"ON CONFLICT (url) DO UPDATE SET {updates}",'),
    # Only two holders interleaving (a late holder's write found stale, read again and merged) tell it apart.
    "the SQLite URL write leaves the state's version where it was": Mutant(
        SQLITE_WRITE, '"paid_requests = url_states.paid_requests + excluded.paid_requests, version = url_states.version + 1",',
        '"paid_requests = url_states.paid_requests + excluded.paid_requests",'),
    # ---------------------------------------------------------------- the Mongo store
    "the Mongo ledger never moves the unanswered count": Mutant(
        MONGO_STATES, '"cost_usd": line.cost_usd, "unanswered": line.unanswered}}',
        '"cost_usd": line.cost_usd}}', "mongomock"),
    "the Mongo state's paid requests are overwritten by the unanswered ones": Mutant(
        MONGO_STATES, 'self.db[URL_STATES].update_one({"url": url}, {"$inc": {"paid_requests": sum(x.requests for x in lines)}})',
        'self.db[URL_STATES].update_one({"url": url}, {"$set": {"paid_requests": sum(x.requests for x in lines)}})',
        "mongomock"),
    # Only a two-step submission written over a timed-out open call tells it apart.
    "the Mongo saved submission enters the call its record kept": Mutant(
        MONGO_STATES, "            None,\n            kept,\n", "            None,\n            None,\n", "mongomock"),
    "the Mongo URL state's fenced filter forgets the fence": Mutant(
        MONGO_QUERIES, 'flt: dict[str, Any] = {"url": url, "fence": {"$lte": fence}}\n    if expect_version is not None:',
        'flt: dict[str, Any] = {"url": url}\n    if expect_version is not None:', "mongomock"),
    "the Mongo URL write leaves the state's fence where it was": Mutant(
        MONGO_WRITE, '"attempts": s.attempts, "fence": f, "updated_at": ensure_utc(write.now),',
        '"attempts": s.attempts, "updated_at": ensure_utc(write.now),', "mongomock"),
    # Only two holders racing a URL's first state on the Mongo store (an interleaving) tell it apart.
    "the Mongo element-only write on no state ignores a state written meanwhile": Mutant(
        MONGO_WRITE, 'committed = self.db[URL_STATES].find_one({"url": write.url}, {"_id": 1}) is None',
        "committed = True", "mongomock"),
    # ---------------------------------------------------------------- retry selection and the live path
    "the default retry never reopens pending": Mutant(
        CANDIDATES, "wanted = {FetchStatus.ERROR, FetchStatus.PENDING}", "wanted = {FetchStatus.ERROR}"),
    # Only a retry whose limit is below what is due tells it apart.
    "the SQLite selection takes the latest due first": Mutant(
        SQLITE_SELECTION, '_FAIR_ORDER = "ORDER BY due_at, address, url"', '_FAIR_ORDER = "ORDER BY due_at DESC, address, url"'),
    # Only a retry whose platform gained a generator tells it apart.
    "the SQLite selection narrows unsupported to the unreadable ones": Mutant(
        SQLITE_SELECTION, "[status, platform, Cause.NO_GENERATOR.value, due_by, limit],",
        "[status, platform, Cause.UNPARSEABLE.value, due_by, limit],"),
    # Only the live path meeting an element at exactly its due instant tells it apart.
    "an element is due only once past its due time": Mutant(
        MODELS, "return self.due_at is None or self.due_at <= moment", "return self.due_at is None or self.due_at < moment"),
}
