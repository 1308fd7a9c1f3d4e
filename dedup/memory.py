"""Handing memory the scan has let go back to the system."""

from __future__ import annotations

import ctypes
import functools
from typing import Any

__all__ = ["release_freed_memory"]


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
