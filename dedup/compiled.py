"""The decorator for dedup's compiled loops (numba).

Each loop is compiled to machine code on first use and kept in numba's cache, next to the
module or in the user's cache folder, so later runs load it in a fraction of a second. Where
neither is writable (a read-only container, say), numba refuses to cache at all; the loops are
then compiled afresh in each run rather than failing the import.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import numba

__all__ = ["compiled"]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def compiled(function: F) -> F:
    options: dict[str, Any] = {"nogil": True, "boundscheck": False}
    try:
        loop: F = numba.njit(cache=True, **options)(function)
    except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
        log.info("compiling %s without numba's cache: %s", function.__name__, error)
        loop = numba.njit(**options)(function)
    return loop
