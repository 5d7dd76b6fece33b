"""Fencing tokens on a lock clock that stands still or steps back, a lease its backend disowns at the paid
check, a renewal answered late, and an account whose budget sets no limit (docs/architecture.md, "Locks
and fencing", "Fencing", "Spend budgets"; docs/operations.md, "Spend budgets").

- the lock backend's clock stands still (two takes in one microsecond) or steps back (an NTP correction,
  a restored host): every take still gets a fencing token larger than every one handed out before, the
  machine's engines' included ("every acquisition gets a larger fencing token, floored at the server
  clock");
- a holder's URL key runs out under it (or another holder takes it) right before its paid request: the
  ownership check says no, nothing leaves, and from that answer on its lease is lost: the URL's outcome
  says its lock was lost, and the lease says so before its holder leaves ("only then, or when the key is
  another's, is the lease lost");
- a lease's renewal lands at once but its answer comes late, and every renewal after it fails: the
  holder is told it lost the lease before the key the backend renewed runs out, counted from when that
  renewal was sent ("Locks and fencing": a late answer never stretches the lease);
- every paid account's budget is written `none` (no budget) while the budget's counter cannot be asked:
  its paid requests leave all the same, as an account without a budget's do ("Spend budgets": such an
  account is never asked about);
- in the sandbox, a paid URL whose calls failed transiently (HTTP 5xx, 429) before one answered: the
  paid-once health check over the sandbox ledger of those requests passes (docs/operations.md, "Health":
  retries after a transient failure are left aside), its figures the model's own reckoning of the ledger.

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.spend import parse_budget
from social_recording.domain.url_machine import Why
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks.redis import RedisLockManager
from social_recording.locks.spend_budget import SpendBudgets
from social_recording.recording.outcomes import EngineOutcome
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from test_support.url_machine_lease import GIVE_UP_MARGIN, RENEWAL_INTERVAL, STEP, ClockedLocks
from test_support.url_machine_locks import URL_LOCK_TTL, KeptLeases, model_timings

if TYPE_CHECKING:
    from test_support.url_machine_model import World

CLOCKS = ("stands still", "steps back")
"""What the lock backend's clock does between two takes."""
STEP_BACK_S = 3600.0
"""How far the lock backend's clock steps back: an hour (a host restored, a time zone read as UTC)."""
DISOWNED = ("runs out", "taken over")
"""How the backend comes to disown a holder's URL key right before its paid request."""
HTTP_OF_ANSWER = {"5xx": 500, "429": 429, "no credit": 402, "not_found": 404, "blocked": 403}
"""The HTTP status of a paid request the model's provider answers this way (any other answer: 200)."""
NOT_ANSWERS = (402, 429)
"""docs/operations.md, "Health": besides every 5xx, the transient failures a retry may follow (429, 402)."""
ANSWER_TTL = timedelta(days=14)
"""The reuse window (docs/architecture.md): a subject asked again this long after its answer is due again."""
LATE_ANSWER_S = 5.0
"""Seconds a renewal's answer takes to come back (the backend applied it at once): past the give-up
margin (a tenth of the TTL), so a lease counted from the answer would outlive its key."""


class LateAnswerLocks(ClockedLocks):
    """`ClockedLocks` whose next renewal is applied at once, its answer arriving `late` seconds after it
    was sent; every renewal after it fails (the backend stops answering)."""

    def __init__(self, fences: Any, late: float) -> None:
        super().__init__(fences)
        self.late = late
        self.late_sent: float | None = None
        """When the late-answered renewal was sent (the backend renewed the key then)."""

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        sent = self.now
        renewed = super().extend(key, owner, ttl)
        if renewed and self.late_sent is None:
            self.late_sent = sent
            self.now += self.late  # the answer comes back late
            self.failing = -1
        return renewed


class Locks15Rules:
    """Fences on a stopped or stepped-back lock clock, a disowned lease at the paid check, a renewal
    answered late, budgets written `none`. Expects the model's `locks`, `store`, `world`, `clock`,
    `tokens`, `paid`, `doing`, `counters`, `spend`, `fences`, `_run`, `_engine_on`, `_callable_at`,
    `_a_callable_url`, `_expiring_locks`, `lock_table`."""

    locks: Any
    store: Any
    world: World
    clock: Any
    tokens: list[str]
    paid: bool
    doing: Any
    counters: Any
    spend: Any
    fences: dict[str, int]
    _run: Any
    _engine_on: Any
    _callable_at: Any
    _drawn_and_callable: Any
    _a_callable_url: Any
    _expiring_locks: Any
    lock_table: Any

    # ------------------------------------------------------------------ fences on a lock clock that stops
    @rule(clock=st.sampled_from(CLOCKS))
    def the_lock_clock_stands_still_or_steps_back(self, clock: str) -> None:
        """Three takes of a URL key from a manager on the machine's lock backend, its clock standing still
        between them or stepping back an hour before each (SQLite's clock is the model's; Redis's is the
        server's, which the model cannot move: there the takes follow each other at once). Each fencing
        token is larger than the one before and than every fence the machine's engines wrote."""
        from test_support.url_machine_model import POOL, STATS

        STATS[f"fences taken while the lock clock {clock}"] += 1
        v = self.world.violations
        key = URL_LOCK_PREFIX + POOL[0]
        last = max(self.fences.values(), default=0)
        with self._expiring_locks() as locks:
            for n in range(3):
                if clock == "steps back" and not isinstance(locks, RedisLockManager) and n:
                    locks.clock.now -= STEP_BACK_S
                with locks.try_hold(key, URL_LOCK_TTL) as lease:
                    if not lease.held:
                        v.append(f"{key}: a take with nobody holding it failed ({lease!r})")
                        return
                    if lease.fence <= last:
                        v.append(f"{key}: take {n + 1}, the lock clock {clock}, got fence {lease.fence}, not above "
                                 f"{last}, handed out before: every acquisition gets a larger fencing token")
                    last = max(last, lease.fence)

    # ------------------------------------------------------------------ a lease disowned at the paid check
    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), how=st.sampled_from(DISOWNED))
    def a_paid_check_meets_a_disowned_key(self, data: st.DataObject, how: str) -> None:
        """A holder of a paid (X) URL takes its lock from the machine's real manager; right before its paid
        request its key runs out (or another holder takes it). The ownership check says no and nothing
        leaves (the model's provider checks that), and the lease is lost from that answer on: the URL's
        outcome says its lock was lost, and the lease is lost before its holder lets go of it."""
        picked = self._drawn_and_callable(data, lambda url: parse_canonical(url).platform is Platform.X)
        if picked is None:
            return
        address, url = picked
        from contextlib import ExitStack

        from test_support.url_machine_model import STATS

        key, w = URL_LOCK_PREFIX + url, self.world
        held, others = KeptLeases(self.locks), ExitStack()
        checked: list[bool] = []  # at each ownership check that said no: the lease lost after it

        def disowned(_url: str, _address: str) -> None:
            lease = held.leases[key]
            self.lock_table.run_out(key)
            w.unconfirmed = True  # no longer the owner: its ownership check must say no
            if how == "taken over":
                others.enter_context(self.locks.try_hold(key, URL_LOCK_TTL))
            confirm = lease.confirm

            def confirmed() -> bool:
                ok = confirm()
                if not ok:
                    checked.append(lease.lost)
                return ok

            lease.confirm = confirmed  # type: ignore[method-assign]

        with others:
            try:
                with self.doing("live"):
                    w.on_call = disowned
                    out = self._engine_on(held, True, timings=model_timings()).recorder.record_url(
                        (address, address), url, self._run(Why.LIVE))
            finally:
                w.lease_lost, w.vetoed, w.unconfirmed, w.on_call = False, False, False, None
        if not checked:
            return  # decided without a call (a reuse, a back-off): no paid check met the key
        STATS[f"paid checks meeting a disowned key: {how}"] += 1
        lost_at_veto = checked[0]
        if not lost_at_veto or not out.lease_lost or out.status is not EngineOutcome.LOST:
            w.violations.append(f"{address} {url}: its key {how} right before its paid request; the backend said it "
                                f"was no longer its holder's, yet the lease {'is' if lost_at_veto else 'is not'} lost "
                                f"after that answer, the outcome {out.status} says lease_lost={out.lease_lost} "
                                f"({out.detail}): a lease whose key is another's is lost")

    # ------------------------------------------------------------------ a renewal answered late
    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def a_renewal_is_answered_late(self, data: st.DataObject) -> None:
        """A holder's call lasts two TTLs on the lock clock; its first renewal lands at once but its
        answer comes `LATE_ANSWER_S` later, and every renewal after fails. The key the backend renewed
        runs out a TTL after that renewal was sent: the holder is told it lost the lease by the give-up
        margin before then (not before it), and nothing leaves from it after."""
        chosen = self._a_callable_url(data)
        if chosen is None:
            return
        address, url = chosen
        from test_support.url_machine_model import STATS

        key, w = URL_LOCK_PREFIX + url, self.world
        locks = LateAnswerLocks(self.locks, LATE_ANSWER_S)
        seen: list[bool] = []

        def long_call(_url: str, _address: str) -> None:
            lease, start = locks.leases[key], locks.now
            seen.append(True)
            while locks.now < start + 2 * URL_LOCK_TTL:
                locks.step(STEP)
                if locks.late_sent is None:
                    if locks.now > start + RENEWAL_INTERVAL + STEP:
                        w.violations.append(f"{key}: no renewal sent {locks.now - start:g} s into its holder's call "
                                            f"(every {RENEWAL_INTERVAL:g} s)")
                        return
                    continue
                expires = locks.late_sent + URL_LOCK_TTL  # the backend renewed the key when it was sent
                if lease.lost and locks.now < expires - GIVE_UP_MARGIN - 1e-9:
                    w.violations.append(f"{key}: lost {expires - locks.now:g} s before the key its last renewal "
                                        f"gave runs out ({lease.lost_reason}): a failed renewal is retried until "
                                        f"the expiry is within {GIVE_UP_MARGIN:g} s")
                if not lease.lost and locks.now >= expires - GIVE_UP_MARGIN + STEP:
                    w.violations.append(f"{key}: its last renewal sent at {locks.late_sent:g} and answered "
                                        f"{LATE_ANSWER_S:g} s later, every renewal after failing, its holder is not "
                                        f"told it lost the lease at {locks.now:g}, {expires - locks.now:g} s before "
                                        f"the key runs out: a renewal's expiry counts from its sending")
                    lease.mark_lost("the test: the key ran out")
                if lease.lost:
                    w.lease_lost = True  # no request of any kind may leave from it now
                    return

        try:
            with self.doing("live"):
                w.on_call = long_call
                self._engine_on(locks, self.paid, timings=model_timings()).recorder.record_url(
                    (address, address), url, self._run(Why.LIVE))
        finally:
            w.lease_lost, w.vetoed, w.on_call = False, False, None
        if seen:
            STATS["renewals answered late"] += 1

    # ------------------------------------------------------------------ budgets written `none`
    @precondition(lambda self: self.tokens)
    @rule(data=st.data())
    def budgets_written_none_while_the_counter_is_down(self, data: st.DataObject) -> None:
        """Every paid account's budget is written `none` (docs/operations.md: no budget), the budgets built
        from those texts as the settings parse each one; the budget's counter cannot be asked. A paid URL
        recorded then is not held back for want of the counter: an account without a budget is never
        asked about, its requests leave and are not counted (docs/architecture.md, "Spend budgets")."""
        from test_support.url_machine_model import ACCOUNTS, STATS, _paid

        picked = self._drawn_and_callable(data, _paid)
        if picked is None:
            return
        address, url = picked
        m: Any = self
        kept, budgeted = m.spend, self.world.budgeted
        asked: list[str] = []
        counters = self.counters

        class Asked:
            """The machine's counters (down), each question put to them noted."""

            def __getattr__(self, name: str) -> Any:
                if name in ("take", "give_back", "read"):
                    asked.append(name)
                return getattr(counters, name)

        m.spend = SpendBudgets(Asked(), {a: parse_budget(a, "none") for a in ACCOUNTS.values()},  # type: ignore[arg-type]
                               clock=self.clock, outage_s=0.0, sleep=lambda _s: None)
        self.world.budgeted = False  # the model counts no budget: there is none
        self.counters.down = self.world.counter_down = True
        try:
            with self.doing("live"):
                out = self._engine_on(self.locks, True, timings=model_timings()).recorder.record_url(
                    (address, address), url, self._run(Why.LIVE))
        finally:
            self.counters.down = self.world.counter_down = False
            m.spend, self.world.budgeted = kept, budgeted
        STATS["paid URLs recorded with every budget written none, the counter down"] += 1
        if asked:
            self.world.violations.append(f"{address} {url}: every budget written none, the counter was asked "
                                         f"{asked} and its paid call came back {out.status} ({out.detail}): an "
                                         f"account without a budget is never asked about, so a counter that cannot "
                                         f"be asked holds nothing back")

    # ------------------------------------------------------------------ the sandbox ledger's paid-once check
    def a_sandbox_ledger_is_kept(self) -> None:
        """From now on, every new paid request of the model's one-step paid provider (X) is kept as the
        sandbox ledger keeps it: when it was received, its account, its subject (the URL) and the HTTP
        status it was answered with. A walk's step (its provider wraps the model's own)."""
        from social_recording.domain.urls import Platform as P
        from test_support.url_machine_model import ACCOUNTS

        provider: Any = self.registry.generators[P.X]  # type: ignore[attr-defined]
        lines: list[tuple[datetime, str, str, int]] = []
        pending: list[tuple[str, datetime]] = []
        real_send, real_generate = provider._send, provider.generate

        def send(url: str, platform: Any, paid: bool, **kw: Any) -> None:
            real_send(url, platform, paid, **kw)
            if paid and not kw.get("poll", False):
                pending.append((url, self.world.bill[-1][1]))  # when the provider received it

        def generate(url: str, ctx: Any) -> Any:
            pending.clear()
            status = HTTP_OF_ANSWER.get(self.world.answers.get(url, "ok"), 200)
            try:
                return real_generate(url, ctx)
            finally:
                lines.extend((at, ACCOUNTS[P.X], u, status) for u, at in pending)

        provider._send, provider.generate = send, generate
        self._ledger_lines = lines

    def the_paid_once_check_reads_the_ledger(self) -> None:
        """The health checks a sandbox run's report stage evaluates, with the ledger kept since
        `a_sandbox_ledger_is_kept`: its paid-once check passes unless a subject was paid for again
        less than the reuse window after it was answered (a 5xx, a 429 or a 402 is no answer), and its
        figures are the model's own reckoning of those lines (docs/operations.md, "Health")."""
        from social_recording.dagster_defs.health_report import HealthInputs, evaluate_health
        from social_recording.sandbox.ledger import Ledger
        from test_support.url_machine_model import STATS

        lines: list[tuple[datetime, str, str, int]] = getattr(self, "_ledger_lines", [])
        ledger = Ledger(self.dir / "sandbox-ledger.jsonl")  # type: ignore[attr-defined]
        for at, service, url, status in lines:
            ledger.append(service=service, method="POST", url=url, subject=url, status=status, paid=True, ts=at)
        answered: dict[tuple[str, str], datetime] = {}
        seen: set[tuple[str, str]] = set()
        again = retries = 0
        for at, service, url, status in sorted(lines, key=lambda line: line[0]):
            key = (service, url)
            if key in seen:
                paid_again = key in answered and at - answered[key] < ANSWER_TTL
                again += paid_again
                retries += not paid_again
            seen.add(key)
            if status < 500 and status not in NOT_ANSWERS:
                answered[key] = at
        inputs = HealthInputs(enable_paid=True, usable_platforms=frozenset(self.registry.usable_platforms()),  # type: ignore[attr-defined]
                              max_exhausted_per_hour=25, ledger=ledger)
        checks = {c.name: c for c in evaluate_health(self.store, inputs, now=self.clock(), baseline=None)}
        check = checks.get("paid_once_per_subject")
        STATS[f"paid-once checks over a ledger: {len(lines)} request(s), {retries} retried"] += 1
        want = {"paid_requests": len(lines), "distinct_paid_subjects": len(seen), "retries_after_failure": retries,
                "paid_again_after_answer": again}
        got = None if check is None else {k: check.figures.get(k) for k in want}
        if check is None or check.passed != (again == 0) or got != want:
            self.world.violations.append(
                f"the sandbox's paid-once check over {len(lines)} paid request(s) ({[(u, s) for _, _, u, s in lines]}) "
                f"says {None if check is None else (check.passed, check.summary)} with {got}; the ledger holds "
                f"{want}: it fails only when a subject was paid for again after it was answered")
