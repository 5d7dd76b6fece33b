"""The model's checks of store writes meeting a full disk, a write repeated after it failed part way, and a
counter missing beside its documents (docs/architecture.md, "Fencing", "Health figures"):

- a store write meeting the operating system's "no space left on device" (ENOSPC, a full disk as any store
  may meet it) is repeated until it lands, the same write, as SQLite's own "disk is full" is ("Fencing");
- a URL write that fails part way (its links written, its state not: the store away for a moment) and is
  repeated under the same fence leaves the URL's links of the repeat alone, in the store and in the links
  figure ("Fencing": fenced writes are idempotent; a replay replaces, never duplicates);
- a spooled answer whose write meets a URL state another holder moved on (its version moved since the replay
  read it) is written again on the state read anew, for the token that paid, before anything is decided
  ("No payment without a record": the URL's next recording writes it first);
- a counter missing while its documents exist (written around the store, or never made) is found by the
  hourly recount and repaired ("Health figures": drift is repaired by the hourly health job).

Walk steps (they draw nothing), run on both stores by STORES16_WALKS. A mixin of the model
(test_support/url_machine_model.py).
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from social_recording.domain.url_machine import Why
from social_recording.store.base import UrlWrite, WriteOutcome
from social_recording.store.counts import TOKENS_KEY
from social_recording.store.mongo import MongoStore
from test_support.engine_fakes import StepClock
from test_support.url_machine_outages import store_down
from test_support.url_machine_steps import Draws, Steps

FULL_DISKS: dict[str, Callable[[], Exception]] = {
    "out of space, as the operating system says it": lambda: OSError(errno.ENOSPC, "No space left on device"),
}
"""A full disk as the operating system reports it (docs/architecture.md, "Fencing": a write meeting a full
disk is repeated)."""


class Stores16Rules:
    """Walk steps on the machine's store, engine and clocks (mixed into `UrlRules`)."""

    store: Any
    world: Any
    tokens: list[str]
    paid: bool

    # ------------------------------------------------------------------ a full disk, as the OS says it

    def the_disk_is_full_as_the_os_says_it(self, kind: str, seconds: float) -> None:
        """A holder records a URL while its writes meet a full disk (`kind`, FULL_DISKS) for less than the
        write's bound: the write is repeated, the same write, until it lands (docs/architecture.md, "Fencing")."""
        from test_support.url_machine_model import STATS

        m: Any = self
        picked = m._an_element(Draws())
        if picked is None:
            return
        address, element = picked
        clock = m.outage_clock
        with m.doing("live"), store_down(self.store, clock, element.url, seconds, FULL_DISKS[kind]) as writes:
            outcome = m.engine.recorder.record_url((address, address), element.url, m._run(Why.LIVE))
        if not writes:
            self.world.violations.append(f"{address} {element.url}: the walk's recording wrote nothing")
            return
        STATS[f"full disks ({kind}) waited out"] += 1
        refused = [w for w, reached in writes if not reached]
        first = next((w for w, reached in writes if reached), None)
        if first is None or any(w != first for w in refused):
            self.world.violations.append(
                f"{address} {element.url}: the disk was full ({kind}) for {seconds} s and the recording ended "
                f"{outcome.status} ({outcome.detail}) after {len(writes)} write(s): not the same write repeated "
                f"until it landed")

    # ------------------------------------------------------------------ a write repeated after failing part way

    def a_write_fails_part_way_and_is_repeated(self) -> None:
        """A holder records a URL with links; its write's links land, then the store is away for a moment
        (a failover, before the URL's state is written) and the write is repeated under the same fence. The
        URL's links are then the repeat's alone: the links figure counts exactly the links each element
        shows (docs/architecture.md, "Fencing": fenced writes are idempotent). On SQLite a write is one
        transaction (nothing lands part way): the recording is plain."""
        from pymongo.errors import AutoReconnect

        from test_support.url_machine_model import STATS

        m: Any = self
        picked = m._an_element(Draws())
        if picked is None:
            return
        address, element = picked
        failed: list[str] = []
        store = self.store
        if isinstance(store, MongoStore):
            real = store._update_state

            def update_state(url: str, *args: Any, **kw: Any) -> bool:
                if url == element.url and not failed:
                    failed.append(url)
                    raise AutoReconnect("the model's primary stepped down between the links and the state")
                out: bool = real(url, *args, **kw)
                return out

            store._update_state = update_state  # type: ignore[method-assign]
        try:
            with m.doing("live"):
                outcome = m.engine.recorder.record_url((address, address), element.url, m._run(Why.LIVE))
        finally:
            if isinstance(store, MongoStore):
                del store._update_state
        shown = sum(len(store.find_links(a, el.url)) for a in self.tokens if (doc := store.find_token(a))
                    for el in doc.social_urls)
        STATS[f"writes repeated after failing part way ({'failed' if failed else 'plain'})"] += 1
        if failed and not shown:
            self.world.violations.append(f"{address} {element.url}: the walk's recording ({outcome.status}) "
                                         f"wrote no links")
        if store.count_links() != shown:
            self.world.violations.append(
                f"{address} {element.url}: a write repeated under one fence after its links landed and its state "
                f"did not ({outcome.status}, {outcome.detail}): the links figure says {store.count_links()}, the "
                f"elements show {shown} (the first try's links kept beside the repeat's)")

    # ------------------------------------------------------------------ a spooled answer's write gone stale

    def a_spooled_answers_write_goes_stale(self) -> None:
        """A paid answer the store refused waits in the spool (the spool's rule, url_machine_spool.py); the
        paying token's next recording writes it first, and right before that write lands another holder
        writes the URL's state (its version moves on). The spooled answer is still written, on the state read
        anew: the paying element holds one more call, dated at the call, the spool is emptied, and nothing is
        paid again within the answer's window (docs/architecture.md, "No payment without a record")."""
        from test_support.url_machine_model import STATS, _ms

        m: Any = self
        store = self.store
        replayed: list[str] = []

        def racing_replay(url: str, holder: str, spooled: Any, paid_el: Any, held: Any, own: Any,
                          later: timedelta, paid: bool) -> None:
            replayed.append(url)
            raced: list[UrlWrite] = []
            real = store.apply_url_write

            def apply(write: UrlWrite) -> WriteOutcome:
                if write.url == url and not raced:
                    raced.append(write)
                    self._another_holder_moves_the_state_on(url)
                out: WriteOutcome = real(write)
                return out

            w = self.world
            last = w.last_request.get(url)
            store.apply_url_write = apply
            try:
                with m.doing("live") as op:
                    outcome = m._record(holder, url, paid)
                    sent = op.paid_sent
            finally:
                del store.apply_url_write
            el = store.find_element(spooled.address, url)
            STATS["spooled answers whose write went stale"] += 1
            said = (f"{url}: the spooled answer {spooled.status.value} paid by {spooled.address} at "
                    f"{spooled.called_at}, its write meeting a state another holder moved on ({outcome.status}, "
                    f"{outcome.detail})")
            if m.spool.find(url) is not None:
                w.violations.append(f"{said}: still in the spool")
            if el is None or (el.attempts, _ms(el.attempted_at)) != (paid_el.attempts + 1, _ms(spooled.called_at)):
                w.violations.append(f"{said}: the paying element holds (calls, last call) "
                                    f"{None if el is None else (el.attempts, el.attempted_at)}; it held "
                                    f"{paid_el.attempts}: one more call, made at {spooled.called_at} (never written)")
            if sent or w.last_request.get(url) != last:
                w.violations.append(f"{said}: {sent} paid request(s) sent {later} later, in the answer's window")

        m._replayed = racing_replay
        try:
            m.a_paid_answer_the_store_cannot_take(Draws(), "ok", "writable", "the store takes it",
                                                  "the token that paid", timedelta(seconds=1), "lifted", True, "gone")
        finally:
            del m._replayed
        if not replayed:
            self.world.violations.append("the walk's paid answer was never spooled and replayed")

    def _another_holder_moves_the_state_on(self, url: str) -> None:
        """Another holder's element-only write of `url` lands: the URL state's version moves on, nothing else."""
        store = self.store
        if isinstance(store, MongoStore):
            store.db["url_states"].update_one({"url": url}, {"$inc": {"version": 1}})
            return
        conn = sqlite3.connect(store.path)  # another process's write
        try:
            conn.execute("UPDATE url_states SET version = version + 1 WHERE url = ?", [url])
            conn.commit()
        finally:
            conn.close()

    # ------------------------------------------------------------------ a counter missing beside its documents

    def a_counter_goes_missing(self) -> None:
        """The tokens' counter is removed while tokens are stored (a write around the store): the hourly
        recount finds it differing and repairs it, as any counter off (docs/architecture.md, "Health
        figures")."""
        from social_recording.dagster_defs.health_report import HealthInputs, evaluate_health
        from test_support.url_machine_model import STATS

        m: Any = self
        store = self.store
        if isinstance(store, MongoStore):
            store.db["store_counts"].update_one({"_id": "counts"}, {"$unset": {f"n.{TOKENS_KEY}": ""}})
        else:
            conn = sqlite3.connect(store.path)  # another process's write, beside the store
            try:
                conn.execute("DELETE FROM store_counts WHERE key = ?", [TOKENS_KEY])
                conn.commit()
            finally:
                conn.close()
        tokens = len(m.addresses)
        inputs = HealthInputs(enable_paid=self.paid, usable_platforms=m._usable(), max_exhausted_per_hour=1, ledger=None)
        check = evaluate_health(store, inputs, now=StepClock.__call__(m.clock), baseline=None, hourly=True)[-1]
        got = (check.figures.get("counters_differing"), check.figures.get("counters_repaired"),
               check.figures.get("drift"), store.counts().tokens)
        STATS["missing counters recounted"] += 1
        if got != (1, 1, tokens, tokens):
            self.world.violations.append(
                f"the tokens' counter missing beside {tokens} token(s): the recount said (differing, repaired, "
                f"drift, counter) {got}; the rule: (1, 1, {tokens}, {tokens}) (found and repaired)")


def _full_disk(kind: str) -> Steps:
    """A free URL failed once (due again after its back-off); its next write meets the full disk `kind`."""
    return lambda m: [*_failed_once(m), lambda: m.the_disk_is_full_as_the_os_says_it(kind, 0.25)]


def _failed_once(m: Any) -> list[Callable[[], object]]:
    """A free URL whose call failed once, its provider answering again, the clock past its back-off."""
    from test_support.url_machine_model import POOL
    from test_support.url_machine_steps import recorded_live

    yt = POOL[3]
    return [lambda: m.some_tokens_and_answers([[yt]], {yt: "5xx"}), recorded_live(m, "T000"),
            lambda: m.provider_changes(yt, "ok"), lambda: m.clock_moves(61)]


def _repeated_part_way(m: Any) -> list[Callable[[], object]]:
    """A free URL failed once; its next recording answers with links, and its write fails part way."""
    return [*_failed_once(m), m.a_write_fails_part_way_and_is_repeated]


def _missing_counter(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_model import POOL
    from test_support.url_machine_steps import recorded_live

    tg = POOL[4]
    return [lambda: m.some_tokens_and_answers([[tg]], {tg: "5xx"}), recorded_live(m, "T000"),
            m.a_counter_goes_missing]


def _spooled_gone_stale(m: Any) -> list[Callable[[], object]]:
    """A paid URL answering, its result refused by the store: spooled, then replayed against a moved state."""
    from test_support.url_machine_model import POOL

    x = POOL[0]
    return [lambda: m.some_tokens_and_answers([[x]], {x: "ok"}), m.a_spooled_answers_write_goes_stale]


STORES16_WALKS: tuple[tuple[str, Steps], ...] = (
    ("a spooled answer's write goes stale", _spooled_gone_stale),
    *((f"the disk {kind}", _full_disk(kind)) for kind in FULL_DISKS),
    ("a write fails part way and is repeated", _repeated_part_way),
    ("a counter goes missing beside its documents", _missing_counter),
)
"""(name, steps) of each walk."""
