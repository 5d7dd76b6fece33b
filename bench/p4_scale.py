"""P4 — the hot queries at scale, with the server's plans (a benchmark, not a test).

    python bench/p4_scale.py [--tokens 1000000] [--shared 10000] [--db PATH] [--repeat 20]
    python bench/p4_scale.py --store mongo [--tokens 100000] [--mongo-url URL] [--mongo-db NAME]

Generates N tokens straight into the store (bulk inserts, not through the engine): 2, 3 or 4 URLs
each (an X post, a website, a Telegram channel shared by 20 tokens, a GitHub repo), a realistic
status mix, `checked_at` spread over 30 days, one URL state per distinct URL, and one X post held by
`--shared` tokens (its state says ok, its source token has three links).

`--store sqlite` (the default, 1M tokens): a SQLite file; `--db PATH` keeps it and reuses it when it
already holds the same sizes. No ANALYZE is run: the store never runs one, so the planner works
without statistics, as in production.

`--store mongo` (100k tokens): a database on a Mongo-protocol server, `--mongo-url` (a real MongoDB)
or, by default, a FerretDB started for the run (the test suite's, on a PostgreSQL database of its own:
see test_support/ferretdb_server.py). The database (`--mongo-db`) is reused when it holds
the same sizes. The plans printed are the server's own: MongoDB's winning-plan stages, or the
PostgreSQL plan FerretDB answers with and what it pushed down to PostgreSQL (bench/README.md,
"Reading the figures", says how they differ).

Then it times, median of `--repeat` runs each, and prints the plans beside:
- the retry candidate query (the default selection, limit 50) against the baseline of reading every
  due element of those statuses and sorting them in Python;
- the dedupe gate's lookup of the shared URL (its one state row) against reading every holder's
  element and picking the best answer in Python; and the link copy's read of one source token;
- the reconcile window lookup of 2,000 addresses (half stored) against one query per address;
- the health figures: the per-status counts (the store's counters) against reading every element, and the
  stuck-pending and starved-retry figures (a bounded count plus the oldest examples) against counting
  and sorting every waiting element in Python.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import REPO, Table  # noqa: I001  (bench/ on sys.path)

from social_recording.domain.policy import DEFAULT_MIN_INTERVAL, due_by
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.recording.candidates import retry_query
from social_recording.recording.health import EXAMPLES, STARVED_AFTER, STUCK_PENDING_AFTER
from social_recording.store import CandidateQuery, MongoStore, Store
from social_recording.store._codec import dt_to_text
from social_recording.store.mongo import NEVER, QUERIES
from social_recording.store.sqlite import SqliteStore

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
CREATED = NOW - timedelta(days=30)
SHARED_URL = "https://x.com/i/status/4242424242"
STATUS_MIX: tuple[tuple[str, float], ...] = (
    ("ok", 0.70), ("not_found", 0.05), ("blocked", 0.02), ("invalid", 0.005), ("exhausted", 0.015),
    ("error", 0.08), ("pending", 0.05), ("skipped_paid", 0.05), ("unsupported", 0.03),
)
SECONDARY_INDEXES = ("idx_tokens_discovered", "idx_token_urls_url", "idx_token_urls_due", "idx_token_urls_platform_due",
                     "idx_token_urls_never", "idx_token_urls_platform_never")
USABLE = frozenset(Platform) - {Platform.DISCORD}
BATCH = 5000


def _statuses(rng: random.Random, n: int) -> list[str]:
    names = [s for s, _ in STATUS_MIX]
    weights = [w for _, w in STATUS_MIX]
    return rng.choices(names, weights, k=n)


def _urls_of(i: int) -> list[tuple[str, str]]:
    """(url, platform) of token i: 2, 3 or 4 URLs."""
    urls = [(f"https://x.com/i/status/{1_000_000_000 + i}", Platform.X.value),
            (f"https://site{i}.example", Platform.WEB.value),
            (f"https://t.me/channel{i // 20}", Platform.TELEGRAM.value),
            (f"https://github.com/org{i}/repo", Platform.GITHUB.value)]
    return urls[: 2 + i % 3]


def _due(checked: datetime | None) -> datetime | None:
    """The due time the flat back-off gives an element recorded at `checked` (None: never recorded)."""
    return None if checked is None else checked + DEFAULT_MIN_INTERVAL


def _address(i: int) -> str:
    return f"Mint{i:09d}"


@dataclass(frozen=True)
class Element:
    address: str
    url: str
    platform: str
    position: int
    status: str
    checked: datetime | None
    """None: never recorded (pending)."""
    attempted: datetime | None
    attempts: int
    cause: str | None


@dataclass(frozen=True)
class State:
    url: str
    platform: str
    status: str
    attempted: datetime | None
    attempts: int
    source_token: str | None
    updated: datetime


def elements(n_tokens: int, n_shared: int, states: dict[str, State], seed: int = 7) -> Iterator[Element]:
    """Every token's elements, the same for both stores; fills `states` (the first holder's answer)."""
    rng = random.Random(seed)
    for i in range(n_tokens):
        address = _address(i)
        pairs = _urls_of(i)
        if i < n_shared:
            pairs = [*pairs, (SHARED_URL, Platform.X.value)]
        for pos, ((url, platform), status) in enumerate(zip(pairs, _statuses(rng, len(pairs)), strict=True)):
            if url == SHARED_URL:
                status = "ok"
            checked = NOW - timedelta(seconds=rng.randrange(30 * 86400))
            recorded = None if status == "pending" else checked
            called = status not in ("pending", "skipped_paid", "unsupported")
            attempts = rng.randint(1, 3) if called else 0
            cause = ("no_generator" if rng.random() < 0.5 else "unparseable") if status == "unsupported" else (
                "paid_disabled" if status == "skipped_paid" else None)
            if url not in states:
                states[url] = State(url, platform, status, checked if called else None, attempts,
                                    address if status == "ok" else None, recorded or CREATED)
            yield Element(address, url, platform, pos, status, recorded, checked if called else None, attempts,
                          cause)


SOURCE_LINKS = (("content", "tweet", 0), ("account", "user", 0), ("content", "tweet", 1))
"""The shared URL's source token's links: (object, subtype, depth)."""


# --------------------------------------------------------------------------- SQLite


def generate_sqlite(path: Path, n_tokens: int, n_shared: int) -> float:
    """Bulk-load the store file; returns the seconds it took."""
    started = time.perf_counter()
    SqliteStore(path).close()  # the real schema, at its current version
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")
    conn.execute("BEGIN")
    saved = {name: sql for name, sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")}
    for name in SECONDARY_INDEXES:  # indexes are built once at the end, much faster than row by row
        conn.execute(f"DROP INDEX IF EXISTS {name}")
    created = dt_to_text(CREATED)
    states: dict[str, State] = {}

    def opt(value: datetime | None) -> str | None:
        return None if value is None else dt_to_text(value)

    conn.executemany("INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, created_at, "
                     "updated_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     ((_address(i), f"T{i}", None, None, "[]", None, created, created, 0) for i in range(n_tokens)))
    conn.executemany("INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                     "checked_at, cause, detail, fence, created_at, due_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     ((e.address, e.url, e.status, opt(e.attempted), e.attempts, e.position, e.platform,
                       opt(e.checked) or "", e.cause, None, 0, created, opt(_due(e.checked)) or "")
                      for e in elements(n_tokens, n_shared, states)))
    conn.executemany("INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                     "request_provider, request_id, request_submitted_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(s.url, s.platform, s.status, opt(s.attempted), s.attempts, s.source_token, 0, None, None,
                       None, dt_to_text(s.updated)) for _url, s in sorted(states.items())])
    source = states[SHARED_URL].source_token if n_shared else None
    if source:
        conn.executemany("INSERT INTO token_links (token_address, object, object_id, entry_url, platform, subtype, "
                         "link_depth, created_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?)",
                         [(source, kind, str(k), SHARED_URL, sub, depth, created)
                          for k, (kind, sub, depth) in enumerate(SOURCE_LINKS)])
    for name in SECONDARY_INDEXES:
        conn.execute(saved[name])
    conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (tokens INTEGER, shared INTEGER)")
    conn.execute("DELETE FROM bench_meta")
    conn.execute("INSERT INTO bench_meta VALUES (?, ?)", (n_tokens, n_shared))
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - started


def _sqlite_reusable(path: Path, n_tokens: int, n_shared: int) -> bool:
    if not path.exists():
        return False
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT tokens, shared FROM bench_meta").fetchone() == (n_tokens, n_shared)
    except sqlite3.Error:
        return False


# --------------------------------------------------------------------------- MongoDB wire protocol


def generate_mongo(store: MongoStore, n_tokens: int, n_shared: int) -> float:
    """Bulk-load the database (its indexes made by the store first, so they are the store's own)."""
    started = time.perf_counter()
    db = store.db
    states: dict[str, State] = {}

    def batched(coll: str, docs: Iterator[dict[str, Any]]) -> None:
        batch: list[dict[str, Any]] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= BATCH:
                db[coll].insert_many(batch, ordered=False)
                batch = []
        if batch:
            db[coll].insert_many(batch, ordered=False)

    batched("tokens", ({"address": _address(i), "symbol": f"T{i}", "image": None, "first_transfer_at": None,
                        "fingerprints": [], "web": None, "unresolved": [], "created_at": CREATED,
                        "updated_at": CREATED, "fence": 0} for i in range(n_tokens)))
    batched("token_urls", ({"address": e.address, "url": e.url, "position": e.position, "platform": e.platform,
                            "status": e.status, "attempted_at": e.attempted, "attempts": e.attempts,
                            "checked_at": e.checked or NEVER, "due_at": _due(e.checked) or NEVER,
                            "cause": e.cause, "detail": None, "fence": 0,
                            "created_at": CREATED} for e in elements(n_tokens, n_shared, states)))
    batched("url_states", ({"url": s.url, "platform": s.platform, "status": s.status, "attempted_at": s.attempted,
                            "attempts": s.attempts, "source_token": s.source_token, "fence": 0, "request": None,
                            "updated_at": s.updated} for s in states.values()))
    source = states[SHARED_URL].source_token if n_shared else None
    if source:
        db["token_links"].insert_many([
            {"token_address": source, "object": kind, "object_id": f"bench-{k}", "entry_url": SHARED_URL,
             "platform": "x", "subtype": sub, "link_depth": depth, "created_at": CREATED, "fence": 1, "write": "w"}
            for k, (kind, sub, depth) in enumerate(SOURCE_LINKS)])
    store.reconcile_counts()  # written around the store: its counters are built from a recount
    db["bench_meta"].replace_one({"_id": "sizes"}, {"tokens": n_tokens, "shared": n_shared}, upsert=True)
    return time.perf_counter() - started


def _mongo_reusable(store: MongoStore, n_tokens: int, n_shared: int) -> bool:
    meta = store.db["bench_meta"].find_one({"_id": "sizes"})
    return meta is not None and (meta.get("tokens"), meta.get("shared")) == (n_tokens, n_shared)


def server_name(store: MongoStore) -> str:
    info = store.db.client.admin.command("buildInfo")
    if "ferretdbVersion" in info:
        return f"FerretDB {info['ferretdbVersion']} on PostgreSQL (wire version of MongoDB {info.get('version')})"
    return f"MongoDB {info.get('version')}"


def mongo_plan(store: MongoStore, name: str, *params: Any) -> str:
    """The server's plan of a named hot query: MongoDB's winning-plan stages, or FerretDB's PostgreSQL
    plan nodes plus what it pushed down (filter / sort / limit) to PostgreSQL."""
    stages = " > ".join(store.explain(name, *params)) or "?"
    raw = store._find(QUERIES[name](*params)).explain()
    pushed = [k for k in ("filterPushdown", "sortPushdown", "limitPushdown") if k in raw]
    if pushed:
        stages += " (pushed down: " + ", ".join(f"{k[:-8]} {'yes' if raw[k] else 'no'}" for k in pushed) + ")"
    return stages


@contextlib.contextmanager
def mongo_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    sys.path.insert(0, str(REPO))
    from test_support.ferretdb_server import running_ferretdb

    with running_ferretdb() as ferret:
        yield ferret.url


# --------------------------------------------------------------------------- timing


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of `repeat` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(samples)


class Baselines:
    """What the hot queries replace, read the plain way from one backend."""

    def due(self, statuses: list[str], cutoff: datetime) -> list[tuple[str, str, str, datetime | None, str | None]]:
        """(address, url, status, checked_at, cause) of every element with those statuses due by `cutoff`."""
        raise NotImplementedError

    def holders(self, url: str) -> list[tuple[str, str, datetime | None]]:
        """(address, status, attempted_at) of every element holding `url`."""
        raise NotImplementedError

    def has_token(self, address: str) -> bool:
        raise NotImplementedError

    def every_element(self) -> list[tuple[str | None, str]]:
        """(platform, status) of every element."""
        raise NotImplementedError

    def never_recorded(self, status: str, created_before: datetime) -> list[tuple[str, str, datetime]]:
        raise NotImplementedError


class SqliteBaselines(Baselines):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def due(self, statuses: list[str], cutoff: datetime) -> list[tuple[str, str, str, datetime | None, str | None]]:
        rows = self.conn.execute(
            f"SELECT address, url, status, due_at, cause FROM token_urls "
            f"WHERE status IN ({','.join('?' * len(statuses))}) AND due_at <= ?", [*statuses, dt_to_text(cutoff)]
        ).fetchall()
        return [(a, u, s, datetime.fromisoformat(c) if c else None, cause) for a, u, s, c, cause in rows]

    def holders(self, url: str) -> list[tuple[str, str, datetime | None]]:
        rows = self.conn.execute("SELECT address, status, attempted_at FROM token_urls WHERE url = ?", [url]).fetchall()
        return [(a, s, datetime.fromisoformat(t) if t else None) for a, s, t in rows]

    def has_token(self, address: str) -> bool:
        return self.conn.execute("SELECT 1 FROM tokens WHERE address = ?", [address]).fetchone() is not None

    def every_element(self) -> list[tuple[str | None, str]]:
        return self.conn.execute("SELECT platform, status FROM token_urls").fetchall()

    def never_recorded(self, status: str, created_before: datetime) -> list[tuple[str, str, datetime]]:
        rows = self.conn.execute("SELECT address, url, created_at FROM token_urls WHERE status = ? AND checked_at = ''"
                                 " AND created_at <= ?", [status, dt_to_text(created_before)]).fetchall()
        return [(a, u, datetime.fromisoformat(c)) for a, u, c in rows]


class MongoBaselines(Baselines):
    def __init__(self, store: MongoStore) -> None:
        self.db = store.db

    def due(self, statuses: list[str], cutoff: datetime) -> list[tuple[str, str, str, datetime | None, str | None]]:
        docs = self.db["token_urls"].find({"status": {"$in": statuses}, "due_at": {"$lte": cutoff}},
                                          {"_id": 0, "address": 1, "url": 1, "status": 1, "due_at": 1, "cause": 1})
        return [(d["address"], d["url"], d["status"], None if d["due_at"] <= NEVER else d["due_at"],
                 d.get("cause")) for d in docs]

    def holders(self, url: str) -> list[tuple[str, str, datetime | None]]:
        docs = self.db["token_urls"].find({"url": url}, {"_id": 0, "address": 1, "status": 1, "attempted_at": 1})
        return [(d["address"], d["status"], d.get("attempted_at")) for d in docs]

    def has_token(self, address: str) -> bool:
        return self.db["tokens"].find_one({"address": address}, {"_id": 1}) is not None

    def every_element(self) -> list[tuple[str | None, str]]:
        return [(d.get("platform"), d["status"]) for d in self.db["token_urls"].find({}, {"_id": 0, "platform": 1,
                                                                                          "status": 1})]

    def never_recorded(self, status: str, created_before: datetime) -> list[tuple[str, str, datetime]]:
        docs = self.db["token_urls"].find({"status": status, "checked_at": NEVER, "created_at": {"$lte": created_before}},
                                          {"_id": 0, "address": 1, "url": 1, "created_at": 1})
        return [(d["address"], d["url"], d["created_at"]) for d in docs]


def measure(store: Store, base: Baselines, table: Table, n_tokens: int, repeat: int, window_size: int) -> None:
    """Time the hot queries beside their baselines into `table` (each result checked against its baseline)."""
    # 1. retry candidates: the default selection, limit 50
    query = retry_query(now=NOW, min_interval=timedelta(minutes=60), limit=50, enable_paid=True, usable_platforms=USABLE)
    found = store.select_candidates(query)
    statuses = sorted(s.value for s in query.statuses)

    def all_then_sort() -> list[Any]:
        rows = [r for r in base.due(statuses, query.due_by)
                if r[2] != FetchStatus.UNSUPPORTED.value or r[4] == "no_generator"]
        return sorted(rows, key=lambda r: (r[3] or NEVER, r[0], r[1]))[:50]

    due = len(base.due(statuses, query.due_by))
    if [(c.address, c.url) for c in found] != [(r[0], r[1]) for r in all_then_sort()]:
        raise SystemExit("P4: the pushed-down selection and the baseline disagree")
    table.add("retry candidates (default selection, limit 50)", timed(lambda: store.select_candidates(query), repeat),
              timed(all_then_sort, max(1, repeat // 4)), f"50 of {due} due", "every due element read, sorted in Python")

    # 2. the dedupe gate on a URL held by `shared` tokens, and the one-token link copy
    state = store.find_url_state(SHARED_URL)
    assert state is not None and state.status is FetchStatus.OK and state.source_token

    def every_holder() -> Any:
        ok = [r for r in base.holders(SHARED_URL) if r[1] == "ok"]
        return max(ok, key=lambda r: r[2] or NEVER) if ok else None

    holders = len(base.holders(SHARED_URL))
    table.add(f"gate lookup, URL held by {holders} tokens", timed(lambda: store.find_url_state(SHARED_URL), repeat),
              timed(every_holder, repeat), "1 state row", "every holder's element read, best picked in Python")
    table.add("link copy source (one token's links)",
              timed(lambda: store.find_links(state.source_token or "", SHARED_URL), repeat), float("nan"),
              f"{len(store.find_links(state.source_token, SHARED_URL))} links", "-")

    # 3. the reconcile window lookup: which of `window_size` addresses are stored
    rng = random.Random(11)
    window = [_address(rng.randrange(n_tokens)) for _ in range(window_size // 2)]
    window += [f"Unseen{i:09d}" for i in range(window_size - len(window))]
    rng.shuffle(window)
    stored = store.find_existing_addresses(window)

    def one_by_one() -> set[str]:
        return {a for a in window if base.has_token(a)}

    if stored != one_by_one():
        raise SystemExit("P4: the window lookup and the baseline disagree")
    table.add(f"window lookup ({len(window)} addresses)", timed(lambda: store.find_existing_addresses(window), repeat),
              timed(one_by_one, max(1, repeat // 4)), f"{len(stored)} stored", "one query per address")

    # 4. the health figures: per-status counts, stuck pending, starved retries
    counts = store.status_counts()
    if counts.urls != len(base.every_element()):
        raise SystemExit("P4: the status counts and the baseline disagree")
    table.add("health: elements by platform and status", timed(store.status_counts, max(1, repeat // 4)),
              timed(lambda: Counter(base.every_element()), max(1, repeat // 4)),
              f"{counts.urls} elements", "every element read, counted in Python")
    stuck = CandidateQuery(frozenset({FetchStatus.PENDING}), due_by(NOW, STUCK_PENDING_AFTER), EXAMPLES)
    found_stuck = store.waiting_elements(stuck, canonical_only=False)

    def every_stuck() -> list[Any]:
        return sorted(base.never_recorded("pending", stuck.created_by), key=lambda r: (r[2], r[0], r[1]))

    table.add("health: stuck pending (bounded count + 5 oldest)",
              timed(lambda: store.waiting_elements(stuck, canonical_only=False), repeat),
              timed(every_stuck, max(1, repeat // 4)),
              f"{found_stuck.count}{'+' if found_stuck.capped else ''} counted", "every one read, sorted in Python")
    starved = retry_query(now=NOW, min_interval=STARVED_AFTER, limit=EXAMPLES, enable_paid=True, usable_platforms=USABLE)
    found_starved = store.waiting_elements(starved)
    table.add("health: starved retries (bounded count + 5 oldest)", timed(lambda: store.waiting_elements(starved),
              repeat), timed(lambda: base.due(sorted(s.value for s in starved.statuses), starved.due_by),
                             max(1, repeat // 4)),
              f"{found_starved.count}{'+' if found_starved.capped else ''} counted", "every due element read")


def run_sqlite(args: argparse.Namespace) -> tuple[Table, list[str]]:
    with tempfile.TemporaryDirectory(prefix="bench-p4-") as tmp:
        path = args.db or Path(tmp) / "store.db"
        if _sqlite_reusable(path, args.tokens, args.shared):
            built = "reused"
        else:
            if path.exists():
                path.unlink()
            built = f"generated in {generate_sqlite(path, args.tokens, args.shared):.1f} s"
        store = SqliteStore(path)
        conn = store._conn()
        n_elements = conn.execute("SELECT count(*) FROM token_urls").fetchone()[0]
        n_states = conn.execute("SELECT count(*) FROM url_states").fetchone()[0]
        print(f"P4 store: {args.tokens} tokens, {n_elements} elements, {n_states} URL states ({built}); "
              f"{path.stat().st_size / 1e6:.0f} MB", flush=True)
        table = Table("P4", f"hot queries at {args.tokens} tokens (median ms of {args.repeat}; SQLite, no ANALYZE)",
                      ["query", "pipeline ms", "baseline ms", "rows", "baseline"])
        measure(store, SqliteBaselines(conn), table, args.tokens, args.repeat, args.window)

        def plan(name: str, *params: Any) -> str:
            return " | ".join(store.explain(name, *params))

        cutoff = dt_to_text(NOW - timedelta(minutes=60))
        state = store.find_url_state(SHARED_URL)
        source = state.source_token if state is not None else ""
        plans = [
            "retry candidates, per status: " + plan("due_by_status", "error", cutoff, 50),
            "retry candidates, unsupported by platform: " + plan("due_by_status_platform", "unsupported", "github",
                                                                   cutoff, 50),
            "gate lookup: " + plan("url_state", SHARED_URL),
            "link copy: " + plan("links_by_token_entry", source, SHARED_URL),
            "window lookup: " + plan("existing_addresses", [_address(i) for i in range(500)]),
            "health, waiting (recorded): " + plan("waiting", "error", cutoff, EXAMPLES, True),
            "health, waiting (never recorded): " + plan("waiting", "pending", cutoff, EXAMPLES, False),
        ]
        store.close()
    return table, plans


def run_mongo(args: argparse.Namespace) -> tuple[Table, list[str]]:
    with mongo_server(args.mongo_url) as url:
        store = MongoStore(url, args.mongo_db)
        try:
            server = server_name(store)
            if _mongo_reusable(store, args.tokens, args.shared):
                built = "reused"
            else:
                store.db.client.drop_database(args.mongo_db)
                store.close()
                store = MongoStore(url, args.mongo_db)
                built = f"generated in {generate_mongo(store, args.tokens, args.shared):.1f} s"
            n_elements = store.db["token_urls"].estimated_document_count()
            n_states = store.db["url_states"].estimated_document_count()
            print(f"P4 store: {args.tokens} tokens, {n_elements} elements, {n_states} URL states ({built}); "
                  f"{server}", flush=True)
            table = Table("P4-mongo", f"hot queries at {args.tokens} tokens (median ms of {args.repeat}; Mongo "
                          f"store over the wire: {server})", ["query", "pipeline ms", "baseline ms", "rows", "baseline"])
            measure(store, MongoBaselines(store), table, args.tokens, args.repeat, args.window)
            cutoff = NOW - timedelta(minutes=60)
            state = store.find_url_state(SHARED_URL)
            source = state.source_token if state is not None else ""
            plans = [
                "retry candidates, per status: " + mongo_plan(store, "due_by_status", "error", cutoff, 50),
                "retry candidates, unsupported by platform: "
                + mongo_plan(store, "due_by_status_platform", "unsupported", "github", cutoff, 50),
                "gate lookup: " + mongo_plan(store, "url_state", SHARED_URL),
                "link copy: " + mongo_plan(store, "links_by_token_entry", source, SHARED_URL),
                "window lookup: " + mongo_plan(store, "existing_addresses", [_address(i) for i in range(500)]),
                "health, waiting (recorded): " + mongo_plan(store, "waiting", "error", cutoff, EXAMPLES, True),
                "health, waiting (never recorded): " + mongo_plan(store, "waiting", "pending", cutoff, EXAMPLES,
                                                                  False),
            ]
            if args.mongo_url is None:  # the FerretDB started for this run goes with its data
                store.db.client.drop_database(args.mongo_db)
        finally:
            store.close()
    return table, plans


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--store", choices=["sqlite", "mongo"], default="sqlite")
    parser.add_argument("--tokens", type=int, default=None, help="default: 1,000,000 (sqlite), 100,000 (mongo)")
    parser.add_argument("--shared", type=int, default=None, help="tokens holding the one shared URL "
                                                                  "(default: 1%% of --tokens)")
    parser.add_argument("--db", type=Path, default=None, help="sqlite: keep (and reuse) the generated file here")
    parser.add_argument("--mongo-url", default=None, help="mongo: a server to use (default: start a FerretDB)")
    parser.add_argument("--mongo-db", default="p4_bench", help="mongo: the database (reused when its sizes match)")
    parser.add_argument("--repeat", type=int, default=None, help="default: 20 (sqlite), 3 (mongo)")
    parser.add_argument("--window", type=int, default=2000, help="addresses in the reconcile window lookup")
    args = parser.parse_args(argv)
    if args.tokens is None:
        args.tokens = 1_000_000 if args.store == "sqlite" else 100_000
    if args.shared is None:
        args.shared = max(1, args.tokens // 100)
    if args.repeat is None:
        args.repeat = 20 if args.store == "sqlite" else 3
    if args.tokens < 10 or not 1 <= args.shared <= args.tokens or args.repeat < 1 or args.window < 2:
        parser.error("--tokens >= 10, --shared in 1..--tokens, --repeat >= 1, --window >= 2")
    table, plans = run_sqlite(args) if args.store == "sqlite" else run_mongo(args)
    table.notes.extend(f"plan - {p}" for p in plans)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
