"""The `fresh2` batch of bench/unseen_mutants.py: 40 mutants written on 2026-12-06, blind of the model
test (its model, steps, walks, table and tests were not read), from the production code and
docs/architecture.md alone ("The per-URL state machine", "Fencing", "No payment without a record",
"Spend budgets", "The dedupe gate"). The earlier lists were not read either; they were compared
mechanically: no mutant here repeats one of theirs, nor yields the same source as one.

Each is one plausible wrong rule, one place changed. None is equivalent: a comment above a mutant says
when only some settings or interleavings tell it apart (a boundary met at exactly its instant, a holder
that died with its paid call open, a back-off growth above 1, a two-step paid call, a spend budget).
"""

from __future__ import annotations

from test_support.mutants import (
    CALL_GUARD,
    DEDUPE,
    MACHINE,
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    REFUSAL,
    SPEND_CHECK,
    SQLITE_ROWS,
    SQLITE_WRITE,
    Mutant,
)

FRESH2: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    # Needs a dead holder's open call found long after it opened: the streak before it was live when it
    # opened but has expired by now (its last call is older than the window at `now`, not at `opened`).
    "a timed-out call's streak is judged at the finding, not at its opening": Mutant(
        MACHINE, "streak = live_streak(before, opened, rules) + (0 if answered_after else 1)",
        "streak = live_streak(before, now, rules) + (0 if answered_after else 1)"),
    # A two-step paid call (submit, then poll) whose poll fails: the request it saved is dropped and the
    # next holder submits (pays) again instead of resuming it.
    "a failed call forgets the request it submitted": Mutant(
        MACHINE, "engine_failures=0,\n        request=_request_after(before, outcome))",
        "engine_failures=0,\n        request=before.request)"),
    # An unreadable answer on a URL whose streak expired (its last call older than the window).
    "an unreadable answer revives an expired streak": Mutant(
        MACHINE, "replace(before, streak=live_streak(before, now, rules), attempts=",
        "replace(before, streak=before.streak, attempts="),
    "the element is exhausted one engine failure late": Mutant(
        MACHINE, "FetchStatus.EXHAUSTED if engine_failures >= rules.max_attempts else",
        "FetchStatus.EXHAUSTED if engine_failures > rules.max_attempts else"),
    # A holder that wrote its record over a dead holder's timed-out call: closing its own record drops
    # the carried call instead of counting it.
    "closing its own record drops the timed-out call it carried": Mutant(
        MACHINE, 'state = state.model_copy(update={"open_call": own_call.replaced})',
        'state = state.model_copy(update={"open_call": None})'),
    # A URL state written 14 days or more after its last failed call (e.g. an engine failure then, or
    # a request closed past its retention): its stored status says error instead of pending.
    "the stored status reads the expired streak": Mutant(
        MACHINE, "return FetchStatus.ERROR if streak else FetchStatus.PENDING",
        "return FetchStatus.ERROR if state.streak else FetchStatus.PENDING"),
    "a call leaves the element's last attempt where it was": Mutant(
        MACHINE, "return element.attempts + 1, now", "return element.attempts + 1, element.attempted_at"),
    # Every answer other than ok: the stored source token names the holder that called.
    "every answer keeps a source token": Mutant(
        MACHINE, "(address if this_answer is FetchStatus.OK else None)", "address"),
    # Only a URL state written at exactly the window's end after its answer's anchor.
    "the stored status keeps an answer at exactly the window's end": Mutant(
        MACHINE, "(anchor is None or now - anchor < rules.ttl)", "(anchor is None or now - anchor <= rules.ttl)"),
    # Only platforms whose answers are never handed over (Telegram).
    "every platform's answers are reused": Mutant(MACHINE, "if not rules.reusable:", "if False:"),
    # A two-step paid call that answers: the request it saved stays on the URL state.
    "an answer leaves the saved request open": Mutant(
        MACHINE, "request=None, attempts=before.attempts + int(outcome.called),",
        "request=before.request, attempts=before.attempts + int(outcome.called),"),
    # A retry naming an answer (e.g. not_found) while the window holds a worse one (blocked), when no
    # call can be made (paid calls off, no generator, a spend budget used up): the element keeps its own.
    "a named answer that learned nothing ignores the window's other answer": Mutant(
        MACHINE, "if window is not None and window[0] is not element.status:", "if False:"),
    # ---------------------------------------------------------------- the back-off policy
    # Only with a back-off growth above 1 (SOCIAL_RECORDING_BACKOFF_GROWTH): every wait is the base.
    "the wait ignores the streak": Mutant(POLICY, "return anchor + self.delay(streak)", "return anchor + self.base"),
    # Only with a back-off growth above 1: every wait after the first failure is at least the cap.
    "the back-off's cap is a floor": Mutant(
        POLICY, "return min(self.cap, self.base * factor)", "return max(self.cap, self.base * factor)"),
    # Only with a configured cap other than 24 h (SOCIAL_RECORDING_BACKOFF_MAX_MINUTES) and a growth above 1.
    "the configured cap is ignored": Mutant(
        POLICY, "return cls(growth=growth, cap=timedelta(minutes=max_minutes))", "return cls(growth=growth)"),
    # ---------------------------------------------------------------- the dedupe gate
    "an anchored answer never expires": Mutant(
        DEDUPE, "now - state.answered_at >= ttl", "state.answered_at - now >= ttl"),
    # A fresh answer with failed calls after it (e.g. a named retry that failed): not handed over.
    "a fresh answer with a failure streak is not reused": Mutant(
        DEDUPE, "if state is None or state.answer is None:", "if state is None or state.answer is None or state.streak:"),
    "an answer without a source token is never reused": Mutant(
        DEDUPE, "if state.answer is FetchStatus.OK and not state.source_token:", "if not state.source_token:"),
    # ---------------------------------------------------------------- the call guard
    # Only an account whose two-step call polls on the paid client, resuming a request saved earlier:
    # its polls are taken as new spending (budget and ledger).
    "a resumed request's polls are new spending": Mutant(
        CALL_GUARD, "self.resumed = request.request_id", "self.resumed = None"),
    # Every paid call: its result no longer closes its own record, so the URL keeps an open call.
    "the attempt forgets the call it recorded": Mutant(
        CALL_GUARD, "        self.opened = call", "        self.opened = None"),
    # Every free platform's call: nothing counts as attempted (no streak, no anchor, no attempts).
    "only paid requests count as sent": Mutant(CALL_GUARD, "self.sent += 1", "self.sent += int(paid)"),
    # Needs a holder that died with its paid call open: the call is entered in the ledger at no cost.
    "an open call carries no price": Mutant(
        CALL_GUARD, "unit_price_usd=UNIT_PRICES.get(provider, 0.0),", "unit_price_usd=0.0,"),
    # Needs a two-step paid call whose holder dies after its submission: each poll records the call
    # again, so an open call is left beside the saved request.
    "every paid request records the call again": Mutant(
        CALL_GUARD, "            if self.submitted_request is None:\n", "            if True:\n"),
    # ---------------------------------------------------------------- the spend check
    # Only with a spend budget: a request under it is held, one past it is sent.
    "the budget's answer is read the wrong way round": Mutant(
        SPEND_CHECK, "if reached is not None:", "if reached is None:"),
    # Only an account with a budget whose two-step call polls on the paid client (web's urlscan): its
    # polls take budget slots (the ledger still leaves them out).
    "polls take budget slots": Mutant(
        SPEND_CHECK, "if new and self._budgets is not None and self._budgets.bounds(service):",
        "if self._budgets is not None and self._budgets.bounds(service):"),
    # Only when the spend counter cannot be asked (its backend down past the outage bound): sent unbudgeted.
    "an unreachable spend counter lets the request go": Mutant(
        SPEND_CHECK, 'raise SpendHeld(f"{service}: not sent, {exc}") from None', "reached = None"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    # Only an element a newer holder recorded while its URL had no state yet (e.g. skipped_paid, no
    # generator), then written by a late holder with a lower fence.
    "the element's fence is not checked": Mutant(
        REFUSAL, "fenced = fence_refusal(element.fence, fence)", "fenced = None"),
    # Only a late holder (its lease taken over) writing after a newer holder wrote the URL's state.
    "the URL state's fence is not checked": Mutant(
        REFUSAL, "fenced = fence_refusal(state.fence, fence)", "fenced = None"),
    # ---------------------------------------------------------------- the SQLite store
    "the URL state's last call is never updated": Mutant(
        SQLITE_WRITE, '"attempted_at = excluded.attempted_at, attempts = excluded.attempts, "',
        '"attempts = excluded.attempts, "'),
    "the URL state's engine failures are never updated": Mutant(
        SQLITE_WRITE, '"engine_failures = excluded.engine_failures, open_call = excluded.open_call, "',
        '"open_call = excluded.open_call, "'),
    "an element's last attempt is its recording": Mutant(
        SQLITE_WRITE, "e.attempts, opt_dt_to_text(e.attempted_at), dt_to_text(e.checked_at),",
        "e.attempts, dt_to_text(e.checked_at), dt_to_text(e.checked_at),"),
    "an element's cause is never written": Mutant(
        SQLITE_WRITE, "None if e.cause is None else e.cause.value, e.detail, write.fence,", "None, e.detail, write.fence,"),
    # Two paid calls of one account on one UTC day: the day's cost is the last call's.
    "the ledger's day keeps only the last call's cost": Mutant(
        SQLITE_WRITE, '"cost_usd = cost_usd + excluded.cost_usd, ', '"cost_usd = excluded.cost_usd, '),
    # Any call after an answer: the anchor is read as the last call, so a failure revives an expired answer.
    "the answer's anchor is read from the last call": Mutant(
        SQLITE_ROWS, "answered_at=opt_dt_from_text(answered_at),", "answered_at=opt_dt_from_text(attempted_at),"),
    # ---------------------------------------------------------------- the Mongo store
    # A holder that wrote its record over a dead holder's timed-out call: that call is entered as spent
    # when the record is written, and again when the record goes.
    "an open call's record does not keep the call it carries": Mutant(
        MONGO_STATES, "            None,\n            call,\n        )", "            None,\n            None,\n        )",
        "mongomock"),
    # Every paid call: its result write meets its own open call's version first (STALE), then applies.
    "the ledger moves with a refused state write": Mutant(
        MONGO_WRITE, "if committed and write.spend is not None:", "if write.spend is not None:", "mongomock"),
    # Every paid call: its own record is read without its fence, so it is not its own any more.
    "an open call is read without its fence": Mutant(
        MONGO_DOCS, 'fence=int(call.get("fence", 0)),', "fence=0,", "mongomock"),
    # Only answers whose time has a millisecond part (microsecond >= 1000).
    "an answer's time keeps its milliseconds twice": Mutant(
        MONGO_DOCS, '"answered_at_us": value.microsecond % 1000}', '"answered_at_us": value.microsecond}', "mongomock"),
    "the engine failures are read from the streak": Mutant(
        MONGO_DOCS, 'engine_failures=int(doc.get("engine_failures", 0)),', 'engine_failures=int(doc.get("streak", 0)),',
        "mongomock"),
    "an equal fence cannot write the URL state": Mutant(
        MONGO_QUERIES, 'flt: dict[str, Any] = {"url": url, "fence": {"$lte": fence}}',
        'flt: dict[str, Any] = {"url": url, "fence": {"$lt": fence}}', "mongomock"),
}
