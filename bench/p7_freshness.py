"""P7 — freshness: from a token's trade to its graph recorded, under the real daemon (a benchmark, not a test).

    python bench/p7_freshness.py [--instances dev deploy] [--settings new old] [--tokens 12] [--gap 7.3]
                                 [--busy N]

For each instance config the real services run on this machine: `dev` is what `make dev` starts
(`dg dev` on a copy of the top-level dagster.yaml: SQLite instance, the sensor turned on as in the
UI), `deploy` is the deployment rehearsal's (deploy/entrypoint.sh's code server, daemon and
webserver on deploy/dagster.yaml with a PostgreSQL database and a redis-server; SOCIAL_RECORDING_ENV=prod,
so every schedule and sensor runs). The sandbox plays the tracker: once token_flow_sensor has ticked
and the tracker has been idle for `--idle` seconds, N tokens trade `--gap` seconds apart (the
scenario is rewritten; the tracker's range query returns a token from its `last_transfer_at` on),
each with one free URL.

Per token, from the instance (GraphQL) and the store: trade -> the sensor tick that launched it ->
the run created (queued) -> dequeued -> RUN_START (its process is up) -> the recording step started
-> recorded (the element's `checked_at`). Printed: p50/p95 of each phase and of the total, for this
branch's settings and the old ones in the same run (sensor minimum interval 30 s, Dagster's 5 s
dequeue loop, sensors on the daemon's thread), the machine's load, and the tracker's requests per
minute while nothing traded (from the sandbox ledger). Every token must be recorded by exactly one
run (a batch is never launched twice).

`--busy N` is the loaded variant: N CPU-bound processes (one per core: `--busy $(nproc)`) spin for
the whole measurement of each row, started before its services, so the daemon, the run processes and
the code server compete for the cores as they would on a busy machine.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import yaml
from _common import REPO, Table, median, percentile  # noqa: I001  (bench/ on sys.path)

from social_recording.domain.models import ensure_utc
from social_recording.sandbox.ledger import Ledger
from social_recording.store import open_store
from test_support.redis_server import free_port
from test_support.rehearsal import (
    LOCATION,
    M_START_SENSOR,
    Q_LOCATIONS,
    REPO_SELECTOR,
    GraphQL,
    RehearsalError,
    deployment,
    port_open,
    process_env,
    processes_marked,
)
from test_support.sandbox_env import token, write_scenario

SENSOR = "token_flow_sensor"
RECORD_STEP = "record_tokens.record_live_tokens"
OLD_POLL_SECONDS = 31
"""SOCIAL_RECORDING_LIVE_POLL_SECONDS that gives the sensor its old minimum interval of 30 s."""
STARTUP_TIMEOUT_S = 180.0
DRAIN_TIMEOUT_S = 180.0
"""After the last trade: every token recorded within this, or the part fails."""

Q_TICKS = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { sensorState { status ticks(limit: 1000) { timestamp endTimestamp status runIds } } } } }"""

Q_RUNS = """query($filter: RunsFilter) { runsOrError(filter: $filter) { __typename ... on Runs { results {
  runId status creationTime startTime endTime runConfigYaml } } } }"""

Q_EVENTS = """query($runId: ID!, $cursor: String) { logsForRun(runId: $runId, afterCursor: $cursor) {
  __typename ... on EventConnection { cursor hasMore events { __typename
    ... on MessageEvent { timestamp } ... on StepEvent { stepKey } } } } }"""

PHASES = ("wait for a tick", "sensor evaluation", "run queue", "process start", "run start -> recording step",
          "recording", "trade -> recorded")


# --------------------------------------------------------------------------- settings: new and old


def old_instance_yaml(text: str) -> str:
    """The instance config as it was before the freshness settings: Dagster's default run queue (a
    5 s dequeue loop, no threads), sensors on the daemon's own thread, skipped ticks kept 7 days."""
    config = yaml.safe_load(text)
    for block in ("sensors", "retention"):
        config.pop(block, None)
    coordinator = config.get("run_coordinator")
    if coordinator is not None:
        coordinator.pop("config", None)
    return yaml.safe_dump(config, sort_keys=False)


def instance_yaml(instance: str, settings: str) -> str:
    text = (REPO / ("dagster.yaml" if instance == "dev" else "deploy/dagster.yaml")).read_text()
    return text if settings == "new" else old_instance_yaml(text)


def code_env(settings: str) -> dict[str, str]:
    return {} if settings == "new" else {"SOCIAL_RECORDING_LIVE_POLL_SECONDS": str(OLD_POLL_SECONDS)}


# --------------------------------------------------------------------------- services


@dataclass
class Running:
    """What the measurement needs of running services: the webserver's API, the store and the ledger."""

    gql: GraphQL
    store_url: str
    scenario: Path
    ledger: Path
    sensor_running_by_default: bool


@contextlib.contextmanager
def dev_services(workdir: Path, settings: str) -> Iterator[Running]:
    """`make dev`: `dg dev -w workspace.yaml` inside a DAGSTER_HOME holding the instance config."""
    home = workdir / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(instance_yaml("dev", settings))
    scenario = write_scenario(workdir / "scenario.json", [])
    store_url = f"sqlite:///{workdir / 'store.db'}"
    ledger = workdir / "ledger.jsonl"
    port = free_port()
    env = process_env({
        "DAGSTER_HOME": str(home), "SOCIAL_RECORDING_STORE_URL": store_url,
        "SOCIAL_RECORDING_SANDBOX_SCENARIO": str(scenario), "SOCIAL_RECORDING_SANDBOX_LEDGER": str(ledger),
        **code_env(settings),
    })
    log = (workdir / "dg-dev.log").open("wb")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dg"), "dev", "-w", str(REPO / "workspace.yaml"),
                             "-p", str(port)], cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    gql = GraphQL(port)
    try:
        started = time.monotonic()
        while not port_open(port):
            if proc.poll() is not None or time.monotonic() - started > STARTUP_TIMEOUT_S:
                raise SystemExit(f"P7: dg dev did not start:\n{_tail(workdir / 'dg-dev.log')}")
            time.sleep(0.5)
        wait_location_loaded_within(gql, STARTUP_TIMEOUT_S, lambda: _tail(workdir / "dg-dev.log"))
        yield Running(gql, store_url, scenario, ledger, sensor_running_by_default=False)
    finally:
        gql.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()
        for pid in processes_marked(f"DAGSTER_HOME={home}\0"):  # run processes that left the session
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def deploy_services(workdir: Path, settings: str) -> Iterator[Running]:
    """The deployment rehearsal's services on deploy/dagster.yaml (PostgreSQL, Redis, prod)."""
    config = workdir / "instance.yaml"
    config.write_text(instance_yaml("deploy", settings))
    with deployment(workdir, [], date.today() - timedelta(days=7), instance_config=config,
                    code_env=code_env(settings)) as dep:
        gql = GraphQL(dep.cfg.webserver_port)
        try:
            wait_location_loaded_within(gql, STARTUP_TIMEOUT_S, dep.logs)
            yield Running(gql, dep.cfg.store_url, dep.cfg.scenario, dep.cfg.ledger, sensor_running_by_default=True)
        finally:
            gql.close()


def wait_location_loaded_within(gql: GraphQL, timeout: float, logs: Callable[[], str]) -> None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        with contextlib.suppress(RehearsalError, httpx.HTTPError):
            for entry in gql(Q_LOCATIONS)["workspaceOrError"].get("locationEntries") or []:
                loaded = entry.get("locationOrLoadError") or {}
                if entry["name"] == LOCATION and entry["loadStatus"] == "LOADED":
                    if loaded.get("__typename") == "PythonError":
                        raise SystemExit(f"P7: the code location failed to load: {loaded.get('message')}")
                    if loaded.get("__typename") == "RepositoryLocation":
                        return
        time.sleep(0.5)
    raise SystemExit(f"P7: the code location did not load within {timeout:g} s:\n{logs()}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --------------------------------------------------------------------------- one measurement


@dataclass
class TokenTimes:
    address: str
    trade: float
    tick: float | None = None
    created: float | None = None
    dequeued: float | None = None
    run_start: float | None = None
    step_start: float | None = None
    recorded: float | None = None
    runs: list[str] = field(default_factory=list)

    def phases(self) -> dict[str, float] | None:
        points = (self.trade, self.tick, self.created, self.dequeued, self.run_start, self.step_start, self.recorded)
        if any(p is None for p in points):
            return None
        values = [float(p) for p in points if p is not None]
        out = {name: values[i + 1] - values[i] for i, name in enumerate(PHASES[:-1])}
        out[PHASES[-1]] = values[-1] - values[0]
        return out


@dataclass
class Measurement:
    instance: str
    settings: str
    tokens: list[TokenTimes]
    idle_tracker_per_min: float
    ticks_per_min: float
    load: str


def _selector() -> dict[str, str]:
    return {**REPO_SELECTOR, "sensorName": SENSOR}


def _ticks(gql: GraphQL) -> list[dict[str, Any]]:
    data = gql(Q_TICKS, selector=_selector())["sensorOrError"]
    if data["__typename"] != "Sensor":
        raise SystemExit(f"P7: sensorOrError: {data}")
    return list(data["sensorState"]["ticks"])


def _events(gql: GraphQL, run_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        conn = gql(Q_EVENTS, runId=run_id, cursor=cursor)["logsForRun"]
        out += conn.get("events") or []
        cursor = conn.get("cursor")
        if not conn.get("hasMore"):
            return out


def _recorded_at(store_url: str, addresses: list[str]) -> dict[str, float]:
    """address -> when its last element was recorded (checked_at), for tokens fully recorded."""
    store = open_store(store_url)
    try:
        out = {}
        for address in addresses:
            doc = store.find_token(address)
            if doc is None or not doc.social_urls or any(el.checked_at is None for el in doc.social_urls):
                continue
            out[address] = max(ensure_utc(el.checked_at).timestamp() for el in doc.social_urls if el.checked_at)
        return out
    finally:
        store.close()


def measure(instance: str, settings: str, n_tokens: int, gap_s: float, idle_s: float) -> Measurement:
    services = dev_services if instance == "dev" else deploy_services
    # As `make dev` and the image's `pip install` do: runs load the code location byte-compiled.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "social_recording")], check=True)
    with tempfile.TemporaryDirectory(prefix=f"bench-p7-{instance}-") as tmp, services(Path(tmp), settings) as svc:
        gql = svc.gql
        if not svc.sensor_running_by_default:
            gql(M_START_SENSOR, selector=_selector())  # as "Automation -> token_flow_sensor -> on" in the UI
        started = time.monotonic()
        while not _ticks(gql):
            if time.monotonic() - started > STARTUP_TIMEOUT_S:
                raise SystemExit(f"P7: {SENSOR} never ticked on {instance}")
            time.sleep(0.5)
        # The tracker stays idle for `idle_s` (its load is read from the ledger), then N tokens trade.
        idle_from = time.time()
        first_trade = datetime.now(UTC) + timedelta(seconds=idle_s)
        trades = [first_trade + timedelta(seconds=i * gap_s) for i in range(n_tokens)]
        tokens = [token(f"P7Fresh{instance}{settings}{i:03d}", t.isoformat(),
                        website=f"https://github.com/p7fresh/{instance}-{settings}-{i}") for i, t in enumerate(trades)]
        staged = svc.scenario.with_suffix(".next.json")
        write_scenario(staged, tokens)
        os.replace(staged, svc.scenario)
        addresses = [t["address"] for t in tokens]
        deadline = trades[-1].timestamp() + DRAIN_TIMEOUT_S
        recorded: dict[str, float] = {}
        while len(recorded) < n_tokens:
            if time.time() > deadline:
                missing = sorted(set(addresses) - set(recorded))
                raise SystemExit(f"P7: {instance}/{settings}: {len(missing)} token(s) not recorded in time: {missing[:5]}")
            time.sleep(1.0)
            recorded = _recorded_at(svc.store_url, addresses)
        load = _load()
        idle_until = first_trade.timestamp()
        tracker_idle = sum(1 for e in Ledger(svc.ledger).read()
                           if e.service == "tracker" and idle_from <= e.ts.timestamp() < idle_until)
        ticks = _ticks(gql)
        tick_times = [t["timestamp"] for t in ticks]
        span = max(tick_times) - min(tick_times)
        times = {a: TokenTimes(a, t.timestamp(), recorded=recorded[a]) for a, t in zip(addresses, trades, strict=True)}
        _collect_runs(gql, ticks, times)
    return Measurement(instance, settings, list(times.values()), tracker_idle * 60.0 / max(1e-9, idle_until - idle_from),
                       (len(tick_times) - 1) * 60.0 / span if span > 0 else float("nan"), load)


def _collect_runs(gql: GraphQL, ticks: list[dict[str, Any]], times: Mapping[str, TokenTimes]) -> None:
    tick_of = {rid: t["timestamp"] for t in ticks for rid in t["runIds"]}
    runs = gql(Q_RUNS, filter={"tags": [{"key": "dagster/sensor_name", "value": SENSOR}]})["runsOrError"]["results"]
    for run in runs:
        config = yaml.safe_load(run["runConfigYaml"]) or {}
        batch = config["ops"]["record_tokens"]["config"]["tokens"]
        events = _events(gql, run["runId"])
        first: dict[str, float] = {}
        for event in events:
            kind = event["__typename"]
            if kind == "ExecutionStepStartEvent" and event.get("stepKey") != RECORD_STEP:
                continue
            first.setdefault(kind, float(event["timestamp"]) / 1000.0)
        for item in batch:
            t = times.get(item["address"])
            if t is None:
                continue
            t.runs.append(run["runId"])
            t.tick = tick_of.get(run["runId"])
            t.created = float(run["creationTime"])
            t.dequeued = first.get("RunDequeuedEvent", first.get("RunStartingEvent"))
            t.run_start = first.get("RunStartEvent")
            t.step_start = first.get("ExecutionStepStartEvent")


@contextlib.contextmanager
def busy_cores(n: int) -> Iterator[None]:
    """`n` CPU-bound processes spinning until the block ends (the loaded variant)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


# --------------------------------------------------------------------------- output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--instances", nargs="+", choices=("dev", "deploy"), default=["dev", "deploy"])
    parser.add_argument("--settings", nargs="+", choices=("new", "old"), default=["new", "old"])
    parser.add_argument("--tokens", type=int, default=12)
    parser.add_argument("--gap", type=float, default=7.3, help="seconds between two trades")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of an idle tracker before the first trade")
    parser.add_argument("--busy", type=int, default=0,
                        help="CPU-bound processes spinning during each measurement (the loaded variant: one per core)")
    parser.add_argument("--verbose", action="store_true", help="print every token's phases")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.gap <= 0 or args.idle < 5 or args.busy < 0:
        parser.error("--tokens >= 1, --gap > 0, --idle >= 5, --busy >= 0")
    results = []
    for i in args.instances:
        for s in args.settings:
            with busy_cores(args.busy):
                results.append(measure(i, s, args.tokens, args.gap, args.idle))
    title = (f"freshness: trade -> recorded under the daemon, {args.tokens} tokens {args.gap:g} s apart"
             + (f", {args.busy} busy process(es) beside it" if args.busy else "") + ", p50 / p95 seconds")
    table = Table("P7", title, ["instance", "settings", *PHASES, "runs", "idle tracker req/min", "load"])
    failures = []
    for m in results:
        rows = [p for t in m.tokens if (p := t.phases()) is not None]
        twice = [t.address for t in m.tokens if len(t.runs) != 1]
        if twice or len(rows) != len(m.tokens):
            failures.append(f"{m.instance}/{m.settings}: tokens in more or fewer than one run: {twice}; "
                            f"{len(m.tokens) - len(rows)} without every timestamp")
        cells = [f"{median([r[p] for r in rows]):.1f} / {percentile([r[p] for r in rows], 0.95):.1f}" for p in PHASES]
        table.add(m.instance, m.settings, *cells, len({r for t in m.tokens for r in t.runs}), m.idle_tracker_per_min,
                  m.load)
        if args.verbose:
            for t in sorted(m.tokens, key=lambda t: t.trade):
                p = t.phases() or {}
                print(f"{m.instance}/{m.settings} {t.address} run {','.join(r[:8] for r in t.runs)} "
                      + " ".join(f"{k}={v:.1f}" for k, v in p.items()), file=sys.stderr)
    table.notes.append("new: this branch (sensor every 5 s, run queue every 1 s on threads, sensors on threads); "
                       "old: sensor minimum interval 30 s, Dagster's default 5 s run queue, sensors on the daemon's "
                       "thread")
    table.notes.append("dev: `make dev` (dg dev, SQLite instance, only token_flow_sensor on); deploy: "
                       "deploy/entrypoint.sh's services on deploy/dagster.yaml (PostgreSQL, Redis, every schedule "
                       "and sensor on)")
    table.notes.append("load: the 1/5/15-minute load averages when the last token was recorded "
                       f"({os.cpu_count()} CPUs)")
    table.print()
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
