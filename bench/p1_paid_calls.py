"""P1 — paid calls per distinct paid subject, four processes at once (a benchmark, not a test).

    python bench/p1_paid_calls.py [--tokens 48] [--holders 4] [--procs 4] [--latency-ms 50] [--budget 5]
        [--kill-at billed] [--budget-only]

N tokens share paid URLs: every X post, website (an urlscan scan: submit, then poll) and TikTok video
(an Apify actor run: start, then read) is held by `--holders` tokens, spread over `--procs` OS
processes that start at the same moment (the holders of one URL land in different processes). They
record with the real generators on the sandbox, whose ledger bills a paid request when it arrives,
a SQLite store and Redis locks (a redis-server this script starts).

Two scenarios: ok-only (every answer is ok) and mixed outcomes (not found, blocked, server errors,
a flaky first call, rate limits and a broken quote chain among the paid targets). Printed per
scenario: paid requests (second steps such as polls aside), distinct paid subjects, their ratio
(1.00 = nothing paid twice), the most any one subject was paid, and the final statuses. The
baseline, in the same run: the same workload with the dedupe gate and the URL locks switched off
(a benchmark-only switch), where every holder pays.

P1-budget: the ok-only workload again with a spend budget of `--budget` paid requests per UTC day on
each paid billing account (twitterapi, apify, urlscan), held on the Redis lock backend by the four
racing processes: the paid requests each account sent, beside the same run without a budget, and the
URLs the budget held back (`skipped_paid`, zero calls), and what the store's spend ledger (the
`provider_spend` figures) holds beside what the sandbox billed. Then the same racing run with one
process SIGKILLed at `--kill-at` of its first paid request (test_support/kill_points.py) and a
next run, its clock past the open calls' timeout, recording what is left: billed and ledger again.
`--budget-only` runs just these three.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import REPO, Table  # noqa: I001  (bench/ on sys.path)

from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
from social_recording.sandbox.scenario import ScriptedOutcome, unservable_reason
from social_recording.store.sqlite import SqliteStore
from test_support.kill_points import KILL_POINTS

WORKER = Path(__file__).with_name("_fault_worker.py")
PAID_ACCOUNTS = tuple(a.name for a in CATALOGUE.paid_accounts())
GUARD_S = 600.0


def subjects(n_subjects: int) -> list[list[str]]:
    """Per subject group: an X post, a website and a TikTok video (canonical forms)."""
    return [[f"https://x.com/i/status/{770000 + k}", f"https://p1site{k}.example/page",
             f"https://tiktok.com/@/video/{7100000000000000000 + k}"] for k in range(n_subjects)]


def mixed_targets(groups: list[list[str]]) -> dict[str, dict[str, str]]:
    """Every fourth group's URLs get a non-ok outcome (cycling through the kinds a provider answers)."""
    kinds = ["not_found", "blocked", "error", "flaky:1", "rate_limited", "invalid"]
    targets: dict[str, dict[str, str]] = {}
    for k, group in enumerate(groups):
        if k % 4:
            continue
        for j, url in enumerate(group):
            kind = kinds[(k // 4 + j) % len(kinds)]
            if unservable_reason(url, ScriptedOutcome.parse(kind)) is not None:
                kind = "not_found"  # a provider with no shape for it (only X's quote chain can be invalid, ...)
            targets[url] = {"outcome": kind}
    return targets


NEXT_RUN_AHEAD_S = 3 * 3600.0
"""The next run's clock after a kill: past the open calls' timeout (5 min) and a failed call's back-off."""
KILL_TTL_S = 3.0
"""The URL and token locks' lifetime in a run with a kill: the dead process's run out quickly."""


def _spawn(cfg: dict[str, Any]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(WORKER), json.dumps(cfg)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_scenario(root: Path, redis_url: str, args: argparse.Namespace, *, mixed: bool, unsafe: bool,
                 budget: int | None = None, kill_at: str | None = None) -> dict[str, Any]:
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.close()
    n_groups = max(1, args.tokens // args.holders)
    groups = subjects(n_groups)
    work = root / f"{'mixed' if mixed else 'ok'}-{'unsafe' if unsafe else 'engine'}-{budget}-{kill_at}"
    (work / "barrier").mkdir(parents=True)
    scenario = work / "scenario.json"
    scenario.write_text(json.dumps({"tokens": [], "default_latency_ms": args.latency_ms,
                                    "targets": mixed_targets(groups) if mixed else {}}))
    store = work / "store.db"
    SqliteStore(store).close()
    tokens = [(f"P1Tok{i:04d}", groups[i % n_groups]) for i in range(args.tokens)]
    procs = []
    started = time.monotonic()
    ttl = KILL_TTL_S if kill_at else 60.0
    common = {"store_path": str(store), "lock_url": redis_url, "scenario": str(scenario),
              "ledger": str(work / "ledger.jsonl"), "sleep_scale": 0.01, "url_lock_ttl": ttl, "token_lock_ttl": ttl,
              "url_lock_wait": 120.0, "max_workers": 4, "unsafe": unsafe,
              **({"spend_budgets": dict.fromkeys(PAID_ACCOUNTS, f"{budget}/day")} if budget is not None else {})}
    for p in range(args.procs):
        procs.append(_spawn({**common, "tokens": tokens[p::args.procs], "barrier": [str(work / "barrier"), args.procs],
                             **({"die_at": kill_at} if kill_at and p == 0 else {})}))
    held = 0
    for p, proc in enumerate(procs):
        out, err = proc.communicate(timeout=GUARD_S)
        if kill_at and p == 0 and proc.returncode == -9:
            continue  # killed where it was told to die
        if proc.returncode != 0:
            raise SystemExit(f"P1 worker failed ({proc.returncode}):\n{err[-3000:]}")
        held += int(json.loads(out.strip().splitlines()[-1]).get("budget_held", 0))
    if kill_at:  # the next run, once the dead process's locks ran out, records what is left
        time.sleep(KILL_TTL_S * 1.5)
        out, err = _spawn({**common, "tokens": tokens, "clock_ahead_s": NEXT_RUN_AHEAD_S}).communicate(timeout=GUARD_S)
        if not out.strip():
            raise SystemExit(f"P1 next run failed:\n{err[-3000:]}")
    wall = time.monotonic() - started
    paid = Counter((e.service, e.subject) for e in Ledger(work / "ledger.jsonl").read()
                   if e.paid and not e.subject.startswith(POLL_PREFIXES))
    s = SqliteStore(store)
    try:
        counts = {st.value: n for st, n in s.status_counts().by_status().items() if n}
        rows = s.spend_rows("2000-01-01")
    finally:
        s.close()
    ledger = Counter({a: sum(r.requests for r in rows if r.account == a) for a in PAID_ACCOUNTS})
    unanswered = Counter({a: sum(r.unanswered for r in rows if r.account == a) for a in PAID_ACCOUNTS})
    requests, distinct = sum(paid.values()), len(paid)
    by_account = Counter(service for service, _subject in paid.elements())
    return {"paid": requests, "distinct": distinct, "ratio": requests / distinct if distinct else float("nan"),
            "max": max(paid.values(), default=0), "wall": wall, "statuses": counts, "by_account": by_account,
            "held": held, "ledger": ledger, "unanswered": unanswered}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--holders", type=int, default=4, help="tokens holding each paid URL")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--budget", type=int, default=5, help="paid requests per UTC day per account (P1-budget)")
    parser.add_argument("--kill-at", default="billed", choices=KILL_POINTS,
                        help="where one racing process of P1-budget's kill run dies")
    parser.add_argument("--budget-only", action="store_true", help="run only P1-budget")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.holders < 1 or args.procs < 1 or args.latency_ms < 0 or args.budget < 0:
        parser.error("--tokens, --holders, --procs >= 1 and --latency-ms, --budget >= 0")
    from test_support.redis_server import running_redis

    table = Table("P1", f"paid calls per distinct paid subject ({args.tokens} tokens, each paid URL held by "
                        f"{args.holders}, {args.procs} processes, sandbox latency {args.latency_ms} ms)",
                  ["scenario", "mode", "paid", "distinct", "paid/distinct", "max", "wall_s", "final statuses"])
    budget_table = Table("P1-budget", f"paid requests sent under a spend budget of {args.budget} per UTC day per "
                                      f"account, {args.procs} processes racing ({args.tokens} tokens)",
                         ["account", "budget/day", "sent without budget", "sent with budget", "ledger", "URLs held back",
                          f"with a kill at {args.kill_at}: billed", "ledger (unanswered)"])
    with tempfile.TemporaryDirectory(prefix="bench-p1-") as tmp, running_redis() as redis_url:
        free = run_scenario(Path(tmp), redis_url, args, mixed=False, unsafe=False)
        capped = run_scenario(Path(tmp), redis_url, args, mixed=False, unsafe=False, budget=args.budget)
        killed = run_scenario(Path(tmp), redis_url, args, mixed=False, unsafe=False, budget=args.budget,
                              kill_at=args.kill_at)
        for account in PAID_ACCOUNTS:
            budget_table.add(account, args.budget, free["by_account"][account], capped["by_account"][account],
                             capped["ledger"][account], "", killed["by_account"][account],
                             f"{killed['ledger'][account]} ({killed['unanswered'][account]})")
        budget_table.add("all", args.budget * len(PAID_ACCOUNTS), free["paid"], capped["paid"],
                         sum(capped["ledger"].values()), capped["held"], killed["paid"],
                         f"{sum(killed['ledger'].values())} ({sum(killed['unanswered'].values())})")
        budget_table.notes.append("sent = billed requests in the sandbox ledger (second steps aside); ledger = the "
                                  "store's spend ledger (provider_spend's figures); held back = URLs recorded "
                                  "skipped_paid by the budget (zero calls; the retry job takes them after the reset)")
        budget_table.notes.append(f"kill run: process 1 of {args.procs} SIGKILLs itself at '{args.kill_at}' of its "
                                  "first paid request; a next run, its clock past the open calls' timeout, records "
                                  "what is left; unanswered = requests entered from a dead process's open call")
        budget_table.notes.append("final statuses with the budget: " + json.dumps(
            dict(sorted(capped["statuses"].items())), separators=(",", ":")))
        budget_table.print()
        if args.budget_only:
            return 0
        for mixed in (False, True):
            for unsafe in (False, True):
                r = free if not (mixed or unsafe) else run_scenario(Path(tmp), redis_url, args, mixed=mixed,
                                                                    unsafe=unsafe)
                table.add("mixed outcomes" if mixed else "ok-only", "baseline: no gate, no lock" if unsafe
                          else "pipeline", r["paid"], r["distinct"], r["ratio"], r["max"], r["wall"],
                          json.dumps(dict(sorted(r["statuses"].items())), separators=(",", ":")))
    table.notes.append("paid = billed requests in the sandbox ledger, second steps (urlscan polls, Apify run and "
                       "dataset reads) aside; 1.00 means no paid subject was paid twice")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
