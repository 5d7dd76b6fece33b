"""The model test is only as good as the defects it catches: each of the project's mutants
(test_support/mutants.py: a plausible wrong rule of the state machine, the back-off policy, the call
guard, the spend check or a store, one line changed) is applied to a copy of the package, and the
model test ALONE must fail on it (docs/architecture.md, "The per-URL state machine"). The unit and
regression tests are the second line, not the only one. A mutant that survives means a rule the
model does not check.

Each mutant runs in its own process on a copy of the package put first on its path, on the store
whose code it changes (SQLite, or the Mongo store's code over mongomock): first the model's walks
(test_support/url_machine_walks.py, every boundary of the tables on every run), then a bounded number
of examples, derandomized, and no shrinking: the first failing example kills it. The process is forked
from a fork server (test_support/fork_server.py, one per test session) that has imported pytest and
the third-party libraries but none of the project's code, so a mutant does not pay an interpreter's
start; the run checks that it imported the mutant's file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_support.fork_server import ForkedRun, ForkServer, running_fork_server
from test_support.mutants import MUTANTS, REPO, Mutant, apply

sys.path.insert(0, str(REPO / "bench"))
import unseen_mutants  # type: ignore[import-not-found]  # noqa: E402  (the blind batches)

pytestmark = pytest.mark.heavy(minutes=0.1)

MODEL_TEST = REPO / "social_recording_tests/recording/test_url_machine_model.py"
EXAMPLES_PER_MUTANT = "250"
"""Bounded, so the whole list stays within a few minutes of CI (a killed mutant stops at its first
failing example); every mutant of the list dies well within it."""
PROMOTED: dict[str, tuple[str, ...]] = {
    "fresh3": (
        "the back-off grows linearly",
        "a run calls again a URL its own call failed once the back-off allows",
        "a vetoed request's slot is given back to the period of the veto",
        "a used-up budget is taken for a budget that cannot be asked",
        "the Mongo store's element-only write ignores the version",
        "the Mongo store's selection among tokens skips an element due in its very instant",
        "the Mongo store's write made on no state matches a state written since",
    ),
    "fresh4": (
        "blocked outranks not_found in the window",
        "a named answer re-examined that read nothing becomes unsupported",
        "a recording without a call does not write the timed-out call it counted",
        "a dead holder's poll is entered as spent",
        "an unanswered call is entered as answered",
        "an open call carries one timed-out call, not all",
        "the SQLite ledger keeps a day's last unanswered count",
        "live reopens an element before it is due",
        "the Mongo store enters a refused submission's requests",
        "the Mongo selection of one platform's unsupported takes them only past due",
    ),
    "fresh5": (
        "the reuse window is a day short",
        "an element is due only once past its due time",
        "the SQLite state's paid requests restart at each write",
        "the Mongo state's paid requests are overwritten by the unanswered ones",
        "a named exhausted element beside an open call is made an error",
        "a timed-out call moves the last call back to its opening",
        "an answer moves the last call back to its own time",
        "a no-call outcome never closes a request past its retention",
        "a no-call outcome records the element's old cause",
        "a call's ledger cost is one request's price whatever its requests",
        "a URL's first state is written whatever another holder wrote meanwhile",
        "the Mongo element-only write on no state ignores a state written meanwhile",
    ),
    "fresh6": (
        "a failure streak's expiry is judged at the run's start",
        "an open call times out a minute early",
        "a better answer without an anchor never stands",
        "the state machine ignores the configured back-off",
        "the live path asks what is due by now, whatever its interval",
        "a free request leaves after the URL lock was lost",
        "a limiter outage after a request left leaves the URL as it was",
        "a used-up month budget is reported as the day's",
        "a URL write is checked against the state before the element",
        "the Mongo URL write re-dates the open paid request",
        "the Mongo element claim takes an ok element",
    ),
    "fresh7": (
        "a retry's limit is ignored",
        "the default retry takes unsupported only when paid calls are on",
        "the SQLite selection cuts at the limit before the fair order",
        "the SQLite selection among tokens takes unsupported whatever its cause",
        "the Mongo selection among tokens takes every status",
        "paid calls off skip free platforms too",
        "a used-up month budget resets at midnight",
        "a provider's spent credit is not remembered for the run",
        "the back-off's base is a minute short",
        "a back-off past a million times its base falls back to the base",
        "a defect after a free request counts as an engine failure",
        "a URL this run read nothing from is adopted for want of a generator",
        "a named exhausted element failing in our code takes the engine failure's status",
        "invalid ranks no higher than a status that is no answer",
        "closing its own record alone is not written",
        "the Mongo element-only write leaves the state's version",
        "a refused submission does not stop the call",
    ),
    "fresh8": (
        "the SQLite selection among tokens ignores the limit",
        "the SQLite selection among tokens never takes a named unsupported",
        "the SQLite selection breaks ties at its limit by URL",
        "the SQLite fair order breaks ties by URL",
        "an unsafe redirect is recorded not_found",
        "the SQLite selection among tokens takes non-canonical URLs",
        "the Mongo selection among tokens takes non-canonical URLs",
        "December's month budget resets in January of the same year",
        "the SQLite budget never refuses a limit of zero",
        "a free provider's spent quota skips its URLs as paid",
        "an ok element is kept before the element's fence is checked",
        "a poll on the paid client is not counted as a paid request sent",
        "a later paid request of an open call is not counted on its record",
        "an engine failure keeps a request past its retention",
        "a request past its retention is not closed",
        "the Mongo saved submission repeated counts its requests twice",
        "the Mongo first insert that loses a race is refused",
        "the Mongo element update is not conditional on its claimed fence",
    ),
    "fresh9": (
        "a paid account's spent credit leaves its URLs in error",
        "a URL held by its spend budget is recorded error",
        "a free provider's spent quota is asked again",
        "the live path reopens skipped_paid",
        "the SQLite selection takes non-canonical URLs",
        "the Mongo selection takes non-canonical URLs",
        "the SQLite fair order puts never-recorded elements last",
        "the Mongo fair order is by last recording",
        "the SQLite selection among tokens takes unsupported of any platform",
        "an unanswered call is billed one request's price",
        "the Mongo store counts a removed call's requests as one",
        "a raw value is dropped one attempt late",
        "a raw value still failing keeps its old check time",
        "a resolved raw value's URL waits for the next run",
        "a retry run backs off by the default interval",
        "a named retry is recorded as the default one",
        "a retry judges its elements as the token lock finds them",
        "a retry tries again every raw value, however recently checked",
        "a spooled answer is dated at the recording that writes it",
        "a spooled answer does not close its own open call",
        "a spooled answer is written as one no call stood behind",
        "the SQLite store's zero-call write leaves the state's fence",
        "the Mongo store's zero-call write leaves the state's fence",
    ),
    "fresh10": (
        "the live feed leaves out a token at the investor threshold",
        "the live feed hands out a trade it already launched",
        "the live feed keeps a token's first trade of the range, not its latest",
        "the reconcile leaves out a token at the AF floor",
        "the reconcile records again the tokens stored since its window was read",
        "the Mongo store leaves an older holder's links beside a newer one's",
        "a write closing an expired request keeps the URL's old status",
        "a URL's first paid call records it as failing",
        "a run's start is compared with stored calls to the microsecond",
        "the Redis budget admits one request past its limit",
        "a recording judges the element as its token's document holds it, not as selected",
        "a retry's second look keeps what another run recorded meanwhile",
        "a named retry's second look takes the default selection",
        "a retry narrowed to tokens takes every token's due elements",
        "a narrowed retry counts unparseable elements as held back",
        "a run counts an element that stays absorbing as converged",
        "a run never looks again at a locked-out token",
        "a provider takes one call more than its concurrency bound",
        "a run's second look gives up before a crashed holder's token lock expires",
        "the URL lock is taken per token",
        "a token's URLs are still recorded after its token lock is lost",
        "one account's spent credit stops every account's calls",
    ),
    "fresh11": (
        "every linked object is recorded at the root's depth",
        "an object in two groups is linked twice",
        "the SQLite store keeps a metric's latest value",
        "the SQLite store overwrites an object it already holds",
        "the Mongo store overwrites an object it already holds",
        "the Mongo store keeps a metric's latest value",
        "a reuse is not reported as reused",
        "an engine failure after a request left does not fail the run",
        "a resolved URL the token already holds is reopened as pending",
        "a run remembers every call as reading nothing",
        "the SQLite store never raises a token's fence",
        "the Mongo store's raw-value writes ignore the token's fence",
        "a group may hang under a parent without content",
        "the Mongo store shows every write's links of a URL",
        "a run starts one unit past its limit",
        "a run goes on starting units after its job lock is lost",
        "a run starts a unit at its deadline's very instant",
        "a run's provider concurrency override is ignored",
        "the SQLite lock confirms whoever holds the key",
        "a SQLite lock's release frees another owner's key",
        "the Redis lock confirms whoever holds the key",
        "a Redis lock's release deletes another owner's key",
        "a Redis lock's TTL is read as milliseconds",
        "a lease reported lost still confirms its ownership",
        "a lock server down past its bound fails the URL as our defect",
        "a recording's write is not repeated through a store outage",
        "a full disk is not waited out",
        "a retry's lost count misses URLs written after their lock was lost",
        "a retry cut short reports only what was past its limit as remaining",
        "a retry resolves raw values past its deadline",
    ),
    "fresh12": (
        "a provider's rate is enforced at its documented value",
        "a rate window admits one request more than its bound",
        "a shorter pause cuts a longer one short",
        "a provider with its key set is held to the keyless rate",
        "a lease is renewed once per TTL",
        "one failed renewal loses the lease",
        "a write without a call meeting a late write is not decided again",
        "a decision taken anew keeps the attempt's first moment",
        "a run never counts the URLs its spend budget held",
        "a second worker does not wait for a URL's lock",
        "a provider's key follows a redirect from https to http",
        "a provider's key follows a redirect to any host",
        "a provider whose key is optional requires it",
        "the AF floor is four investors",
        "a budget's day and month limits are read the other way round",
        "the SQLite store keeps a closed request on the URL state",
        "every reconcile partition shares one job lock",
    ),
    "fresh13": (
        "a take repeated after an outage keeps its own earlier key",
        "a SQLite lease past its expiry is renewed",
        "a SQLite waiter never takes over a dead holder's expired key",
        "a Redis renewal extends the key whoever holds it",
        "a run gives up on its job lock before a crashed run's lock expires",
        "a token's URLs are recorded one at a time",
        "X takes the default calls at once",
        "Neynar's rate is 300 a second",
        "a paid provider is retried as a free one",
        "the request observer is asked before the rate limiter",
        "the last allowed redirect is refused",
        "a request's rate waits are bounded one by one, not in total",
        "a redirect's host is judged by its first address",
        "the retry sensor launches beside a running retry run",
        "a retry run may take 2000 URLs",
        "the live sensor launches while a live run is queued",
        "a reconcile run counts as remaining the tokens it only counted",
        "the exhausted growth bound defaults to 50 an hour",
        "the exhausted growth is compared with the latest observation",
        "a month budget equal to its day budget is refused",
        "a Redis month budget's counter lives a day",
        "the ledger's reconciliation keeps one platform per account",
        "the SQLite store counts a call in a URL's first record",
        "the Mongo store counts a call in a URL's first record",
        "the SQLite counters count a deleted row up",
        "the Mongo store hands out every raw value of a token with one due",
    ),    "fresh14": (
        'a growing back-off stops growing after the seventh failure',
        'a lease the backend disowns is not marked lost',
        'a SQLite fence is the clock alone, not larger than the last',
        "a renewal's expiry is measured from its answer, not its sending",
        "a rate's headroom is rounded up",
        'a Redis pause is shortened by a later shorter one',
        'a request that raised in the transport is not counted as made',
        'a redirect to a shared address is followed',
        'an epoch window reset is taken as seconds from now',
        "a provider's HTTP 500 is an answer, not a transient failure",
        'a started Apify run is not saved for the next holder',
        'a resumed Apify run that failed is reported again',
        'an account whose budget sets no limit is asked about',
        'a recorded URL whose lock release failed is counted again as deferred',
        "the Mongo ledger line that lost the day's first insert is dropped",
        'a transient transaction error is not waited out',
        'a Mongo counter moved during its recount is repaired',
        'the Mongo held-back count takes every unsupported element of a usable platform',
        'the retry sensor holds back a changed selection',
        'a retry that lost its lock resolving raw values says deadline',
        "a live run key names only its batch's trade times",
        'a token that lost its lock part way is reported recorded',
        'a run that lost its job lock is not stopped',
        'the paid-once check fails on a retry after a transient failure',
    ),
    "fresh15": (
        "a lock-backend error that waiting cannot heal is waited out",
        "a refused Redis password is waited out as an outage",
        "an ownership check the lock backend cannot answer lets a paid request leave",
        "a Redis fence is not floored at the server's clock",
        "a Redis rate window expires after its length in milliseconds",
        "a redirect to a non-http scheme is followed",
        "a redirect to a private address embedded in IPv6 is followed",
        "a legacy IPv4 spelling is taken for a host name",
        "a rate limiter that could not be asked is taken for a rate wait",
        "YouTube's daily quota is held per hour",
        "an account given two budgets keeps the last",
        "a budget limit of twelve digits is refused",
        "a spooled answer whose write went stale is dropped",
        "a write meeting a full disk's OSError is not repeated",
        "the Mongo store keeps a replayed write's earlier links",
        "the recount repairs only counters that exist",
        "a run's second look starts tokens past its deadline",
        "a backfill's runs share one run key",
        "the daily reconcile leaves yesterday out",
        "a plain MongoDB store starts without a shared lock",
        "a utm_ parameter stays in the canonical URL",
        "a link with userinfo is refused instead of stripped",
        "a shortlink's fourth hop is followed",
        "a shortener's 429 drops the link for good",
        "a shortlink failing transiently at the entry is dropped",
        "the tracker retries an answer a retry cannot change",
    ),
}
"""Mutants of the blind batches (bench/unseen_mutants.py) that survived their first measure and that
the model kills since it checks their rule: part of the project's list from then on, by name."""
PARTS = ("domain/url_machine.py", "domain/policy.py", "recording/call_guard.py", "recording/spend_check.py",
         "store/sqlite/", "store/mongo/")


def test_every_mutant_names_one_line_once() -> None:
    for name, m in MUTANTS.items():
        source = (REPO / m.path).read_text()
        assert source.count(m.original) == 1, f"{name}: {m.original!r} found {source.count(m.original)} times in {m.path}"


def test_the_mutants_cover_every_part_that_carries_a_rule() -> None:
    assert len(MUTANTS) >= 25, len(MUTANTS)
    for part in PARTS:
        assert any(part in m.path for m in MUTANTS.values()), f"no mutant of {part}"


@pytest.fixture(scope="session")
def fork_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    """One per session (so each pytest-xdist worker still takes single mutants): not a module fixture,
    which would put the whole module on one worker."""
    with running_fork_server(tmp_path_factory.mktemp("fork-server")) as server:
        yield server


def model_alone(name: str, into: Path, examples: str = EXAMPLES_PER_MUTANT,
                mutants: dict[str, Mutant] = MUTANTS, server: ForkServer | None = None) -> ForkedRun:
    """Run the model test alone against mutant `name` of `mutants` (a copy of the package under `into`),
    forked from `server` (one started for this run when None)."""
    if server is None:
        with tempfile.TemporaryDirectory(prefix="fork-server-") as workdir, running_fork_server(Path(workdir)) as own:
            return model_alone(name, into, examples, mutants, own)
    path = apply(name, into, mutants)
    # The copy comes first on the path, then the repository (for test_support); pytest appends the
    # test's root instead of prepending it.
    env = {**os.environ, "PYTHONPATH": f"{into}{os.pathsep}{REPO}", "SOCIAL_RECORDING_MODEL_EXAMPLES": examples,
           "SOCIAL_RECORDING_MODEL_MONGOMOCK_EXAMPLES": examples, "SOCIAL_RECORDING_MODEL_SHRINK": "0"}
    env.pop("SOCIAL_RECORDING_MODEL_SEED", None)
    module = path.relative_to(into).with_suffix("").as_posix().replace("/", ".")
    # By class: a walk whose name says "Mongo" still runs on the SQLite store (-k matches test ids too).
    which = ("TestUrlRulesOnMongomock" if mutants[name].store == "mongomock"
             else "TestUrlRules and not TestUrlRulesOnMongomock")
    run = server.run(module, path, ["-x", "-q", "-p", "no:cacheprovider", "--import-mode=append", "-k", which,
                                    str(MODEL_TEST)], cwd=into, path=[into, REPO], env=env, timeout=900)
    assert run.loaded == str(path), f"the child would test {run.loaded}, not the mutant\n{run.output[-3000:]}"
    return run


@pytest.mark.parametrize("name", list(MUTANTS))
def test_the_model_alone_kills_the_mutant(name: str, tmp_path: Path, fork_server: ForkServer) -> None:
    run = model_alone(name, tmp_path, server=fork_server)
    assert run.returncode == 1 and "1 failed" in run.output, (
        f"mutant {name!r} survived the model (pytest exit {run.returncode}):\n{run.output[-3000:]}")


@pytest.mark.parametrize(("batch", "name"), [(b, n) for b, names in PROMOTED.items() for n in names])
def test_the_model_alone_kills_a_promoted_mutant(batch: str, name: str, tmp_path: Path, fork_server: ForkServer) -> None:
    run = model_alone(name, tmp_path, mutants=unseen_mutants.BATCHES[batch], server=fork_server)
    assert run.returncode == 1 and "1 failed" in run.output, (
        f"mutant {name!r} of {batch} survived the model (pytest exit {run.returncode}):\n{run.output[-3000:]}")
