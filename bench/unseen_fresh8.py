"""The `fresh8` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the eighth blind batch),
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
    SPEND,
    SPEND_BUDGET,
    SPEND_CHECK,
    SQLITE_ROWS,
    SQLITE_SELECT,
    SQLITE_SELECTION,
    SQLITE_WRITE,
    Mutant,
)

FRESH8: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine: decide
    # Any reuse of the window's ok tells it apart: the element is recorded ok without the source token's links.
    "a reuse of the window's ok copies no links": Mutant(
        MACHINE, "                    copy_links_from=decision.source_token),",
        "                    copy_links_from=None),"),
    # Only a named retry of an answer whose URL was called after its selection (so not re-examined), with a
    # better answer in the window, tells it apart: the element keeps its answer instead of taking the better.
    "an answered element never takes the window's better answer": Mutant(
        MACHINE, "if fresh is not None and (status not in ABSORBING or rank(fresh[0]) > rank(status)):",
        "if fresh is not None and status not in ABSORBING:"),
    # Only a URL whose streak is one short of the budget, met again past its back-off, tells it apart.
    "a streak one call short of the budget is adopted as spent": Mutant(
        MACHINE, "    if streak >= rules.max_attempts:\n        return _adopt(element, FetchStatus.EXHAUSTED, None,",
        "    if streak + 1 >= rules.max_attempts:\n        return _adopt(element, FetchStatus.EXHAUSTED, None,"),
    # Only a failure streak whose last call is more than the back-off's cap (a day by default) but less than
    # the reuse window old tells it apart.
    "a failure streak expires with the back-off's cap": Mutant(
        MACHINE, "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.backoff.cap:"),
    # ---------------------------------------------------------------- the state machine: settle, after, the stored status
    # Any paid call whose result is written tells it apart: its record, read back from the store, is never
    # the very object the attempt holds, so it stays open and is counted once more when it times out.
    "a call's result leaves its own record open": Mutant(
        MACHINE, "if own_call is not None and state is not None and state.open_call == own_call:",
        "if own_call is not None and state is not None and state.open_call is own_call:"),
    # Only a URL whose spent streak expired (its last call older than the reuse window) and that is
    # written again without a call tells it apart: the stored status still says exhausted.
    "the stored status keeps an expired streak": Mutant(
        MACHINE, "    streak = live_streak(state, now, rules)\n    if streak >= rules.max_attempts or state.engine_failures",
        "    streak = state.streak\n    if streak >= rules.max_attempts or state.engine_failures"),
    # Only an open call counted whose URL's failure streak had already expired when the call was opened (its
    # last call older than the reuse window) tells it apart: the old streak comes back with the count.
    "a timed-out call revives its URL's expired streak": Mutant(
        MACHINE, "streak = live_streak(before, opened, rules) + (0 if answered_after else 1)",
        "streak = before.streak + (0 if answered_after else 1)"),
    # Only an engine failure after the attempt found its URL's saved request past its provider's retention.
    "an engine failure keeps a request past its retention": Mutant(
        MACHINE, "next_state = _with_status(replace(before, engine_failures=engine_failures,\n"
        "                                      request=_request_after(before, outcome)), now, rules)",
        "next_state = _with_status(replace(before, engine_failures=engine_failures,\n"
        "                                      request=before.request), now, rules)"),
    "the stored status misses spent engine failures by one": Mutant(
        MACHINE, "if streak >= rules.max_attempts or state.engine_failures >= rules.max_attempts:\n        return FetchStatus",
        "if streak >= rules.max_attempts or state.engine_failures > rules.max_attempts:\n        return FetchStatus"),
    # Only a named re-examination whose call read nothing (a shape the generator cannot read) tells it apart:
    # the element keeps its answer but not the call it cost.
    "a re-examination that read nothing is not counted on the element": Mutant(
        MACHINE, "return Transition(NextElement(element.status, attempts, attempted_at, element.cause,",
        "return Transition(NextElement(element.status, element.attempts, element.attempted_at, element.cause,"),
    # Only a call that resumed a saved two-step request and then failed tells it apart: the request is
    # dropped, so the next holder submits (pays) anew.
    "a failed call drops the request it resumed": Mutant(
        MACHINE, "engine_failures=0,\n        request=_request_after(before, outcome))",
        "engine_failures=0,\n        request=outcome.submitted)"),
    # ---------------------------------------------------------------- back-off and due times
    # Only with the default settings' back-off maximum and a growing back-off that reaches it.
    "the back-off's default maximum is half a day": Mutant(
        POLICY, "DEFAULT_BACKOFF_MAX_MINUTES = 24 * 60", "DEFAULT_BACKOFF_MAX_MINUTES = 12 * 60"),
    # Only with the default growth and a streak of two or more failed calls.
    "the back-off doubles by default": Mutant(
        POLICY, "DEFAULT_BACKOFF_GROWTH = 1.0", "DEFAULT_BACKOFF_GROWTH = 2.0"),
    # Only with a configured growth other than 1 and a streak of two or more.
    "the configured growth is ignored": Mutant(
        POLICY, "return cls(growth=growth, cap=timedelta(minutes=max_minutes))",
        "return cls(cap=timedelta(minutes=max_minutes))"),
    # ---------------------------------------------------------------- the dedupe gate
    # Only an answer older than 14 days tells it apart.
    "the reuse window is fourteen weeks": Mutant(
        DEDUPE, "DEDUPE_TTL = timedelta(days=14)", "DEDUPE_TTL = timedelta(weeks=14)"),
    # Only a fresh `invalid` in the window, met by another holder, tells it apart.
    "an invalid answer is never reused": Mutant(
        DEDUPE, "if state is None or state.answer is None:",
        "if state is None or state.answer is None or state.answer is FetchStatus.INVALID:"),
    # ---------------------------------------------------------------- spend budgets
    # Only a month budget used up in December tells it apart: its reset is named in the past.
    "December's month budget resets in January of the same year": Mutant(
        SPEND, "nxt = d + timedelta(days=1) if period == DAY else date(d.year + (d.month == 12), d.month % 12 + 1, 1)",
        "nxt = d + timedelta(days=1) if period == DAY else date(d.year, d.month % 12 + 1, 1)"),
    # Only a budget with a month limit (or a day limit over more than one day) tells it apart.
    "a budget's month limit is read as its day's": Mutant(
        SPEND, "return self.per_day if period == DAY else self.per_month",
        "return self.per_day if period == DAY else self.per_day"),
    # Only a budget of 0 requests (a period with no paid request allowed) on the SQLite lock backend.
    "the SQLite budget never refuses a limit of zero": Mutant(
        SPEND_BUDGET, "if limits[i] != UNBOUNDED and (0 if row is None else int(row[0])) >= limits[i]:",
        "if limits[i] > 0 and (0 if row is None else int(row[0])) >= limits[i]:"),
    # Only a day budget with requests on more than one day of a month tells it apart.
    "the day's budget counter is keyed by the month": Mutant(
        SPEND_BUDGET, "return counter_key(account, DAY, period_key(DAY, now)),",
        "return counter_key(account, DAY, period_key(MONTH, now)),"),
    # Only a two-step call polling on its paid client (a resumed or submitted request) tells it apart: its
    # polls are not counted among the paid requests sent (the run's count of paid requests).
    "a poll on the paid client is not counted as a paid request sent": Mutant(
        SPEND_CHECK, "self._inner.request_sent(service=service, paid=paid)",
        "self._inner.request_sent(service=service, paid=getattr(self._new, \"value\", False))"),
    # ---------------------------------------------------------------- no payment without a record
    # Only a call sending two or more paid requests whose holder then dies (its record entered as spent
    # by another holder) tells it apart.
    "a later paid request of an open call is not counted on its record": Mutant(
        CALL_GUARD, 'self._record(provider, self.opened.model_copy(update={"requests": self.opened.requests + 1}))',
        "self._record(provider, self.opened)"),
    # Only a URL whose saved request is past its provider's retention, its new call failing before a new
    # submission, tells it apart: the old request stays on the URL.
    "a request past its retention is not closed": Mutant(
        CALL_GUARD, "            self.expired = True\n", "            self.expired = False\n"),
    # ---------------------------------------------------------------- the attempt: what a call brought back
    # Only a redirect to a non-public address tells it apart.
    "an unsafe redirect is recorded not_found": Mutant(
        ATTEMPT, "ErrorCode.UNSAFE_REDIRECT: FetchStatus.BLOCKED,", "ErrorCode.UNSAFE_REDIRECT: FetchStatus.NOT_FOUND,"),
    "a provider's not found is a failed call": Mutant(
        ATTEMPT, "    ErrorCode.NOT_FOUND: FetchStatus.NOT_FOUND,\n", ""),
    # Only a free provider's quota gone earlier in the run, with more URLs of that provider after it.
    "a free provider's spent quota skips its URLs as paid": Mutant(
        ATTEMPT, "return self._not_called(FetchStatus.ERROR, Cause.CREDIT_EXHAUSTED,",
        "return self._not_called(FetchStatus.SKIPPED_PAID, Cause.CREDIT_EXHAUSTED,"),
    # Only a budget whose counter cannot be asked (the lock backend down past its outage bound).
    "a budget that cannot be asked is recorded as used up": Mutant(
        ATTEMPT, "            if exc.reached is None:\n                return done(Result.DEFERRED",
        "            if False:\n                return done(Result.DEFERRED"),
    # ---------------------------------------------------------------- live
    # Only a new token (its first live event) tells it apart: its URLs stay pending for the retry job.
    "a new token's URLs wait for the retry job": Mutant(
        PROCESSOR, "                targets = list(profile.urls)\n", "                targets = []\n"),
    # Only a live event for a stored token whose element falls due within the next base interval.
    "the live path takes what falls due within the hour": Mutant(
        PROCESSOR, "moment = due_by(self._clock(), self._min_interval)",
        "moment = due_by(self._clock(), timedelta(0))"),
    # ---------------------------------------------------------------- retry selection
    # Only a default retry meeting a due `exhausted` element.
    "the default retry reopens exhausted": Mutant(
        CANDIDATES, "wanted = {FetchStatus.ERROR, FetchStatus.PENDING}",
        "wanted = {FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.EXHAUSTED}"),
    # Only a default retry meeting a due `skipped_paid` element (either way round of paid calls).
    "the default retry takes skipped_paid only while paid calls are off": Mutant(
        CANDIDATES, "    if enable_paid:\n        wanted.add(FetchStatus.SKIPPED_PAID)",
        "    if not enable_paid:\n        wanted.add(FetchStatus.SKIPPED_PAID)"),
    # Only a retry naming a token that holds a non-canonical URL (no platform), on SQLite.
    "the SQLite selection among tokens takes non-canonical URLs": Mutant(
        SQLITE_SELECTION, 'f"AND +status IN ({_marks(len(statuses))}) AND +due_at <= ? AND platform IS NOT NULL",',
        'f"AND +status IN ({_marks(len(statuses))}) AND +due_at <= ?",'),
    # Only a retry whose due elements of one status tie on their due time across its limit, on SQLite.
    "the SQLite selection breaks ties at its limit by URL": Mutant(
        SQLITE_SELECTION, '_FAIR_ORDER = "ORDER BY due_at, address, url"', '_FAIR_ORDER = "ORDER BY due_at, url, address"'),
    # Only a retry naming tokens whose due elements exceed its limit, on SQLite.
    "the SQLite selection among tokens ignores the limit": Mutant(
        SQLITE_SELECT, "        return candidates[: query.limit]\n", "        return candidates\n"),
    # Only a retry naming both tokens and the unsupported status, on SQLite.
    "the SQLite selection among tokens never takes a named unsupported": Mutant(
        SQLITE_SELECT, "        if query.unsupported_platforms is None:\n            return True",
        "        if query.unsupported_platforms is None:\n            return False"),
    # Only a default retry meeting an unsupported element of a usable platform whose shape no generator
    # can read (cause unparseable), on Mongo.
    "the Mongo default retry takes unsupported whatever its cause": Mutant(
        MONGO_QUERIES, '{"status": status, "platform": platform, "cause": Cause.NO_GENERATOR.value,',
        '{"status": status, "platform": platform,', "mongomock"),
    # Only a retry naming a token that holds a non-canonical URL (no platform), on Mongo.
    "the Mongo selection among tokens takes non-canonical URLs": Mutant(
        MONGO_QUERIES, '"due_at": {"$lte": due_by}, "platform": {"$ne": None}},\n        _CANDIDATE_PROJECTION,\n    )',
        '"due_at": {"$lte": due_by}},\n        _CANDIDATE_PROJECTION,\n    )', "mongomock"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    # Only a stale holder meeting an element a newer holder wrote `ok` tells it apart: the refusal says
    # kept ok instead of fenced.
    "an ok element is kept before the element's fence is checked": Mutant(
        REFUSAL, "    fenced = fence_refusal(element.fence, fence)\n    if fenced is not None:\n        return fenced\n"
        "    if element.status == KEPT_STATUS.value:\n        return WriteOutcome(WriteResult.OK_KEPT)\n",
        "    if element.status == KEPT_STATUS.value:\n        return WriteOutcome(WriteResult.OK_KEPT)\n"
        "    fenced = fence_refusal(element.fence, fence)\n    if fenced is not None:\n        return fenced\n"),
    # ---------------------------------------------------------------- the SQLite store
    # Only two holders interleaving: a holder of a lower fence (another token's, paused past its lease)
    # writing after a newer holder's result that opened no paid call.
    "the SQLite URL write leaves the state's fence": Mutant(
        SQLITE_WRITE, '"source_token = excluded.source_token, fence = excluded.fence, "',
        '"source_token = excluded.source_token, "'),
    "the SQLite ledger enters every request as unanswered": Mutant(
        SQLITE_WRITE, "[line.account, line.day, line.requests, line.cost_usd, line.unanswered])",
        "[line.account, line.day, line.requests, line.cost_usd, line.requests])"),
    "the SQLite store reads an element's calls as none": Mutant(
        SQLITE_ROWS, "        attempts=attempts,\n        checked_at=_checked_dt(checked_at),",
        "        attempts=0,\n        checked_at=_checked_dt(checked_at),"),
    # Only a retry whose due elements tie on their due time across its limit, on SQLite.
    "the SQLite fair order breaks ties by URL": Mutant(
        SQLITE_ROWS, "return (NEVER if c.due_at is None else dt_to_text(c.due_at), c.address, c.url)",
        "return (NEVER if c.due_at is None else dt_to_text(c.due_at), c.url, c.address)"),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    # Only two holders writing a URL's first state at once tell it apart: the loser of the insert is
    # refused whatever its fence.
    "the Mongo first insert that loses a race is refused": Mutant(
        MONGO_STATES, "        except DuplicateKeyError:\n            before = coll.find_one_and_update(flt, update, return_document=ReturnDocument.BEFORE)",
        "        except DuplicateKeyError:\n            return False", "mongomock"),
    # Only a saved submission whose acknowledgement was lost (the store's outage, the save repeated).
    "the Mongo saved submission repeated counts its requests twice": Mutant(
        MONGO_STATES, 'unless={"request.request_id": {"$ne": request.request_id}},', "unless=None,", "mongomock"),
    # Only a UTC day's first paid request on Mongo: its ledger line is never opened, so nothing is entered.
    "the Mongo ledger never opens a day's line": Mutant(
        MONGO_STATES, "                coll.update_one(flt, moves, upsert=True)\n",
        "                coll.update_one(flt, moves)\n", "mongomock"),
    # Only two holders interleaving: a newer holder claims the element between this write's claim and its
    # element update.
    "the Mongo element update is not conditional on its claimed fence": Mutant(
        MONGO_WRITE, '{**key, "fence": f, "status": {"$ne": KEPT_STATUS.value}},',
        '{**key, "status": {"$ne": KEPT_STATUS.value}},', "mongomock"),
    "the Mongo URL write dates the answer at every write": Mutant(
        MONGO_WRITE, "**_answered_at_out(s.answered_at),", "**_answered_at_out(write.now),", "mongomock"),
    # Only a two-step call whose submission was saved and whose call then failed (or a failed call of a URL
    # holding a saved request) tells it apart.
    "the Mongo URL write drops the open paid request": Mutant(
        MONGO_WRITE, '"request": None if req is None else {"provider": req.provider,',
        '"request": None if True else {"provider": req.provider,', "mongomock"),
    # Only a call sending two or more paid requests whose holder dies tells it apart.
    "the Mongo store reads an open call as one request": Mutant(
        MONGO_DOCS, 'requests=int(call.get("requests", 1)),', "requests=1,", "mongomock"),
    "the Mongo store reads no source token": Mutant(
        MONGO_DOCS, 'source_token=doc.get("source_token"),', "source_token=None,", "mongomock"),
}
