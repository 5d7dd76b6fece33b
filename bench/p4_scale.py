"""P4 — the hot queries at a million tokens, with SQLite's plans (a benchmark, not a test).

    python bench/p4_scale.py [--tokens 1000000] [--shared 10000] [--db PATH] [--repeat 20]

Generates N tokens straight into a SQLite store file (bulk inserts, not through the engine): 2, 3 or 4
URLs each (an X post, a website, a Telegram channel shared by 20 tokens, a GitHub repo), a realistic
status mix, `checked_at` spread over 30 days, one URL state per distinct URL, and one X post held by
`--shared` tokens (its state says ok, its source token has three links). `--db PATH` keeps the file
and reuses it when it already holds the same sizes. No ANALYZE is run: the store never runs one, so
the planner works without statistics, as in production.

Then it times, median of `--repeat` runs each, and prints SQLite's plan beside:
- the retry candidate query (the default selection, limit 50) against the baseline of reading every
  due element of those statuses and sorting them in Python;
- the dedupe gate's lookup of the shared URL (its one state row) against reading every holder's
  element and picking the best answer in Python; and the link copy's read of one source token;
- the reconcile window lookup of 2,000 addresses (half stored) in `$in` chunks against one query per
  address.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _common import Table  # noqa: I001  (bench/ on sys.path)

from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.recording.candidates import retry_query
from social_recording.store._codec import dt_to_text
from social_recording.store.sqlite import SqliteStore

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SHARED_URL = "https://x.com/i/status/4242424242"
STATUS_MIX: tuple[tuple[str, float], ...] = (
    ("ok", 0.70), ("not_found", 0.05), ("blocked", 0.02), ("invalid", 0.005), ("exhausted", 0.015),
    ("error", 0.08), ("pending", 0.05), ("skipped_paid", 0.05), ("unsupported", 0.03),
)
SECONDARY_INDEXES = ("idx_tokens_discovered", "idx_token_urls_url", "idx_token_urls_due", "idx_token_urls_platform_due")


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


def generate(path: Path, n_tokens: int, n_shared: int, seed: int = 7) -> float:
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
    rng = random.Random(seed)
    created = dt_to_text(NOW - timedelta(days=30))
    states: dict[str, tuple[Any, ...]] = {}

    def token_rows() -> Iterator[tuple[Any, ...]]:
        for i in range(n_tokens):
            yield (f"Mint{i:09d}", f"T{i}", None, None, "[]", None, created, created, 0)

    def url_rows() -> Iterator[tuple[Any, ...]]:
        for i in range(n_tokens):
            address = f"Mint{i:09d}"
            pairs = _urls_of(i)
            if i < n_shared:
                pairs = [*pairs, (SHARED_URL, Platform.X.value)]
            for pos, ((url, platform), status) in enumerate(zip(pairs, _statuses(rng, len(pairs)), strict=True)):
                if url == SHARED_URL:
                    status = "ok"
                checked = NOW - timedelta(seconds=rng.randrange(30 * 86400))
                checked_text = "" if status == "pending" else dt_to_text(checked)
                called = status not in ("pending", "skipped_paid", "unsupported")
                attempted = dt_to_text(checked) if called else None
                attempts = rng.randint(1, 3) if called else 0
                cause = ("no_generator" if rng.random() < 0.5 else "unparseable") if status == "unsupported" else (
                    "paid_disabled" if status == "skipped_paid" else None)
                if url not in states:
                    states[url] = (url, platform, status, attempted, attempts, address if status == "ok" else None, 0,
                                   None, None, None, checked_text or created)
                yield (address, url, status, attempted, attempts, pos, platform, checked_text, cause, None, 0, created)

    conn.executemany("INSERT INTO tokens (address, symbol, image, first_transfer_at, fingerprints, web, created_at, "
                     "updated_at, fence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", token_rows())
    conn.executemany("INSERT INTO token_urls (address, url, status, attempted_at, attempts, position, platform, "
                     "checked_at, cause, detail, fence, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     url_rows())
    conn.executemany("INSERT INTO url_states (url, platform, status, attempted_at, attempts, source_token, fence, "
                     "request_provider, request_id, request_submitted_at, updated_at) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", sorted(states.values()))
    source = states[SHARED_URL][5] if n_shared else None
    if source:
        conn.executemany("INSERT INTO token_links (token_address, object, object_id, entry_url, platform, subtype, "
                         "link_depth, created_at) VALUES (?, ?, ?, ?, 'x', ?, ?, ?)",
                         [(source, kind, str(k), SHARED_URL, sub, depth, created)
                          for k, (kind, sub, depth) in enumerate((("content", "tweet", 0), ("account", "user", 0),
                                                                  ("content", "tweet", 1)))])
    for name in SECONDARY_INDEXES:
        conn.execute(saved[name])
    conn.execute("CREATE TABLE IF NOT EXISTS bench_meta (tokens INTEGER, shared INTEGER)")
    conn.execute("DELETE FROM bench_meta")
    conn.execute("INSERT INTO bench_meta VALUES (?, ?)", (n_tokens, n_shared))
    conn.execute("COMMIT")
    conn.close()
    return time.perf_counter() - started


def _reusable(path: Path, n_tokens: int, n_shared: int) -> bool:
    if not path.exists():
        return False
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT tokens, shared FROM bench_meta").fetchone() == (n_tokens, n_shared)
    except sqlite3.Error:
        return False


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median milliseconds of `repeat` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(samples)


def plan(store: SqliteStore, name: str, *params: Any) -> str:
    return " | ".join(store.explain(name, *params))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--shared", type=int, default=10_000, help="tokens holding the one shared URL")
    parser.add_argument("--db", type=Path, default=None, help="keep (and reuse) the generated file here")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--window", type=int, default=2000, help="addresses in the reconcile window lookup")
    args = parser.parse_args(argv)
    if args.tokens < 10 or not 1 <= args.shared <= args.tokens or args.repeat < 1 or args.window < 2:
        parser.error("--tokens >= 10, --shared in 1..--tokens, --repeat >= 1, --window >= 2")

    with tempfile.TemporaryDirectory(prefix="bench-p4-") as tmp:
        path = args.db or Path(tmp) / "store.db"
        if _reusable(path, args.tokens, args.shared):
            built = "reused"
        else:
            if path.exists():
                path.unlink()
            built = f"generated in {generate(path, args.tokens, args.shared):.1f} s"
        store = SqliteStore(path)
        conn = store._conn()
        elements = conn.execute("SELECT count(*) FROM token_urls").fetchone()[0]
        n_states = conn.execute("SELECT count(*) FROM url_states").fetchone()[0]
        print(f"P4 store: {args.tokens} tokens, {elements} elements, {n_states} URL states ({built}); "
              f"{path.stat().st_size / 1e6:.0f} MB", flush=True)

        table = Table("P4", f"hot queries at {args.tokens} tokens (median ms of {args.repeat}; SQLite, no ANALYZE)",
                      ["query", "pipeline ms", "baseline ms", "rows", "baseline"])
        plans: list[str] = []

        # 1. retry candidates: the default selection, limit 50
        query = retry_query(now=NOW, min_interval=timedelta(minutes=60), limit=50, enable_paid=True,
                            usable_platforms=frozenset(Platform) - {Platform.DISCORD})
        found = store.select_candidates(query)
        cutoff = dt_to_text(query.checked_before)
        statuses = sorted(s.value for s in query.statuses)

        def all_then_sort() -> list[Any]:
            rows = conn.execute(
                f"SELECT address, url, status, attempts, checked_at, platform, cause FROM token_urls "
                f"WHERE status IN ({','.join('?' * len(statuses))}) AND checked_at <= ?", [*statuses, cutoff]
            ).fetchall()
            rows = [r for r in rows if r[2] != FetchStatus.UNSUPPORTED.value or r[6] == "no_generator"]
            return sorted(rows, key=lambda r: (r[4], r[0], r[1]))[:50]

        due = conn.execute(f"SELECT count(*) FROM token_urls WHERE status IN ({','.join('?' * len(statuses))}) "
                           "AND checked_at <= ?", [*statuses, cutoff]).fetchone()[0]
        if [(c.address, c.url) for c in found] != [(r[0], r[1]) for r in all_then_sort()]:
            raise SystemExit("P4: the pushed-down selection and the baseline disagree")
        table.add("retry candidates (default selection, limit 50)", timed(lambda: store.select_candidates(query),
                  args.repeat), timed(all_then_sort, max(1, args.repeat // 4)), f"50 of {due} due",
                  "every due element read, sorted in Python")
        plans.append("retry candidates, per status: " + plan(store, "due_by_status", "error", cutoff, 50))
        plans.append("retry candidates, unsupported by platform: "
                     + plan(store, "due_by_status_platform", "unsupported", "github", cutoff, 50))

        # 2. the dedupe gate on a URL held by `shared` tokens, and the one-token link copy
        state = store.find_url_state(SHARED_URL)
        assert state is not None and state.status is FetchStatus.OK and state.source_token

        def every_holder() -> Any:
            rows = conn.execute("SELECT address, status, attempted_at FROM token_urls WHERE url = ?",
                                [SHARED_URL]).fetchall()
            ok = [r for r in rows if r[1] == "ok"]
            return max(ok, key=lambda r: r[2] or "") if ok else None

        holders = conn.execute("SELECT count(*) FROM token_urls WHERE url = ?", [SHARED_URL]).fetchone()[0]
        table.add(f"gate lookup, URL held by {holders} tokens", timed(lambda: store.find_url_state(SHARED_URL),
                  args.repeat), timed(every_holder, args.repeat), "1 state row",
                  "every holder's element read, best picked in Python")
        plans.append("gate lookup: " + plan(store, "url_state", SHARED_URL))
        table.add("link copy source (one token's links)",
                  timed(lambda: store.find_links(state.source_token or "", SHARED_URL), args.repeat), float("nan"),
                  f"{len(store.find_links(state.source_token, SHARED_URL))} links", "-")
        plans.append("link copy: " + plan(store, "links_by_token_entry", state.source_token, SHARED_URL))

        # 3. the reconcile window lookup: which of ~2000 addresses are stored
        rng = random.Random(11)
        window = [f"Mint{rng.randrange(args.tokens):09d}" for _ in range(args.window // 2)]
        window += [f"Unseen{i:09d}" for i in range(args.window - len(window))]
        rng.shuffle(window)
        stored = store.find_existing_addresses(window)

        def one_by_one() -> set[str]:
            return {a for a in window if conn.execute("SELECT 1 FROM tokens WHERE address = ?", [a]).fetchone()}

        if stored != one_by_one():
            raise SystemExit("P4: the window lookup and the baseline disagree")
        table.add(f"window lookup ({len(window)} addresses)", timed(lambda: store.find_existing_addresses(window),
                  args.repeat), timed(one_by_one, max(1, args.repeat // 4)), f"{len(stored)} stored",
                  "one query per address")
        plans.append("window lookup: " + plan(store, "existing_addresses", window[:500]))
        store.close()
    table.notes.extend(f"plan - {p}" for p in plans)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
