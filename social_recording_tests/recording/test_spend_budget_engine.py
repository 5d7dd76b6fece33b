"""The spend budget in the recording path (docs/architecture.md, "Spend budgets"): a paid request over
the budget is not sent and its URL ends `skipped_paid` with zero calls; the retry after the reset
converges without paying twice; polls of a paid request are never held back; a budget that cannot
be asked sends nothing and leaves the URL as it was."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from social_recording.domain.models import TokenProfile
from social_recording.domain.spend import Budget
from social_recording.domain.status import Cause, FetchStatus
from social_recording.locks.base import LockManager
from social_recording.locks.spend_budget import SpendBudgets, open_spend_budgets
from social_recording.outbound.observe import CallVetoed, CountingObserver
from social_recording.recording.engine import Engine, Timings, build_engine
from social_recording.recording.run_state import RunState
from social_recording.recording.spend_check import SpendGuard, SpendHeld
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    T0,
    FakeProfiles,
    FakeTracker,
    MemoryCounter,
    StepClock,
    counting_registry,
)
from test_support.redis_server import free_port

URLS = [f"https://x.com/i/status/{k}" for k in range(1, 5)]


def _engine(store: SqliteStore, locks: LockManager, counter: MemoryCounter, clock: StepClock,
            budgets: SpendBudgets) -> Engine:
    return build_engine(store, locks, counting_registry(counter), FakeProfiles(), tracker=FakeTracker(),
                        enable_paid=True, clock=clock, spend_budgets=budgets,
                        timings=Timings(token_lock_wait=0.3, job_lock_wait=0.3))


def _tokens(store: SqliteStore) -> None:
    for k, url in enumerate(URLS):
        assert store.create_pending_token(TokenProfile(address=f"T{k}", symbol="T", urls=[url]), T0)


def _retry(eng: Engine) -> RunState:
    """One retry run with the default selection, every element due (no back-off)."""
    run = RunState(timedelta(0))
    eng.retry.record_selection(eng.retry.select_due(min_interval_minutes=0), run=run)
    return run


def test_the_budget_holds_back_then_the_retry_after_the_reset_converges_without_paying_twice(
    store: SqliteStore, any_locks: LockManager, tmp_path: Path
) -> None:
    clock, counter = StepClock(T0), MemoryCounter()
    budgets = open_spend_budgets(f"sqlite:///{tmp_path / 'budget.db'}",
                                 {"twitterapi": Budget("twitterapi", per_day=2)}, clock=clock)
    eng = _engine(store, any_locks, counter, clock, budgets)
    _tokens(store)
    run = RunState()
    outcomes = [eng.processor.record_urls(f"T{k}", [url], run)[0] for k, url in enumerate(URLS)]
    assert [o.status for o in outcomes] == [FetchStatus.OK] * 2 + [FetchStatus.SKIPPED_PAID] * 2
    assert counter.total() == 2 and run.budget_held == 2 and run.summary().budget_held == 2
    for k in (2, 3):
        el = store.find_element(f"T{k}", URLS[k])
        assert el is not None and (el.attempts, el.attempted_at, el.cause) == (0, None, Cause.SPEND_BUDGET)
        assert el.detail is not None and "twitterapi spend budget of 2 paid request(s) per UTC day" in el.detail
        assert "resets at 2026-01-02T00:00Z" in el.detail
        assert not outcomes[k].attempted
        assert store.find_url_state(URLS[k]) is None  # no call, no streak
    assert [(r.day, r.requests) for r in store.spend_rows("2026-01-01")] == [("2026-01-01", 2)]

    # Before the reset the retry's default selection takes them and the budget still holds: nothing paid.
    clock.set(T0 + timedelta(hours=2))
    held = _retry(eng)
    assert held.budget_held == 2 and counter.total() == 2

    # After the reset (the next UTC day) the retry's default selection converges them, each paid once.
    clock.set(T0 + timedelta(days=1))
    done = _retry(eng)
    assert done.budget_held == 0 and done.attempted == 2
    assert {store.find_element(f"T{k}", URLS[k]).status for k in range(4)} == {FetchStatus.OK}  # type: ignore[union-attr]
    assert counter.total() == 4 and {counter.get(u) for u in URLS} == {1}
    again = _retry(eng)
    assert again.attempted == 0 and counter.total() == 4
    assert [(r.day, r.requests) for r in store.spend_rows("2026-01-01")] == [("2026-01-01", 2), ("2026-01-02", 2)]
    assert store.spend_totals().ledger == {"twitterapi": 4} and store.spend_totals().url_states == {"x": 4}
    budgets.close()


def test_a_budget_that_cannot_be_asked_sends_nothing_and_leaves_the_url(
    store: SqliteStore, any_locks: LockManager
) -> None:
    clock, counter = StepClock(T0), MemoryCounter()
    budgets = open_spend_budgets(f"redis://127.0.0.1:{free_port()}/0", {"twitterapi": Budget("twitterapi", per_day=9)},
                                 clock=clock, outage_s=0.2)
    eng = _engine(store, any_locks, counter, clock, budgets)
    _tokens(store)
    out = eng.processor.record_urls("T0", [URLS[0]], RunState())[0]
    assert str(out.status) == "deferred" and not out.attempted and counter.total() == 0
    el = store.find_element("T0", URLS[0])
    assert el is not None and (el.status, el.attempts) == (FetchStatus.PENDING, 0)
    budgets.close()


class _Budgets:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def bounds(self, account: str) -> bool:
        return True

    def now(self) -> None:
        return None

    def take(self, account: str, at: object = None) -> None:
        self.asked.append(account)


class _Vetoing(CountingObserver):
    def before_request(self, *, service: str, paid: bool) -> None:
        raise CallVetoed("URL lock no longer ours right before a paid request; nothing sent")


def test_a_request_admitted_then_vetoed_gives_its_slot_back(tmp_path: Path) -> None:
    """Admitted by the budget, then stopped by the call guard (the URL lock lost, the call not
    recordable): nothing left, so the budget counts nothing for it."""
    budgets = open_spend_budgets(f"sqlite:///{tmp_path / 'locks.db'}", {"twitterapi": Budget("twitterapi", 1)})
    guard = SpendGuard(_Vetoing(), budgets, lambda: False)
    for _ in range(3):  # a kept slot would hold the second one back as SpendHeld
        with pytest.raises(CallVetoed) as info:
            guard.before_request(service="twitterapi", paid=True)
        assert not isinstance(info.value, SpendHeld)
    assert budgets.used("twitterapi")["day"] == 0 and guard.new_paid == 0
    budgets.close()


@pytest.mark.parametrize(("service", "holds_open", "asked"), [
    ("urlscan", True, []),             # a poll of the scan this call submitted or resumed
    ("urlscan", False, ["urlscan"]),   # the scan's submission
    ("apify", True, ["apify"]),        # Apify polls on its free client: a paid request is always a run start
    ("twitterapi", False, ["twitterapi"]),
])
def test_polls_of_a_paid_request_are_never_held_back(service: str, holds_open: bool, asked: list[str]) -> None:
    budgets = _Budgets()
    inner = CountingObserver()
    guard = SpendGuard(inner, budgets, lambda: holds_open)  # type: ignore[arg-type]
    guard.before_request(service=service, paid=True)
    guard.request_sent(service=service, paid=True)
    guard.before_request(service="rdap", paid=False)
    guard.request_sent(service="rdap", paid=False)
    assert budgets.asked == asked
    assert guard.new_paid == len(asked) and inner.sent == 2 and inner.paid_sent == 1
    assert issubclass(SpendHeld, Exception)


def test_on_the_sandbox_the_submission_is_counted_and_its_polls_go_through(
    store: SqliteStore, any_locks: LockManager, tmp_path: Path
) -> None:
    """The real urlscan and Apify generators on the sandbox, a budget of one paid request per account:
    the scan's and the run's follow-up reads are not new spending, so the first URL of each account is
    answered; the second is held back with nothing sent."""
    import json

    from pydantic import SecretStr

    from social_recording.platforms.base import ProviderKeys
    from social_recording.platforms.registry import build_registry
    from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
    from social_recording.sandbox.scenario import load_scenario
    from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host

    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"tokens": [], "default_latency_ms": 0, "targets": {}}))
    ledger = Ledger(tmp_path / "ledger.jsonl")
    transport = SandboxTransport(load_scenario(scenario), ledger)
    key = SecretStr("sandbox-key")
    registry = build_registry(ProviderKeys(urlscan_api_key=key, apify_token=key, twitterapi_io_key=key),
                              transport=transport, sleep=lambda s: None, resolve_host=sandbox_resolve_host)
    clock = StepClock(T0)
    budgets = open_spend_budgets(f"sqlite:///{tmp_path / 'budget.db'}",
                                 {a: Budget(a, per_day=1) for a in ("urlscan", "apify", "twitterapi")}, clock=clock)
    eng = build_engine(store, any_locks, registry, FakeProfiles(), tracker=FakeTracker(), enable_paid=True,
                       clock=clock, spend_budgets=budgets, timings=Timings(token_lock_wait=0.3, job_lock_wait=0.3))
    first = ["https://budget-one.example", "https://tiktok.com/@/video/7100000000000000001",
             "https://x.com/i/status/7001"]
    second = ["https://budget-two.example", "https://tiktok.com/@/video/7100000000000000002",
              "https://x.com/i/status/7002"]
    assert store.create_pending_token(TokenProfile(address="A", symbol="A", urls=first + second), T0)
    run = RunState()  # a token's URLs are recorded side by side: the first ones first, to know who pays
    outcomes = {o.url: o for urls in (first, second) for o in eng.processor.record_urls("A", urls, run)}
    assert {outcomes[u].status for u in first} == {FetchStatus.OK}
    assert {outcomes[u].status for u in second} == {FetchStatus.SKIPPED_PAID}
    entries = ledger.read()
    paid = [e for e in entries if e.paid and not e.subject.startswith(POLL_PREFIXES)]
    assert sorted(e.service for e in paid) == ["apify", "twitterapi", "urlscan"]
    assert any(e.subject.startswith("result:") for e in entries)  # urlscan's polls went out, on its paid client
    assert not any("budget-two" in e.url or "7100000000000000002" in e.url or "7002" in e.url for e in entries)
    assert {r.account: r.requests for r in store.spend_rows("2026-01-01")} == {"apify": 1, "twitterapi": 1,
                                                                            "urlscan": 1}
    transport.close()
    budgets.close()
