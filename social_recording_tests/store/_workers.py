"""Work items for the concurrency tests, importable by spawned processes.

Each function takes an open Store plus plain arguments and returns a picklable result; the same
function runs in the test's threads (sharing one store) and in spawned OS processes (each opening
its own store from a URL).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import Store, open_store
from social_recording_tests.store._seed import planned, url_write

BASE = datetime(2025, 3, 1, tzinfo=UTC)


def create_pending(store: Store, worker: int, addresses: list[str], urls: list[str]) -> list[bool]:
    """Every worker races to create each of `addresses` (many races per run, not one)."""
    return [
        store.create_pending_token(
            TokenProfile(address=address, symbol=f"w{worker}", urls=urls),
            now=BASE + timedelta(seconds=worker),
        )
        for address in addresses
    ]


def upsert_object(store: Store, worker: int, platform_keys: list[str]) -> list[str]:
    out = []
    for key in platform_keys:
        obj = SocialObject(
            platform=Platform.YOUTUBE, platform_key=key, subtype="channel", fields={"writer": worker}
        )
        out.append(store.upsert_object(ObjectKind.ACCOUNT, obj, now=BASE + timedelta(seconds=worker)))
    return out


def fence_of(round_: int, slot: int, slots: int) -> int:
    """Every (round, worker slot) its own fence; later rounds outrank earlier ones."""
    return 1 + round_ * slots + slot


def fenced_write(
    store: Store, worker: int, address: str, urls: list[str], rounds: int, slot: int, slots: int, ok: bool
) -> list[tuple[str, int, str, int]]:
    """`rounds` writes on each of `urls`, each with this worker's fence for the round and values that
    name the writer (attempts = fence, detail, 1 + fence % 3 links with writer-specific objects);
    returns (url, fence, result, applied_fence) per write."""
    out = []
    for r in range(rounds):
        fence = fence_of(r, slot, slots)
        for url in urls:
            links = [planned(f"{url}#{fence}#{i}", depth=i) for i in range(1 + fence % 3)]
            status = FetchStatus.OK if ok else (FetchStatus.ERROR, FetchStatus.NOT_FOUND)[fence % 2]
            write = url_write(address, url, fence, status, BASE + timedelta(seconds=fence), attempts=fence,
                              links=links, detail=f"writer {worker} fence {fence}")
            outcome = store.apply_url_write(write)
            out.append((url, fence, outcome.result.value, outcome.applied_fence))
    return out


def versioned_write(store: Store, worker: int, urls: list[str], fence: int, expect_version: int) -> list[str]:
    """One write per URL on this worker's own token (`Cas<worker>`), all made on the URL state's
    `expect_version` with one shared fence: the holders of a URL that read the same state. Returns the
    result of each."""
    out = []
    for url in urls:
        write = replace(url_write(f"Cas{worker}", url, fence, FetchStatus.ERROR, BASE + timedelta(seconds=worker),
                                  attempts=2, detail=f"writer {worker}"), expect_version=expect_version)
        out.append(store.apply_url_write(write).result.value)
    return out


WORK: dict[str, Callable[..., Any]] = {
    "create_pending": create_pending,
    "upsert_object": upsert_object,
    "fenced_write": fenced_write,
    "versioned_write": versioned_write,
}


def process_main(
    store_url: str, name: str, worker: int, args: tuple[Any, ...], ready: Any, go: Any, out: Any
) -> None:
    """Entry point of a spawned process: open the store, say ready, wait for go, work, report."""
    try:
        store = open_store(store_url)
        try:
            store.find_existing_addresses(["warm-up"])  # connect before the start line
            ready.put(worker)
            if not go.wait(120):
                raise TimeoutError("no go signal within 120 s")
            out.put((worker, "ok", WORK[name](store, worker, *args)))
        finally:
            store.close()
    except BaseException:
        ready.put(worker)
        out.put((worker, "error", traceback.format_exc()))
