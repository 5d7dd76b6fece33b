"""The model's checks of what the store keeps, read raw (its own rows or documents, not through the
store's readers, which build a value only from a whole record and so hide what a write left behind):

- a URL state's saved paid request ("Recording one URL": a two-step call's submission, polled by the next
  holder) is kept whole or not at all, its provider, id and submission time together, and only while the
  model knows it open: submitted and saved, and not yet closed by an answer that was written;
- on the SQLite store, a (token, URL)'s links are exactly the latest answer's (docs/architecture.md,
  "Data model": token_links "replaced whole per (token, entry URL): a repeat never duplicates"): an ok
  element's, each object once at its depth; none for an element that is not ok, nor for one the store
  does not hold.

A mixin of the model (test_support/url_machine_model.py), checked after every step.
"""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import invariant

from social_recording.domain.models import as_stored
from social_recording.domain.status import FetchStatus
from social_recording.store.mongo import MongoStore
from social_recording.store.mongo.schema import URL_STATES
from social_recording.store.sqlite import SqliteStore


class StoredRules:
    """Raw reads of the store's records. Expects the model's `store` and `world`."""

    store: Any
    world: Any

    def _raw_request(self, url: str) -> tuple[Any, Any, Any] | None:
        """The URL state's request fields as stored (provider, id, submission time); None: no state."""
        if isinstance(self.store, SqliteStore):
            row = self.store._conn().execute(
                "SELECT request_provider, request_id, request_submitted_at FROM url_states WHERE url = ?",
                [url]).fetchone()
            return None if row is None else (row[0], row[1], row[2])
        if isinstance(self.store, MongoStore):
            doc = self.store.db[URL_STATES].find_one({"url": url}, {"request": 1})
            if doc is None:
                return None
            req = doc.get("request")
            if req is None:
                return (None, None, None)
            if not isinstance(req, dict):
                return (req, req, req)
            return (req.get("provider"), req.get("request_id"), req.get("submitted_at"))
        return None

    @invariant()
    def a_saved_request_is_whole_and_open(self) -> None:
        """A URL state keeps its paid request whole (provider, id and submission time) or not at all,
        and keeps one only while the model knows it open, submitted at the time the state says."""
        from test_support.url_machine_model import POOL

        for url in POOL:
            raw = self._raw_request(url)
            if raw is None:
                continue
            kept = [f is not None and f != "" for f in raw]
            opened = self.world.open_request.get(url)
            if any(kept) and not all(kept):
                self.world.violations.append(
                    f"{url}: the URL state keeps part of a paid request (provider, id, submitted: {raw!r}); a "
                    f"closed request leaves none of it (the model's open request: {opened})")
            elif all(kept):
                state = self.store.find_url_state(url)
                held = None if state is None or state.request is None else as_stored(state.request.submitted_at)
                if opened is None or held is None or held != as_stored(opened):
                    self.world.violations.append(
                        f"{url}: the URL state keeps the paid request {raw!r} (read as submitted at {held}); the "
                        f"model's open request: {opened} (none: closed by a written answer, or never saved)")

    @invariant()
    def a_tokens_links_are_its_latest_answers(self) -> None:
        """On the SQLite store, the links of each (token, URL) are one write's (its latest answer's, or
        the answer it reused): an ok element's, each object once, as many as the answer's graph holds, all
        written at one moment; an element that is not ok, or not held, has none."""
        if not isinstance(self.store, SqliteStore):
            return
        from test_support.url_machine_graph import expected_links

        rows = self.store._conn().execute(
            "SELECT token_address, entry_url, object, object_id, link_depth, created_at FROM token_links").fetchall()
        groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
        for address, url, *link in rows:
            groups.setdefault((address, url), []).append(tuple(link))
        for (address, url), links in sorted(groups.items()):
            el = self.store.find_element(address, url)
            objects = {(kind, object_id) for kind, object_id, _, _ in links}
            moments = {created for *_, created in links}
            if el is None or el.status is not FetchStatus.OK:
                self.world.violations.append(f"{address} {url}: {len(links)} link(s) kept for an element "
                                             f"{'not held' if el is None else el.status.value}; only an ok one has links")
            elif len(links) != len(expected_links(url)) or len(objects) != len(links) or len(moments) != 1:
                self.world.violations.append(
                    f"{address} {url}: {len(links)} link(s) to {len(objects)} object(s), written at {sorted(moments)}; "
                    f"one answer's graph is {len(expected_links(url))} objects, each linked once, by one write")
