"""The `fresh10` batch of bench/unseen_mutants.py: mutants written on 2026-12-07 (the tenth blind batch),
blind of the model test (its model, steps, walks, table and tests were not read), from the production
code, docs/architecture.md and docs/operations.md alone ("Statuses", "Recording one URL", "The per-URL
state machine", "Back-off: one due time", "Fencing", "No payment without a record", "Spend budgets",
"The dedupe gate", "Reconcile", "Retry selection", "Live", "Runs tell the truth").
Written and checked as every batch is (bench/unseen_mutants.py); a comment above a mutant says when only
some settings or interleavings tell it apart. Nine batches had mined the state machine, the policy and
the stores' writes line by line, so this one reaches further along the paths that carry their rules:
the run's memory and driver, the live feed and the reconcile window, the links a reuse copies, the
shared selection ranges and the text form of a SQLite time.
"""

from __future__ import annotations

from test_support.mutants import (
    ATTEMPT,
    CALL_GUARD,
    CANDIDATES,
    CODEC,
    CONCURRENCY,
    LIVE_FEED,
    MACHINE,
    MODELS,
    MONGO_DOCS,
    MONGO_LINKS,
    MONGO_SELECT,
    MONGO_STATES,
    MONGO_WRITE,
    OUTCOMES,
    PROCESSOR,
    RECONCILE,
    RETRY,
    RUN_DRIVER,
    RUN_STATE,
    SPEND,
    SPEND_BUDGET,
    SQLITE_GRAPH,
    SQLITE_ROWS,
    SQLITE_SELECT,
    SQLITE_WRITE,
    STATUS,
    TELEGRAM_SPEC,
    URL_RECORDER,
    Mutant,
)

FRESH10: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    # Only a holder that died with its paid call open tells it apart: the call is counted as made when a
    # later holder finds it timed out (its back-off runs from then; an answer given after it went out
    # no longer spares the streak).
    "a timed-out call is counted as made when it is found": Mutant(
        MACHINE, "opened = call.started_at", "opened = now"),
    # Only a no-call recording that closes a request past its retention while the URL's stored status
    # has gone stale (its answer expired since the last write) tells it apart.
    "a write closing an expired request keeps the URL's old status": Mutant(
        MACHINE, "closed = (_with_status(replace(before, request=request), now, rules)",
        "closed = (replace(before, request=request)"),
    # Only a URL holding an open paid request (a two-step call that failed after its submission) tells
    # it apart: the recording meant to resume it writes nothing and fails.
    "a decision to resume is not a call": Mutant(
        MACHINE, "return self.act in (Act.CALL, Act.RESUME)", "return self.act is Act.CALL"),
    # ---------------------------------------------------------------- statuses, the live path
    "the live path reopens only pending": Mutant(
        STATUS, "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING})",
        "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.PENDING})"),
    "the live path reopens unsupported": Mutant(
        STATUS, "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING})",
        "REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING, FetchStatus.UNSUPPORTED})"),
    # Only a retry's element recorded by another run between the selection and the token lock tells it
    # apart (the live path hands over no selection): it is recorded again.
    "a recording judges the element as its token's document holds it, not as selected": Mutant(
        URL_RECORDER, "if selected is None and (el := token.element(url)) is not None:",
        "if (el := token.element(url)) is not None:"),
    # Only two tokens holding one URL, recorded at once, tell it apart.
    "the URL lock is taken per token": Mutant(
        URL_RECORDER, "self._locks.hold_within(URL_LOCK_PREFIX + url,",
        "self._locks.hold_within(URL_LOCK_PREFIX + address + url,"),
    # Only a token lock held by a holder that crashed (its lock expiring by its TTL) tells it apart: the
    # run's second look gives up before the lock expires.
    "a run's second look gives up before a crashed holder's token lock expires": Mutant(
        PROCESSOR, "TOKEN_LOCK_WAIT_S = TOKEN_LOCK_TTL_S + 15.0", "TOKEN_LOCK_WAIT_S = TOKEN_LOCK_TTL_S - 15.0"),
    # Only a token lock lost before a URL of the token starts, where its URLs run one at a time (a token
    # of one URL, or one URL per token at once).
    "a token's URLs are still recorded after its token lock is lost": Mutant(
        PROCESSOR, "                if stop():\n                    break\n", ""),
    # Only a provider whose calls overlap past its concurrency bound tells it apart.
    "a provider takes one call more than its concurrency bound": Mutant(
        CONCURRENCY, "while lane.in_flight >= lane.bound:", "while lane.in_flight > lane.bound:"),
    # Only a token found locked out (another worker holding it) tells it apart.
    "a run never looks again at a locked-out token": Mutant(
        RUN_DRIVER, "if not locked or self.token_lock_wait <= 0 or self.stopped():", "if True:"),
    # Only two accounts in one run, one of which says its credit or quota is gone, tell it apart.
    "one account's spent credit stops every account's calls": Mutant(
        RUN_STATE, "return account in self._exhausted_accounts", "return bool(self._exhausted_accounts)"),
    # Only an element that already held the absorbing status it is recorded with tells it apart: the run
    # reports it as converged.
    "a run counts an element that stays absorbing as converged": Mutant(
        OUTCOMES, "return isinstance(self.status, FetchStatus) and self.status in ABSORBING and self.status != self.previous",
        "return isinstance(self.status, FetchStatus) and self.status in ABSORBING"),
    # Only a Telegram URL held by several tokens tells it apart: its answer is handed on.
    "a Telegram answer is handed to another holder": Mutant(
        TELEGRAM_SPEC, "    reusable=False,  # the key is a username", "    reusable=True,  # the key is a username"),
    # ---------------------------------------------------------------- the live feed, the reconcile window
    "the live feed leaves out a token at the investor threshold": Mutant(
        LIVE_FEED, "if t.investor_count < threshold:", "if t.investor_count <= threshold:"),
    # Only a token whose trade at the cursor's instant was already handed out tells it apart.
    "the live feed hands out a trade it already launched": Mutant(
        LIVE_FEED, "            if cursor.already_launched(t.address, ts):\n                continue\n", ""),
    # Only a token that traded more than once in the range read tells it apart.
    "the live feed keeps a token's first trade of the range, not its latest": Mutant(
        LIVE_FEED, "if prev is None or (prev.last_transfer_at is not None and ts > prev.last_transfer_at):",
        "if prev is None:"),
    "the reconcile leaves out a token at the AF floor": Mutant(
        RECONCILE, "if t.investor_count >= min_af_count else None", "if t.investor_count > min_af_count else None"),
    # Only a token stored between the window's read and its recording (a live run meanwhile).
    "the reconcile records again the tokens stored since its window was read": Mutant(
        RECONCILE, "targets=tuple(t for t in window.targets if t.address not in stored)", "targets=window.targets"),
    # ---------------------------------------------------------------- the attempt
    # Only a generator reporting an unsafe redirect tells it apart.
    "an unsafe redirect is a transient failure": Mutant(
        ATTEMPT, "    ErrorCode.UNSAFE_REDIRECT: FetchStatus.BLOCKED,\n", ""),
    "an unreadable shape is a failed call": Mutant(
        ATTEMPT, "return done(Result.UNREADABLE, detail=detail)", "return done(Result.FAILED, detail=detail)"),
    # Only a failure before any request left (a transport error before sending) tells it apart.
    "a failure before any request leaves the element pending": Mutant(
        ATTEMPT, "                status = FetchStatus.ERROR\n", "                status = FetchStatus.PENDING\n"),
    # Any paid call whose result is written tells it apart: the ledger misses its requests.
    "a call's result is written without its spend": Mutant(
        ATTEMPT, "written = self._write(transition, state, links=links, spend=self._spend_line())",
        "written = self._write(transition, state, links=links, spend=None)"),
    # Only a spooled ok answer written by a recording of another token holding the URL tells it apart.
    "a spooled answer names the writing token as its source": Mutant(
        ATTEMPT, "transition = after(state, element, outcome, decision=decision, address=spooled.address,",
        "transition = after(state, element, outcome, decision=decision, address=self.address,"),
    # Only a paid answer the store could not take (kept in the spool) tells it apart: written again at
    # every later recording of the URL.
    "a spooled answer stays in the spool once written": Mutant(
        ATTEMPT, "            self._spool.done(self.url)\n            log.info(", "            log.info("),
    # ---------------------------------------------------------------- the call guard, the spend check
    # Only a call that sends a free request tells it apart: the run reports it as a paid request.
    "a run counts every request as paid": Mutant(
        CALL_GUARD, "self.paid_sent += int(paid)", "self.paid_sent += 1"),
    # Only a timed-out call that a newer paid call was recorded over tells it apart: billed twice.
    "a timed-out call is billed as soon as a newer call is written over it": Mutant(
        SPEND, "if call.fence < fence and call not in still and call.new_spending]",
        "if call.fence < fence and call.new_spending]"),
    # Only an account with a budget, on a Redis lock backend.
    "the Redis budget admits one request past its limit": Mutant(
        SPEND_BUDGET, "if limit >= 0 and tonumber(redis.call('get', KEYS[i]) or '0') >= limit then",
        "if limit >= 0 and tonumber(redis.call('get', KEYS[i]) or '0') > limit then"),
    # Only a run starting in the millisecond of another holder's call of a URL tells it apart.
    "a run's start is compared with stored calls to the microsecond": Mutant(
        MODELS, "return value.replace(microsecond=value.microsecond - value.microsecond % 1000)", "return value"),
    # ---------------------------------------------------------------- the retry selection
    # Only a retry naming statuses outside the default selection (an absorbing one) tells it apart.
    "a named retry's second look takes the default selection": Mutant(
        RETRY, "            statuses=selection.named,\n", "            statuses=None,\n"),
    # Only more due elements than the limit tell it apart: the run reports none remaining.
    "a retry reports nothing left past its limit": Mutant(
        RETRY, "limit=checked_limit + REMAINING_PROBE,", "limit=checked_limit,"),
    # Only an element recorded by another run between the selection and the job lock tells it apart: it
    # is not reported as changed meanwhile.
    "a retry's second look keeps what another run recorded meanwhile": Mutant(
        RETRY, "unchanged = {(c.address, c.url, c.checked_at) for c in fresh.candidates}",
        "unchanged = {(c.address, c.url, c.checked_at) for c in selection.candidates}"),
    "a retry narrowed to tokens takes every token's due elements": Mutant(
        CANDIDATES, "among = None if not addresses else tuple(dict.fromkeys(addresses))", "among = None"),
    # Only where some platform has a usable generator: the default selection narrows every status to it.
    "the default selection narrows every status to the platforms that gained a generator": Mutant(
        CODEC, "if status is FetchStatus.UNSUPPORTED and unsupported_platforms is not None:",
        "if unsupported_platforms is not None:"),
    # Only a narrowed retry holding back unparseable elements tells it apart: they are counted as waiting.
    "a narrowed retry counts unparseable elements as held back": Mutant(
        CODEC, "return platform in query.unsupported_platforms and cause == Cause.NO_GENERATOR.value",
        "return platform in query.unsupported_platforms"),
    # Only two events of one URL in one millisecond tell it apart (an answer and a failure written in
    # the order opposite to their calls', on SQLite).
    "the SQLite store keeps times to the millisecond": Mutant(
        CODEC, 'return utc.isoformat(timespec="microseconds")', 'return utc.isoformat(timespec="milliseconds")'),
    # Only a limit smaller than what is due, across tokens or statuses.
    "the SQLite selection takes the lowest addresses first": Mutant(
        SQLITE_ROWS, "return (NEVER if c.due_at is None else dt_to_text(c.due_at), c.address, c.url)",
        "return (c.address, c.url, NEVER if c.due_at is None else dt_to_text(c.due_at))"),
    # Only a default retry narrowed to tokens tells it apart (with no usable generator anywhere, it takes
    # nothing at all).
    "a narrowed SQLite default retry takes only unsupported elements": Mutant(
        SQLITE_SELECT, "if c.status is not FetchStatus.UNSUPPORTED or self._unsupported_ok(conn, query, c)",
        "if self._unsupported_ok(conn, query, c)"),
    # Only a default retry while some platform has a usable generator.
    "the Mongo default retry takes unsupported elements of every platform and cause": Mutant(
        MONGO_SELECT, "q_due_by_status(status.value, cutoff, query.limit) if platform is None",
        "q_due_by_status(status.value, cutoff, query.limit) if True", "mongomock"),
    # Only a limit smaller than what is due tells it apart.
    "the Mongo selection takes the latest due first": Mutant(
        MONGO_SELECT, "return sorted(map(_candidate, docs), key=_fair_order)[: query.limit]",
        "return sorted(map(_candidate, docs), key=_fair_order, reverse=True)[: query.limit]", "mongomock"),
    # ---------------------------------------------------------------- the SQLite store
    # Only spend entered outside a result write (an unanswered call, a saved submission's requests).
    "the SQLite ledger misses the spend entered beside a write": Mutant(
        SQLITE_WRITE, "        cls._add_spend(conn, line)\n", ""),
    # Only a URL whose first state is written by an open call or a saved request tells it apart.
    "a URL's first paid call records it as failing": Mutant(
        SQLITE_WRITE, "[url, platform, FetchStatus.PENDING.value, fence, *fields.values(), dt_to_text(utcnow())],",
        "[url, platform, FetchStatus.ERROR.value, fence, *fields.values(), dt_to_text(utcnow())],"),
    # Any reuse of an ok answer tells it apart: the token copies its own (no) links.
    "the SQLite reuse copies the token's own links": Mutant(
        SQLITE_GRAPH, "rows = conn.execute(*q_links_by_token_entry(source, url)).fetchall()",
        "rows = conn.execute(*q_links_by_token_entry(address, url)).fetchall()"),
    # ---------------------------------------------------------------- the Mongo store
    # Only a zero-call write (paid off, no generator, a reuse) on a URL without a state yet.
    "the Mongo element-only write on no state is refused as stale": Mutant(
        MONGO_WRITE, "elif write.expect_version:", "elif write.expect_version is not None:", "mongomock"),
    # Only a stale holder racing a newer one between the refusal's read and the claim tells it apart.
    "the Mongo store claims an element whatever fence holds it": Mutant(
        MONGO_WRITE, "claimed = elements.update_one(element_filter(write.address, write.url, f), {\"$set\": {\"fence\": f}})",
        "claimed = elements.update_one({\"address\": write.address, \"url\": write.url}, {\"$set\": {\"fence\": f}})",
        "mongomock"),
    # Only two holders racing to insert a URL's first state tell it apart.
    "the Mongo store takes a lost first insert as written": Mutant(
        MONGO_STATES, "            if before is None:\n                return False\n",
        "            if before is None:\n                return True\n", "mongomock"),
    "the Mongo store reads no answer": Mutant(
        MONGO_DOCS, 'answer=FetchStatus(doc["answer"]) if doc.get("answer") else None,', "answer=None,",
        "mongomock"),
    # Only an element holding a cause (a zero-call status, an adopted back-off) that a recording keeps
    # (a named re-examination that learned nothing) tells it apart.
    "the Mongo store reads an element's cause as none": Mutant(
        MONGO_DOCS, 'cause=Cause(cause) if cause else None,\n        detail=el.get("detail"),',
        'cause=None,\n        detail=el.get("detail"),', "mongomock"),
    # Only a newer holder claiming the element between this write's links and its state tells it apart.
    "the Mongo store leaves an older holder's links beside a newer one's": Mutant(
        MONGO_LINKS, 'if current is not None and int(current.get("fence", 0)) > fence:', "if False:", "mongomock"),
    # Any reuse of an ok answer tells it apart: the copies are the source token's again.
    "the Mongo reuse copies links under the source token": Mutant(
        MONGO_LINKS, 'link.model_copy(update={"token_address": address, "created_at": now})',
        'link.model_copy(update={"created_at": now})', "mongomock"),
}
