"""The walk-through's figures: what the UI shows after the quickstart's backfill and after each retry
run, as the one block docs/quickstart.md carries between two markers.

`python -m social_recording.demo --print-figures` prints the block from a headless walk-through; the
walk-through test drives the UI's GraphQL API and compares what the asset pages show with the block it
reads back from the doc, so the doc and the product cannot drift apart. The figures are per step: the
store's counts after it (`urls_error`, `urls_exhausted`), the step's own counters summed over its runs
(`*_this_run`, from `token_social_urls`' observations), and `provider_spend`'s paid requests per billing
account this month. They do not depend on the order parallel workers take the URLs: the demo scenario
meets a provider's quota only where no other URL of that provider is called in the same run
(docs/architecture.md, "The sandbox").
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from social_recording.domain.status import FetchStatus

SETTINGS: dict[str, str] = {
    "SOCIAL_RECORDING_ENABLE_PAID": "true",
    "SOCIAL_RECORDING_SPEND_BUDGETS": '{"neynar": "9/month"}',
}
"""What the walk-through starts `make dev` with (`START`, which docs/quickstart.md shows): paid calls
on, and a spend budget for Neynar that the demo meets in one place only. The backfill sends Neynar 6
requests (67 % of the budget: every check passes after it); after it one Farcaster URL alone is still
failing (its credit answer, 402), so each retry run calls Neynar for it alone and the fourth finds
the budget used up and holds it `skipped_paid`, whatever order the workers take the URLs in. A month
budget, as the spend table's `this_month` figures: a day's would add a midnight to the figures."""


def start_command() -> str:
    """The shell command docs/quickstart.md starts the walk-through with."""
    return " ".join(f"{k}={shlex.quote(v)}" for k, v in SETTINGS.items()) + " make dev"


BEGIN = "<!-- walk-through figures (python -m social_recording.demo --print-figures): begin -->"
END = "<!-- walk-through figures: end -->"
STORE_COLUMNS = ("urls_error", "urls_exhausted")
"""Read from the step's last observation of token_social_urls: the store after the step."""
RUN_COLUMNS = ("urls_converged_this_run", "calls_made_this_run", "paid_calls_this_run")
"""Summed over the step's runs' observations of token_social_urls."""
STEP_COLUMNS = STORE_COLUMNS + RUN_COLUMNS
SPEND_SUFFIX = "_requests_this_month"
"""provider_spend's figure per billing account shown in the spend table."""
BACKFILL = "backfill"


def retry_step(n: int) -> str:
    return f"retry {n}"


@dataclass(frozen=True)
class Step:
    """One step of the walk-through: the backfill (all its partition runs) or one retry run."""

    name: str
    figures: dict[str, int]
    spend: dict[str, int] = field(default_factory=dict)
    """Paid requests per billing account after the step (provider_spend's latest materialization)."""


@dataclass(frozen=True)
class Figures:
    steps: tuple[Step, ...]
    statuses: dict[str, int]
    """Token URLs by status after the last step (all nine statuses)."""

    @classmethod
    def of_observations(cls, steps: Iterable[tuple[str, Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]],
                        statuses: Mapping[str, int]) -> Figures:
        """From each step's observations of token_social_urls in the order they were logged (their
        numeric metadata; the store's figures from the last one, the run's summed over those that
        carry them: the health job's carry none) and provider_spend's materializations up to it (each
        account's highest count: the ledger only grows, so the latest whichever run logged it last)."""
        out = []
        for name, observations, spend in steps:
            if not observations:
                raise ValueError(f"step {name!r} has no observation of token_social_urls")
            figures = {c: int(observations[-1][c]) for c in STORE_COLUMNS}
            figures.update({c: sum(int(o[c]) for o in observations if c in o) for c in RUN_COLUMNS})
            accounts: dict[str, int] = {}
            for materialization in spend:
                for k, v in materialization.items():
                    if k.endswith(SPEND_SUFFIX):
                        accounts[k[: -len(SPEND_SUFFIX)]] = max(accounts.get(k[: -len(SPEND_SUFFIX)], 0), int(v))
            out.append(Step(name, figures, accounts))
        return cls(tuple(out), {s.value: int(statuses.get(s.value, 0)) for s in FetchStatus})

    def accounts(self) -> list[str]:
        return sorted({a for s in self.steps for a in s.spend})

    def render(self) -> str:
        """The block docs/quickstart.md carries, markers included."""
        lines = [BEGIN, "", "| after | " + " | ".join(f"`{c}`" for c in STEP_COLUMNS) + " |",
                 "|---" * (len(STEP_COLUMNS) + 1) + "|"]
        lines += [f"| {s.name} | " + " | ".join(str(s.figures[c]) for c in STEP_COLUMNS) + " |" for s in self.steps]
        accounts = self.accounts()
        lines += ["", "| `provider_spend` after | " + " | ".join(f"`{a}{SPEND_SUFFIX}`" for a in accounts) + " |",
                  "|---" * (len(accounts) + 1) + "|"]
        lines += [f"| {s.name} | " + " | ".join(str(s.spend.get(a, 0)) for a in accounts) + " |" for s in self.steps]
        lines += ["", "| token URLs at the end | " + " | ".join(f"`{k}`" for k in self.statuses) + " |",
                  "|---" * (len(self.statuses) + 1) + "|",
                  "| `make status` | " + " | ".join(str(n) for n in self.statuses.values()) + " |", "", END]
        return "\n".join(lines)

    @classmethod
    def parse(cls, document: str) -> Figures:
        """The block between the markers of `document` (a ValueError naming what is missing)."""
        start, end = document.find(BEGIN), document.find(END)
        if start < 0 or end < start:
            raise ValueError(f"no walk-through figures between {BEGIN!r} and {END!r}")
        tables = _tables(document[start + len(BEGIN): end])
        if len(tables) != 3:
            raise ValueError(f"the walk-through figures hold {len(tables)} table(s), expected 3")
        steps_table, spend_table, status_table = tables
        spend = {row[0]: row[1] for row in spend_table[1]}
        steps = tuple(Step(name, values, {a.removesuffix(SPEND_SUFFIX): n for a, n in spend.get(name, {}).items()})
                      for name, values in steps_table[1])
        if [c for c in steps_table[0]] != list(STEP_COLUMNS):
            raise ValueError(f"the steps table's columns are {steps_table[0]}, expected {list(STEP_COLUMNS)}")
        return cls(steps, dict(status_table[1][0][1]))


_CELL = re.compile(r"^`?([^`]*)`?$")


def _tables(text: str) -> list[tuple[list[str], list[tuple[str, dict[str, int]]]]]:
    """Each markdown table of `text`: its column names (the first column aside) and its rows."""
    tables: list[tuple[list[str], list[tuple[str, dict[str, int]]]]] = []
    rows: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            rows.append([_CELL.sub(r"\1", c.strip()) for c in line.strip().strip("|").split("|")])
            continue
        if rows:
            header, body = rows[0][1:], [r for r in rows[2:]]
            tables.append((header, [(r[0], {h: int(v) for h, v in zip(header, r[1:], strict=True)}) for r in body]))
            rows = []
    return tables
