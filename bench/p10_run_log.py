"""P10: what one run-log event per URL costs a run, on both instance configs (not a test).

    python bench/p10_run_log.py [--urls 1000] [--repeat 3] [--instances dev deploy]

A run of `--urls` URL outcomes goes through the recording stage's run log (`run_log.UrlLog`) inside a
real Dagster run executed in process against a real instance: `dev` is the top-level dagster.yaml
(`make dev`: SQLite, one event-log file per run) in a temporary DAGSTER_HOME, `deploy` is
deploy/dagster.yaml (PostgreSQL) on a database of its own on the local server (created and dropped;
SOCIAL_RECORDING_TEST_POSTGRES_URL names another server). Beside it, the baseline of the same run:
the lines batched 50 to an event (what the run log did before), and no run log at all.

Per mode: the time the recording threads spent handing lines to the log (what a URL waits for), the
time until the last event was written (the writer thread's work, which runs beside the recording),
that time per URL, and the events the run wrote (read back from the instance).
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from dagster import DagsterInstance, OpExecutionContext, job, op  # noqa: E402

from bench._common import Table  # noqa: E402
from social_recording.dagster_defs.run_log import UrlLog, hold_event_connection, url_line  # noqa: E402
from social_recording.domain.status import FetchStatus  # noqa: E402
from social_recording.recording.outcomes import UrlOutcome  # noqa: E402

BATCH_LINES = 50
"""The baseline: lines per event of the batched run log this part compares with.

No `from __future__ import annotations` here: Dagster reads the op's annotations at decoration time."""
MODES = {
    "per_url": ("one event per URL (this pipeline)", True),
    "per_url_unheld": ("one event per URL, a connection per event", False),
    "batched": (f"baseline: {BATCH_LINES} lines per event (before)", False),
    "none": ("baseline: no run log", False),
}
"""Mode -> (label, whether the run holds its event-log connection as the recording stage does)."""
_TIMES: dict[str, float] = {}


def outcomes(n: int) -> list[UrlOutcome]:
    """Outcomes shaped like a reconcile's: a token address, a free-platform URL, a short why."""
    statuses = [FetchStatus.OK] * 8 + [FetchStatus.ERROR, FetchStatus.NOT_FOUND]
    return [UrlOutcome(f"Bench{i:06d}" + "b" * 38, f"https://github.com/bench{i}/repo{i}", "github",
                       statuses[i % len(statuses)], True, False, 0.4, 212.0,
                       "" if i % 10 < 8 else "ExternalFetchError: UPSTREAM: github: HTTP 503 from api.github.com")
            for i in range(n)]


class _Batched:
    """The baseline: lines joined BATCH_LINES to an event, written on the recording thread."""

    def __init__(self, log: Any) -> None:
        self._log, self._lines = log, []  # type: ignore[var-annotated]

    def add(self, outcome: UrlOutcome) -> None:
        self._lines.append(url_line(outcome))
        if len(self._lines) >= BATCH_LINES:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self._log.info("\n".join(self._lines))
            self._lines = []


@op(config_schema={"mode": str, "urls": int, "held": bool})
def log_urls(context: OpExecutionContext) -> None:
    mode, items = context.op_config["mode"], outcomes(context.op_config["urls"])
    if context.op_config["held"]:
        hold_event_connection(context.instance)  # as the recording stage does
    start = time.perf_counter()
    if mode.startswith("per_url"):
        with UrlLog(context.log) as url_log:
            for o in items:
                url_log.add(o)
            _TIMES["handed"] = time.perf_counter() - start
    elif mode == "batched":
        batched = _Batched(context.log)
        for o in items:
            batched.add(o)
        batched.flush()
        _TIMES["handed"] = time.perf_counter() - start
    else:
        _TIMES["handed"] = 0.0
    _TIMES["written"] = time.perf_counter() - start


@job
def run_log_bench() -> None:
    log_urls()


@contextmanager
def instance_home(config: str) -> Iterator[None]:
    """A real instance of `config` in DAGSTER_HOME (dev: SQLite in a temporary directory; deploy:
    PostgreSQL); each run opens it anew (`DagsterInstance.get()`), as a run process does."""
    home = Path(tempfile.mkdtemp(prefix="p10-"))
    database = f"p10_{uuid.uuid4().hex[:10]}"
    saved = dict(os.environ)
    try:
        if config == "dev":
            shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
        else:
            from test_support.postgres_server import admin_params, create_database

            shutil.copy(REPO / "deploy" / "dagster.yaml", home / "dagster.yaml")
            admin = admin_params()
            create_database(database)
            os.environ.update({"DAGSTER_POSTGRES_HOST": str(admin["host"]), "DAGSTER_POSTGRES_PORT": str(admin["port"]),
                               "DAGSTER_POSTGRES_USER": str(admin["user"]),
                               "DAGSTER_POSTGRES_PASSWORD": str(admin["password"]), "DAGSTER_POSTGRES_DB": database})
        os.environ["DAGSTER_HOME"] = str(home)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        if config == "deploy":
            from test_support.postgres_server import drop_database

            drop_database(database)
        shutil.rmtree(home, ignore_errors=True)


def measure(mode: str, urls: int) -> tuple[float, float, int]:
    config = {"mode": mode, "urls": urls, "held": MODES[mode][1]}
    with DagsterInstance.get() as instance:
        result = run_log_bench.execute_in_process(run_config={"ops": {"log_urls": {"config": config}}},
                                                  instance=instance)
        assert result.success
        events = sum(1 for e in instance.all_logs(result.run_id) if e.user_message.startswith("url_outcome "))
    return _TIMES["handed"], _TIMES["written"], events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--urls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instances", nargs="+", choices=("dev", "deploy"), default=["dev", "deploy"])
    args = parser.parse_args(argv)
    table = Table("P10", f"run-log events for {args.urls} URL outcomes, median of {args.repeat}",
                  ["instance", "run log", "events", "handed over s", "written s", "ms per URL",
                   "extra ms per URL vs none"])
    for config in args.instances:
        with instance_home(config):
            measure("per_url", 10)  # create the instance's storage, load the modules
            samples: dict[str, list[tuple[float, float, int]]] = {m: [] for m in MODES}
            for _ in range(args.repeat):
                for mode in MODES:  # alternated, so a busy moment of the machine hits every mode alike
                    samples[mode].append(measure(mode, args.urls))
            base = statistics.median(w for _, w, _ in samples["none"])
            for mode in MODES:
                handed = statistics.median(h for h, _, _ in samples[mode])
                written = statistics.median(w for _, w, _ in samples[mode])
                events = samples[mode][0][2]
                label = MODES[mode][0]
                table.add(config, label, events, f"{handed:.3f}", f"{written:.3f}",
                          f"{1000 * written / args.urls:.2f}", f"{1000 * (written - base) / args.urls:.2f}")
    table.print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
