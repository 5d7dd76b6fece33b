"""The `fresh4` batch of bench/unseen_mutants.py: mutants written on 2026-12-06 (the fourth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("The per-URL state machine", "Back-off: one due
time", "The dedupe gate", "Fencing", "No payment without a record", "Spend budgets", "Retry selection").
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

FRESH4: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    # Only a URL whose holders meet a not_found and a blocked answer in one window (a named retry of
    # blocked, or two answers merged).
    "blocked outranks not_found in the window": Mutant(
        MACHINE,
        "ANSWERS: tuple[FetchStatus, ...] = (FetchStatus.OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, "
        "FetchStatus.INVALID)",
        "ANSWERS: tuple[FetchStatus, ...] = (FetchStatus.OK, FetchStatus.BLOCKED, FetchStatus.NOT_FOUND, "
        "FetchStatus.INVALID)"),
    # Only a streak whose last call and the URL's last answer are far apart (or a URL never answered).
    "a spent streak expires with the last answer, not the last call": Mutant(
        MACHINE,
        "    if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "    if state.streak and state.answered_at is not None and now - state.answered_at >= rules.ttl:"),
    # Only two holders in a row that died with their paid calls open (the second wrote its record over
    # the first's): the carried one is never counted.
    "a timed-out call's carried calls are not counted": Mutant(
        MACHINE,
        '    before = state.model_copy(update={"open_call": call.replaced})',
        '    before = state.model_copy(update={"open_call": None})'),
    # Only a named retry of exhausted whose call brings back a shape the generator cannot read.
    "a named answer re-examined that read nothing becomes unsupported": Mutant(
        MACHINE,
        "    if element.status in ABSORBING:  # a forced re-examination that learned nothing keeps its answer",
        "    if element.status in REUSABLE:  # a forced re-examination that learned nothing keeps its answer"),
    # Only a REUSE or ADOPT decision that found a dead holder's paid call past its timeout.
    "a recording without a call does not write the timed-out call it counted": Mutant(
        MACHINE,
        "        None if decision.settled is None else _as_next(decision.settled),",
        "        None,"),
    "an element already error adopting a back-off is left as it was": Mutant(
        MACHINE,
        "    if element.status is status and status in ABSORBING:",
        "    if element.status is status:"),
    # Only a run whose interval differs from the back-off's base (a retry with min_interval_minutes).
    "the machine's back-off ignores the run's interval": Mutant(
        MACHINE,
        "    return due is None or due <= due_by(now, rules.min_interval, rules.backoff)",
        "    return due is None or due <= now"),
    # Only a call answering worse in exactly the instant the window's better answer expires.
    "a better answer still stands in the instant it expires": Mutant(
        MACHINE,
        "        before.answered_at is None or now - before.answered_at < rules.ttl\n    )",
        "        before.answered_at is None or now - before.answered_at <= rules.ttl\n    )"),
    # Only a named retry of exhausted that cannot call (paid calls off, a spend budget, a rate wait).
    "a named exhausted element that could not be called takes the reason's status": Mutant(
        MACHINE,
        "    if element.status in ABSORBING:\n"
        '        return Transition(_kept(element, state, now, rules, f"{outcome.detail}; no call made"), closed)',
        "    if element.status in REUSABLE:\n"
        '        return Transition(_kept(element, state, now, rules, f"{outcome.detail}; no call made"), closed)'),
    "a URL with engine failures stands at error": Mutant(
        MACHINE,
        "    return FetchStatus.ERROR if streak else FetchStatus.PENDING",
        "    return FetchStatus.ERROR if streak or state.engine_failures else FetchStatus.PENDING"),
    # Only with a back-off growth above 1, and a URL whose stored streak has expired.
    "an element's due time grows with an expired streak": Mutant(
        MACHINE,
        "    streak = 0 if after is None else live_streak(after, now, rules)",
        "    streak = 0 if after is None else after.streak"),
    # ---------------------------------------------------------------- the dedupe gate
    # Only a platform whose answers are never handed over (Telegram).
    "a platform's answers are reused whatever its descriptor says": Mutant(
        MACHINE,
        "    if not rules.reusable:\n        return None\n    hit",
        "    hit"),
    "the reuse window runs from the URL's last call, not its answer": Mutant(
        DEDUPE,
        "    if state.answered_at is not None and now - state.answered_at >= ttl:",
        "    if state.attempted_at is not None and now - state.attempted_at >= ttl:"),
    # ---------------------------------------------------------------- the back-off policy
    # Only with a back-off growth above 1 whose waits reach the cap.
    "a growing back-off passes its cap": Mutant(
        POLICY,
        "        return min(self.cap, self.base * factor) if factor < 1e6 else self.cap",
        "        return self.base * factor if factor < 1e6 else self.cap"),
    "due by a run means recorded a run interval before now": Mutant(
        POLICY,
        "        return now + (backoff.base - run_interval)",
        "        return now - run_interval"),
    "the failed call that spends the budget leaves the element error": Mutant(
        POLICY,
        "    if current_attempts + 1 >= max_attempts:",
        "    if current_attempts + 1 > max_attempts:"),
    # ---------------------------------------------------------------- the call guard
    # Only a holder whose lease ran out unknown to it (paused past its TTL, its renewal not failed yet).
    "a paid request trusts the local lease flag": Mutant(
        CALL_GUARD,
        "        if paid and not self._lease.confirm():",
        "        if paid and self._lease.lost:"),
    # Only a holder whose lease is lost between the ownership check and its open call's write.
    "a paid call goes out when its record was fenced": Mutant(
        CALL_GUARD,
        "        if not result.applied:\n"
        '            raise CallVetoed(f"a newer holder of the URL wrote first; the paid {provider} call is left to it")',
        "        if not result:\n"
        '            raise CallVetoed(f"a newer holder of the URL wrote first; the paid {provider} call is left to it")'),
    # Only a two-step paid call (urlscan) whose holder dies while polling after its submission was saved.
    "every paid request of a call writes an open call": Mutant(
        CALL_GUARD, "        if self.opened is not None:\n", "        if False:\n"),
    # ---------------------------------------------------------------- the spend check
    # Only the account whose two-step call polls on the paid client (urlscan).
    "a paid-client poller's submissions are never new spending": Mutant(
        SPEND_CHECK,
        "        return paid and not (service in POLLS_ON_PAID_CLIENT and self._holds_open())",
        "        return paid and service not in POLLS_ON_PAID_CLIENT"),
    # ---------------------------------------------------------------- the spend ledger
    # Only a holder writing its open call over a timed-out one (a holder that died with its call open).
    "a carried call is entered when it is carried and again when it goes": Mutant(
        SPEND,
        "    still = set(kept.chain()) if kept is not None else set()",
        "    still = {kept} if kept is not None else set()"),
    # Only a holder that died with a poll of a resumed two-step request open (urlscan).
    "a dead holder's poll is entered as spent": Mutant(
        SPEND,
        "            for call in stored.chain() if call.fence < fence and call not in still and call.new_spending]",
        "            for call in stored.chain() if call.fence < fence and call not in still]"),
    # Only a holder that died with its paid call open.
    "an unanswered call is entered as answered": Mutant(
        SPEND,
        "                      unanswered=call.requests)", "                      unanswered=0)"),
    # Only three holders in a row whose paid calls stayed open (two carried under the third's record).
    "an open call carries one timed-out call, not all": Mutant(
        MODELS,
        "        return (self,) if self.replaced is None else (self, *self.replaced.chain())",
        "        return (self,) if self.replaced is None else (self, self.replaced)"),
    # ---------------------------------------------------------------- the spend budget's counters
    # Only a request vetoed after its budget admitted it, given back in a later UTC day (or month).
    "a slot is given back to the periods of the give-back": Mutant(
        SPEND_BUDGET,
        '            self._ask(lambda: self.counters.give_back(self._keys(account, at)), f"giving back to the {account} budget")',
        '            self._ask(lambda: self.counters.give_back(self._keys(account, self._clock())), '
        'f"giving back to the {account} budget")'),
    # Only a budget whose day and month limits differ (or one of them unset), met within a day or across days.
    "a budget's day and month limits are swapped": Mutant(
        SPEND_BUDGET,
        "        day, month = (UNBOUNDED if (n := budget.limit(p)) is None else n for p in PERIODS)",
        "        month, day = (UNBOUNDED if (n := budget.limit(p)) is None else n for p in PERIODS)"),
    # ---------------------------------------------------------------- one attempt
    # Only a holder that dies after saving a two-step submission, before its outcome is written.
    "a saved submission enters nothing in the ledger": Mutant(
        ATTEMPT,
        "                                      unentered=self._spend_line)",
        "                                      unentered=lambda: None)"),
    # Only with a back-off growth above 1: an element adopting a URL's streak of 2 or more without a call.
    "a recording without a URL write is due one base interval later": Mutant(
        ATTEMPT,
        "                               due_at=element_due_at(transition, state, self._now, self._rules))",
        "                               due_at=element_due_at(transition, None, self._now, self._rules))"),
    # ---------------------------------------------------------------- the write refusal
    # Only a holder of a lower fence writing between another holder's read and its write (SQLite then
    # applies the write; Mongo's filter still refuses it, after the write touched the element's links).
    "a URL write is refused by fences alone": Mutant(
        REFUSAL,
        "    return element_refusal(element, fence) or state_refusal(state, fence, expect_version)",
        "    return element_refusal(element, fence) or state_refusal(state, fence, None)"),
    # ---------------------------------------------------------------- the SQLite store
    # Only a URL whose state row existed before its answer (an earlier answer, or a paid call's open call).
    "the SQLite store keeps a URL's first anchor": Mutant(
        SQLITE_WRITE,
        '"answer = excluded.answer, answered_at = excluded.answered_at, streak = excluded.streak, "',
        '"answer = excluded.answer, streak = excluded.streak, "'),
    # Only a holder of a lower fence writing between another holder's read and its write.
    "the SQLite store restarts a URL state's version at every write": Mutant(
        SQLITE_WRITE,
        '"paid_requests = url_states.paid_requests + excluded.paid_requests, version = url_states.version + 1",',
        '"paid_requests = url_states.paid_requests + excluded.paid_requests, version = excluded.version",'),
    # Only a two-step submission saved by a holder that wrote its open call over a timed-out one.
    "the SQLite store's saved submission drops the call it carried": Mutant(
        SQLITE_WRITE,
        '"open_call": None if kept is None else kept.model_dump_json()}, kept, spend)',
        '"open_call": None}, None, spend)'),
    # Only an open call or submission of a holder whose lease was lost, written after a newer holder's.
    "the SQLite store fences a URL state's own writes by its version": Mutant(
        SQLITE_WRITE,
        'row = conn.execute("SELECT fence, open_call FROM url_states WHERE url = ?", [url]).fetchone()',
        'row = conn.execute("SELECT version, open_call FROM url_states WHERE url = ?", [url]).fetchone()'),
    # Only a ledger day with more than one unanswered entry.
    "the SQLite ledger keeps a day's last unanswered count": Mutant(
        SQLITE_WRITE,
        '"cost_usd = cost_usd + excluded.cost_usd, unanswered = unanswered + excluded.unanswered",',
        '"cost_usd = cost_usd + excluded.cost_usd, unanswered = excluded.unanswered",'),
    "the SQLite store reads an element's due time as its last recording": Mutant(
        SQLITE_ROWS,
        "        due_at=_checked_dt(due_at),",
        "        due_at=_checked_dt(checked_at),"),
    # Only a retry meeting an element in the very instant it is due.
    "the SQLite selection takes an element only past due": Mutant(
        SQLITE_SELECTION,
        'f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND due_at <= ? "\n        f"AND platform IS NOT NULL',
        'f"SELECT {_CANDIDATE_COLS} FROM token_urls WHERE status = ? AND due_at < ? "\n        f"AND platform IS NOT NULL'),
    # Only a retry among given tokens in the very instant an element is due.
    "the SQLite selection among tokens takes an element only past due": Mutant(
        SQLITE_SELECTION,
        'AND +status IN ({_marks(len(statuses))}) AND +due_at <= ? AND platform IS NOT NULL",',
        'AND +status IN ({_marks(len(statuses))}) AND +due_at < ? AND platform IS NOT NULL",'),
    # ---------------------------------------------------------------- the retry selection and live
    # Only a retry whose interval differs from the back-off's base.
    "the retry selection ignores the run's interval": Mutant(
        CANDIDATES,
        "    return CandidateQuery(wanted, due_by(now, min_interval), limit, among, unsupported)",
        "    return CandidateQuery(wanted, now, limit, among, unsupported)"),
    # Only an unsupported element whose shape could not be read (cause unparseable) on a platform with a
    # generator.
    "the default retry takes unsupported whatever its cause": Mutant(
        CANDIDATES,
        "        unsupported: frozenset[str] | None = frozenset(p.value for p in usable_platforms)",
        "        unsupported: frozenset[str] | None = None"),
    # Only a live run meeting a stored token whose pending or error element is not due yet.
    "live reopens an element before it is due": Mutant(
        PROCESSOR,
        "        return [el.url for el in doc.social_urls if el.status in REALTIME and el.due_by(moment)]",
        "        return [el.url for el in doc.social_urls if el.status in REALTIME]"),
    # ---------------------------------------------------------------- the Mongo store
    # Only a holder writing its open call over a timed-out one, then dying or being read again.
    "the Mongo store forgets the calls an open call carries": Mutant(
        MONGO_DOCS,
        '            "replaced": _open_call_out(call.replaced)}',
        '            "replaced": None}', "mongomock"),
    # Only a failed call and an answer of one URL within one millisecond.
    "the Mongo store keeps an answer's time to the millisecond": Mutant(
        MONGO_DOCS,
        '    return {"answered_at": value, "answered_at_us": value.microsecond % 1000}',
        '    return {"answered_at": value, "answered_at_us": None}', "mongomock"),
    # Only a holder that died with its paid call open (its unanswered call entered at no cost).
    "the Mongo store reads an open call's price as nothing": Mutant(
        MONGO_DOCS,
        '                    unit_price_usd=float(call.get("unit_price_usd", 0.0)),',
        "                    unit_price_usd=0.0,", "mongomock"),
    # Only a two-step submission refused by a newer holder's fence (its requests are entered by the
    # holder that removes its open call, and here a second time).
    "the Mongo store enters a refused submission's requests": Mutant(
        MONGO_STATES,
        "        if applied and spend is not None:\n            self._add_spend(spend)",
        "        if spend is not None:\n            self._add_spend(spend)", "mongomock"),
    # Only a two-step submission saved by a holder that wrote its open call over a timed-out one.
    "the Mongo store's saved submission drops the call it carried": Mutant(
        MONGO_STATES,
        '                    "open_call": _open_call_out(kept),',
        '                    "open_call": None,', "mongomock"),
    "the Mongo store names the writer as the answer's source": Mutant(
        MONGO_WRITE,
        '"source_token": s.source_token, "answer": None if s.answer is None else s.answer.value,',
        '"source_token": write.address, "answer": None if s.answer is None else s.answer.value,', "mongomock"),
    # Only a retry taking unsupported elements of a platform whose generator now exists, in the very
    # instant one is due.
    "the Mongo selection of one platform's unsupported takes them only past due": Mutant(
        MONGO_QUERIES,
        '         "due_at": {"$lte": due_by}},\n        _CANDIDATE_PROJECTION,\n        _FAIR_SORT,',
        '         "due_at": {"$lt": due_by}},\n        _CANDIDATE_PROJECTION,\n        _FAIR_SORT,', "mongomock"),
}
