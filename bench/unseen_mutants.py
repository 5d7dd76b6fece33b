"""How many mutants the model test alone kills among mutants it was NOT built against: a measure of
the model, not a test (CI runs the project's own list, test_support/mutants.py, in test_mutants.py).

    python bench/unseen_mutants.py [--examples 250] [--only NAME ...] [--list]

Each mutant below is one plausible wrong rule (one line changed) of the state machine, the back-off
policy, the call guard, the spend check, the write refusal both stores apply, or a store, written
without looking at what the model checks; none is in the project's list. Each runs as the project's
mutants run (test_mutants.py's `model_alone`: the model test alone, derandomized, CI's sizes but
`--examples` per mutant, no shrinking, first failure kills), one at a time. It prints each verdict and
the figure "killed k of n (p %)"; a survivor is a rule the model does not check yet: once the model
checks it, the mutant moves into the project's list.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from test_support.mutants import MUTANTS, Mutant  # noqa: E402

MACHINE = "social_recording/domain/url_machine.py"
POLICY = "social_recording/domain/policy.py"
CALL_GUARD = "social_recording/recording/call_guard.py"
SPEND_CHECK = "social_recording/recording/spend_check.py"
REFUSAL = "social_recording/store/write_refusal.py"
SQLITE_WRITE = "social_recording/store/sqlite/url_write.py"
MONGO_STATES = "social_recording/store/mongo/url_states.py"
MONGO_WRITE = "social_recording/store/mongo/url_write.py"
MONGO_DOCS = "social_recording/store/mongo/documents.py"
MONGO_QUERIES = "social_recording/store/mongo/queries.py"

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
assert not set(UNSEEN) & set(MUTANTS), "an unseen mutant is in the project's list"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--examples", default="250", help="examples per mutant (the project's list: 250)")
    parser.add_argument("--only", nargs="*", help="these mutants only")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(UNSEEN))
        return 0
    from social_recording_tests.recording.test_mutants import model_alone

    names = args.only or list(UNSEEN)
    killed, survived = 0, []
    for name in names:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="unseen-mutant-") as into:
            proc = model_alone(name, Path(into), args.examples, UNSEEN)
        out = proc.stdout + proc.stderr
        dead = proc.returncode == 1 and "1 failed" in out
        killed += dead
        if not dead:
            survived.append(name)
        print(f"{'killed  ' if dead else 'SURVIVED'} {name} ({time.monotonic() - started:.0f} s)", flush=True)
        if not dead and proc.returncode not in (0, 1):
            print(out[-2000:], flush=True)
    print(f"the model alone killed {killed} of {len(names)} unseen mutants ({100 * killed / len(names):.0f} %)"
          + (f"; survivors: {', '.join(survived)}" if survived else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
