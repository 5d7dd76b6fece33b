"""The rehearsal's faults: what an operator sees in a deployment's first month, in the middle of runs.

After the ordinary operations (rehearsal.py), with paid calls on in the sandbox, the rehearsal
- SIGKILLs a reconcile run's process between two tokens' paid calls, one free call in flight (the
  kernel's OOM killer): the code server reports the run failed, Dagster's run retry re-executes it
  once the dead run's window lock has expired, and retry_schedule's run records the URL the dead run
  left pending once its URL lock has expired (production's lock timings: the long pole, ~3 min);
- SIGKILLs the daemon right after a backfill of three partitions created its first run, and starts
  it again (a partition's run may be left stranded, which stranded_runs_sensor submits);
- restarts the lock server (redis-server, its append-only file kept) while the backfill's runs record
  paid URLs they share;
- SIGKILLs the webserver and starts it again.
Then it checks that every partition Dagster shows done holds its tokens in the store, nothing was paid
twice (the sandbox's ledger), no element is left pending and no run succeeded with work left behind,
and it times the recovery after each fault (docs/architecture.md, "Deployment").
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from social_recording.dagster_defs.jobs.reconcile import REMAINING_TAG
from social_recording.dagster_defs.jobs.reconcile import SENSOR_NAME as CATCH_UP_SENSOR
from social_recording.domain.urls import to_canonical
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
from social_recording.store import open_store
from social_recording.store.base import Store
from test_support.rehearsal import (
    BACKFILL_JOB,
    BACKFILL_RUNNING,
    M_BACKFILL,
    REPO_SELECTOR,
    TERMINAL,
    Deployment,
    GraphQL,
    RehearsalError,
    RunRecord,
    backfill_status,
    launch_partition,
    launch_retry_schedule,
    partition_statuses,
    runs,
    stop_backfill_start_sensor,
    wait_until,
    with_events,
)
from test_support.sandbox_env import token

FAULT_DAYS_BACK = (5, 6, 7)
"""The backfilled partitions of the fault phase."""
KILLED_DAY_BACK = 8
"""The partition whose run process is killed."""
BACKFILL_TOKENS = 3
KILLED_TOKENS = 6
SLOW_MS = 3000
"""Each token's free URL (a Telegram page, a GitHub repository) answers this slowly: runs last long
enough for the faults to land inside them."""
REDIS_DOWN_S = 2.0
FAULT_TIMEOUT_S = 420.0
"""Guard only: a dead run's window lock expires within 120 s and its URL lock within 180 s."""
OUTAGE_WAIT = "did not answer while"
"""In the warning a lock or rate-limit operation logs when it meets its backend down (locks/outage.py)."""
_PID = re.compile(r"Started process for run \(pid: (\d+)\)")

Q_SENSOR_TICKS = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) { __typename
  ... on Sensor { sensorState { status ticks(limit: 50) { status timestamp runIds skipReason } } } } }"""


@dataclass(frozen=True)
class FaultScenario:
    backfill_days: list[str]
    killed_day: str
    tokens: list[dict[str, Any]]
    targets: dict[str, dict[str, Any]]
    urls: dict[str, list[str]]
    """token address -> its canonical URLs."""
    killed_tokens: list[str]

    @property
    def first_day(self) -> date:
        return date.fromisoformat(self.killed_day)

    @property
    def days(self) -> list[str]:
        return [*self.backfill_days, self.killed_day]

    def tokens_of(self, days: Iterable[str]) -> list[str]:
        wanted = set(days)
        return [t["address"] for t in self.tokens if t["last_transfer_at"][:10] in wanted]


def fault_scenario(today: date) -> FaultScenario:
    """Backfill tokens: a website scanned by urlscan (paid, two steps) and a tweet (paid), both shared
    by the same token of every backfilled day (so runs meet at their URL locks and reuse each other's
    answers), a Farcaster cast (paid, Neynar) shared the same way, and a slow Telegram page of their
    own. Killed-run tokens: a slow GitHub repository and a tweet of their own."""
    days = [(today - timedelta(days=n)).isoformat() for n in FAULT_DAYS_BACK]
    killed = (today - timedelta(days=KILLED_DAY_BACK)).isoformat()
    tokens: list[dict[str, Any]] = []
    slow: list[str] = []
    for d, day in enumerate(days):
        for i in range(BACKFILL_TOKENS):
            telegram = f"https://t.me/rehearsal_fault_{d}{i}"
            slow.append(telegram)
            tokens.append(token(f"RfB{d}{i}token", f"{day}T{9 + i:02d}:00:00Z", website=f"https://rf{i}.example/launch",
                                twitter=f"https://x.com/i/status/{880000 + i}", telegram=telegram,
                                discord=f"https://farcaster.xyz/rehearsal/0x5eed{i:04x}"))  # a paid Farcaster cast
    killed_tokens = []
    for i in range(KILLED_TOKENS):
        repo = f"https://github.com/rehearsal/killed{i}"
        slow.append(repo)
        address = f"RfK{i}token"
        killed_tokens.append(address)
        tokens.append(token(address, f"{killed}T{9 + i:02d}:00:00Z", website=repo,
                            twitter=f"https://x.com/i/status/{881000 + i}"))
    urls = {t["address"]: [to_canonical(v) for k in ("website", "twitter", "telegram", "discord") if (v := t.get(k))]
            for t in tokens}
    return FaultScenario(days, killed, tokens, {u: {"latency_ms": SLOW_MS} for u in slow}, urls, killed_tokens)


@dataclass
class FaultReport:
    scenario: FaultScenario
    killed_run: str = ""
    left_pending: tuple[str, str] = ("", "")
    """(token, url) the killed run left pending: its call was in flight."""
    kill_to_partition_recorded_s: float = 0.0
    kill_to_pending_recorded_s: float = 0.0
    daemon_kill_to_healthy_s: float = 0.0
    daemon_restart_to_backfill_done_s: float = 0.0
    backfill_status: str = ""
    redis_down_s: float = 0.0
    redis_back_to_next_request_s: float = 0.0
    redis_waits: int = 0
    """Lock and rate-limiter operations that met the lock server down and waited for it (the run
    processes' warnings)."""
    webserver_kill_to_answering_s: float = 0.0
    faults_s: float = 0.0
    """The whole fault phase, from the first launch until every run ended."""
    partition_runs: dict[str, list[RunRecord]] = field(default_factory=dict)
    """partition -> its runs, oldest first."""
    retry_runs: list[RunRecord] = field(default_factory=list)
    """retry_job's runs of the fault phase: retry_schedule's, launched after the kill, and any of
    retry_candidates_sensor's."""
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)
    """token -> url -> status, after everything."""
    paid_requests: int = 0
    paid_subjects: int = 0
    repeated: dict[tuple[str, str], int] = field(default_factory=dict)
    succeeded_with_work_left: list[str] = field(default_factory=list)
    """Runs that ended SUCCESS with tokens not reached or URLs left locked, deferred or locked out."""
    done_with_work_left: list[str] = field(default_factory=list)
    """Partitions Dagster showed done (last run SUCCESS) while the store lacked tokens of their day,
    seen when each was first done and at the end."""
    partition_status: dict[str, str | None] = field(default_factory=dict)
    """Every partition of the rehearsal -> Dagster's status of its last run, at the end."""
    pending_left: list[str] = field(default_factory=list)
    """Elements of any of the rehearsal's tokens still pending at the end."""
    catch_up_ticks: int = 0
    catch_up_runs: list[RunRecord] = field(default_factory=list)

    @property
    def paid_per_subject(self) -> float:
        return self.paid_requests / self.paid_subjects if self.paid_subjects else 0.0

    def timing_lines(self) -> list[str]:
        return [
            f"faults: run process SIGKILLed between two paid calls: its partition recorded "
            f"{self.kill_to_partition_recorded_s:.1f} s later (Dagster's run retry, after the window lock's TTL), "
            f"the URL it left pending {self.kill_to_pending_recorded_s:.1f} s later (retry_schedule's run, after "
            f"the URL lock's TTL)",
            f"faults: daemon SIGKILLed mid-backfill: healthy again {self.daemon_kill_to_healthy_s:.1f} s later, "
            f"backfill {self.backfill_status} {self.daemon_restart_to_backfill_done_s:.1f} s after the restart",
            f"faults: Redis restarted mid-backfill ({self.redis_down_s:.1f} s down, {self.redis_waits} lock or "
            f"rate-limit operation(s) waited for it): the next provider request "
            f"{self.redis_back_to_next_request_s:.1f} s after it answered again",
            f"faults: webserver SIGKILLed: answering again {self.webserver_kill_to_answering_s:.1f} s later",
            f"faults: paid requests per distinct paid subject, whole rehearsal: {self.paid_per_subject:.2f} "
            f"({self.paid_requests} for {self.paid_subjects})",
            f"faults: {CATCH_UP_SENSOR}: {self.catch_up_ticks} evaluation(s) during the faults, "
            f"{len(self.catch_up_runs)} run(s) launched; the fault phase took {self.faults_s:.0f} s",
        ]


# --------------------------------------------------------------------------- helpers


def _partition_runs(gql: GraphQL, day: str) -> list[RunRecord]:
    found = runs(gql, {"pipelineName": BACKFILL_JOB, "tags": [{"key": "dagster/partition", "value": day}]})
    return sorted(found, key=lambda r: r.created)


def _elements(store: Store, addresses: Iterable[str]) -> dict[str, dict[str, str]]:
    """token -> url -> status of the tokens among `addresses` that are stored."""
    return {doc.address: {el.url: el.status.value for el in doc.social_urls}
            for address in sorted(store.find_existing_addresses(list(addresses)))
            if (doc := store.find_token(address)) is not None}


def _run_pid(gql: GraphQL, run_id: str) -> int | None:
    (run,) = runs(gql, {"runIds": [run_id]})
    for message in with_events(gql, run).messages:
        if match := _PID.search(message):
            return int(match.group(1))
    return None


def _first_times(what: dict[str, Callable[[], bool]], dep: Deployment, timeout: float) -> dict[str, float]:
    """Ask every probe each second until all have held once; when each first held (monotonic)."""
    seen: dict[str, float] = {}
    started = time.monotonic()
    while len(seen) < len(what):
        if time.monotonic() - started > timeout:
            left = ", ".join(n for n in what if n not in seen)
            raise RehearsalError(f"timed out after {timeout:g}s waiting for {left}\n{dep.logs()}")
        for name, held in what.items():
            if name not in seen and held():
                seen[name] = time.monotonic()
        time.sleep(1.0)
    return seen


def _missing(store: Store, day: str, tokens_by_day: dict[str, list[str]]) -> str | None:
    """Why partition `day` is not done in the store (tokens of its day not stored), or None."""
    wanted = tokens_by_day.get(day, [])
    missing = sorted(set(wanted) - set(store.find_existing_addresses(wanted)))
    return f"{day}: {len(missing)} of its {len(wanted)} token(s) not stored ({', '.join(missing)})" if missing else None


def _outage_waits(dep: Deployment) -> int:
    """The run processes' "did not answer ... waiting" warnings so far (they go to the code server's log)."""
    return dep.services["user_code"].log.read_text(errors="replace").count(OUTAGE_WAIT)


def _left_lines(run: RunRecord) -> bool:
    """Whether the run logged a URL left as it was (locked, deferred, locked_out)."""
    return any(f"status={s} " in line for line in run.url_lines for s in ("locked", "deferred", "locked_out"))


# --------------------------------------------------------------------------- the faults


def run_faults(gql: GraphQL, dep: Deployment, scenario: FaultScenario,
               rehearsal_tokens: list[dict[str, Any]]) -> FaultReport:
    """The faults, then what they left. `rehearsal_tokens`: every token of the rehearsal (the
    partitions and the pending elements are checked over all of them)."""
    report = FaultReport(scenario)
    ledger = Ledger(dep.cfg.ledger)
    tokens_by_day: dict[str, list[str]] = {}
    for t in rehearsal_tokens:
        tokens_by_day.setdefault(t["last_transfer_at"][:10], []).append(t["address"])
    began, began_at = time.monotonic(), time.time()
    store = open_store(dep.cfg.store_url)
    try:
        killed_at = _kill_a_run(gql, dep, scenario, report, store, ledger)
        # What the dead run left pending is the hourly retry_schedule's (its run waits for the URL's lock).
        launch_retry_schedule(gql)
        daemon_killed_at, backfill_id = _kill_the_daemon_mid_backfill(gql, dep, scenario, report)
        _restart_redis_mid_backfill(dep, scenario, report, store, ledger)
        report.webserver_kill_to_answering_s = dep.kill_and_restart("webserver")

        def backfill_done() -> bool:
            report.backfill_status = backfill_status(gql, backfill_id)
            if report.backfill_status in BACKFILL_RUNNING:
                return False
            report.done_with_work_left += [m for d in scenario.backfill_days if (m := _missing(store, d, tokens_by_day))]
            return True

        def killed_partition_done() -> bool:
            if _partition_runs(gql, scenario.killed_day)[-1].status != "SUCCESS":
                return False
            report.done_with_work_left += [m for m in [_missing(store, scenario.killed_day, tokens_by_day)] if m]
            return True

        address, url = report.left_pending
        seen = _first_times({
            "the backfill to end": backfill_done,
            f"partition {scenario.killed_day} done after the kill": killed_partition_done,
            f"{url} recorded after the kill": lambda: _elements(store, [address])[address][url] != "pending",
        }, dep, FAULT_TIMEOUT_S)
        wait_until("every run to end", lambda: all(r.status in TERMINAL for r in runs(gql, {})), dep, FAULT_TIMEOUT_S)
        report.daemon_restart_to_backfill_done_s = seen["the backfill to end"] - daemon_killed_at
        report.kill_to_partition_recorded_s = seen[f"partition {scenario.killed_day} done after the kill"] - killed_at
        report.kill_to_pending_recorded_s = seen[f"{url} recorded after the kill"] - killed_at
        report.faults_s = time.monotonic() - began

        _what_was_left(gql, store, ledger, report, tokens_by_day, began_at)
    finally:
        store.close()
    return report


def _kill_a_run(gql: GraphQL, dep: Deployment, scenario: FaultScenario, report: FaultReport, store: Store,
                ledger: Ledger) -> float:
    """Launch the killed partition one token at a time, SIGKILL its process when a token's paid call is
    recorded and its slow free call is in flight (no paid call is cut: a cut paid call is the
    documented one extra payment). Returns when (monotonic)."""
    run_id = launch_partition(gql, scenario.killed_day, {"ops": {"reconcile_window": {"config": {"max_workers": 1}}}})

    def between_paid_calls() -> tuple[str, str] | None:
        (run,) = runs(gql, {"runIds": [run_id]})
        if run.status in TERMINAL:
            raise RehearsalError(f"the run to kill ended ({run.status}) before its kill\n{dep.logs()}")
        stored = _elements(store, scenario.killed_tokens)
        if len(stored) < 2:  # the first token recorded in full
            return None
        asked = {e.subject for e in ledger.read() if e.service == "github"}
        for address, elements in stored.items():
            repo, tweet = scenario.urls[address]
            if elements.get(tweet) == "ok" and elements.get(repo) == "pending" and \
                    f"repo:{repo.split('github.com/', 1)[1]}" in asked:
                return address, repo
        return None

    report.left_pending = wait_until("the run between two paid calls", between_paid_calls, dep, FAULT_TIMEOUT_S,
                                     every=0.05)
    pid = _run_pid(gql, run_id)
    if pid is None:
        raise RehearsalError(f"no process id in run {run_id}'s log\n{dep.logs()}")
    os.kill(pid, signal.SIGKILL)
    report.killed_run = run_id
    return time.monotonic()


def _kill_the_daemon_mid_backfill(gql: GraphQL, dep: Deployment, scenario: FaultScenario,
                                  report: FaultReport) -> tuple[float, str]:
    """Launch the backfill, SIGKILL the daemon once it created the backfill's first run, start it
    again. Returns when it was killed (monotonic) and the backfill's id. The backfill daemon's crash:
    backfill_start_sensor is stopped first."""
    stop_backfill_start_sensor(gql)
    result = gql(M_BACKFILL, params={
        "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
        "partitionNames": scenario.backfill_days,
    })["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RehearsalError(f"launchPartitionBackfill: {result}")
    backfill_id: str = result["backfillId"]
    wait_until("the backfill's first run", lambda: runs(gql, {"tags": [{"key": "dagster/backfill", "value": backfill_id}]}),
               dep, FAULT_TIMEOUT_S, every=0.25)
    killed_at = time.monotonic()
    report.daemon_kill_to_healthy_s = dep.kill_and_restart("daemon")
    return killed_at, backfill_id


def _restart_redis_mid_backfill(dep: Deployment, scenario: FaultScenario, report: FaultReport, store: Store,
                                ledger: Ledger) -> None:
    """Restart the lock server as soon as a backfill run stored its first token (its paid URLs, shared
    with the other partitions, in flight); time until the next provider request."""
    backfill_tokens = scenario.tokens_of(scenario.backfill_days)
    wait_until("a backfill run recording", lambda: store.find_existing_addresses(backfill_tokens), dep,
               FAULT_TIMEOUT_S, every=0.1)
    assert dep.redis is not None
    waits_before = _outage_waits(dep)
    report.redis_down_s = dep.redis.restart(REDIS_DOWN_S)
    back = time.time()
    (report.redis_back_to_next_request_s,) = wait_until(
        "a provider request after the lock server's restart",
        lambda: [e.ts.timestamp() - back for e in ledger.read() if e.ts.timestamp() >= back][:1], dep,
        FAULT_TIMEOUT_S, every=0.1)
    report.redis_waits = _outage_waits(dep) - waits_before


def _what_was_left(gql: GraphQL, store: Store, ledger: Ledger, report: FaultReport,
                   tokens_by_day: dict[str, list[str]], began_at: float) -> None:
    scenario = report.scenario
    for day in scenario.days:
        report.partition_runs[day] = [with_events(gql, r) for r in _partition_runs(gql, day)]
    report.retry_runs = [with_events(gql, r) for r in runs(gql, {"pipelineName": "retry_job"}) if r.created >= began_at]
    report.statuses = _elements(store, scenario.urls)

    paid = Counter((e.service, e.subject) for e in ledger.read() if e.paid and not e.subject.startswith(POLL_PREFIXES))
    report.paid_requests, report.paid_subjects = sum(paid.values()), len(paid)
    report.repeated = ledger.repeated_paid_subjects()

    every_run = [with_events(gql, r) for r in runs(gql, {}) if r.status == "SUCCESS"]
    report.succeeded_with_work_left = [
        f"{r.job}[{r.tags.get('dagster/partition', '')}] {r.run_id}" for r in every_run
        if int(r.tags.get(REMAINING_TAG, "0")) > 0 or _left_lines(r)
    ]

    # Dagster's view of every partition of the rehearsal against the store's.
    statuses = partition_statuses(gql)
    report.partition_status = {day: statuses.get(day) for day in sorted(tokens_by_day) if day in statuses}
    report.done_with_work_left += [m for day, status in report.partition_status.items()
                                   if status == "SUCCESS" and (m := _missing(store, day, tokens_by_day))]
    everything = _elements(store, [a for addresses in tokens_by_day.values() for a in addresses])
    report.pending_left = [f"{a} {u}" for a, els in everything.items() for u, s in els.items() if s == "pending"]

    state = gql(Q_SENSOR_TICKS, selector={**REPO_SELECTOR, "sensorName": CATCH_UP_SENSOR})["sensorOrError"]
    if state["__typename"] != "Sensor":
        raise RehearsalError(f"sensorOrError({CATCH_UP_SENSOR}): {state}")
    report.catch_up_ticks = sum(1 for t in state["sensorState"]["ticks"] if t["timestamp"] >= began_at)
    report.catch_up_runs = runs(gql, {"tags": [{"key": "dagster/sensor_name", "value": CATCH_UP_SENSOR}]})
