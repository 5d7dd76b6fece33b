"""The model's checks of the token lock's fence over raw values, of the graph contract and of the links a
reader sees mid-write (docs/architecture.md, "Fencing", "Data model", "Recording one URL").

A mixin of the model's machine (test_support/url_machine_model.py):

- a retry's raw-value resolution is overtaken: its holder is paused at the shortener past its token
  lease, a newer holder takes the token lock and resolves the same raw value; the paused holder's write
  (keep, drop or resolve) must then be refused ("lost", nothing changed: no URL joins the token), and the
  store keeps what the newer holder wrote ("every write under a URL or token lock carries its token and
  applies only if no larger one did");
- a provider answers a graph breaking the contract (test_support/url_machine_graph.py, BROKEN_SHAPES):
  `invalid`, as a call's answer; and a URL's kept answer is always one its provider gave;
- on the Mongo store, a reader reading a (token, URL)'s links right after a write inserted its own (before
  it deleted the older ones) sees one write's links, each object once ("replaced whole ... a repeat never
  duplicates").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from datetime import datetime
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, precondition, rule

from social_recording.domain.models import UnresolvedValue, as_stored
from social_recording.domain.url_machine import Why
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.recording.processor import TOKEN_LOCK_PREFIX
from social_recording.store.mongo import MongoStore
from social_recording.store.mongo.schema import TOKEN_LINKS
from social_recording.upstream.profile import DroppedValue, UnresolvedValueError
from test_support.url_machine_graph import BROKEN, BROKEN_SHAPES
from test_support.url_machine_retry import RAW_ANSWERS

MOMENTS = ("at the shortener", "inside the write")
"""Where the overtaken holder is paused past its lease: at its shortener (its write comes after the newer
holder's), or inside its write once it claimed the token (the Mongo store's moment; elsewhere, the same
as at its shortener)."""


class _LinksRead:
    """The links collection, with a reader told of every insert (the moment between a write's links
    landing and the older ones' deletion)."""

    def __init__(self, inner: Any, told: Callable[[Sequence[dict[str, Any]]], None]) -> None:
        self._inner, self._told = inner, told

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def insert_many(self, docs: Any, *args: Any, **kw: Any) -> Any:
        docs = list(docs)
        out = self._inner.insert_many(docs, *args, **kw)
        self._told(docs)
        return out


class _ReadMidWrite:
    """The Mongo store's database, whose links collection has a reader at every insert."""

    def __init__(self, inner: Any, told: Callable[[Sequence[dict[str, Any]]], None]) -> None:
        self._inner, self._told = inner, told

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __getitem__(self, name: str) -> Any:
        coll = self._inner[name]
        return _LinksRead(coll, self._told) if name == TOKEN_LINKS else coll


class TokenRules:
    """Rules and checks of the token's fence, the graph contract and the links read mid-write; expects
    the model's `store`, `world`, `clock`, `engine`, `locks`, `profiles`, `tokens`, `doing`, `_run` and
    the retry mixin's `raw_model` and `shortener`."""

    store: Any
    world: Any
    clock: Any
    engine: Any
    locks: Any
    profiles: Any
    tokens: list[str]
    doing: Any
    _run: Any
    raw_model: dict[tuple[str, str], UnresolvedValue]
    stats: Any

    def install_token_checks(self) -> None:
        """On the Mongo store, a reader reads a (token, URL)'s links right after every insert of them."""
        if isinstance(self.store, MongoStore):
            self.store.db = _ReadMidWrite(self.store.db, self._links_read_mid_write)

    def _links_read_mid_write(self, docs: Sequence[dict[str, Any]]) -> None:
        for address, url in sorted({(d["token_address"], d["entry_url"]) for d in docs}):
            links = self.store.find_links(address, url)
            objects = [(link.object.value, link.object_id) for link in links]
            if len(objects) != len(set(objects)):
                self.world.violations.append(
                    f"{address} {url}: read between a write's links and the older ones' deletion, the links are "
                    f"{sorted(objects)}: two writes' links at once (token_links are replaced whole per (token, URL))")

    # ------------------------------------------------------------------ the graph contract

    @precondition(lambda self: self.tokens)
    @rule(data=st.data(), shape=st.sampled_from(BROKEN_SHAPES))
    def a_provider_answers_a_broken_graph(self, data: st.DataObject, shape: str) -> None:
        """From now on the provider answers one of the tokens' URLs with a graph breaking the contract:
        a call's answer `invalid` (the provider's `given`, which the window's checks read)."""
        urls = sorted({url for address in self.tokens if (p := self.profiles.profiles.get(address)) for url in p.urls})
        if urls:
            self.world.answers[data.draw(st.sampled_from(urls))] = BROKEN + shape

    @invariant()
    def a_urls_answer_is_one_its_provider_gave(self) -> None:
        """The answer a URL keeps is one its provider gave it (a broken graph's `invalid`, never `ok`)."""
        for url, given in self.world.given.items():
            state = self.store.find_url_state(url)
            if state is not None and state.answer is not None:
                assert state.answer in {a for _, a, _ in given}, (
                    f"{url}: keeps the answer {state.answer.value}, its provider gave {[a.value for _, a, _ in given]}")

    # ------------------------------------------------------------------ the token's fence

    def _stored_raw(self, address: str, name: str) -> UnresolvedValue | None:
        doc = self.store.find_token(address)
        return next((v for v in doc.unresolved if v.field == name), None) if doc is not None else None

    def _token_lease_expires(self, address: str) -> None:
        """The token lock's TTL runs out while its holder is paused: its key is free for the next holder."""
        with closing(sqlite3.connect(self.locks.path, timeout=5.0)) as conn:
            conn.execute("UPDATE locks SET expires_at = 0 WHERE key = ?", (TOKEN_LOCK_PREFIX + address,))
            conn.commit()

    @precondition(lambda self: self.raw_model)
    @rule(data=st.data(), first=st.sampled_from(RAW_ANSWERS), then=st.sampled_from(RAW_ANSWERS),
          moment=st.sampled_from(MOMENTS))
    def a_raw_values_holder_is_overtaken(self, data: st.DataObject, first: str, then: str,
                                         moment: str = "at the shortener") -> None:
        """A retry tries a raw value and is paused past the token lease, at its shortener (or, on the
        Mongo store, inside its write, once it claimed the token); a newer holder takes the token lock
        and tries the same raw value (its shortener answers `then`); the paused one's shortener answers
        `first`. The newer one's write stands as its answer says; the paused one's, at its shortener,
        is refused ("lost"), changing nothing (a URL it resolved does not join the token)."""
        key = data.draw(st.sampled_from(sorted(self.raw_model)))
        address, name = key
        value = self._stored_raw(address, name)
        if value is None or not isinstance(self.locks, SqliteLockManager):
            return
        inside = moment == "inside the write" and isinstance(self.store, MongoStore)
        doc = self.store.find_token(address)
        held = {el.url for el in doc.social_urls} if doc is not None else set()
        newer: dict[str, Any] = {}
        calls: list[str] = []

        def the_newer_holder() -> None:  # the paused holder's lease ran out: the newer one takes the token lock
            newer["at"] = self.clock()
            self._token_lease_expires(address)
            newer["said"] = self.engine.processor.resolve_unresolved(address, value, self._run(Why.RETRY))
            newer["until"] = self.clock()

        def shortener(_field: str, raw: str) -> str:
            calls.append(raw)
            if len(calls) == 1 and not inside:
                the_newer_holder()
            answer = first if len(calls) == 1 else then
            if answer == "transient":
                raise UnresolvedValueError(f"cannot resolve shortlink {raw!r}: timed out")
            if answer == "gone":
                raise DroppedValue(f"cannot resolve shortlink {raw!r}: HTTP 404")
            return answer

        real = self.profiles.resolve_value
        self.profiles.resolve_value = shortener
        if inside:
            claim = self.store._claim_token

            def claimed(address: str, fence: int) -> Any:
                refused = claim(address, fence)
                if refused is None and not newer:
                    the_newer_holder()
                return refused

            self.store._claim_token = claimed
        try:
            with self.doing("retry"):
                said = self.engine.processor.resolve_unresolved(address, value, self._run(Why.RETRY))
        finally:
            self.profiles.resolve_value = real
            if inside:
                del self.store._claim_token
        self.stats[f"raw values' holders overtaken {moment}"] += 1
        self._check_overtaken(key, value, held, first, then, said, newer, inside)

    def _check_overtaken(self, key: tuple[str, str], value: UnresolvedValue, held: set[str], first: str,
                         then: str, said: str, newer: dict[str, Any], inside: bool) -> None:
        """The newer holder's write stands as its answer says; the overtaken one's is refused (lost), or,
        overtaken inside its write once it claimed the token, lands before the newer one's (its word)."""
        address, _ = key
        v = self.world.violations
        kept = self._stored_raw(*key)
        budget = self.world.limits.max_attempts
        still = then == "transient" and value.attempts + 1 < budget
        want = "retrying" if still else "dropped" if then in ("transient", "gone") else "resolved"
        own = ("retrying" if value.attempts + 1 < budget else "dropped") if first == "transient" else \
            "dropped" if first == "gone" else "resolved"
        if newer.get("said") != want or said not in ("lost", *((own,) if inside else ())):
            v.append(f"{key}: a raw value's holder overtaken by a newer one said {said!r} (its shortener: {first}), "
                     f"the newer one {newer.get('said')!r} (its shortener: {then}); the newer one's write stands "
                     f"({want}), the overtaken one's is refused (lost)")
        self.raw_model.pop(key, None)
        if still:
            at: datetime | None = None if kept is None else kept.checked_at
            if kept is None or kept.attempts != value.attempts + 1 or at is None or not (
                    as_stored(newer["at"]) <= at <= newer["until"]):
                v.append(f"{key}: after a newer holder's transient try at {newer['at']} the store keeps {kept!r}; "
                         f"it tried {value!r} once more")
            else:
                self.raw_model[key] = value.model_copy(update={"attempts": value.attempts + 1, "checked_at": at})
        elif kept is not None:
            v.append(f"{key}: the newer holder's shortener answered {then}, the store keeps {kept!r}")
        doc = self.store.find_token(address)
        holds = {el.url for el in doc.social_urls} if doc is not None else set()
        if want == "resolved" and then not in holds:
            v.append(f"{key}: resolved by the newer holder to {then}, which the token does not hold")
        if said == "lost" and first not in ("transient", "gone") and first not in held and first != then and \
                first in holds:
            v.append(f"{key}: the overtaken holder's refused write added {first} to the token")
