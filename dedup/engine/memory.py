"""Memory tricks of a scan: the garbage collector paused while records are made by the
million, and memory the scan has let go handed back to the system."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
from collections.abc import Iterator
from typing import Any

__all__ = ["collector_paused", "release_freed_memory"]


def release_freed_memory() -> None:
    """Return the free pages of the C library's heap to the system, where the C library can
    (glibc's ``malloc_trim``; elsewhere nothing happens). Freed memory otherwise stays with the
    malloc arena of the thread that allocated it: another thread allocating next does not reuse
    it, and the process holds both."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the process already has
    except (OSError, AttributeError):  # no symbols to look in, or a C library without it
        return None


@contextlib.contextmanager
def collector_paused(paused: bool = True) -> Iterator[None]:
    """The cyclic garbage collector off for a scan (and its workers, forked inside), if
    ``paused``: a scan on this machine makes records by the million (spans, passages, pairs)
    and no reference cycles to speak of (a 100 MB scan leaves some 400 unreachable objects),
    so every collection would walk the records again for nothing (docs/performance.md has
    what it saved). Not on a cluster (``Engine.pauses_collector``): there the client's event
    loop makes cycles as long as the scan runs.

    Afterwards the records the scan made are moved to the oldest generation, as if they had
    survived collections (which they would: they are the report): otherwise the first young
    collection after the scan walks them all, which takes a noticeable while after a large
    scan. Not when the caller has frozen objects of its own, which moving would unfreeze."""
    enabled = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()  # every tracked object into the permanent generation...
            gc.unfreeze()  # ...and from there into the oldest one
        if enabled:
            gc.enable()
