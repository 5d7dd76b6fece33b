"""The `fresh7` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the seventh blind batch),
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
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    PROCESSOR,
    REFUSAL,
    SPEND_BUDGET,
    SPEND_CHECK,
    SQLITE_ROWS,
    SQLITE_SELECT,
    SQLITE_WRITE,
    Mutant,
)

FRESH7: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine: decide
    # Only a named retry of `exhausted` meeting a fresh `invalid` in the window tells it apart: invalid ranks
    # with the statuses that are no answer, so the element is called again instead of taking it.
    "invalid ranks no higher than a status that is no answer": Mutant(
        MACHINE, "return len(ANSWERS) - ANSWERS.index(status) if status in ANSWERS else 0",
        "return len(ANSWERS) - ANSWERS.index(status) - 1 if status in ANSWERS else 0"),
    "a URL whose engine failures are spent leaves the element error": Mutant(
        MACHINE, "return _adopt(element, FetchStatus.EXHAUSTED, Cause.ENGINE_FAILURE,",
        "return _adopt(element, FetchStatus.ERROR, Cause.ENGINE_FAILURE,"),
    # Only a second holder of a URL this run's own call read nothing from tells it apart.
    "a URL this run read nothing from is adopted for want of a generator": Mutant(
        MACHINE, "return _adopt(element, FetchStatus.UNSUPPORTED, Cause.UNPARSEABLE,",
        "return _adopt(element, FetchStatus.UNSUPPORTED, Cause.NO_GENERATOR,"),
    # Only a holder meeting another holder's open call, not timed out yet, tells it apart.
    "an element held back by another holder's open call is recorded pending": Mutant(
        MACHINE, "return replace(_adopt(element, FetchStatus.ERROR, Cause.BACKOFF, detail), settled=decision.settled)",
        "return replace(_adopt(element, FetchStatus.PENDING, Cause.BACKOFF, detail), settled=decision.settled)"),
    # ---------------------------------------------------------------- the state machine: settle and the stored status
    # Only an open call found timed out after the URL's answer window (or its streak) ended since the call
    # was opened tells it apart.
    "a counted timed-out call's status is judged at its opening": Mutant(
        MACHINE, 'return counted.model_copy(update={"status": url_status(counted, now, rules)})',
        'return counted.model_copy(update={"status": url_status(counted, opened, rules)})'),
    "the stored status shows a spent streak as error": Mutant(
        MACHINE, "if streak >= rules.max_attempts or state.engine_failures >= rules.max_attempts:",
        "if streak > rules.max_attempts or state.engine_failures >= rules.max_attempts:"),
    # Only a paid call recorded whose request then never left (refused before it was sent, an outcome that
    # writes no URL state) tells it apart: its record stays open and is counted as a failed call once it
    # times out.
    "closing its own record alone is not written": Mutant(
        MACHINE, "if next_state is None and settled is not None and settled is not stored:",
        "if next_state is None and settled is not None and settled is not state:"),
    # ---------------------------------------------------------------- the state machine: after
    "a call is not counted on the element": Mutant(
        MACHINE, "        return element.attempts + 1, now", "        return element.attempts, now"),
    # Only an answer no call stood behind (a URL shape that needs no fetch) tells it apart.
    "an answer without a call moves the URL's last call": Mutant(
        MACHINE, "attempted_at=_last_call(before, now) if outcome.called else before.attempted_at), now, rules)",
        "attempted_at=_last_call(before, now)), now, rules)"),
    # Only a call merged after another holder's ok landed in the window meanwhile (a stale holder writing
    # between the decision and the result: two holders interleaving) tells it apart.
    "a better ok that stands over a call's answer copies no links": Mutant(
        MACHINE, "copy_links_from=source if answer is FetchStatus.OK else None), next_state)",
        "copy_links_from=None), next_state)"),
    "the failed call that spends the budget never exhausts the element": Mutant(
        MACHINE, "resolve_final_status(streak - 1, FetchStatus.ERROR, True, rules.max_attempts)",
        "resolve_final_status(streak - 1, FetchStatus.ERROR, False, rules.max_attempts)"),
    # Only a failed call written after a later call's answer reset the streak, on a platform whose answers
    # are never reused (two holders interleaving), tells it apart.
    "a failed call before a later answer leaves the element pending": Mutant(
        MACHINE, "if streak\n             else FetchStatus.ERROR)", "if streak\n             else FetchStatus.PENDING)"),
    # Only an unreadable call written after a later call of the URL (two holders interleaving) tells it apart.
    "an unreadable call moves the last call back to its own time": Mutant(
        MACHINE, "attempted_at=_last_call(before, now), request=_request_after(before, outcome)),",
        "attempted_at=now, request=_request_after(before, outcome)),"),
    "a recording without a call counts a call on the element": Mutant(
        MACHINE, "return Transition(NextElement(outcome.status, element.attempts, element.attempted_at, outcome.cause,",
        "return Transition(NextElement(outcome.status, element.attempts + 1, element.attempted_at, outcome.cause,"),
    # Only a URL with a failure streak whose next attempt fails in our code before any request tells it apart.
    "an engine failure ends the failure streak": Mutant(
        MACHINE, "next_state = _with_status(replace(before, engine_failures=engine_failures,",
        "next_state = _with_status(replace(before, streak=0, engine_failures=engine_failures,"),
    # Only a named retry of `exhausted` whose attempt fails in our code before any request tells it apart.
    "a named exhausted element failing in our code takes the engine failure's status": Mutant(
        MACHINE, "    if element.status in ABSORBING:\n        return Transition(_kept(element, state, now, rules, detail), next_state)",
        "    if element.status in REUSABLE:\n        return Transition(_kept(element, state, now, rules, detail), next_state)"),
    # Only a named re-examination that could not call (paid calls off, no generator), merged after another
    # holder's ok landed in the window meanwhile (two holders interleaving), tells it apart.
    "a named answer taking the window's ok copies no links": Mutant(
        MACHINE, "f\"{detail}; the window's {answer.value} stands\", copy_links_from=source)",
        "f\"{detail}; the window's {answer.value} stands\")"),
    # ---------------------------------------------------------------- back-off and due times
    "the back-off's base is a minute short": Mutant(
        POLICY, "DEFAULT_MIN_INTERVAL_MINUTES = 60", "DEFAULT_MIN_INTERVAL_MINUTES = 59"),
    # Only a growing back-off whose factor reaches a million (growth 10 from the seventh failure in a row, so a
    # budget of more than seven calls) tells it apart.
    "a back-off past a million times its base falls back to the base": Mutant(
        POLICY, "return min(self.cap, self.base * factor) if factor < 1e6 else self.cap",
        "return min(self.cap, self.base * factor) if factor < 1e6 else self.base"),
    # ---------------------------------------------------------------- the dedupe gate
    # Only a URL with a fresh answer and an open paid call (a named retry re-examining it, another holder
    # meeting it meanwhile) tells it apart.
    "a fresh answer is not reused while a paid call of the URL is open": Mutant(
        DEDUPE, "if state is None or state.answer is None:",
        "if state is None or state.answer is None or state.open_call is not None:"),
    # ---------------------------------------------------------------- the attempt: what a call brought back
    "a blocked target is recorded not_found": Mutant(
        ATTEMPT, "ErrorCode.TARGET_BLOCKED: FetchStatus.BLOCKED,", "ErrorCode.TARGET_BLOCKED: FetchStatus.NOT_FOUND,"),
    # Only a run in which a provider said its credit is gone, with more URLs of that provider after it.
    "a provider's spent credit is not remembered for the run": Mutant(
        ATTEMPT, "self._run.mark_exhausted(provider)", "pass"),
    # Only with paid calls off tells it apart.
    "paid calls off skip free platforms too": Mutant(
        ATTEMPT, "if paid and not self._settings.enable_paid:", "if not self._settings.enable_paid:"),
    # Only a graph that breaks the contract (invalid) tells it apart.
    "a broken graph counts as a failed call": Mutant(
        ATTEMPT, "return done(Result.ANSWER, FetchStatus.INVALID, describe_error(exc))",
        "return done(Result.FAILED, detail=describe_error(exc))"),
    # Only our code failing after free requests alone (no paid request left) tells it apart.
    "a defect after a free request counts as an engine failure": Mutant(
        ATTEMPT, "if guard.sent == 0:", "if guard.paid_sent == 0:"),
    # ---------------------------------------------------------------- no payment without a record; two-step paid calls
    # Only a two-step submission whose save a newer holder refused (its lease lost meanwhile) tells it apart:
    # the call goes on polling.
    "a refused submission does not stop the call": Mutant(
        CALL_GUARD, "        if not result.applied:\n            # A newer holder owns the URL",
        "        if False:\n            # A newer holder owns the URL"),
    # Only an open call entered as spent after its holder died, of a platform whose paying account has
    # another name, tells it apart (the ledger's account).
    "an open call names the URL's platform, not the paying account": Mutant(
        CALL_GUARD, "call = OpenCall(provider=provider, subject=self._url,", "call = OpenCall(provider=self._platform, subject=self._url,"),
    # Only a call that holds a submitted or resumed request tells it apart.
    "the accounts that poll on their paid client are taken the wrong way round": Mutant(
        SPEND_CHECK, "frozenset(a.name for a in CATALOGUE.accounts() if a.paid_polls)",
        "frozenset(a.name for a in CATALOGUE.accounts() if not a.paid_polls)"),
    # ---------------------------------------------------------------- spend budgets
    # Only with a budget on the SQLite lock backend.
    "the SQLite budget counts a period's first request as none": Mutant(
        SPEND_BUDGET, '"INSERT INTO spend_budget_counts (key, n) VALUES (?, 1) "',
        '"INSERT INTO spend_budget_counts (key, n) VALUES (?, 0) "'),
    # Only a month budget reached before the day's, on the SQLite lock backend.
    "the SQLite budget never refuses on the month's count": Mutant(
        SPEND_BUDGET, "for i, key in enumerate(keys):", "for i, key in enumerate(keys[:1]):"),
    # Only a used-up month budget tells it apart: the held URL's detail names the next midnight as its reset.
    "a used-up month budget resets at midnight": Mutant(
        SPEND_BUDGET, "return BudgetReached(account, period, limits[refused - 1], resets_at(period, now))",
        "return BudgetReached(account, period, limits[refused - 1], resets_at(DAY, now))"),
    # ---------------------------------------------------------------- the write refusal
    # Only on SQLite (the Mongo filters still carry the version): a holder whose URL state a stale holder (a
    # lower fence) wrote after its read tells it apart.
    "a newer holder's write lands on a version it did not read": Mutant(
        REFUSAL, "if expect_version is not None and state.version != expect_version:",
        "if expect_version is not None and state.version != expect_version and state.fence == fence:"),
    # ---------------------------------------------------------------- the SQLite store
    "the SQLite URL write never counts its paid requests on the state": Mutant(
        SQLITE_WRITE, "paid = 0 if write.spend is None else write.spend.requests", "paid = 0"),
    "the SQLite URL write keeps the state's old streak": Mutant(
        SQLITE_WRITE, '"answer = excluded.answer, answered_at = excluded.answered_at, streak = excluded.streak, "',
        '"answer = excluded.answer, answered_at = excluded.answered_at, "'),
    # Only a holder that dies (or cannot write its result) after saving a two-step submission, its request
    # then met near its provider's retention, tells it apart.
    "the SQLite saved submission is dated by the wall clock": Mutant(
        SQLITE_WRITE, '"request_submitted_at": dt_to_text(request.submitted_at),',
        '"request_submitted_at": dt_to_text(utcnow()),'),
    # Only a URL holding a saved two-step request tells it apart.
    "the SQLite store reads a saved request's submission as the state's last update": Mutant(
        SQLITE_ROWS, "request_id=request_id, submitted_at=dt_from_text(submitted_at))",
        "request_id=request_id, submitted_at=dt_from_text(updated_at))"),
    "the SQLite store reads the engine failures as the streak": Mutant(
        SQLITE_ROWS, "        streak=streak,\n", "        streak=engine_failures,\n"),
    # Only a retry naming tokens, meeting an unsupported element of a usable platform whose shape no
    # generator can read, tells it apart.
    "the SQLite selection among tokens takes unsupported whatever its cause": Mutant(
        SQLITE_SELECT, "return c.platform in query.unsupported_platforms and row is not None and row[0] == Cause.NO_GENERATOR.value",
        "return c.platform in query.unsupported_platforms and row is not None"),
    # Only a retry whose due elements of several statuses exceed its limit tells it apart.
    "the SQLite selection cuts at the limit before the fair order": Mutant(
        SQLITE_SELECT, "        candidates.sort(key=_fair_order)\n", ""),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    "the Mongo store reads a state's fence and version swapped": Mutant(
        MONGO_STATES, 'StoredState(int(doc.get("fence", 0)), int(doc.get("version", 0)))',
        'StoredState(int(doc.get("version", 0)), int(doc.get("fence", 0)))', "mongomock"),
    # Only a holder of a lower fence (paused past its lease) writing after a saved submission tells it apart.
    "the Mongo saved submission leaves the state's fence": Mutant(
        MONGO_STATES, '                    "fence": fence,\n                    "request": {"provider"',
        '                    "request": {"provider"', "mongomock"),
    "the Mongo ledger enters no cost": Mutant(
        MONGO_STATES, '"cost_usd": line.cost_usd, "unanswered": line.unanswered}}',
        '"cost_usd": 0.0, "unanswered": line.unanswered}}', "mongomock"),
    # Only two holders interleaving (one past its lease): a write decided before another holder's
    # element-only write lands over it.
    "the Mongo element-only write leaves the state's version": Mutant(
        MONGO_WRITE, '{"$set": {"fence": f}, "$inc": {"version": 1}},', '{"$set": {"fence": f}},', "mongomock"),
    # Only a write refused at the URL state after its links went in (another holder wrote the state
    # meanwhile), and not written again, tells it apart: the token keeps the refused write's links.
    "the Mongo store keeps the links of a write refused at the URL state": Mutant(
        MONGO_WRITE, "            if write_id is not None:\n                deltas[LINKS_KEY]",
        "            if False:\n                deltas[LINKS_KEY]", "mongomock"),
    "the Mongo store reads the URL's calls as its streak": Mutant(
        MONGO_DOCS, 'streak=int(doc.get("streak", 0)),', 'streak=int(doc.get("attempts", 0)),', "mongomock"),
    # Only a retry naming tokens tells it apart.
    "the Mongo selection among tokens takes every status": Mutant(
        MONGO_QUERIES, '{"address": {"$in": list(addresses)}, "status": {"$in": list(statuses)},',
        '{"address": {"$in": list(addresses)},', "mongomock"),
    # ---------------------------------------------------------------- retry selection and live
    "the default retry never reopens error": Mutant(
        CANDIDATES, "wanted = {FetchStatus.ERROR, FetchStatus.PENDING}", "wanted = {FetchStatus.PENDING}"),
    # Only a retry whose limit is not the default (50), with more due elements than the smaller of the two.
    "a retry's limit is ignored": Mutant(
        CANDIDATES, "return CandidateQuery(wanted, due_by(now, min_interval), limit, among, unsupported)",
        "return CandidateQuery(wanted, due_by(now, min_interval), DEFAULT_LIMIT, among, unsupported)"),
    # Only a default retry while paid calls are off (with a usable generator) tells it apart.
    "the default retry takes unsupported only when paid calls are on": Mutant(
        CANDIDATES, "    if usable_platforms:\n        wanted.add(FetchStatus.UNSUPPORTED)",
        "    if enable_paid:\n        wanted.add(FetchStatus.UNSUPPORTED)"),
    # Only a live event for a stored token holding a due element that is neither pending nor error.
    "the live path takes every due element whatever its status": Mutant(
        PROCESSOR, "if el.status in REALTIME and el.due_by(moment)]", "if el.status in REALTIME or el.due_by(moment)]"),
}
