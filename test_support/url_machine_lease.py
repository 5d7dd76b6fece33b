"""A URL lease over time, and a write decided again (docs/architecture.md, "Locks and fencing", "Fencing").

The model's other lock rules end a lease at once; here time passes under it, on the model's own clock:

- a holder's call lasts several TTLs: the lease's renewer (the engine's real one, stepped by the model
  on its clock instead of wall time) renews it every ttl/3, so the key never runs out while its holder
  is alive; a renewal that fails once (a backend blip) with the expiry still far loses nothing; renewals
  failing until the expiry is within the give-up margin (a tenth of the TTL) lose it: the holder is
  told before its key runs out, and no request leaves from it after;
- a second worker meets a URL's lock another worker holds for a while (well within the URL lock's wait)
  and waits for it: it takes the lock once the first let go, and records the URL in the same run
  instead of leaving it `locked`;
- a holder's write meets a late holder's write (the URL state moved on between its read and its write,
  a day past the reuse window later): it reads again and decides anew at the clock's current moment,
  so it is neither left nor dated before the write it met.

The lock backend of the first two is `ClockedLocks`: in memory, its keys' expiries on the model's
clock, its fencing tokens drawn from the machine's own lock backend (so every token still grows).

A mixin of the model (test_support/url_machine_model.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.status import ABSORBING
from social_recording.domain.url_machine import Why
from social_recording.locks.base import Lease
from social_recording.locks.extender import LeaseRenewer, LeasingLockManager
from social_recording.recording import attempt as attempt_module
from social_recording.recording.engine import Timings
from social_recording.recording.outcomes import EngineOutcome
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from social_recording.store.base import UrlWrite, WriteOutcome, WriteResult
from test_support.url_machine_locks import URL_LOCK_TTL, model_timings

if TYPE_CHECKING:
    from test_support.url_machine_model import World

RENEWAL_INTERVAL = URL_LOCK_TTL / 3
"""The documented renewal interval of a held lease ("Locks and fencing": every ttl/3)."""
GIVE_UP_MARGIN = URL_LOCK_TTL * 0.1
"""A failing renewal gives the lease up when less than a tenth of the TTL is left ("Fencing")."""
STEP = URL_LOCK_TTL / 60
"""Seconds the model's lock clock moves per look during a long call."""
RENEWALS = ("renewed", "a blip", "failing until the expiry", "failing after two renewals", "taken over")
"""How the backend answers the renewals of a lease held through a long call."""
FENCE_PROBE = "social-lease-fence-probe"
"""A key the clocked backend takes and frees on the machine's own backend to draw a fencing token."""


class ClockedLocks(LeasingLockManager):
    """An in-memory lock backend whose keys expire on the model's lock clock (`now`, seconds), with the
    engine's real leasing logic and a renewer stepped on that clock. `failing` renewals raise before
    they reach the key (a backend blip; -1: every one); `on_sleep` runs at each poll's wait."""

    outage_s = 0.0

    def __init__(self, fences: Any) -> None:
        self.now = 1000.0
        self.keys: dict[str, tuple[str, float]] = {}
        self.stepped = self.renewer = LeaseRenewer(clock=lambda: self.now, threaded=False)
        self.leases: dict[str, Lease] = {}
        self.renewals: list[tuple[float, bool]] = []
        """Each renewal that reached the key: (when it was sent, whether the key was renewed)."""
        self.failing = 0
        self.on_sleep: Callable[[], None] | None = None
        self._fences = fences

    def _live(self, key: str) -> tuple[str, float] | None:
        held = self.keys.get(key)
        return held if held is not None and held[1] > self.now else None

    def acquire(self, key: str, owner: str, ttl: float) -> int:
        if self._live(key) is not None:
            return 0
        fence = int(self._fences.acquire(FENCE_PROBE, owner, 5.0))
        self._fences.release(FENCE_PROBE, owner)
        self.keys[key] = (owner, self.now + ttl)
        return fence

    def holds(self, key: str, owner: str) -> bool:
        held = self._live(key)
        return held is not None and held[0] == owner

    def extend(self, key: str, owner: str, ttl: float) -> bool:
        if self.failing:
            self.failing -= self.failing > 0
            raise ConnectionError("the lock backend does not answer (a blip)")
        renewed = self.holds(key, owner)
        if renewed:
            self.keys[key] = (owner, self.now + ttl)
        self.renewals.append((self.now, renewed))
        return renewed

    def release(self, key: str, owner: str) -> bool:
        if not self.holds(key, owner):
            return False
        del self.keys[key]
        return True

    def may_be_free(self, key: str) -> bool:
        return self._live(key) is None

    def close(self) -> None:
        pass

    def _lease(self, key: str, owner: str, fence: int, started: float) -> Lease:
        lease = super()._lease(key, owner, fence, started)
        if lease.held:
            self.leases[key] = lease
        return lease

    def _sleep(self, seconds: float) -> None:
        self.step(seconds)
        if self.on_sleep is not None:
            self.on_sleep()

    def step(self, seconds: float) -> None:
        """The lock clock moves on; the renewals due by then are sent."""
        self.now += seconds
        self.stepped.renew_due()

    def expiry(self, key: str) -> float | None:
        held = self._live(key)
        return None if held is None else held[1]


class LeaseRules:
    """A URL lease held over time, a second worker at a URL's lock, and a write decided again. Expects
    the model's `locks`, `store`, `world`, `clock`, `tokens`, `paid`, `doing`, `_run`, `_engine_on`,
    `_callable_at` and `_late_holder`."""

    locks: Any
    store: Any
    world: World
    clock: Any
    tokens: list[str]
    paid: bool
    doing: Any
    _run: Any
    _engine_on: Any
    _callable_at: Any
    _late_holder: Any

    def _a_callable_url(self, data: st.DataObject) -> tuple[str, str] | None:
        """A token's URL not absorbing, with the clock moved to when it may be called; None if none."""
        candidates = [(a, el.url) for a in self.tokens if (doc := self.store.find_token(a))
                      for el in doc.social_urls if el.status not in ABSORBING]
        if not candidates:
            return None
        address, url = data.draw(st.sampled_from(candidates))
        element = self.store.find_element(address, url)
        when = None if element is None else self._callable_at(element)
        if when is None:
            return None
        if when > self.clock():
            self.clock.set(when)
        return address, url

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), how=st.sampled_from(RENEWALS), ttls=st.sampled_from((1.5, 4.0)))
    def a_lease_is_held_through_a_long_call(self, data: st.DataObject, how: str, ttls: float) -> None:
        """A holder's provider call lasts `ttls` URL lock TTLs on the lock clock, its lease renewed by
        the real renewer as that clock moves (see the module doc). Renewed: its key never runs out,
        and it is renewed every ttl/3, each renewal giving it a whole TTL. A blip: the first renewal
        fails, nothing is lost. Failing until the expiry (from the first renewal, or after two landed):
        the lease is kept while the expiry (a TTL from the last renewal that landed) is further than the
        margin, told lost before the key runs out, and nothing leaves from it after. Taken over: half a
        TTL in, another holder has its key; its next renewal is refused and it is lost, nothing leaves
        from it after, and its release leaves the newer holder's key."""
        chosen = self._a_callable_url(data)
        if chosen is None:
            return
        address, url = chosen
        from test_support.url_machine_model import STATS

        STATS[f"leases held through a long call: {how}"] += 1
        key, w = URL_LOCK_PREFIX + url, self.world
        locks = ClockedLocks(self.locks)

        def long_call(_url: str, _address: str) -> None:
            lease, start = locks.leases[key], locks.now
            locks.failing = {"renewed": 0, "a blip": 1, "failing until the expiry": -1}.get(how, 0)
            for n in range(1, int(ttls * URL_LOCK_TTL / STEP) + 1):
                locks.step(STEP)
                renewed = [at for at, ok in locks.renewals if ok]
                if how == "failing after two renewals" and len(renewed) == 2:
                    locks.failing = -1
                if how == "taken over" and self._taken_over(key, lease, locks, start):
                    w.lease_lost = True
                    return
                if how == "taken over" and locks.now >= start + URL_LOCK_TTL / 2:
                    continue  # no longer the owner, not yet told
                if how.startswith("failing") and locks.failing:
                    # The backend keeps the key a TTL from the last renewal that reached it.
                    expires = (renewed[-1] if renewed else start) + URL_LOCK_TTL
                    self._kept_until_the_margin(key, lease, expires, locks.now)
                    if lease.lost:
                        w.lease_lost = True  # no request of any kind may leave from it now
                        return
                    continue
                if lease.lost or not locks.holds(key, lease.owner):
                    w.violations.append(f"{key}: held through a call with renewals {how}, its lease is "
                                        f"{'lost' if lease.lost else 'no longer the owner'} {locks.now - start:g} s "
                                        f"in ({lease.lost_reason}); renewals {locks.renewals}")
                    return
                left = locks.expiry(key)
                if renewed and left is not None and not math.isclose(left - renewed[-1], URL_LOCK_TTL):
                    w.violations.append(f"{key}: its last renewal, at {renewed[-1]:g}, keeps it until {left:g}: "
                                        f"a renewal gives the key a whole TTL ({URL_LOCK_TTL:g} s)")
                if how == "renewed":
                    want = math.floor((locks.now - start) / RENEWAL_INTERVAL + 1e-9)
                    if len(renewed) != want:
                        w.violations.append(f"{key}: {len(renewed)} renewal(s) {n * STEP:g} s into its "
                                            f"holder's call; every {RENEWAL_INTERVAL:g} s (ttl/3) makes {want}")
                        return

        before = (self.store.find_url_state(url), self.store.find_element(address, url))
        try:
            with self.doing("live"):
                w.on_call = long_call
                self._engine_on(locks, self.paid, timings=model_timings()).recorder.record_url(
                    (address, address), url, self._run(Why.LIVE))
        finally:
            vetoed, w.lease_lost, w.vetoed = w.vetoed, False, False
        if how != "renewed" and how != "a blip" and vetoed and (
                self.store.find_url_state(url), self.store.find_element(address, url)) != before:
            w.violations.append(f"{address} {url}: recorded after its URL lock was lost")
        newer = locks.keys.get(key, ("", 0.0))[0] == "newer" if how == "taken over" else False
        if (locks.expiry(key) is not None) != newer:
            w.violations.append(f"{key}: {'still held' if not newer else 'freed'} once its holder left "
                                f"({locks.keys.get(key)})")

    def _taken_over(self, key: str, lease: Lease, locks: ClockedLocks, start: float) -> bool:
        """Half a TTL in, the holder's key is another's (it ran out while the holder was paused, and a
        newer holder took it): its next renewal is refused, and the lease is lost by then. True once lost."""
        half = start + URL_LOCK_TTL / 2
        if locks.now == half:
            locks.keys[key] = ("newer", locks.now + URL_LOCK_TTL)
        if locks.now >= half + RENEWAL_INTERVAL + STEP and not lease.lost:
            self.world.violations.append(f"{key}: another holder took it at {half:g}; at {locks.now:g}, its renewals "
                                         f"{locks.renewals}, the old holder is still not told it lost it")
            lease.mark_lost("the test: taken over")
        return lease.lost

    def _kept_until_the_margin(self, key: str, lease: Lease, expires: float, now: float) -> None:
        """Renewals failing: the lease is not given up while its expiry is further than the margin, and
        it is given up once it is (by the next look of the lock clock), before its key runs out."""
        if lease.lost and now < expires - GIVE_UP_MARGIN - 1e-9:
            self.world.violations.append(f"{key}: lost {expires - now:g} s before its expiry, the renewals failing "
                                         f"({lease.lost_reason}): a failed renewal is retried until the expiry "
                                         f"is within {GIVE_UP_MARGIN:g} s")
        if not lease.lost and now >= expires - GIVE_UP_MARGIN + STEP:
            self.world.violations.append(f"{key}: {expires - now:g} s before its key runs out, every renewal "
                                         f"failing, its holder is not told it lost it (the renewer gives up "
                                         f"{GIVE_UP_MARGIN:g} s before the expiry)")
            lease.mark_lost("the test: the key ran out")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), hold=st.sampled_from((0.5, 5.0, 40.0)))
    def a_second_worker_meets_a_urls_lock(self, data: st.DataObject, hold: float) -> None:
        """Another worker holds a URL's lock for `hold` seconds of the lock clock (its own recording of
        the URL, say) when a worker of the live path, built with the documented lock timings, records
        that URL: it waits for the lock (the URL lock's wait is minutes), takes it once the first let go,
        and records the URL in this run instead of leaving it `locked`."""
        chosen = self._a_callable_url(data)
        if chosen is None:
            return
        address, url = chosen
        from test_support.url_machine_model import STATS

        STATS["second workers at a held URL lock"] += 1
        key, locks, first = URL_LOCK_PREFIX + url, ClockedLocks(self.locks), ExitStack()
        held = first.enter_context(locks.try_hold(key, URL_LOCK_TTL))
        start = locks.now
        assert held.held

        def first_lets_go() -> None:
            if locks.now - start >= hold:
                first.close()

        locks.on_sleep = first_lets_go
        documented = Timings(url_lock_ttl=URL_LOCK_TTL, token_lock_ttl=30.0, write_retry_s=1.0)
        with first, self.doing("live"):
            out = self._engine_on(locks, self.paid, timings=documented).recorder.record_url(
                (address, address), url, self._run(Why.LIVE))
        if out.status is EngineOutcome.LOCKED or out.waited_ms < hold * 1000.0:
            self.world.violations.append(f"{address} {url}: a worker met its URL lock held {hold:g} s by another and "
                                         f"came back {out.status} after waiting {out.waited_ms:g} ms; it waits for the "
                                         f"lock and records the URL")

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), answer=st.sampled_from(("ok", "not_found", "5xx")))
    def a_write_meets_a_late_write(self, data: st.DataObject, answer: str) -> None:
        """A token traded just now holds a URL recorded before, another token's element of which is not
        ok. It is recorded (its decision often a write without a call: a reuse of the window's answer,
        an adoption of a back-off), and right before its write a late holder records that other token a
        day past the reuse window later (a minute, when the write is a call's), a call answered `answer`
        which moves the URL state on. Its
        write is refused as stale; it reads again and decides anew: it is not left (`lost`), and when
        its refused write was decided without a call, everything it writes after is dated at or after
        the late write, never at its first moment."""
        held = {el.url for a in self.tokens if (doc := self.store.find_token(a)) for el in doc.social_urls}
        recorded = [u for u in held if self.store.find_url_state(u) is not None]
        if not recorded:
            return
        url = data.draw(st.sampled_from(sorted(recorded)))
        from test_support.url_machine_model import STATS

        self.new_token([url])  # type: ignore[attr-defined]
        second = self.tokens[-1]
        decisions: list[Any] = []
        writes: list[tuple[UrlWrite, WriteOutcome]] = []
        met: dict[str, Any] = {}
        real_decide, real_checked = attempt_module.decide, self.store.checked

        def decide(*args: Any, **kw: Any) -> Any:
            decisions.append(made := real_decide(*args, **kw))
            return made

        def checked(write: UrlWrite, out: WriteOutcome) -> None:
            writes.append((write, out))
            if real_checked is not None:
                real_checked(write, out)

        def late(write: UrlWrite) -> bool:
            if write.address != second:
                return False
            without = bool(decisions) and not decisions[-1].calls
            met.update(write=write, without_call=without)
            # A call's write waits no longer than a call lasts; one decided without a call, a day past
            # the window (its decision is taken again, at the moment it is written).
            later = DEDUPE_TTL + timedelta(days=1) if without else timedelta(minutes=1)
            self._late_holder(write.address, url, write.fence - 1, answer, later)
            met["at"] = self.clock()
            return True

        attempt_module.decide, self.store.checked = decide, checked  # type: ignore[assignment]
        try:
            with self.doing("live"):
                self.store.armed = late
                out = self.engines[self.paid].processor.record(  # type: ignore[attr-defined]
                    second, second, self._run(Why.LIVE))
        finally:
            attempt_module.decide, self.store.checked = real_decide, real_checked  # type: ignore[assignment]
        self._check_token_outcome(out)  # type: ignore[attr-defined]
        stale = [i for i, (wr, res) in enumerate(writes) if wr is met.get("write") and res.result is WriteResult.STALE]
        if not stale:
            return
        STATS[f"writes {'without' if met['without_call'] else 'after'} a call decided again"] += 1
        mine = [o for o in out.urls if o.url == url]
        if not mine or mine[0].status is EngineOutcome.LOST:
            self.world.violations.append(f"{second} {url}: its write met one late write and it came back "
                                         f"{mine[0].status if mine else 'without an outcome'} "
                                         f"({mine[0].detail if mine else ''}); a stale write is decided again")
        if met["without_call"]:
            self._dated_after(second, url, met["at"], writes[stale[0] + 1:])

    def _dated_after(self, address: str, url: str, late: datetime,
                     writes: list[tuple[UrlWrite, WriteOutcome]]) -> None:
        """Every write of `address`'s URL after its refused one is dated at or after the late write."""
        for write, out in writes:
            if (write.address, write.url) == (address, url) and write.now < late:
                self.world.violations.append(f"{address} {url}: decided again after meeting a write of {late}, its "
                                             f"write ({out.result.value}) is dated {write.now}: a decision taken anew "
                                             f"is taken at the clock's current moment")
