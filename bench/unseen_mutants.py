"""How many mutants the model test alone kills among mutants it was NOT built against: a measure of
the model, not a test (CI runs the project's own list, test_support/mutants.py, in test_mutants.py).

    python bench/unseen_mutants.py [--batch fresh15|fresh14|fresh13|fresh12|fresh11|fresh10|fresh9|fresh8|fresh7|fresh6|fresh5|fresh4|fresh3|fresh2|fresh|old] [--jobs 1|2] [--examples 250] [--only NAME ...]
                                   [--list] [--record]

Each mutant is one plausible wrong rule (one line changed) of the state machine, the back-off policy,
the dedupe gate, the call guard, the spend check, the write refusal both stores apply, a store, or
the paths that carry their rules (fresh10 reaches the run's memory and driver, the live feed and reconcile;
fresh11 the lock backends, the engine's wiring, the graph contract and the tokens' raw values; fresh12,
fresh13, fresh14 and fresh15 sample the documented rules across the engine, any file allowed, at most 4 per
file);
none is in the project's list. Each batch was written blind of the model test (its model, steps,
walks, table and tests) from the production code and docs alone, none is equivalent (a comment above a
mutant says when only some settings or interleavings tell it apart), and none repeats a mutant of the
project's list or of an earlier batch, nor yields the same source as one (test_unseen_mutants.py). Sixteen
batches:

- `fresh15` (the default, `FRESH15` in bench/unseen_fresh15.py): 50 mutants written blind last on
  2026-12-07, measured once on its first run (24 of 50).
- `fresh14` (`FRESH14` in bench/unseen_fresh14.py): 50 mutants written blind earlier on
  2026-12-07, measured once on its first run (26 of 50); seen since.
- `fresh13` (`FRESH13` in bench/unseen_fresh13.py): 49 mutants written blind earlier on
  2026-12-07, measured once on its first run (23 of 49); seen since.
- `fresh12` (`FRESH12` in bench/unseen_fresh12.py): 46 mutants written blind earlier on
  2026-12-07, measured once on its first run (27 of 46); seen since.
- `fresh11` (`FRESH11` in bench/unseen_fresh11.py): 50 mutants written blind earlier on
  2026-12-07, measured once on its first run (19 of 50); seen since (30 of its 31 survivors promoted).
- `fresh10` (`FRESH10` in bench/unseen_fresh10.py): 50 mutants written blind earlier on
  2026-12-07, measured once on its first run (28 of 50); seen since.
- `fresh9` (`FRESH9` in bench/unseen_fresh9.py): 50 mutants written blind earlier on
  2026-12-07, measured once on its first run (26 of 50); seen since.
- `fresh8` (`FRESH8` in bench/unseen_fresh8.py): 50 mutants written blind earlier on 2026-12-07,
  measured once on its first run (32 of 50); seen since.
- `fresh7` (`FRESH7` in bench/unseen_fresh7.py): 50 mutants written blind earlier on 2026-12-07,
  measured once on its first run (28 of 50); seen since.
- `fresh6` (`FRESH6` in bench/unseen_fresh6.py): 50 mutants written blind on 2026-12-06, measured
  once on its first run (39 of 50); seen since.
- `fresh5` (`FRESH5` in bench/unseen_fresh5.py): 44 mutants written earlier that day the same way,
  measured once on its first run (30 of 44); seen since.
- `fresh4` (`FRESH4` in bench/unseen_fresh4.py): 47 mutants written earlier that day the same way,
  measured once on its first run (37 of 47); seen since.
- `fresh3` (`FRESH3` in bench/unseen_fresh3.py): 43 mutants written earlier that day from the
  production code and docs/architecture.md alone; seen since, it stays for its history.
- `fresh2` (`FRESH2` in bench/unseen_fresh2.py): 40 mutants written earlier that day the same way.
  Those improving the model have seen them since; it stays for its history.
- `fresh` (`FRESH`): 38 mutants written earlier that day the same way. Those improving the model have
  seen them since, so its figure no longer measures anything unseen; it stays for its history.
- `old` (`UNSEEN`): the first batch, 29 mutants, seen since as well; kept for its history.

Each runs as the project's mutants run (test_mutants.py's `model_alone`: the model test alone,
derandomized, CI's sizes but `--examples` per mutant, no shrinking, first failure kills), `--jobs` at
a time (at most 2: a survivor runs every example, 1-7 min). It prints each verdict, a table, and the
figure "killed k of n (p %)"; `--record` writes the table into bench/RESULTS.md (section
`unseen-<batch>`, with the commit, date and load, as bench/run.py does). A survivor is a rule the model
does not check yet (or, where its comment says so, a case the model never reaches): once the model
checks it, the mutant joins the project's list (`PROMOTED` in test_mutants.py) and a new batch is
written blind.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import _results  # noqa: E402  (bench/ is on the path when run as a script)
from unseen_fresh2 import FRESH2  # noqa: E402  (bench/ is on the path, as for _results)
from unseen_fresh3 import FRESH3  # noqa: E402
from unseen_fresh4 import FRESH4  # noqa: E402
from unseen_fresh5 import FRESH5  # noqa: E402
from unseen_fresh6 import FRESH6  # noqa: E402
from unseen_fresh7 import FRESH7  # noqa: E402
from unseen_fresh8 import FRESH8  # noqa: E402
from unseen_fresh9 import FRESH9  # noqa: E402
from unseen_fresh10 import FRESH10  # noqa: E402
from unseen_fresh11 import FRESH11  # noqa: E402
from unseen_fresh12 import FRESH12  # noqa: E402
from unseen_fresh13 import FRESH13  # noqa: E402
from unseen_fresh14 import FRESH14  # noqa: E402
from unseen_fresh15 import FRESH15  # noqa: E402

from test_support.mutants import (  # noqa: E402
    CALL_GUARD,
    DEDUPE,
    MACHINE,
    MONGO_DOCS,
    MONGO_QUERIES,
    MONGO_STATES,
    MONGO_WRITE,
    MUTANTS,
    POLICY,
    REFUSAL,
    SPEND_CHECK,
    SQLITE_WRITE,
    Mutant,
)

UNSEEN: dict[str, Mutant] = {
    # ---------------------------------------------------------------- the state machine
    "a better answer stands past its window": Mutant(
        MACHINE, "        before.answered_at is None or now - before.answered_at < rules.ttl\n    )", "        True\n    )"),
    "a timed-out call counts even when an answer came after it": Mutant(
        MACHINE, "streak = live_streak(before, opened, rules) + (0 if answered_after else 1)",
        "streak = live_streak(before, opened, rules) + 1"),
    "a streak expires a tick late": Mutant(
        MACHINE, "if state.streak and state.attempted_at is not None and now - state.attempted_at >= rules.ttl:",
        "if state.streak and state.attempted_at is not None and now - state.attempted_at > rules.ttl:"),
    "the engine failures may reach one past the budget": Mutant(
        MACHINE, "    if s.engine_failures >= rules.max_attempts:\n        return _adopt(",
        "    if s.engine_failures > rules.max_attempts:\n        return _adopt("),
    "a spent streak is called once more": Mutant(
        MACHINE, "    if streak >= rules.max_attempts:\n        return _adopt(",
        "    if streak > rules.max_attempts:\n        return _adopt("),
    "a named retry pays again for a URL called since it selected": Mutant(
        MACHINE, "if forced and not called and (fresh is None", "if forced and (fresh is None"),
    # ---------------------------------------------------------------- the back-off policy
    "the back-off has no cap": Mutant(
        POLICY, "return min(self.cap, self.base * factor) if factor < 1e6 else self.cap", "return self.base * factor"),
    # ---------------------------------------------------------------- the call guard
    "a paid request leaves after the lock was lost": Mutant(
        CALL_GUARD, "if paid and not self._lease.confirm():", "if False:"),
    "a request past its retention is resumed": Mutant(
        CALL_GUARD, "if self._clock() - request.submitted_at >= retention:", "if False:"),
    # ---------------------------------------------------------------- the spend check
    "a resumed request's polls are never new spending, nor anything else": Mutant(
        SPEND_CHECK, "return paid and not (service in POLLS_ON_PAID_CLIENT and self._holds_open())",
        "return paid and not self._holds_open()"),
    "a vetoed request keeps its budget slot": Mutant(
        SPEND_CHECK, "            if taken_at is not None:\n                self._give_back(", "            if False:\n                self._give_back("),
    # ---------------------------------------------------------------- the write refusal (both stores)
    # ---------------------------------------------------------------- the SQLite store
    "the SQLite store forgets the answer": Mutant(
        SQLITE_WRITE, "None if s.answer is None else s.answer.value, opt_dt_to_text(s.answered_at)",
        "None, opt_dt_to_text(s.answered_at)"),
    "the SQLite store's zero-call write lowers the state's fence": Mutant(
        SQLITE_WRITE, "UPDATE url_states SET fence = max(fence, ?) WHERE url = ?", "UPDATE url_states SET fence = ? WHERE url = ?"),
    "the SQLite store forgets the attempts": Mutant(
        SQLITE_WRITE, "s.status.value, opt_dt_to_text(s.attempted_at), s.attempts,",
        "s.status.value, opt_dt_to_text(s.attempted_at), 0,"),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    "the Mongo store forgets the answer's source": Mutant(
        MONGO_WRITE, '"source_token": s.source_token, "answer"', '"source_token": None, "answer"', "mongomock"),
    "the Mongo store forgets the open call": Mutant(
        MONGO_WRITE, '"open_call": _open_call_out(s.open_call),', '"open_call": None,', "mongomock"),
    "the Mongo store's paid-request write accepts a lower fence": Mutant(
        MONGO_STATES, 'url,\n            fence,\n            {\n                "$set": {\n                    "fence": fence,\n                    "request"',
        'url,\n            2**62,\n            {\n                "$set": {\n                    "fence": fence,\n                    "request"',
        "mongomock"),
    "the Mongo store reads no replaced call": Mutant(
        MONGO_DOCS, "replaced=_open_call_in({", "replaced=None and _open_call_in({", "mongomock"),
    "the Mongo store's state write ignores the version": Mutant(
        MONGO_QUERIES, '        flt["version"] = expect_version if expect_version else {"$exists": False}\n',
        "        pass\n", "mongomock"),
}

FRESH: dict[str, Mutant] = {
    # Written on 2026-12-06 from the production code and docs/architecture.md alone, blind of the model
    # test and its machinery (nobody improving the model has seen them). Where a mutant changes behaviour
    # only under some settings or interleavings, its comment says which: none is equivalent.
    # ---------------------------------------------------------------- the state machine
    "a URL called in the very millisecond of the selection counts as not called since": Mutant(
        MACHINE, "state.attempted_at >= as_stored(since)", "state.attempted_at > as_stored(since)"),
    "a named retry leaves an element whose URL holds the same fresh answer": Mutant(
        MACHINE, "(fresh is None or rank(fresh[0]) <= rank(status))", "(fresh is None or rank(fresh[0]) < rank(status))"),
    "a named answer beside a young open call is overwritten by a back-off error": Mutant(
        MACHINE, "        if element.status in ABSORBING:\n            return Decision(Act.LEAVE, element.status, detail=f\"{detail}; kept",
        "        if False:\n            return Decision(Act.LEAVE, element.status, detail=f\"{detail}; kept"),
    # Only a REUSE / ADOPT meeting a timed-out open call: the count is then made by every later holder
    # again and never written, and the ledger never enters the unanswered call.
    "a timed-out call counted by a no-call decision is not written": Mutant(
        MACHINE, "if settled is not state and decision.act is not Act.LEAVE:", "if False:"),
    # Only when a holder that wrote its record over a timed-out call died too (deaths).
    "the timed-out calls a dead holder's record carried are never counted": Mutant(
        MACHINE, "        before = settle(before, now, rules) or before\n", "        before = before\n"),
    "a timed-out call is not counted among the URL's calls": Mutant(
        MACHINE, '"attempts": before.attempts + 1,', '"attempts": before.attempts,'),
    "a failed call in the very microsecond of a stored answer is not counted": Mutant(
        MACHINE, "failed_before_answer = before.answered_at is not None and before.answered_at > now",
        "failed_before_answer = before.answered_at is not None and before.answered_at >= now"),
    # Only for an answer no call stood behind (a URL shape that needs no fetch).
    "an answer no call stood behind gets an anchor and expires": Mutant(
        MACHINE, "    answered_at = now if outcome.called else None\n", "    answered_at = now\n"),
    "a better answer that stands keeps its old anchor": Mutant(
        MACHINE, "answered_at = now if outcome.called else before.answered_at", "answered_at = before.answered_at"),
    "a failed call is not counted among the URL's calls": Mutant(
        MACHINE, "before, streak=streak, attempts=before.attempts + 1,", "before, streak=streak, attempts=before.attempts,"),
    "a failed call leaves the engine failures as they were": Mutant(
        MACHINE, "attempted_at=_last_call(before, now), engine_failures=0,",
        "attempted_at=_last_call(before, now), engine_failures=before.engine_failures,"),
    "an element exhausts one failed call early": Mutant(
        MACHINE, "resolve_final_status(streak - 1, FetchStatus.ERROR", "resolve_final_status(streak, FetchStatus.ERROR"),
    # No unit test kills it (2026-12-06): a URL holding a saved two-step request whose next attempt fails in
    # our code before any request loses the request id, and the holder after it submits (pays) anew; the
    # table says an open request survives failed attempts.
    "an engine failure drops the open paid request": Mutant(
        MACHINE, "engine_failures=engine_failures,\n                                      request=_request_after(before, outcome))",
        "engine_failures=engine_failures,\n                                      request=None)"),
    "a URL due at the run's very moment is not called": Mutant(
        MACHINE, "return due is None or due <= due_by(", "return due is None or due < due_by("),
    "the stored status ignores the engine failures": Mutant(
        MACHINE, "if streak >= rules.max_attempts or state.engine_failures >= rules.max_attempts:",
        "if streak >= rules.max_attempts:"),
    # ---------------------------------------------------------------- the back-off policy and the dedupe gate
    # Only with a growing back-off (SOCIAL_RECORDING_BACKOFF_GROWTH > 1): flat, every wait is the base.
    "the back-off grows one failure early": Mutant(
        POLICY, "factor = self.growth ** min(streak - 1, 64)", "factor = self.growth ** min(streak, 64)"),
    # Only with a run interval other than the base (a retry's `min_interval_minutes`).
    "a run's interval moves due times the wrong way": Mutant(
        POLICY, "return now + (backoff.base - run_interval)", "return now + (run_interval - backoff.base)"),
    "an element exhausts one failed call late": Mutant(
        POLICY, "if current_attempts + 1 >= max_attempts:", "if current_attempts >= max_attempts:"),
    # Only for an answer no call stood behind (no anchor).
    "an answer without an anchor is never reused": Mutant(
        DEDUPE, "if state.answered_at is not None and now - state.answered_at >= ttl:",
        "if state.answered_at is None or now - state.answered_at >= ttl:"),
    # ---------------------------------------------------------------- the call guard
    # No unit test kills it (2026-12-06): at exactly `submitted_at + retention` the request is the
    # provider's no more, and polling it instead of submitting costs a failed call of the streak.
    "a request on its retention's last tick is resumed": Mutant(
        CALL_GUARD, "if self._clock() - request.submitted_at >= retention:",
        "if self._clock() - request.submitted_at > retention:"),
    # Only when a two-step paid call is submitted over a timed-out open call (a dead holder's).
    "a saved submission drops the timed-out call its record carried": Mutant(
        CALL_GUARD, "kept=None if self.opened is None else self.opened.replaced,", "kept=None,"),
    "an open call is recorded without its holder's fence": Mutant(
        CALL_GUARD, "fence=self._lease.fence, unit_price_usd=", "fence=0, unit_price_usd="),
    # ---------------------------------------------------------------- the spend check
    # Only for accounts whose two-step calls poll on the paid client (their polls enter the ledger).
    "a poll is entered in the ledger as new spending": Mutant(
        SPEND_CHECK, "        self._new.value = new\n", "        self._new.value = paid\n"),
    "every paid request of an account that polls is free": Mutant(
        SPEND_CHECK, "return paid and not (service in POLLS_ON_PAID_CLIENT and self._holds_open())",
        "return paid and not (service in POLLS_ON_PAID_CLIENT or self._holds_open())"),
    # ---------------------------------------------------------------- the write refusal (both stores)
    "a write with the stored fence itself is refused": Mutant(
        REFUSAL, "if stored_fence > fence:", "if stored_fence >= fence:"),
    # The SQLite store decides with the whole rule; the Mongo store repeats checks 3 and 4 in its filters.
    "a URL write is checked against the element alone": Mutant(
        REFUSAL, "return element_refusal(element, fence) or state_refusal(state, fence, expect_version)",
        "return element_refusal(element, fence)"),
    # ---------------------------------------------------------------- the SQLite store
    # Only when two holders interleave: a write decided before another holder's open call lands over it.
    "the SQLite store's open-call and paid-request writes leave the version": Mutant(
        SQLITE_WRITE, "{updates}, version = url_states.version + 1", "{updates}, version = url_states.version"),
    # Only against a stale holder (paused past its lease): the state's fence falls back to 0.
    "the SQLite store's state write leaves the state at fence 0": Mutant(
        SQLITE_WRITE, "s.source_token, write.fence, None if req is None", "s.source_token, 0, None if req is None"),
    "the SQLite spend ledger keeps only the last write's requests": Mutant(
        SQLITE_WRITE, "DO UPDATE SET requests = requests + excluded.requests,", "DO UPDATE SET requests = excluded.requests,"),
    "the SQLite store dates the element due at its recording": Mutant(
        SQLITE_WRITE, "dt_to_text(e.next_due), write.address", "dt_to_text(e.checked_at), write.address"),
    # ---------------------------------------------------------------- the Mongo store (its code over mongomock)
    # Only when two holders interleave, as its SQLite twin.
    "the Mongo store's open-call write leaves the version": Mutant(
        MONGO_STATES, '"open_call": _open_call_out(call), "updated_at": utcnow()},\n                "$inc": {"version": 1},',
        '"open_call": _open_call_out(call), "updated_at": utcnow()},\n                "$inc": {"version": 0},',
        "mongomock"),
    # Only when a write removes another holder's open call (timed out, or fenced out).
    "the Mongo store never enters a removed open call as spent": Mutant(
        MONGO_STATES, "self._enter_unanswered(url, fence, _open_call_in(before), kept)",
        "self._enter_unanswered(url, fence, None, kept)", "mongomock"),
    "the Mongo store forgets the last call": Mutant(
        MONGO_WRITE, '"status": s.status.value, "attempted_at": _opt_utc(s.attempted_at),',
        '"status": s.status.value, "attempted_at": None,', "mongomock"),
    "the Mongo store forgets the URL's calls": Mutant(
        MONGO_WRITE, '"attempts": s.attempts, "fence": f,', '"attempts": 0, "fence": f,', "mongomock"),
    "the Mongo store reads an answer's time without its microseconds": Mutant(
        MONGO_DOCS, "    return value + timedelta(microseconds=int(rest))", "    return value", "mongomock"),
    "the Mongo store reads the answer's time as the last call": Mutant(
        MONGO_DOCS, 'attempted_at=_opt_utc(doc.get("attempted_at")),\n        attempts',
        'attempted_at=_opt_utc(doc.get("answered_at")),\n        attempts', "mongomock"),
    # Only when a holder writes its element a second time under one fence (a merge after a stale write).
    "the Mongo store's element claim refuses its own fence": Mutant(
        MONGO_QUERIES, '"fence": {"$lte": fence}, "status": {"$ne": KEPT_STATUS.value}}',
        '"fence": {"$lt": fence}, "status": {"$ne": KEPT_STATUS.value}}', "mongomock"),
    "the Mongo store selects an element only once it is past due": Mutant(
        MONGO_QUERIES, '{"status": status, "due_at": {"$lte": due_by}, "platform": {"$ne": None}},',
        '{"status": status, "due_at": {"$lt": due_by}, "platform": {"$ne": None}},', "mongomock"),
}
ORDER = ("old", "fresh", "fresh2", "fresh3", "fresh4", "fresh5", "fresh6", "fresh7", "fresh8", "fresh9",
         "fresh10", "fresh11", "fresh12", "fresh13", "fresh14", "fresh15")
"""The batches in the order they were written: each later one must be new against all before it."""
BATCHES: dict[str, dict[str, Mutant]] = dict(zip(ORDER, (
    UNSEEN, FRESH, FRESH2, FRESH3, FRESH4, FRESH5, FRESH6, FRESH7, FRESH8, FRESH9, FRESH10, FRESH11, FRESH12,
    FRESH13, FRESH14, FRESH15), strict=True))
"""Every batch has been measured once on its first run, the one honest measure it gives (`fresh15`, the
last, on 2026-12-07); the earlier ones have been seen since (kept for their history)."""
LAST = ORDER[-1]


def _check_each_batch_is_new() -> None:
    """No batch names or repeats a mutant of the project's list or of a batch written before it
    (test_unseen_mutants.py also refuses the same change written another way)."""
    names, changes = set(MUTANTS), {(m.path, m.original, m.mutant) for m in MUTANTS.values()}
    for batch in ORDER:
        mutants = BATCHES[batch]
        assert not set(mutants) & names, f"a {batch} mutant is already in another list"
        mine = {(m.path, m.original, m.mutant) for m in mutants.values()}
        assert not mine & changes, f"a {batch} mutant repeats one"
        names, changes = names | set(mutants), changes | mine


_check_each_batch_is_new()


def _verdict(name: str, mutants: dict[str, Mutant], examples: str) -> tuple[str, bool, float, str]:
    """Run the model test alone against one mutant: (name, killed, seconds, the tail of a run that broke)."""
    from social_recording_tests.recording.test_mutants import model_alone

    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="unseen-mutant-") as into:
        proc = model_alone(name, Path(into), examples, mutants)
    out = proc.stdout + proc.stderr
    dead = proc.returncode == 1 and "1 failed" in out
    broke = "" if dead or proc.returncode in (0, 1) else out[-2000:]
    return name, dead, time.monotonic() - started, broke


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--batch", choices=sorted(BATCHES), default=LAST,
                        help=f"{LAST}: the last batch written blind of the model, measured once (default); "
                             f"{', '.join(reversed(ORDER[:-1]))}: earlier batches, seen since their first measure")
    parser.add_argument("--examples", default="250", help="examples per mutant (the project's list: 250)")
    parser.add_argument("--jobs", type=int, default=1, choices=(1, 2),
                        help="mutants run at once (a survivor runs every example: 1-7 min each)")
    parser.add_argument("--only", nargs="*", help="these mutants only")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--record", action="store_true",
                        help="write the table into bench/RESULTS.md (its `unseen-<batch>` section)")
    args = parser.parse_args(argv)
    mutants = BATCHES[args.batch]
    if args.list:
        print("\n".join(f"{name}\t{m.path}" for name, m in mutants.items()))
        return 0
    names = args.only or list(mutants)
    unknown = [n for n in names if n not in mutants]
    if unknown:
        parser.error(f"not in the {args.batch} batch: {unknown}")
    started_at, load_before, clock = _results.now(), _results.load_text(), time.monotonic()
    rows: dict[str, tuple[bool, float]] = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for done in as_completed([pool.submit(_verdict, n, mutants, args.examples) for n in names]):
            name, dead, took, broke = done.result()
            rows[name] = (dead, took)
            print(f"{'killed  ' if dead else 'SURVIVED'} {name} ({took:.0f} s)", flush=True)
            if broke:
                print(broke, flush=True)
    killed = sum(dead for dead, _ in rows.values())
    survived = [n for n in names if not rows[n][0]]
    figure = f"the model alone killed {killed} of {len(names)} unseen mutants ({100 * killed / len(names):.0f} %)"
    table = [f"== unseen mutants ({args.batch} batch, {args.examples} examples each): {figure} ==",
             f"{'verdict':<9}{'s':>5}  file  mutant"]
    table += [f"{'killed' if rows[n][0] else 'SURVIVED':<9}{rows[n][1]:>5.0f}  {mutants[n].path.removeprefix('social_recording/')}  {n}"
              for n in names]
    print("\n" + "\n".join(table) + "\n")
    print(figure + (f"; survivors: {', '.join(survived)}" if survived else ""))
    if args.record:
        command = ["unseen_mutants.py", "--batch", args.batch, "--jobs", str(args.jobs)]
        if args.examples != "250":
            command += ["--examples", args.examples]
        if args.only:
            command += ["--only", *args.only]
        results = REPO / "bench" / "RESULTS.md"
        run = _results.PartRun(f"unseen-{args.batch}", command, _results.commit_text(REPO, results), started_at,
                               time.monotonic() - clock, load_before, _results.load_text(), "\n".join(table))
        _results.record(results, [run], [])
    return 0


if __name__ == "__main__":
    sys.exit(main())
