"""The per-URL state machine's model test, run longer than CI runs it: an exploration, not a test.

    python bench/model_test.py [--examples 1000] [--steps 60] [--runs 3] [--mongo] [--no-deaths] [--mutant NAME]

CI runs the model test derandomized (the same 200 examples of 40 steps every time). Here every run
draws new examples, so each run explores interleavings, answers and clock steps CI has not seen. A
counterexample is printed as the steps that reproduce it (Hypothesis shrinks it first) and the
script exits 1: the steps become a named test in test_url_machine_regressions.py, and the fix
makes it pass. `--mongo` runs the machine on the Mongo store over the wire instead (FerretDB, as
the tests start it: SOCIAL_RECORDING_TEST_FERRETDB names its binary). What the runs did is printed
at the end (examples, provider calls, late-holder writes, how often each rule of the machine fired,
...), so a run that explored little shows. `--mutant NAME` runs the model alone against one of the
project's mutants (test_support/mutants.py; `--mutant list` names them): a copy of the package with
that one line changed, first on the path, on the store whose code it changes.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.append(str(REPO))  # after PYTHONPATH: a mutant's copy of the package (--mutant) comes first


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=1000, help="examples per run")
    parser.add_argument("--steps", type=int, default=60, help="steps per example")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--mongo", action="store_true", help="on the Mongo store over the wire (FerretDB)")
    parser.add_argument("--mongomock", action="store_true", help="on the Mongo store's code over mongomock")
    parser.add_argument("--no-deaths", dest="deaths", action="store_false",
                        help="no holder dies (by default holders die after admission, the open call, the "
                             "submission or the answer, as in CI)")
    parser.add_argument("--deaths", dest="deaths", action="store_true", default=True,
                        help="the default: kept for older command lines")
    parser.add_argument("--log", action="store_true", help="show the engine's log lines (thousands per run)")
    parser.add_argument("--mutant", help="run against this mutant of test_support/mutants.py ('list': name them)")
    args = parser.parse_args(argv)
    if args.mutant is not None:
        return _against_mutant(args.mutant, argv or sys.argv[1:])
    if args.examples < 1 or args.steps < 1 or args.runs < 1:
        parser.error("--examples, --steps and --runs must be >= 1")
    # Read by the test module when it is imported: the sizes, and "not derandomized".
    os.environ["SOCIAL_RECORDING_MODEL_EXAMPLES"] = str(args.examples)
    os.environ["SOCIAL_RECORDING_MODEL_STEPS"] = str(args.steps)
    os.environ["SOCIAL_RECORDING_MODEL_SEED"] = "random"
    os.environ["SOCIAL_RECORDING_MODEL_DEATHS"] = "1" if args.deaths else "0"
    if not args.log:
        # The defects the model provokes log a traceback each: kept off the terminal, but still handed
        # to the model's own handler, which fails the run on any exception it did not provoke.
        logging.getLogger("social_recording").propagate = False

    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from test_support import url_machine_model as model

    if os.environ.get("SOCIAL_RECORDING_MUTANT"):
        import social_recording

        print(f"against the mutant {os.environ['SOCIAL_RECORDING_MUTANT']!r} ({social_recording.__file__})", flush=True)

    failed = 0
    for run in range(1, args.runs + 1):
        started = time.monotonic()
        try:
            if args.mongo:
                from test_support.ferretdb_server import running_ferretdb
                from test_support.mongo_server import MongoServer

                with running_ferretdb() as ferret:
                    model.UrlRulesOnMongo.server = MongoServer(ferret.url, True)
                    run_state_machine_as_test(model.UrlRulesOnMongo, settings=settings(
                        model.UrlRules.TestCase.settings, suppress_health_check=[*HealthCheck]))
            elif args.mongomock:
                run_state_machine_as_test(model.UrlRulesOnMongomock, settings=model.UrlRules.TestCase.settings)
            else:
                run_state_machine_as_test(model.UrlRules, settings=model.UrlRules.TestCase.settings)
            verdict = "held"
        except Exception:
            failed += 1
            verdict = "COUNTEREXAMPLE"
            traceback.print_exc()
        print(f"run {run}: {args.examples} examples x up to {args.steps} steps: {verdict} "
              f"({time.monotonic() - started:.0f} s)", flush=True)
    print("what the runs did: " + ", ".join(f"{k} {v}" for k, v in sorted(model.STATS.items())))
    return 1 if failed else 0


def _against_mutant(name: str, argv: list[str]) -> int:
    """This script again, in a child whose path starts with a copy of the package carrying the mutant."""
    import subprocess
    import tempfile

    from test_support.mutants import MUTANTS, apply

    if name not in MUTANTS:
        print("mutants:\n  " + "\n  ".join(MUTANTS), file=sys.stderr)
        return 0 if name == "list" else 2
    rest = [a for i, a in enumerate(argv) if a != "--mutant" and (i == 0 or argv[i - 1] != "--mutant")]
    rest = [a for a in rest if not a.startswith("--mutant=")]
    if MUTANTS[name].store == "mongomock":
        rest.append("--mongomock")
    with tempfile.TemporaryDirectory(prefix="mutant-") as into:
        apply(name, Path(into))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([into, str(REPO)]), "SOCIAL_RECORDING_MUTANT": name}
        return subprocess.run([sys.executable, str(Path(__file__).resolve()), *rest], cwd=into, env=env,
                              check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
