"""The `fresh3` batch of bench/unseen_mutants.py: mutants written on 2026-12-06 (the third blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code and docs/architecture.md alone ("The per-URL state machine", "The dedupe gate", "Fencing", "No
payment without a record", "Spend budgets"). The earlier lists were compared mechanically: no mutant
here repeats one of theirs, nor yields the same source as one.

Each is one plausible wrong rule, one place changed. None is equivalent: a comment above a mutant says
when only some settings or interleavings tell it apart (a boundary met at exactly its instant, two
holders interleaving, a holder that died with its paid call open, a back-off growth above 1, a
two-step paid call, a spend budget).
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CALL_GUARD,
    DEDUPE,
    MACHINE,
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    REFUSAL,
    SPEND,
    SPEND_CHECK,
    SQLITE_ROWS,
    SQLITE_WRITE,
    Mutant,
)

FRESH3: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    # Only when an answer was stored in the very instant the timed-out call was opened.
    "an answer in the instant a timed-out call opened spares its streak": Mutant(
        MACHINE, "before.answered_at is not None and before.answered_at > opened",
        "before.answered_at is not None and before.answered_at >= opened"),
    "a timed-out call leaves the URL's last call where it was": Mutant(
        MACHINE, '"attempted_at": last})', '"attempted_at": before.attempted_at})'),
    # Only when a run meets a URL it failed itself and its back-off has passed by the run's "due by" (a
    # retry with an interval below the base): the run calls the URL a second time.
    "a run calls again a URL its own call failed once the back-off allows": Mutant(
        MACHINE, "if streak > 0 and (called or not may_call_again(s, now, rules)):",
        "if streak > 0 and not may_call_again(s, now, rules):"),
    # Only for a URL with an open two-step paid request (a saved submission) that then answers.
    "an answer leaves the paid request open": Mutant(
        MACHINE, "source_token=source, streak=0, engine_failures=0,\n        request=None,",
        "source_token=source, streak=0, engine_failures=0,\n        request=_request_after(before, outcome),"),
    # Only for an answer no request stood behind (a URL shape that needs no fetch, a graph refused
    # before any request).
    "an answer without a call is counted among the URL's calls": Mutant(
        MACHINE, "request=None, attempts=before.attempts + int(outcome.called),",
        "request=None, attempts=before.attempts + 1,"),
    # Only when a call fails while the window holds an ok answer (another holder's, written meanwhile).
    "a failed call beside the window's ok copies no links": Mutant(
        MACHINE, "NextElement(answer, attempts, attempted_at, None, detail, copy_links_from=source)",
        "NextElement(answer, attempts, attempted_at, None, detail)"),
    "an unreadable answer is not counted among the URL's calls": Mutant(
        MACHINE, "attempts=before.attempts + 1,\n                                    attempted_at=_last_call(before, now),",
        "attempts=before.attempts,\n                                    attempted_at=_last_call(before, now),"),
    # Only when an open call has timed out: it still keeps every holder from calling (back-off error).
    "a timed-out open call still holds every call back": Mutant(
        MACHINE, "if decision.calls and settled is not None and settled.open_call is not None:",
        "if decision.calls and state is not None and state.open_call is not None:"),
    # Only for a retry that names a status that is not an answer (error, unsupported, skipped_paid).
    "a named retry forces a call of an element that is no answer": Mutant(
        MACHINE, "forced = request.why is Why.RETRY_NAMED and status in request.named and status in ABSORBING",
        "forced = request.why is Why.RETRY_NAMED and status in request.named"),
    # Only for a two-step paid request found past its provider's retention by an attempt that did not
    # submit a new one (it failed, or our code failed, before the submission): the stored state keeps
    # the dead request, and the next holder finds it past its retention again.
    "a request past its retention stays on the URL": Mutant(
        MACHINE, "return None if outcome.request_expired else before.request", "return before.request"),
    # Only when another run recorded a selected element again with the same status after the selection.
    "a retry takes an element recorded since its selection with the same status for unchanged": Mutant(
        MACHINE, "if selected is not None and (status, element.checked_at) != (selected.status, selected.checked_at):",
        "if selected is not None and status != selected.status:"),
    # ---------------------------------------------------------------- the back-off policy
    # Only with a growing back-off and a streak of 3 or more (at 2 both give `growth`).
    "the back-off grows linearly": Mutant(
        POLICY, "factor = self.growth ** min(streak - 1, 64)", "factor = self.growth * min(streak - 1, 64)"),
    # Only with a growing back-off whose waits reach the configured maximum.
    "the back-off's configured maximum is read in hours": Mutant(
        POLICY, "return cls(growth=growth, cap=timedelta(minutes=max_minutes))",
        "return cls(growth=growth, cap=timedelta(hours=max_minutes))"),
    # Only with a growing back-off (SOCIAL_RECORDING_BACKOFF_GROWTH > 1) and a streak of exactly 2.
    "the second failure waits only the base": Mutant(
        POLICY, "if self.growth == 1.0 or streak <= 1:", "if self.growth == 1.0 or streak <= 2:"),
    # ---------------------------------------------------------------- the dedupe gate
    # Only when a call failed after the answer (the last call is later than the answer's anchor).
    "the reuse window runs from the URL's last call": Mutant(
        DEDUPE, "if state.answered_at is not None and now - state.answered_at >= ttl:",
        "if state.answered_at is not None and now - (state.attempted_at or state.answered_at) >= ttl:"),
    "an ok answer is never reused": Mutant(
        DEDUPE, "if state.answer is FetchStatus.OK and not state.source_token:",
        "if state.answer is FetchStatus.OK:"),
    # ---------------------------------------------------------------- the spend ledger
    # Only for a holder's own open call, removed by its own result write (same fence).
    "a holder's own answered call is entered as unanswered too": Mutant(
        SPEND, "for call in stored.chain() if call.fence < fence and call not in still",
        "for call in stored.chain() if call.fence <= fence and call not in still"),
    # Only when a paid call's answer never came (its holder died or lost the URL with its call open).
    "an unanswered call is entered at no cost": Mutant(
        SPEND, "call.requests, call.requests * call.unit_price_usd,", "call.requests, 0.0,"),
    # ---------------------------------------------------------------- the call guard
    # Only against a stale holder whose lease was lost without it noticing (paused past its TTL).
    "a paid request leaves without the lock being confirmed": Mutant(
        CALL_GUARD, "if paid and not self._lease.confirm():", "if not paid and not self._lease.confirm():"),
    # Only for a two-step paid call whose submission is saved (with its ledger line).
    "a saved submission's requests are entered again with the result": Mutant(
        CALL_GUARD, "if result.applied and spend is not None:", "if not result.applied and spend is not None:"),
    # Only when the submitting holder dies before its result is written: its own call stays open, is
    # counted as failed and entered as unanswered beside the submission's line.
    "a saved submission keeps its own open call": Mutant(
        CALL_GUARD, "kept=None if self.opened is None else self.opened.replaced,", "kept=self.opened,"),
    # Only for a call whose first request is free (a free request before the paid one, or a free
    # platform): its open call is recorded before a request nobody pays for.
    "a free request records an open call": Mutant(
        CALL_GUARD, "if paid and self._record_paid is not None:", "if self._record_paid is not None:"),
    # ---------------------------------------------------------------- the spend check
    # Only with a spend budget on an account whose two-step call polls on the paid client.
    "a poll takes a slot of the spend budget": Mutant(
        SPEND_CHECK, "if new and self._budgets is not None and self._budgets.bounds(service):",
        "if paid and self._budgets is not None and self._budgets.bounds(service):"),
    # Only with a spend budget, a request admitted then vetoed across a UTC day's (or month's) end.
    "a vetoed request's slot is given back to the period of the veto": Mutant(
        SPEND_CHECK, "self._budgets.give_back(service, taken_at)", "self._budgets.give_back(service, self._budgets.now())"),
    # Only with a spend budget that is used up: the URL is left as it was instead of `skipped_paid`.
    "a used-up budget is taken for a budget that cannot be asked": Mutant(
        SPEND_CHECK, "raise SpendHeld(str(reached), reached)", "raise SpendHeld(str(reached))"),
    # ---------------------------------------------------------------- the attempt (outcome, spend line)
    # Only for platforms called without a paid request (free APIs, websites).
    "a call counts as made only when a paid request left": Mutant(
        ATTEMPT, "called = guard.sent > 0", "called = guard.paid_sent > 0"),
    # Only when the provider rate-limits a call after one of its requests left.
    "a rate limit after a request left counts as no call": Mutant(
        ATTEMPT, "if exc.code is ErrorCode.RATE_LIMITED and guard.sent == 0:",
        "if exc.code is ErrorCode.RATE_LIMITED:"),
    # Only for a two-step paid call whose submission was saved with its ledger line.
    "the result's spend line repeats the saved submission's requests": Mutant(
        ATTEMPT, "n = 0 if self._spend is None else self._spend.new_paid - (0 if self._requests is None else self._requests.entered)",
        "n = 0 if self._spend is None else self._spend.new_paid"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    # Only when two holders race a URL's first state (the SQLite store decides with the rule alone).
    "a write made on no state ignores a state written since": Mutant(
        REFUSAL, "if expect_version is not None and state.version != expect_version:",
        "if expect_version and state.version != expect_version:"),
    # Only against a stale holder whose fence is exactly one below the state's.
    "a URL state admits a write one fence below its own": Mutant(
        REFUSAL, "fenced = fence_refusal(state.fence, fence)\n", "fenced = fence_refusal(state.fence, fence + 1)\n"),
    # ---------------------------------------------------------------- the SQLite store
    # Only when a write keeps a timed-out call on the state (a record written over a dead holder's call).
    "the SQLite store enters a kept timed-out call as spent": Mutant(
        SQLITE_WRITE, "self._settle_unanswered(conn, write.url, write.fence, stored_call, s.open_call)",
        "self._settle_unanswered(conn, write.url, write.fence, stored_call, None)"),
    # Only when another holder with a lower fence writes after the paid call is recorded.
    "the SQLite store's paid-call writes leave the state's fence": Mutant(
        SQLITE_WRITE, 'for name in ["fence", *names, "updated_at"])', 'for name in [*names, "updated_at"])'),
    "the SQLite store reads no engine failures": Mutant(
        SQLITE_ROWS, "engine_failures=engine_failures,", "engine_failures=0,"),
    # Only for a retry run: its selection's element and the element read under the lock never agree.
    "the SQLite store reads no element's recording time": Mutant(
        SQLITE_ROWS, "checked_at=_checked_dt(checked_at),\n        due_at", "checked_at=None,\n        due_at"),
    # Only when a failed call follows an answer (the answer is then anchored at that later call).
    "the SQLite store anchors the answer at the URL's last call": Mutant(
        SQLITE_WRITE, "None if s.answer is None else s.answer.value, opt_dt_to_text(s.answered_at), s.streak,",
        "None if s.answer is None else s.answer.value, opt_dt_to_text(s.attempted_at), s.streak,"),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    # Only for a dead holder's poll of a request already paid for (an open call that is no new spending).
    "the Mongo store reads every open call as new spending": Mutant(
        MONGO_DOCS, 'new_spending=bool(call.get("new_spending", True)),', "new_spending=True,", "mongomock"),
    "the Mongo store stores an open call at fence 0": Mutant(
        MONGO_DOCS, '"fence": call.fence, "unit_price_usd"', '"fence": 0, "unit_price_usd"', "mongomock"),
    # Only when two holders interleave: a zero-call write decided on a state another holder moved on.
    "the Mongo store's element-only write ignores the version": Mutant(
        MONGO_WRITE, "state_filter(write.url, f, write.expect_version), {", "state_filter(write.url, f, None), {",
        "mongomock"),
    "the Mongo store dates the element due at its recording": Mutant(
        MONGO_WRITE, '"detail": e.detail, "due_at": ensure_utc(e.next_due),',
        '"detail": e.detail, "due_at": ensure_utc(e.checked_at),', "mongomock"),
    # Only when two holders race: a state written between this holder's read of "no state" and its
    # write (the read's refusal comes first; the filter is the atomic check that remains).
    "the Mongo store's write made on no state matches a state written since": Mutant(
        MONGO_QUERIES, 'flt["version"] = expect_version if expect_version else {"$exists": False}',
        'flt["version"] = expect_version if expect_version else {"$exists": True}', "mongomock"),
    # Only for a selection among given tokens (a live or reconcile run's) meeting an element due at
    # exactly the run's "due by".
    "the Mongo store's selection among tokens skips an element due in its very instant": Mutant(
        MONGO_QUERIES, '"due_at": {"$lte": due_by}, "platform": {"$ne": None}},\n        _CANDIDATE_PROJECTION,\n    )',
        '"due_at": {"$lt": due_by}, "platform": {"$ne": None}},\n        _CANDIDATE_PROJECTION,\n    )', "mongomock"),
    # Only for a write without a call (reuse, adopt, a named re-examination that learned nothing): the
    # element's last call moves to its recording.
    "the Mongo store dates the element's last call at its recording": Mutant(
        MONGO_WRITE, '"attempts": e.attempts, "attempted_at": _opt_utc(e.attempted_at),',
        '"attempts": e.attempts, "attempted_at": _opt_utc(e.checked_at),', "mongomock"),
    # Only when a write keeps a timed-out call on the state (a record written over a dead holder's call).
    "the Mongo store enters a kept timed-out call as spent": Mutant(
        MONGO_STATES, "self._enter_unanswered(url, fence, _open_call_in(before), kept)",
        "self._enter_unanswered(url, fence, _open_call_in(before), None)", "mongomock"),
}
