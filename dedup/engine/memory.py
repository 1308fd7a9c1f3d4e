"""Memory tricks of a scan: the garbage collector paused while records are made by the
million, and memory the scan has let go handed back to the system."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
from collections.abc import Iterator
from typing import Any

__all__ = ["collector_paused", "collector_restarted", "release_freed_memory"]


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


# A full collection's threshold never reached in a scan: the young collections that would
# make one (2**28 of them: some 10**12 objects made; a C int even when tripled, as
# distributed's worker does to the thresholds it finds).
_NEVER = 2**28
# The collector's thresholds as Python starts (the gc module's documented defaults).
_STARTING_THRESHOLDS = (700, 10, 10)


@contextlib.contextmanager
def collector_paused(young_collected: bool = False) -> Iterator[None]:
    """The cyclic garbage collector off for a scan (and its workers, forked inside): the scan
    makes records by the million (spans, passages, pairs) and no reference cycles to speak of
    (a 100 MB scan leaves some 400 unreachable objects), so every collection would walk the
    records again for nothing (docs/performance.md has what it saved). With
    ``young_collected``, where this process makes cycles all the scan long (a Dask client's
    event loop), only its full collections are paused, which walk every record: the young
    ones walk the objects made since the last, and free the cycles as they are made.

    Afterwards the records the scan made are moved to the oldest generation, as if they had
    survived collections (which they would: they are the report): otherwise the first young
    collection after the scan walks them all, which takes a noticeable while after a large
    scan. Not when the caller has frozen objects of its own, which moving would unfreeze."""
    enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    if young_collected:
        gc.set_threshold(*thresholds[:2], _NEVER)
    else:
        gc.disable()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if gc.get_freeze_count() == 0:
            gc.freeze()  # every tracked object into the permanent generation...
            gc.unfreeze()  # ...and from there into the oldest one
        if enabled:
            gc.enable()


def collector_restarted() -> None:
    """The collector as Python starts it, in a process forked from a scan's (a dask-local
    worker, whose event loop makes cycles): the scan's pause is the scan's."""
    gc.unfreeze()
    gc.set_threshold(*_STARTING_THRESHOLDS)
    gc.enable()
