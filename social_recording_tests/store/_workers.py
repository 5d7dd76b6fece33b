"""Work items for the concurrency tests, importable by spawned processes.

Each function takes an open Store plus plain arguments and returns a picklable result; the same
function runs in the test's threads (sharing one store) and in spawned OS processes (each opening
its own store from a URL).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import TokenProfile
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.store import Store, open_store

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


def record_url(store: Store, worker: int, address: str, url: str, rounds: int) -> int:
    """`rounds` attempted results on one URL, the last one ok; returns how many the store accepted."""
    accepted = 0
    for i in range(rounds):
        status = FetchStatus.OK if i == rounds - 1 else FetchStatus.ERROR
        at = BASE + timedelta(minutes=i, milliseconds=worker)
        accepted += store.record_url_result(address, url, status, at)
    return accepted


WORK: dict[str, Callable[..., Any]] = {
    "create_pending": create_pending,
    "upsert_object": upsert_object,
    "record_url": record_url,
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
