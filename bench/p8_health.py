"""P8 — the report stage's health figures against the store's size (a benchmark, not a test).

    python bench/p8_health.py [--tokens 100000 1000000] [--db-dir DIR] [--repeat 5]
    python bench/p8_health.py --store mongo [--tokens 100000] [--mongo-url URL] [--repeat 3]

Every run ends with a report stage that observes the recorded-data assets and evaluates the health
checks; `python -m social_recording status` prints the same figures. For each size, a SQLite store
file holds N tokens (P4's generator: 2–4 URLs each, a realistic status mix, one URL state per
distinct URL) plus, for every `ok` element, its objects (a content, an account, a venue for every
other one), first metric points and token links; a sandbox ledger holds one paid request per token.
`--db-dir` keeps both files and reuses them when they hold the same size.

Timed (median of `--repeat`, after a warm-up):
- the report stage's health step as a run calls it (`report_health`: the store figures, the
  observations, the checks and the sandbox ledger check), 20 paid requests appended to the ledger
  before each call as a run would;
- its parts: the store figures (`StoreFigures.read`, from the store's counters), the waiting-element
  checks (stuck pending, starved retries: index reads that stop at their bound) and the ledger check
  after such a run;
- the status command's read (`status.read_report`), and the whole command as a process, beside
  `python -c 'import dagster'` (what it cost at least when it imported Dagster);
- the hourly health job's reconciliation of the counters (`Store.reconcile_counts`: the recount and
  the repair, in one write transaction on SQLite).
`--store mongo`: the same on the Mongo store over the wire (a FerretDB started for the run, or
`--mongo-url`), loaded by P4's Mongo generator (tokens, URL elements, URL states; no graph rows),
its counters built by the store's own recount; the baseline recount is an aggregation grouping every
URL element plus a count of each collection.

Beside them, the baseline of the same run: the full recount (GROUP BY over every URL element, a
COUNT over each collection, written here in SQL so it stays the recount whatever the store does)
and the ledger check re-reading the whole ledger (streamed): what every report stage paid before the
counters, and what only the hourly job pays now.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import Table  # noqa: I001  (bench/ on sys.path)
from p4_scale import NOW, _mongo_reusable, _sqlite_reusable, generate_mongo, generate_sqlite, mongo_server

from social_recording.dagster_defs.health_report import HealthInputs, ledger_figures, report_health
from social_recording.dagster_defs.resources import (
    PlatformsResource,
    RecordingPolicyResource,
    UpstreamResource,
)
from social_recording.domain.models import utcnow
from social_recording.domain.paid import paid_ledger_figures
from social_recording.domain.urls import Platform
from social_recording.recording.health import (
    RunFigures,
    StoreFigures,
    check_starved_retries,
    check_stuck_pending,
)
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
from social_recording.settings import Settings
from social_recording.status import read_report
from social_recording.store._codec import dt_to_text
from social_recording.store.base import Store
from social_recording.store.mongo import MongoStore
from social_recording.store.sqlite import SqliteStore

RUN_PAID_REQUESTS = 20
"""Paid requests a run appends to the ledger between two report stages."""


# --------------------------------------------------------------------------- the data


def add_graph_rows(path: Path, seed: int = 13) -> None:
    """Objects, first metric points and token links for every `ok` element (bulk, not through the engine)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    conn.execute("BEGIN")
    rng = random.Random(seed)
    created = dt_to_text(NOW - timedelta(days=30))
    ok = conn.execute("SELECT address, url, platform FROM token_urls WHERE status = 'ok' ORDER BY rowid").fetchall()

    def objects(table: str, every: int) -> Iterator[tuple[Any, ...]]:
        for i, (_, url, platform) in enumerate(ok):
            if i % every == 0:
                yield (platform or "web", f"{table}:{url}", "item", "{}", created)

    for table, every in (("contents", 1), ("accounts", 1), ("venues", 2)):
        conn.executemany(f"INSERT OR IGNORE INTO {table} (platform, platform_key, subtype, doc, created_at) "
                         "VALUES (?, ?, ?, ?, ?)", objects(table, every))

    def metrics() -> Iterator[tuple[Any, ...]]:
        for i in range(len(ok)):
            for name in ("likes", "views", "followers")[: 1 + i % 3]:
                yield ("content", str(i + 1), name, float(rng.randrange(10_000)), created)

    conn.executemany("INSERT OR IGNORE INTO metrics (object, object_id, metric, value, observed_at) "
                     "VALUES (?, ?, ?, ?, ?)", metrics())

    def links() -> Iterator[tuple[Any, ...]]:
        for i, (address, url, platform) in enumerate(ok):
            for kind, depth in (("content", 0), ("account", 0), ("venue", 0))[: 2 + i % 2]:
                yield (address, kind, str(i + 1), url, platform or "web", "item", depth, created)

    conn.executemany("INSERT INTO token_links (token_address, object, object_id, entry_url, platform, subtype, "
                     "link_depth, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", links())
    conn.execute("COMMIT")
    conn.close()


def write_ledger(path: Path, n_tokens: int) -> None:
    """One paid tweet request per token (one in twenty asked twice after a 503), as the sandbox writes them."""
    with path.open("w") as out:
        for i in range(n_tokens):
            for status in ((503, 200) if i % 20 == 0 else (200,)):
                out.write(json.dumps({"ts": dt_to_text(NOW - timedelta(seconds=n_tokens - i)), "service": "twitterapi",
                                      "method": "GET", "url": "https://api.twitterapi.io/twitter/tweets",
                                      "subject": f"tweet:{1_000_000_000 + i}", "status": status, "paid": True},
                                     separators=(",", ":")) + "\n")


def prepare(directory: Path, n_tokens: int) -> tuple[Path, Path, str]:
    store_path = directory / f"health-{n_tokens}.db"
    ledger_path = directory / f"health-{n_tokens}.ledger.jsonl"
    if _sqlite_reusable(store_path, n_tokens, 1) and ledger_path.exists():
        return store_path, ledger_path, "reused"
    for p in (store_path, ledger_path, ledger_path.with_name(ledger_path.name + ".paid.db")):
        if p.exists():
            p.unlink()
    started = time.perf_counter()
    generate_sqlite(store_path, n_tokens, 1)
    add_graph_rows(store_path)
    write_ledger(ledger_path, n_tokens)
    return store_path, ledger_path, f"generated in {time.perf_counter() - started:.0f} s"


# --------------------------------------------------------------------------- the measurements


def full_recount(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """Every figure recounted from the rows: what only the hourly reconciliation should pay."""
    by = conn.execute("SELECT platform, status, COUNT(*) FROM token_urls GROUP BY platform, status").fetchall()
    return (by, *(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                  for t in ("tokens", "contents", "accounts", "venues", "metrics", "token_links")))


def append_run(ledger: Ledger, run: int) -> None:
    for i in range(RUN_PAID_REQUESTS):
        ledger.append(service="twitterapi", method="GET", url="https://api.twitterapi.io/twitter/tweets",
                      subject=f"tweet:run{run}-{i}", status=200, paid=True)


def median_ms(fn: Callable[[int], object], repeat: int) -> float:
    fn(0)
    samples = []
    for i in range(1, repeat + 1):
        started = time.perf_counter()
        fn(i)
        samples.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(samples)


_QUIET = logging.getLogger("bench.p8.run_log")
_QUIET.propagate = False  # the checks' warnings about the generated data (it has stuck elements on purpose)
_QUIET.addHandler(logging.NullHandler())


@dataclass
class ReportContext:
    """What `report_health` uses of a run's context: the resources it reads, the instance (the
    exhausted baseline's observations), the run log, and `log_event` (events kept, not written)."""

    resources: Any
    instance: Any
    log: logging.Logger
    events: list[Any] = field(default_factory=list)

    def log_event(self, event: Any) -> None:
        self.events.append(event)


@contextmanager
def report_context(ledger_path: Path, scenario: Path) -> Iterator[ReportContext]:
    from dagster import DagsterInstance

    upstream = UpstreamResource(mode="sandbox", sandbox_scenario=str(scenario), sandbox_ledger=str(ledger_path))
    with DagsterInstance.ephemeral() as instance:
        yield ReportContext(SimpleNamespace(policy=RecordingPolicyResource(),
                                            platforms=PlatformsResource(upstream=upstream)),
                            instance, _QUIET)


class _FailureLog(logging.Handler):
    """`report_health` never raises (health must not fail a run): its failure is a log record."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


def measure(directory: Path, n_tokens: int, repeat: int, table: Table) -> None:
    store_path, ledger_path, built = prepare(directory, n_tokens)
    store = SqliteStore(store_path)
    conn = sqlite3.connect(store_path)
    try:
        measure_store(store, f"sqlite:///{store_path}", lambda: full_recount(conn), ledger_path, directory, n_tokens,
                      repeat, table, f"{built}; {store_path.stat().st_size / 1e6:.0f} MB")
    finally:
        store.close()
        conn.close()


def full_recount_mongo(store: MongoStore) -> tuple[Any, ...]:
    """The Mongo store's figures recounted from every document (an aggregation grouping every URL
    element, a count of each collection): the baseline on that backend."""
    db = store.db
    by = list(db["token_urls"].aggregate([{"$group": {"_id": {"p": "$platform", "s": "$status"}, "n": {"$sum": 1}}}]))
    return (by, *(db[c].count_documents({}) for c in ("tokens", "contents", "accounts", "venues", "metrics",
                                                        "token_links")))


def measure_mongo(args: argparse.Namespace, directory: Path, table: Table) -> None:
    with mongo_server(args.mongo_url) as url:
        for n in sorted(args.tokens):
            db_name = f"p8_bench_{n}"
            store = MongoStore(url, db_name)
            try:
                if _mongo_reusable(store, n, 1):
                    built = "reused"
                else:
                    store.db.client.drop_database(db_name)
                    store.close()
                    store = MongoStore(url, db_name)
                    built = f"generated in {generate_mongo(store, n, 1):.0f} s"
                ledger_path = directory / f"health-mongo-{n}.ledger.jsonl"
                if not ledger_path.exists():
                    write_ledger(ledger_path, n)
                parts = urlsplit(url)
                store_url = urlunsplit((parts.scheme, parts.netloc, f"/{db_name}", parts.query, ""))
                measure_store(store, store_url, partial(full_recount_mongo, store), ledger_path, directory, n,
                              args.repeat, table, built)
                if args.mongo_url is None:
                    store.db.client.drop_database(db_name)
            finally:
                store.close()


def measure_store(store: Store, store_url: str, recount: Callable[[], object], ledger_path: Path, directory: Path,
                  n_tokens: int, repeat: int, table: Table, built: str) -> None:
    ledger = Ledger(ledger_path)
    scenario = directory / "empty-scenario.json"
    scenario.write_text(json.dumps({"tokens": []}))
    with ExitStack() as stack:
        figures = StoreFigures.read(store)
        started = time.perf_counter()
        ledger_figures(ledger)  # the tally catches up once with everything already in the ledger
        catch_up = time.perf_counter() - started
        print(f"P8 store: {n_tokens} tokens, {figures.urls} URL elements, {figures.metrics} metric points, "
              f"{figures.links} links ({built}); ledger "
              f"{ledger_path.stat().st_size / 1e6:.0f} MB, tallied once in {catch_up:.1f} s", flush=True)
        runs = iter(range(10**6))
        context = stack.enter_context(report_context(ledger_path, scenario))
        failed = _FailureLog()
        logging.getLogger("social_recording.health").addHandler(failed)

        resources = context.resources
        inputs = HealthInputs.of(resources.policy, resources.platforms)

        def report_stage(_: int) -> None:
            append_run(ledger, next(runs))
            report_health(context, store, inputs, RunFigures())

        def ledger_check(_: int) -> None:
            append_run(ledger, next(runs))
            ledger_figures(ledger)

        def reread(_: int) -> None:
            paid_ledger_figures((e for e, _ in ledger.read_from(0)), second_steps=POLL_PREFIXES)

        # The status command reads the store only; a Mongo store's settings name a lock server it never asks.
        settings = Settings(store_url=store_url, **({} if store_url.startswith("sqlite") else
                                                    {"lock_url": "redis://127.0.0.1:6379/0"}))
        report_stage(0)
        if failed.records:
            raise SystemExit(f"P8: the report stage's health step failed: {failed.records[0]}")
        now = utcnow()

        def waiting_checks(_: int) -> None:
            check_stuck_pending(store, now)
            check_starved_retries(store, now, enable_paid=True, usable_platforms=frozenset(Platform))

        recount_ms = median_ms(lambda _: recount(), repeat)
        reread_ms = median_ms(reread, max(1, repeat // 2))
        rows = [
            ("report stage: health step (report_health)", median_ms(report_stage, repeat),
             "full recount + ledger re-read", recount_ms + reread_ms),
            ("its store figures (StoreFigures.read)", median_ms(lambda _: StoreFigures.read(store), repeat),
             "full recount", recount_ms),
            ("its waiting-element checks (bounded reads)", median_ms(waiting_checks, repeat), "-", float("nan")),
            (f"its ledger check after a run ({RUN_PAID_REQUESTS} paid requests)", median_ms(ledger_check, repeat),
             "whole ledger re-read", reread_ms),
            ("status command's read", median_ms(lambda _: read_report(settings), max(1, repeat // 2)),
             "full recount", recount_ms),
            ("status command, the whole process (python -m social_recording status)",
             median_ms(lambda _: status_process(store_url), max(1, repeat // 2)),
             "python -c 'import dagster'", median_ms(lambda _: import_dagster(), max(1, repeat // 2))),
            ("hourly job: reconcile_counts (recount + repair)",
             median_ms(lambda _: store.reconcile_counts(), max(1, repeat // 2)), "full recount", recount_ms),
        ]
        for what, ms, baseline, base_ms in rows:
            table.add(n_tokens, what, ms, base_ms, baseline, f"{os.getloadavg()[0]:.2f}")


REPO = Path(__file__).resolve().parents[1]


def status_process(store_url: str) -> None:
    """`python -m social_recording status` from start to exit: what an operator waits for."""
    env = {**os.environ, "SOCIAL_RECORDING_STORE_URL": store_url, "PYTHONPATH": str(REPO)}
    if store_url.startswith("mongodb") and not env.get("SOCIAL_RECORDING_LOCK_URL"):
        # The settings ask a Mongo store for its lock server; status itself never connects to it.
        env["SOCIAL_RECORDING_LOCK_URL"] = "redis://127.0.0.1:6379/0"
    env.pop("DAGSTER_HOME", None)
    subprocess.run([sys.executable, "-m", "social_recording", "status"], env=env, check=True,
                   stdout=subprocess.DEVNULL, cwd=REPO)


def import_dagster() -> None:
    """What the command cost before it stopped importing Dagster, at least."""
    subprocess.run([sys.executable, "-c", "import dagster"], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--store", choices=["sqlite", "mongo"], default="sqlite")
    parser.add_argument("--tokens", type=int, nargs="+", default=None,
                        help="default: 100000 1000000 (sqlite), 100000 (mongo)")
    parser.add_argument("--db-dir", type=Path, default=None, help="keep (and reuse) the generated files here")
    parser.add_argument("--mongo-url", default=None, help="mongo: a server to use (default: start a FerretDB)")
    parser.add_argument("--repeat", type=int, default=None, help="default: 5 (sqlite), 3 (mongo)")
    args = parser.parse_args(argv)
    mongo = args.store == "mongo"
    args.tokens = args.tokens or ([100_000] if mongo else [100_000, 1_000_000])
    args.repeat = args.repeat or (3 if mongo else 5)
    if min(args.tokens) < 10 or args.repeat < 1:
        parser.error("--tokens >= 10, --repeat >= 1")
    where = "the Mongo store over the wire" if mongo else "SQLite"
    table = Table("P8-mongo" if mongo else "P8",
                  f"health figures against the store's size (median ms of {args.repeat}; {where}, sandbox ledger)",
                  ["tokens", "what", "this branch ms", "baseline ms", "baseline", "load"])
    with tempfile.TemporaryDirectory(prefix="bench-p8-") as tmp:
        directory = args.db_dir or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        if mongo:
            measure_mongo(args, directory, table)
        else:
            for n in sorted(args.tokens):
                measure(directory, n, args.repeat, table)
    table.notes.append("baseline: the same figures recounted from every row, and the paid-once check re-reading "
                       "the whole ledger (streamed), as the report stage did before")
    table.notes.append("load: the 1-minute load average after each row")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
