"""How many malloc arenas the threads of a recording process share (glibc; elsewhere nothing).

glibc gives every new thread an arena of its own, up to 8 per core, and what a thread frees stays
in its arena for the threads of that arena, seldom returned to the system. A run records its tokens
and URLs on a few dozen threads, so its peak resident memory carried the free space of a dozen
arenas: tens of MB, more the longer the run. The threads take turns on the GIL, so two arenas serve
them without contention worth measuring (docs/architecture.md, "Run memory"). An operator's own
MALLOC_ARENA_MAX wins: glibc has applied it at start, and this module then does nothing.

glibc fixes the limit when it first needs one: the cap holds if it is set before the process has 9
arenas, so the recording calls `cap_malloc_arenas` before it starts threads.

Imports nothing of ours, so every layer may use it.
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading

MALLOC_ARENAS = 2
"""Arenas of a recording process, the main one included."""
_M_ARENA_MAX = -8
"""mallopt's parameter number for the arena limit (malloc.h)."""

_lock = threading.Lock()
_capped: bool | None = None


def cap_malloc_arenas() -> bool:
    """Limit this process to MALLOC_ARENAS malloc arenas, once; True when the limit is set (now or
    before), False where there is nothing to set (not glibc, or MALLOC_ARENA_MAX given)."""
    global _capped
    with _lock:
        if _capped is None:
            _capped = _set_limit()
        return _capped


def _set_limit() -> bool:
    if os.environ.get("MALLOC_ARENA_MAX", "").strip() or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_ARENA_MAX, MALLOC_ARENAS))
