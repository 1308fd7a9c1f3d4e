"""Tables of int64 rows inside compiled loops: grown as a loop fills them (doubling, so that a
loop that cannot know its output's size ahead fills it in amortized constant time), and taken
in an order; and a binary search. Written as plain loops: numba compiles 2-D slice assignment and fancy indexing
slowly (three seconds or more for each use, paid on a fresh install's first scan), loops in a
fraction of a second."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.kernels.jit import compiled

__all__ = ["search_sorted", "sort_rows", "stable_order", "with_room", "with_room_for_rows"]


@compiled
def with_room(values: npt.NDArray[np.int64], count: int, more: int) -> npt.NDArray[np.int64]:
    """``values`` if ``count + more`` fit, else a larger copy holding its first ``count``."""
    if count + more <= values.shape[0]:
        return values
    grown = np.empty(max(2 * values.shape[0], count + more), dtype=np.int64)
    for index in range(count):
        grown[index] = values[index]
    return grown


@compiled
def with_room_for_rows(rows: npt.NDArray[np.int64], count: int, more: int) -> npt.NDArray[np.int64]:
    """``rows`` if ``count + more`` rows fit, else a larger copy holding its first ``count``."""
    if count + more <= rows.shape[0]:
        return rows
    grown = np.empty((max(2 * rows.shape[0], count + more), rows.shape[1]), dtype=np.int64)
    for row in range(count):
        for column in range(rows.shape[1]):
            grown[row, column] = rows[row, column]
    return grown


@compiled
def sort_rows(
    rows: npt.NDArray[np.int64], count: int, first: int, second: int, columns: int
) -> npt.NDArray[np.int64]:
    """The first ``count`` rows' first ``columns`` columns, as a new table, sorted by column
    ``first`` then column ``second`` (stable)."""
    keys = np.empty(count, dtype=np.int64)
    spread = 1
    for row in range(count):
        spread = max(spread, rows[row, second] + 1)
    for row in range(count):
        keys[row] = rows[row, first] * spread + rows[row, second]
    order = stable_order(keys)
    ordered = np.empty((count, columns), dtype=np.int64)
    for row in range(count):
        for column in range(columns):
            ordered[row, column] = rows[order[row], column]
    return ordered


@compiled
def stable_order(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``np.argsort(keys, kind="stable")``, by a bottom-up merge sort of our own: numba's
    sorts take over a second to compile at each place they are used."""
    size = keys.shape[0]
    order = np.arange(size)
    spare = np.empty(size, dtype=np.int64)
    width = 1
    while width < size:
        for low in range(0, size, 2 * width):
            middle, high = min(low + width, size), min(low + 2 * width, size)
            left, right, at = low, middle, low
            while left < middle and right < high:
                if keys[order[right]] < keys[order[left]]:
                    spare[at] = order[right]
                    right += 1
                else:
                    spare[at] = order[left]
                    left += 1
                at += 1
            while left < middle:
                spare[at] = order[left]
                left += 1
                at += 1
            while right < high:
                spare[at] = order[right]
                right += 1
                at += 1
        order, spare = spare, order
        width *= 2
    return order


@compiled
def search_sorted(
    values: npt.NDArray[np.int64] | npt.NDArray[np.uint64], key: int | np.int64 | np.uint64
) -> int:
    """``np.searchsorted(values, key)`` (the first position whose value is not below
    ``key``), by a loop: numba's takes a second to compile at each place it is used."""
    low, high = 0, values.shape[0]
    while low < high:
        middle = (low + high) // 2
        if values[middle] < key:
            low = middle + 1
        else:
            high = middle
    return low
