"""A worker process that SIGKILLs itself at a chosen point of its first paid request: a real kill at
a deterministic point, for the fault tests and benchmarks of money as billed (docs/operations.md,
"Spend budgets").

- "admitted": right after the spend budget admitted the request (before its open call is recorded);
- "opened": right after its open call is recorded (before it is sent);
- "billed": right after the sandbox billed it (before its answer is read).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from social_recording.domain.models import utcnow
from social_recording.domain.spend import parse_budgets
from social_recording.locks.spend_budget import SpendBudgets, open_spend_budgets
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.sandbox.transport import SandboxTransport
from social_recording.store import Store

KILL_POINTS = ("admitted", "opened", "billed")


def _after(call: Callable[..., Any], dies: Callable[[Any, dict[str, Any]], bool]) -> Callable[..., Any]:
    """`call`, after which the process SIGKILLs itself when `dies(result, kwargs)`."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = call(*args, **kwargs)
        if dies(result, kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    return wrapped


def arm(point: str, store: Store, transport: SandboxTransport, budgets: SpendBudgets | None) -> None:
    """Make this process die at `point` (one of KILL_POINTS) of its first paid request."""
    if point == "admitted":
        if budgets is None:
            raise ValueError("the kill point 'admitted' needs a spend budget")
        budgets.take = _after(budgets.take, lambda refused, _: refused is None)  # type: ignore[method-assign]
    elif point == "opened":
        store.save_open_call = _after(store.save_open_call,  # type: ignore[method-assign]
                                      lambda result, _: bool(result.applied))
    elif point == "billed":
        if transport.ledger is None:
            raise ValueError("the kill point 'billed' needs the sandbox's ledger")
        transport.ledger.append = _after(transport.ledger.append,  # type: ignore[method-assign]
                                         lambda _, kw: bool(kw.get("paid")))
    else:
        raise ValueError(f"the kill point must be one of {KILL_POINTS}, got {point!r}")


def worker_money(cfg: Mapping[str, Any], store: Store,
                 transport: SandboxTransport) -> tuple[SpendBudgets | None, Callable[[], datetime]]:
    """What a worker's config says of money: its spend budgets (`spend_budgets`, account -> "N/day",
    on `lock_url`), its kill point (`die_at`) armed, and its clock (`clock_ahead_s` ahead of now)."""
    budgets = None
    if cfg.get("spend_budgets"):
        paid = frozenset(a.name for a in CATALOGUE.paid_accounts())
        budgets = open_spend_budgets(cfg["lock_url"], parse_budgets(cfg["spend_budgets"], paid))
    if cfg.get("die_at"):
        arm(cfg["die_at"], store, transport, budgets)
    ahead = timedelta(seconds=float(cfg.get("clock_ahead_s", 0.0)))
    return budgets, lambda: utcnow() + ahead
