"""The `fresh9` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the ninth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("Recording one URL", "The per-URL state
machine", "Back-off: one due time", "Fencing", "No payment without a record", "Spend budgets", "Retry
selection", "Live").
Written and checked as every batch is (bench/unseen_mutants.py); a comment above a mutant says when only
some settings or interleavings tell it apart.
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CALL_GUARD,
    MACHINE,
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_SELECT,
    MONGO_STATES,
    MONGO_WRITE,
    POLICY,
    PROCESSOR,
    RETRY,
    SPEND,
    SPEND_BUDGET,
    SPOOL,
    SQLITE_ROWS,
    SQLITE_SELECT,
    SQLITE_SELECTION,
    SQLITE_WRITE,
    STATUS,
    URL_RECORDER,
    Mutant,
)

FRESH9: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine: decide
    # Only an exhausted element whose URL's streak no longer counts as spent (expired with the window, or
    # reset by an answer since gone stale) tells it apart: it is called again, or takes an error.
    "an exhausted element reopens once its URL's streak no longer counts": Mutant(
        MACHINE, '    if status in ABSORBING:\n        return Decision(Act.LEAVE, status, detail=f"already',
        '    if status in ABSORBING and status is not FetchStatus.EXHAUSTED:\n'
        '        return Decision(Act.LEAVE, status, detail=f"already'),
    # Only a URL holding an open call past its timeout (a dead or fenced-out holder's) tells it apart: it
    # is never counted, and the URL is never called again (every holder meets the "open" call).
    "a decision never counts a timed-out open call": Mutant(
        MACHINE, "    settled = settle(state, now, rules)\n    decision = _decide(",
        "    settled = state\n    decision = _decide("),
    # Only a non-absorbing element meeting a young open call of its URL tells it apart: it is left
    # unwritten (not dated, so selected again at once) instead of taking error / back-off.
    "an element beside a young open call is left unwritten": Mutant(
        MACHINE, "return replace(_adopt(element, FetchStatus.ERROR, Cause.BACKOFF, detail), settled=decision.settled)",
        "return Decision(Act.LEAVE, element.status, detail=detail)"),
    # Only a failing URL met inside its back-off (or called by this run) tells it apart.
    "a URL inside its back-off leaves its element pending": Mutant(
        MACHINE, "        return _adopt(element, FetchStatus.ERROR, Cause.BACKOFF,\n                      f\"error from {who}",
        "        return _adopt(element, FetchStatus.PENDING, Cause.BACKOFF,\n                      f\"error from {who}"),
    # ---------------------------------------------------------------- the state machine: after
    # Only a call whose record carried a timed-out call (written over a dead holder's), or that meets
    # another timed-out call at its result, tells it apart: that call stays open, uncounted.
    "a call's result leaves the timed-out call it carried open": Mutant(
        MACHINE, "    settled = settle(state, now, rules)\n    transition = _after(",
        "    settled = state\n    transition = _after("),
    "the URL's stored status is never recomputed by a recording": Mutant(
        MACHINE, "    return replace(state, status=url_status(state, now, rules))", "    return state"),
    # ---------------------------------------------------------------- the back-off policy, the live path
    # Only where the budget is left at its default (SOCIAL_RECORDING_MAX_ATTEMPTS unset).
    "the default budget is three failed calls": Mutant(
        POLICY, "DEFAULT_MAX_ATTEMPTS = 5", "DEFAULT_MAX_ATTEMPTS = 3"),
    "the live path reopens skipped_paid": Mutant(
        STATUS, "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING})",
        "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.SKIPPED_PAID})"),
    # Only an element whose last recording made no call (an adopted back-off, a zero-call status) tells it
    # apart: its last call is not its last recording, so the live path takes it as changed by another run.
    "the live path judges an element changed by its last call": Mutant(
        URL_RECORDER, "selected = Selected(el.status, el.checked_at)", "selected = Selected(el.status, el.attempted_at)"),
    # ---------------------------------------------------------------- spend
    # Only an unanswered call that recorded several paid requests (a multi-request call) tells it apart.
    "an unanswered call is billed one request's price": Mutant(
        SPEND, "call.requests, call.requests * call.unit_price_usd,", "call.requests, call.unit_price_usd,"),
    # Only a budget of one paid request per period tells it apart: its period's first request is refused.
    "the SQLite budget counts a fresh period as one request used": Mutant(
        SPEND_BUDGET, "if limits[i] != UNBOUNDED and (0 if row is None else int(row[0])) >= limits[i]:",
        "if limits[i] != UNBOUNDED and (1 if row is None else int(row[0])) >= limits[i]:"),
    # Only a resumed two-step call whose account polls on a free client and that then pays (its request
    # gone at the provider, it starts anew) tells it apart: that payment is never entered if unanswered.
    "a resumed call's new payment is taken for a poll": Mutant(
        CALL_GUARD, "new_spending=not (self.resumed is not None and provider in POLLS_ON_PAID_CLIENT))",
        "new_spending=self.resumed is None)"),
    # Only a paid request whose URL lock is lost right then, before a newer holder wrote the URL state,
    # tells it apart: its record is written before the check refuses it, and that call, never sent, is
    # later counted as failed and entered as spent.
    "a paid call is recorded before its lock is confirmed": Mutant(
        CALL_GUARD,
        "        if paid and not self._lease.confirm():\n"
        "            reason = self._lease.lost_reason or \"the lock backend could not confirm it\"\n"
        "            self.vetoed = f\"URL lock no longer ours right before a paid {service} request ({reason}); nothing sent\"\n"
        "            raise CallVetoed(self.vetoed)\n"
        "        if paid and self._record_paid is not None:\n"
        "            self._record_paid(service)\n",
        "        if paid and self._record_paid is not None:\n"
        "            self._record_paid(service)\n"
        "        if paid and not self._lease.confirm():\n"
        "            reason = self._lease.lost_reason or \"the lock backend could not confirm it\"\n"
        "            self.vetoed = f\"URL lock no longer ours right before a paid {service} request ({reason}); nothing sent\"\n"
        "            raise CallVetoed(self.vetoed)\n"),
    # ---------------------------------------------------------------- the attempt
    "a paid account's spent credit leaves its URLs in error": Mutant(
        ATTEMPT, "return self._not_called(FetchStatus.SKIPPED_PAID, Cause.CREDIT_EXHAUSTED,",
        "return self._not_called(FetchStatus.ERROR, Cause.CREDIT_EXHAUSTED,"),
    "a URL held by its spend budget is recorded error": Mutant(
        ATTEMPT, "return self._not_called(FetchStatus.SKIPPED_PAID, Cause.SPEND_BUDGET, str(exc))",
        "return self._not_called(FetchStatus.ERROR, Cause.SPEND_BUDGET, str(exc))"),
    "a missing generator is recorded error": Mutant(
        ATTEMPT, "return self._not_called(FetchStatus.UNSUPPORTED, Cause.NO_GENERATOR,",
        "return self._not_called(FetchStatus.ERROR, Cause.NO_GENERATOR,"),
    # Only a free provider whose quota ran out earlier in the run tells it apart: it is called again.
    "a free provider's spent quota is asked again": Mutant(
        ATTEMPT, "if self._run.exhausted(provider):", "if paid and self._run.exhausted(provider):"),
    # Only a platform whose answers are never handed over (Telegram: a username changes hands) tells it
    # apart: its window's answer is reused by another holder, and a better one stands against a call's.
    "the attempt hands over every platform's answers": Mutant(
        ATTEMPT, "reusable=CATALOGUE[platform].reusable, backoff=backoff)", "reusable=True, backoff=backoff)"),
    # Only two holders interleaving tells it apart: a call's result met by one stale write is given up.
    "a call's result is given up after one stale write": Mutant(
        ATTEMPT, "STALE_ROUNDS = 5", "STALE_ROUNDS = 1"),
    # Only an answer the store could not take (spooled) and written by a later recording tells it apart.
    "a spooled answer is dated at the recording that writes it": Mutant(
        ATTEMPT, "now=spooled.called_at, rules=self._rules)", "now=self._now, rules=self._rules)"),
    # Only a spooled answer whose call was recorded open (a paid call) tells it apart: its record stays open.
    "a spooled answer does not close its own open call": Mutant(
        SPOOL, "submitted=self.submitted, opened=self.opened)", "submitted=self.submitted, opened=None)"),
    # Only a spooled answer tells it apart: written as an answer no call stood behind (no anchor, no call).
    "a spooled answer is written as one no call stood behind": Mutant(
        SPOOL, "return Outcome(Result.ANSWER, status=self.status, called=True,",
        "return Outcome(Result.ANSWER, status=self.status, called=False,"),
    # ---------------------------------------------------------------- raw values, retry runs
    "a raw value is dropped one attempt late": Mutant(
        PROCESSOR, "if attempts >= self._recorder.max_attempts:", "if attempts > self._recorder.max_attempts:"),
    "a raw value still failing keeps its old check time": Mutant(
        PROCESSOR, '"reason": str(exc)[:400], "checked_at": now})', '"reason": str(exc)[:400], "checked_at": value.checked_at})'),
    "a resolved raw value's URL waits for the next run": Mutant(
        PROCESSOR, "            if doc is not None and doc.element(url) is not None:\n"
        "                self._record_url_isolated(doc, url, run)\n", ""),
    # Only a retry whose `min_interval_minutes` is not the base (60) and recorded without a run given.
    "a retry run backs off by the default interval": Mutant(
        RETRY, "run = run if run is not None else RunState(timedelta(minutes=selection.min_interval_minutes))",
        "run = run if run is not None else RunState()"),
    # Only more due elements than the limit tell it apart: the run takes the probe past its limit too.
    "a retry takes more than its limit": Mutant(
        RETRY, "candidates=tuple(found[:checked_limit]),", "candidates=tuple(found),"),
    # Only a retry naming an absorbing status tells it apart: its elements are left, never re-examined.
    "a named retry is recorded as the default one": Mutant(
        RETRY, "return RunIntent(Why.RETRY_NAMED, since=self.selected_at, named=frozenset(FetchStatus(s) for s in self.named))",
        "return RunIntent(Why.RETRY, since=self.selected_at)"),
    # Only an element recorded by another run between the retry's check and its token lock tells it apart.
    "a retry judges its elements as the token lock finds them": Mutant(
        RETRY, "seen, lock_wait=wait, emit_locked_out=wait > 0)", "None, lock_wait=wait, emit_locked_out=wait > 0)"),
    # Only raw values kept on tokens tell it apart: every one is tried again by every retry run.
    "a retry tries again every raw value, however recently checked": Mutant(
        RETRY, "self._retry_unresolved(selection.selected_at - interval,", "self._retry_unresolved(selection.selected_at,"),
    # ---------------------------------------------------------------- the SQLite store
    # Only a retry among tokens, by default, with an unsupported element of a platform still without a
    # generator while another platform has one.
    "the SQLite selection among tokens takes unsupported of any platform": Mutant(
        SQLITE_SELECT, "return c.platform in query.unsupported_platforms and row is not None and row[0] == Cause.NO_GENERATOR.value",
        "return row is not None and row[0] == Cause.NO_GENERATOR.value"),
    # Only a stored non-canonical URL (no platform) tells it apart: it takes a slot of the limit.
    "the SQLite selection takes non-canonical URLs": Mutant(
        SQLITE_SELECTION, 'f"AND platform IS NOT NULL {_FAIR_ORDER} LIMIT ?",', 'f"{_FAIR_ORDER} LIMIT ?",'),
    # Only a selection whose statuses together hold more due elements than the limit, never-recorded ones
    # among them, tells it apart.
    "the SQLite fair order puts never-recorded elements last": Mutant(
        SQLITE_ROWS, "return (NEVER if c.due_at is None else dt_to_text(c.due_at), c.address, c.url)",
        'return ("9999" if c.due_at is None else dt_to_text(c.due_at), c.address, c.url)'),
    "the SQLite store reads no element's last call": Mutant(
        SQLITE_ROWS, "attempted_at=opt_dt_from_text(attempted_at),\n        attempts=attempts,\n        checked_at",
        "attempted_at=None,\n        attempts=attempts,\n        checked_at"),
    # Only an absorbing element a named retry re-examined without learning anything tells it apart.
    "the SQLite store reads no element's cause": Mutant(
        SQLITE_ROWS, "cause=Cause(cause) if cause else None,\n        detail=detail,\n        fence=fence,",
        "cause=None,\n        detail=detail,\n        fence=fence,"),
    # Only a state write carrying a saved two-step request (a failed call after its submission).
    "the SQLite store's state write loses the saved request's provider": Mutant(
        SQLITE_WRITE, "write.fence, None if req is None else req.provider,", "write.fence, None,"),
    # Only an open call written over a timed-out one (a dead holder's) tells it apart: the carried call
    # is entered as spent at once, and again when the record that carried it goes.
    "the SQLite open-call write keeps nothing it carried": Mutant(
        SQLITE_WRITE, '{"open_call": call.model_dump_json()}, call)', '{"open_call": call.model_dump_json()}, None)'),
    # Only a stale holder writing the URL's state after a newer holder's zero-call write tells it apart.
    "the SQLite store's zero-call write leaves the state's fence": Mutant(
        SQLITE_WRITE, '            else:\n                conn.execute("UPDATE url_states SET fence = max(fence, ?) WHERE url = ?",'
        " [write.fence, write.url])\n",
        "            else:\n                pass\n"),
    "the SQLite store writes the element's status as the URL's": Mutant(
        SQLITE_WRITE, "[write.url, write.platform, s.status.value,", "[write.url, write.platform, write.element.status.value,"),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    # Only a retry among tokens, by default, with an unsupported element whose shape is unreadable.
    "the Mongo selection among tokens takes unsupported whatever its cause": Mutant(
        MONGO_SELECT, '                    doc.get("platform") not in query.unsupported_platforms\n'
        '                    or doc.get("cause") != Cause.NO_GENERATOR.value\n',
        '                    doc.get("platform") not in query.unsupported_platforms\n', "mongomock"),
    # Only a stored non-canonical URL (no platform) tells it apart, as its SQLite twin.
    "the Mongo selection takes non-canonical URLs": Mutant(
        MONGO_QUERIES, '{"status": status, "due_at": {"$lte": due_by}, "platform": {"$ne": None}},',
        '{"status": status, "due_at": {"$lte": due_by}},', "mongomock"),
    # Only two holders racing to write a URL's first state inside one write tells it apart: the later
    # one lands over the other's instead of reading it again.
    "the Mongo store's first state write takes any state": Mutant(
        MONGO_QUERIES, '    if expect_version is not None:\n        flt["version"]',
        '    if expect_version:\n        flt["version"]', "mongomock"),
    "the Mongo store reads a URL's calls as none": Mutant(
        MONGO_DOCS, 'attempts=int(doc.get("attempts", 0)),\n        source_token',
        'attempts=0,\n        source_token', "mongomock"),
    # Only with a growing back-off (flat, every due time is its recording plus the base) and a limit
    # cutting across statuses.
    "the Mongo fair order is by last recording": Mutant(
        MONGO_DOCS, "return (_checked_out(c.due_at), c.address, c.url)",
        "return (_checked_out(c.checked_at), c.address, c.url)", "mongomock"),
    # Only an unanswered call of several requests, or a removed record carrying calls, tells it apart.
    "the Mongo store counts a removed call's requests as one": Mutant(
        MONGO_STATES, '{"$inc": {"paid_requests": sum(x.requests for x in lines)}}',
        '{"$inc": {"paid_requests": len(lines)}}', "mongomock"),
    "the Mongo spend ledger keeps only the last line": Mutant(
        MONGO_STATES, 'moves = {"$inc": {"requests"', 'moves = {"$set": {"requests"', "mongomock"),
    # Any reuse of an ok answer tells it apart: the copied links are never stored.
    "the Mongo store writes no copied links": Mutant(
        MONGO_WRITE, "if write.graph_links is not None or write.copy_links_from is not None:",
        "if write.graph_links is not None:", "mongomock"),
    "the Mongo store writes the element's status as the URL's": Mutant(
        MONGO_WRITE, '"platform": write.platform, "status": s.status.value,',
        '"platform": write.platform, "status": write.element.status.value,', "mongomock"),
    # Only a stale holder writing the URL's state after a newer holder's zero-call write tells it apart.
    "the Mongo store's zero-call write leaves the state's fence": Mutant(
        MONGO_WRITE, '{"$set": {"fence": f}, "$inc": {"version": 1}},', '{"$inc": {"version": 1}},', "mongomock"),
    # Only a state write carrying a saved two-step request (a failed call after its submission).
    "the Mongo store's state write loses the saved request's provider": Mutant(
        MONGO_WRITE, '"request": None if req is None else {"provider": req.provider,',
        '"request": None if req is None else {"provider": None,', "mongomock"),
}
