"""The rehearsal's faults: what an operator sees in a deployment's first month, in the middle of runs.

While a backfill of three reconcile partitions and a slow reconcile run of a fourth record paid URLs
(the sandbox, paid calls on), the rehearsal
- SIGKILLs the daemon right after the backfill created its first run, and starts it again;
- restarts the lock server (Redis, its append-only file kept), two seconds down;
- SIGKILLs the slow run's process between two tokens' paid calls (one of its free calls in flight),
  as the kernel's OOM killer would: the code server marks it failed, Dagster's run retries start it
  again, the retry waits for the dead run's window lock to expire, and the retry job (launched here
  as its schedule would) records the URL the dead run left pending once that URL's lock expired;
- SIGKILLs the webserver and starts it again.
Then it checks that every partition ends recorded, nothing was paid twice (the sandbox's ledger), no
element is left pending and no run succeeded with work left behind; and it times the recovery after
each fault. The lock timings are production's: a dead run's locks expire by their TTLs.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from social_recording.dagster_defs.catch_up import REMAINING_TAG
from social_recording.domain.urls import to_canonical
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
from social_recording.store import open_store
from social_recording_tests.dagster_defs.sandbox_env import token
from social_recording_tests.deploy.rehearsal import (
    BACKFILL_JOB,
    M_BACKFILL,
    M_LAUNCH_RUN,
    REPO_SELECTOR,
    TERMINAL,
    Deployment,
    GraphQL,
    RehearsalError,
    RunRecord,
    runs,
    with_events,
)

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
_PID = re.compile(r"Started process for run \(pid: (\d+)\)")

Q_BACKFILL = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
  ... on PartitionBackfill { status } ... on PythonError { message } } }"""


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


def fault_scenario(today: date) -> FaultScenario:
    """Backfill tokens: a website scanned by urlscan (paid, two steps) and a tweet (paid), both shared
    by the same token of every backfilled day (so runs meet at their URL locks and reuse each other's
    answers), and a slow Telegram page of their own. Killed-run tokens: a slow GitHub repository and a
    tweet of their own."""
    days = [(today - timedelta(days=n)).isoformat() for n in FAULT_DAYS_BACK]
    killed = (today - timedelta(days=KILLED_DAY_BACK)).isoformat()
    tokens: list[dict[str, Any]] = []
    slow: list[str] = []
    for d, day in enumerate(days):
        for i in range(BACKFILL_TOKENS):
            telegram = f"https://t.me/rehearsal_fault_{d}{i}"
            slow.append(telegram)
            tokens.append(token(f"RfB{d}{i}token", f"{day}T{9 + i:02d}:00:00Z", website=f"https://rf{i}.example/launch",
                                twitter=f"https://x.com/i/status/{880000 + i}", telegram=telegram))
    killed_tokens = []
    for i in range(KILLED_TOKENS):
        repo = f"https://github.com/rehearsal/killed{i}"
        slow.append(repo)
        address = f"RfK{i}token"
        killed_tokens.append(address)
        tokens.append(token(address, f"{killed}T{9 + i:02d}:00:00Z", website=repo,
                            twitter=f"https://x.com/i/status/{881000 + i}"))
    urls = {t["address"]: [to_canonical(v) for k in ("website", "twitter", "telegram") if (v := t.get(k))]
            for t in tokens}
    return FaultScenario(days, killed, tokens, {u: {"latency_ms": SLOW_MS} for u in slow}, urls, killed_tokens)


@dataclass
class FaultReport:
    scenario: FaultScenario
    daemon_restart_to_healthy_s: float = 0.0
    daemon_restart_to_backfill_done_s: float = 0.0
    backfill_status: str = ""
    redis_down_s: float = 0.0
    redis_back_to_next_request_s: float = 0.0
    killed_run: str = ""
    kill_to_partition_recorded_s: float = 0.0
    kill_to_pending_recorded_s: float = 0.0
    webserver_kill_to_answering_s: float = 0.0
    partition_runs: dict[str, list[RunRecord]] = field(default_factory=dict)
    """partition -> its runs, oldest first."""
    retry_run: RunRecord | None = None
    statuses: dict[str, dict[str, str]] = field(default_factory=dict)
    """token -> url -> status, after everything."""
    paid_requests: int = 0
    paid_subjects: int = 0
    repeated: dict[tuple[str, str], int] = field(default_factory=dict)
    succeeded_with_work_left: list[str] = field(default_factory=list)

    @property
    def paid_per_subject(self) -> float:
        return self.paid_requests / self.paid_subjects if self.paid_subjects else 0.0

    def timing_lines(self) -> list[str]:
        return [
            f"faults: daemon SIGKILLed mid-backfill, restarted: healthy {self.daemon_restart_to_healthy_s:.1f} s, "
            f"backfill {self.backfill_status} {self.daemon_restart_to_backfill_done_s:.1f} s after the restart",
            f"faults: Redis restarted ({self.redis_down_s:.1f} s down): the next provider request "
            f"{self.redis_back_to_next_request_s:.1f} s after it answered again",
            f"faults: run {self.killed_run} SIGKILLed: its partition recorded {self.kill_to_partition_recorded_s:.1f} s "
            f"later, the URL it left pending {self.kill_to_pending_recorded_s:.1f} s later",
            f"faults: webserver SIGKILLed, answering again {self.webserver_kill_to_answering_s:.1f} s later",
            f"faults: paid requests per distinct paid subject, whole rehearsal: {self.paid_per_subject:.2f} "
            f"({self.paid_requests} for {self.paid_subjects})",
        ]


# --------------------------------------------------------------------------- helpers


def _until(what: str, probe: Any, dep: Deployment, timeout: float = FAULT_TIMEOUT_S, every: float = 0.25) -> Any:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        value = probe()
        if value:
            return value
        time.sleep(every)
    raise RehearsalError(f"timed out after {timeout:g}s waiting for {what}\n{dep.logs()}")


def _partition_runs(gql: GraphQL, day: str) -> list[RunRecord]:
    found = runs(gql, {"pipelineName": BACKFILL_JOB, "tags": [{"key": "dagster/partition", "value": day}]})
    return sorted(found, key=lambda r: r.created)


def _launch(gql: GraphQL, job: str, run_config: dict[str, Any], tags: dict[str, str]) -> str:
    launched = gql(M_LAUNCH_RUN, params={
        "selector": {**REPO_SELECTOR, "jobName": job}, "runConfigData": run_config,
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
    })["launchRun"]
    if launched["__typename"] != "LaunchRunSuccess":
        raise RehearsalError(f"launchRun: {launched}")
    run_id: str = launched["run"]["runId"]
    return run_id


def _elements(dep: Deployment, addresses: list[str]) -> dict[str, dict[str, str]]:
    store = open_store(dep.cfg.store_url)
    try:
        return {doc.address: {el.url: el.status.value for el in doc.social_urls}
                for address in sorted(store.find_existing_addresses(addresses))
                if (doc := store.find_token(address)) is not None}
    finally:
        store.close()


def _run_pid(gql: GraphQL, run_id: str) -> int | None:
    (run,) = runs(gql, {"runIds": [run_id]})
    for message in with_events(gql, run).messages:
        if match := _PID.search(message):
            return int(match.group(1))
    return None


def _restart(dep: Deployment, name: str) -> float:
    """SIGKILL a service (its process group), start it again; seconds until its health check passes."""
    service = dep.services[name]
    assert service.proc is not None
    os.killpg(service.proc.pid, signal.SIGKILL)
    service.proc.wait(timeout=30)
    killed = time.monotonic()
    service.start()
    dep.wait_healthy(name)
    return time.monotonic() - killed


# --------------------------------------------------------------------------- the faults


def run_faults(gql: GraphQL, dep: Deployment, scenario: FaultScenario) -> FaultReport:
    report = FaultReport(scenario)
    ledger = Ledger(dep.cfg.ledger)

    # The slow run (one token at a time, so a kill lands between two tokens) and the backfill.
    killed_id = _launch(gql, BACKFILL_JOB, {"ops": {"reconcile_window": {"config": {"max_workers": 1}}}},
                        {"dagster/partition": scenario.killed_day})
    result = gql(M_BACKFILL, params={
        "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
        "partitionNames": scenario.backfill_days,
    })["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RehearsalError(f"launchPartitionBackfill: {result}")
    backfill_id = result["backfillId"]
    backfill_filter = {"tags": [{"key": "dagster/backfill", "value": backfill_id}]}

    # 1. The lock server, restarted while the slow run records (its URLs are answered every 3 s).
    def recording() -> bool:
        (run,) = runs(gql, {"runIds": [killed_id]})
        if run.status in TERMINAL:
            raise RehearsalError(f"the slow run ended ({run.status}) before the faults\n{dep.logs()}")
        return bool(_elements(dep, scenario.killed_tokens))

    _until("the slow run recording", recording, dep)
    assert dep.redis is not None
    report.redis_down_s = dep.redis.restart(REDIS_DOWN_S)
    redis_back = time.time()
    (report.redis_back_to_next_request_s,) = _until(
        "a provider request after the lock server's restart",
        lambda: [e.ts.timestamp() - redis_back for e in ledger.read() if e.ts.timestamp() >= redis_back][:1], dep)

    # 2. The slow run's process, killed when a token's paid call is recorded and its slow free call is in
    #    flight: no paid call is cut (a cut one-step paid call is the documented one extra payment).
    def between_paid_calls() -> bool:
        stored = _elements(dep, scenario.killed_tokens)
        if len(stored) < 2:
            return False
        asked = {e.subject for e in ledger.read() if e.service == "github"}
        for address, elements in stored.items():
            repo, tweet = scenario.urls[address]
            if elements.get(tweet) == "ok" and elements.get(repo) == "pending" and \
                    f"repo:{repo.split('github.com/', 1)[1]}" in asked:
                return True
        return False

    _until("the slow run between two paid calls", between_paid_calls, dep, every=0.05)
    pid = _run_pid(gql, killed_id)
    if pid is None:
        raise RehearsalError(f"no process id in run {killed_id}'s log\n{dep.logs()}")
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    report.killed_run = killed_id

    # 3. The daemon, killed once the backfill has created its first run, and started again.
    _until("the backfill's first run", lambda: runs(gql, backfill_filter), dep)
    daemon = dep.services["daemon"]
    assert daemon.proc is not None
    os.killpg(daemon.proc.pid, signal.SIGKILL)
    daemon.proc.wait(timeout=30)
    time.sleep(1.0)
    daemon_restarted = time.monotonic()
    daemon.start()
    report.daemon_restart_to_healthy_s = dep.wait_healthy("daemon")

    # 4. The webserver, killed and started again while runs go on.
    report.webserver_kill_to_answering_s = _restart(dep, "webserver")

    # The backfill completes; the killed partition is recorded by its run retry.
    def backfill_done() -> str | None:
        data = gql(Q_BACKFILL, id=backfill_id)["partitionBackfillOrError"]
        status: str = data.get("status", "")
        return status if status.startswith("COMPLETED") or status in ("FAILED", "CANCELED") else None

    report.backfill_status = _until("the backfill to end", backfill_done, dep, every=1.0)
    report.daemon_restart_to_backfill_done_s = time.monotonic() - daemon_restarted

    def killed_partition_recorded() -> bool:
        latest = _partition_runs(gql, scenario.killed_day)[-1]
        return latest.status == "SUCCESS"

    _until(f"partition {scenario.killed_day} recorded after the kill", killed_partition_recorded, dep, every=1.0)
    report.kill_to_partition_recorded_s = time.monotonic() - killed_at

    # What the dead run left pending on its stored token: the retry job's, as its schedule launches it.
    retry_id = _launch(gql, "retry_job", {"ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}},
                       {"dagster/schedule_name": "retry_schedule"})
    (retry,) = _until("the retry run", lambda: (r if (r := runs(gql, {"runIds": [retry_id]})) and
                                                r[0].status in TERMINAL else None), dep, every=1.0)
    report.retry_run = with_events(gql, retry)
    report.kill_to_pending_recorded_s = time.monotonic() - killed_at

    for day in [*scenario.backfill_days, scenario.killed_day]:
        report.partition_runs[day] = [with_events(gql, r) for r in _partition_runs(gql, day)]
    report.statuses = _elements(dep, list(scenario.urls))
    paid = Counter((e.service, e.subject) for e in ledger.read() if e.paid and not e.subject.startswith(POLL_PREFIXES))
    report.paid_requests, report.paid_subjects = sum(paid.values()), len(paid)
    report.repeated = ledger.repeated_paid_subjects()
    every_run = runs(gql, {"pipelineName": BACKFILL_JOB}) + runs(gql, {"pipelineName": "retry_job"})
    report.succeeded_with_work_left = [
        f"{r.job}[{r.tags.get('dagster/partition', '')}] {r.run_id}" for r in every_run
        if r.status == "SUCCESS" and (int(r.tags.get(REMAINING_TAG, "0")) > 0 or _left_lines(gql, r))
    ]
    return report


def _left_lines(gql: GraphQL, run: RunRecord) -> bool:
    """Whether the run logged a URL left as it was (locked, deferred, locked_out)."""
    lines = with_events(gql, run).url_lines if not run.messages else run.url_lines
    return any(f"status={s} " in line for line in lines for s in ("locked", "deferred", "locked_out"))
