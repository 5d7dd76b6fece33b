"""Concurrency: 8 threads + 2 spawned OS processes race on one token / object / set of URLs.

Processes run wherever another process can reach the data (SQLite file, a server over the wire);
mongomock lives inside this process, so there the race is threads only.
"""

from __future__ import annotations

import multiprocessing
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from social_recording.domain.graph import ObjectKind
from social_recording.domain.status import FetchStatus
from social_recording.store import WriteResult
from social_recording_tests.ferretdb_differences import CONDITIONAL_UPDATE_NOT_ATOMIC, INC_NOT_ATOMIC
from social_recording_tests.store import _workers
from social_recording_tests.store._seed import url_write
from social_recording_tests.store.conftest import Backend, stored_object_rows, stored_row_counts

THREADS = 8
PROCESSES = 2
GUARD_S = 120.0  # a hang guard only; nothing asserts on time


def run_together(backend: Backend, name: str, args_for: Callable[[int], tuple[Any, ...]]) -> dict[int, Any]:
    """Run WORK[name] in THREADS threads (sharing backend.store) and PROCESSES spawned processes
    (each opening backend.url), all released at once; returns {worker id: result}."""
    ctx = multiprocessing.get_context("spawn")
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    proc_ids = [100 + i for i in range(PROCESSES)] if backend.url is not None else []
    procs = [
        ctx.Process(
            target=_workers.process_main,
            args=(backend.url, name, w, args_for(w), ready, go, out),
            daemon=True,
        )
        for w in proc_ids
    ]
    results: dict[int, Any] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def thread_body(worker: int) -> None:
        try:
            if not go.wait(GUARD_S):
                raise TimeoutError("no go signal")
            value = _workers.WORK[name](backend.store, worker, *args_for(worker))
            with lock:
                results[worker] = value
        except BaseException:
            with lock:
                errors.append(traceback.format_exc())

    for p in procs:
        p.start()
    threads = [threading.Thread(target=thread_body, args=(w,)) for w in range(THREADS)]
    for t in threads:
        t.start()
    try:
        for _ in procs:
            ready.get(timeout=GUARD_S)  # every process has imported and connected
    finally:
        go.set()
    for t in threads:
        t.join(GUARD_S)
    for _ in procs:
        worker, kind, value = out.get(timeout=GUARD_S)
        if kind == "error":
            errors.append(value)
        else:
            results[worker] = value
    for p in procs:
        p.join(GUARD_S)
        assert p.exitcode == 0
    assert not errors, "\n".join(errors)
    assert sorted(results) == list(range(THREADS)) + proc_ids
    return results


URLS = [f"https://x.com/i/status/{i}" for i in range(THREADS + PROCESSES)]


ADDRESSES = [f"RaceMint{i:02d}" for i in range(20)]
KEYS = [f"channel:UC-race-{i:02d}" for i in range(20)]


def test_concurrent_create_pending_makes_one_token_and_one_true(backend: Backend) -> None:
    results = run_together(backend, "create_pending", lambda w: (ADDRESSES, URLS))

    for i, address in enumerate(ADDRESSES):
        winners = [w for w, inserted in results.items() if inserted[i] is True]
        assert len(winners) == 1, (address, {w: r[i] for w, r in results.items()})
        assert stored_row_counts(backend, address) == (1, len(URLS))
        doc = backend.store.find_token(address)
        assert doc is not None
        assert doc.symbol == f"w{winners[0]}"  # the winner's row, never overwritten by a loser
        assert doc.created_at == _workers.BASE + timedelta(seconds=winners[0])
        assert [u.url for u in doc.social_urls] == URLS
        assert {u.status for u in doc.social_urls} == {FetchStatus.PENDING}


def test_concurrent_upsert_object_makes_one_row_with_one_id(backend: Backend) -> None:
    results = run_together(backend, "upsert_object", lambda w: (KEYS,))

    assert stored_object_rows(backend, ObjectKind.ACCOUNT) == len(KEYS)
    for i, key in enumerate(KEYS):
        ids = {r[i] for r in results.values()}
        assert len(ids) == 1, (key, ids)
        (object_id,) = ids
        row = backend.store.get_object(ObjectKind.ACCOUNT, object_id)
        assert row is not None and row["platform_key"] == key
        writer = row["fields"]["writer"]
        assert writer in results
        assert row["created_at"] == _workers.BASE + timedelta(seconds=writer)  # one writer's whole row
    all_ids = {r[i] for r in results.values() for i in range(len(KEYS))}
    assert len(all_ids) == len(KEYS)


def _workers_of(backend: Backend) -> list[int]:
    return list(range(THREADS)) + ([100 + i for i in range(PROCESSES)] if backend.url else [])


@pytest.mark.ferretdb_differs(CONDITIONAL_UPDATE_NOT_ATOMIC)
def test_racing_fenced_writes_leave_exactly_the_largest_fences_write(backend: Backend) -> None:
    """Every worker writes every element several times with its own fences: whatever the interleaving,
    each element, its URL state and its links are those of the largest fence, never a mix."""
    store = backend.store
    urls = URLS[:3]
    assert _workers.create_pending(store, 0, ["FenceMint"], urls) == [True]
    workers = _workers_of(backend)
    slot = {w: i for i, w in enumerate(workers)}
    rounds = 4

    results = run_together(
        backend, "fenced_write", lambda w: ("FenceMint", urls, rounds, slot[w], len(workers), False)
    )

    top = _workers.fence_of(rounds - 1, len(workers) - 1, len(workers))
    writes = [row for rows in results.values() for row in rows]
    assert len(writes) == len(workers) * rounds * len(urls)
    for url, fence, result, applied_fence in writes:
        assert result in ("applied", "fenced"), (url, fence, result)
        if result == "fenced":
            assert applied_fence > fence  # refused only by a larger fence, and it says which
        if fence == top:
            assert result == "applied"  # the largest fence is never refused
    for url in urls:
        el = store.find_element("FenceMint", url)
        assert el is not None
        assert (el.fence, el.attempts, el.checked_at) == (top, top, _workers.BASE + timedelta(seconds=top))
        assert el.status is (FetchStatus.ERROR, FetchStatus.NOT_FOUND)[top % 2]
        assert el.detail is not None and el.detail.endswith(f"fence {top}")
        state = store.find_url_state(url)
        assert state is not None
        assert (state.fence, state.attempts, state.status) == (top, top, el.status)
        links = store.find_links("FenceMint", url)
        keys = set()
        for link in links:
            row = store.get_object(link.object, link.object_id)
            assert row is not None
            keys.add(row["platform_key"])
        assert keys == {f"{url}#{top}#{i}" for i in range(1 + top % 3)}, url
        assert len(links) == 1 + top % 3


@pytest.mark.ferretdb_differs(CONDITIONAL_UPDATE_NOT_ATOMIC)
def test_racing_ok_writes_apply_once(backend: Backend) -> None:
    """Every worker tries to record `ok` with its own fence: exactly one write applies (ok is never
    replaced, and a lower fence is refused), and what stands is that writer's, links included."""
    store = backend.store
    urls = URLS[:2]
    assert _workers.create_pending(store, 0, ["OkMint"], urls) == [True]
    workers = _workers_of(backend)
    slot = {w: i for i, w in enumerate(workers)}

    results = run_together(backend, "fenced_write", lambda w: ("OkMint", urls, 1, slot[w], len(workers), True))

    for url in urls:
        rows = [row for rs in results.values() for row in rs if row[0] == url]
        applied = [fence for _url, fence, result, _applied in rows if result == "applied"]
        assert len(applied) == 1, rows
        assert {result for *_rest, result, _a in rows} <= {"applied", "fenced", "ok_kept"}
        (winner,) = applied
        el = store.find_element("OkMint", url)
        state = store.find_url_state(url)
        assert el is not None and state is not None
        assert (el.status, el.fence, el.attempts) == (FetchStatus.OK, winner, winner)
        assert (state.status, state.source_token) == (FetchStatus.OK, "OkMint")
        assert state.attempts == winner
        assert len(store.find_links("OkMint", url)) == 1 + winner % 3


@pytest.mark.ferretdb_differs(CONDITIONAL_UPDATE_NOT_ATOMIC)
def test_holders_writing_on_the_same_url_state_version_apply_once(backend: Backend) -> None:
    """Every worker's own token holds the same URLs, and every worker writes each URL's result made on
    the state version it read (a new URL's 0, an existing one's 1), with one shared fence: exactly one
    write per URL applies and moves the version on; every other one is STALE and leaves its element
    as it was."""
    store = backend.store
    fresh, seen = URLS[:2], URLS[2:4]
    workers = _workers_of(backend)
    for w in workers:
        assert _workers.create_pending(store, w, [f"Cas{w}"], fresh + seen) == [True]
    for url in seen:  # a first answer: the state exists at version 1
        first = url_write(f"Cas{workers[0]}", url, 1, FetchStatus.ERROR, _workers.BASE)
        assert store.apply_url_write(replace(first, expect_version=0)).result is WriteResult.APPLIED
        state = store.find_url_state(url)
        assert state is not None and state.version == 1

    results = run_together(backend, "versioned_write", lambda w: (fresh, 2, 0))
    results_seen = run_together(backend, "versioned_write", lambda w: (seen, 2, 1))

    for url, outcomes, before in [(u, results, 0) for u in fresh] + [(u, results_seen, 1) for u in seen]:
        column = (fresh if before == 0 else seen).index(url)
        by_worker = {w: rows[column] for w, rows in outcomes.items()}
        winners = [w for w, result in by_worker.items() if result == "applied"]
        assert len(winners) == 1, (url, by_worker)
        assert set(by_worker.values()) == {"applied", "stale"}, (url, by_worker)
        state = store.find_url_state(url)
        assert state is not None and state.version == before + 1
        (winner,) = winners
        for w in workers:
            el = store.find_element(f"Cas{w}", url)
            assert el is not None
            if w == winner:
                assert (el.status, el.detail) == (FetchStatus.ERROR, f"writer {w}")
            elif before == 0 or w != workers[0]:
                assert el.status is FetchStatus.PENDING, (url, w, el)  # the losers' elements as they were


@pytest.mark.ferretdb_differs(INC_NOT_ATOMIC)
def test_the_counters_follow_racing_writers(backend: Backend) -> None:
    """Creates, fenced recordings (element status changes, links replaced, objects and first metrics)
    and object upserts, raced by threads and processes: every counter ends equal to a recount, so
    each writer moved the counters by exactly what its own writes did."""
    store = backend.store
    workers = _workers_of(backend)
    slot = {w: i for i, w in enumerate(workers)}
    run_together(backend, "create_pending", lambda w: (ADDRESSES[:5], URLS))
    run_together(backend, "fenced_write", lambda w: (ADDRESSES[0], URLS[:3], 3, slot[w], len(workers), False))
    run_together(backend, "fenced_write", lambda w: (ADDRESSES[1], URLS[:2], 1, slot[w], len(workers), True))
    run_together(backend, "upsert_object", lambda w: (KEYS,))

    drift = store.reconcile_counts()

    assert drift.differences == {}, drift
    counts = store.counts()
    assert counts.tokens == 5 and sum(counts.by_platform.values()) == 5 * len(URLS)
    assert counts.objects[ObjectKind.ACCOUNT] == len(KEYS) and counts.links >= 1 and counts.metrics >= 1
