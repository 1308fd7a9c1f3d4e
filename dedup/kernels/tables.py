"""Open-addressing tables of 64-bit keys, inside compiled loops, found by linear probing from
a key's low bits, kept at most half full so that a probe ends soon. Two kinds:

- a table of records: an array of ``slots`` rows (a power of two), a row per record; a slot
  is free while its ``used_column`` holds ``free``. The hand-back table of exact copies
  (dedup.engine.copies) and OpenCC's run cache (dedup.normalize.opencc) are such tables.
- a stamped set (``stamped_add``, ``stamped_slot``): keys and a stamp per slot, a slot holding
  a key of the current set only if stamped with its number, so the set is emptied for the next
  one by changing the stamp, never by clearing (verify's shingle sets, one per text whose pairs
  are scored).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.kernels.jit import compiled

__all__ = ["empty_table", "probe", "rehashed", "stamped_add", "stamped_slot"]


def empty_table(slots: int, columns: int, used_column: int, free: int) -> npt.NDArray[np.int64]:
    """A table of ``slots`` free slots (a power of two) of ``columns`` columns each."""
    table = np.zeros((slots, columns), dtype=np.int64)
    table[:, used_column] = free
    return table


@compiled
def probe(
    table: npt.NDArray[np.int64],
    start: int | np.int64,
    key_column: int,
    key: int | np.int64,
    match_column: int,
    match: int | np.int64,
    used_column: int,
    free: int,
) -> int:
    """From slot ``start`` on, the first slot that is free or holds a record whose ``key_column``
    is ``key`` and whose ``match_column`` is ``match``."""
    mask = table.shape[0] - 1
    slot = int(start & mask)
    while table[slot, used_column] != free:
        if table[slot, key_column] == key and table[slot, match_column] == match:
            return slot
        slot = (slot + 1) & mask
    return slot


@compiled
def rehashed(
    table: npt.NDArray[np.int64], slots: int, key_column: int, used_column: int, free: int
) -> npt.NDArray[np.int64]:
    """The records of ``table`` in a table of ``slots`` slots (a power of two)."""
    grown = np.zeros((slots, table.shape[1]), dtype=np.int64)
    grown[:, used_column] = free
    mask = slots - 1
    for old in range(table.shape[0]):
        if table[old, used_column] == free:
            continue
        slot = table[old, key_column] & mask
        while grown[slot, used_column] != free:
            slot = (slot + 1) & mask
        grown[slot] = table[old]
    return grown


@compiled
def stamped_add(
    keys: npt.NDArray[np.uint64],
    stamps: npt.NDArray[np.int64],
    mask: np.uint64,
    stamp: int,
    key: np.uint64,
) -> np.int64:
    """``key`` into the set stamped ``stamp`` (it must not be there already): its slot."""
    slot = key & mask
    while stamps[slot] == stamp:
        slot = (slot + np.uint64(1)) & mask
    keys[slot] = key
    stamps[slot] = stamp
    return np.int64(slot)


@compiled
def stamped_slot(
    keys: npt.NDArray[np.uint64],
    stamps: npt.NDArray[np.int64],
    mask: np.uint64,
    stamp: int,
    key: np.uint64,
) -> np.int64:
    """The slot of ``key`` in the set stamped ``stamp``, or -1 if it is not there."""
    slot = key & mask
    while stamps[slot] == stamp:
        if keys[slot] == key:
            return np.int64(slot)
        slot = (slot + np.uint64(1)) & mask
    return np.int64(-1)
