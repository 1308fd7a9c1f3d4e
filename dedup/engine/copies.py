"""Exact copies a worker need not hand back twice.

The main process needs a passage's normalized text only to verify candidate pairs, and those
are drawn from the first passage of each distinct text alone (the later copies of a text are
linked to it by its hashes: ``pipeline.exact_copies``). Sites and rounds of scraping repeat
whole novels, so most texts of a large dump are such copies; pickling each across and
decoding it again cost the main process more than anything else while the workers prepare.

So each worker remembers, for the scan, the texts (by their two hashes) it has handed back and
for which file; a later copy is handed back as ``None``. Whatever order the files reach the
workers in, the first passage of each text (lowest file, then position) always comes with its
text: a worker leaves a text out only when it handed it back for a file at or before this one,
and hands it back again (and remembers the earlier file) when it sees it in an earlier file
than the one it remembered. A worker remembers at most ``_MOST_SLOTS // 2`` texts; past that,
new texts are always handed back (more to send, never a different result).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.compiled import compiled

__all__ = ["CopyFilter", "forget_scan", "new_scan"]

_FIRST_SLOTS = 1 << 12
_MOST_SLOTS = 1 << 21  # 48 MB a worker when full: two hashes and a file number a slot
_EMPTY = -1
_scans = itertools.count()


@dataclass
class _HandedBack:
    """An open-addressing table: the two hashes of each text handed back, and its file."""

    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    file: npt.NDArray[np.int64]  # _EMPTY where the slot is free
    used: int = 0


# Per process: the table of each scan it works for, by the scan's name.
_tables: dict[str, _HandedBack] = {}


def new_scan() -> str:
    """A name for a scan's tables, unique in this process and its workers."""
    return f"{os.getpid()}-{next(_scans)}"


def forget_scan(scan: str) -> None:
    """Drop this process's table of ``scan`` (a worker's goes with the worker)."""
    _tables.pop(scan, None)


@dataclass(frozen=True, slots=True)
class CopyFilter:
    """What a task needs to leave copies out: the scan it belongs to and its file's number."""

    scan: str
    file_number: int

    def keep(self, hashes: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Which of the texts with these hashes (one row of two a text, in reading order) to
        hand back, remembering them as handed back for this file."""
        table = _tables.get(self.scan)
        if table is None:
            table = _tables[self.scan] = _empty(_FIRST_SLOTS)
        slots = table.file.shape[0]
        while 2 * (table.used + len(hashes)) > slots and slots < _MOST_SLOTS:
            slots *= 2
        if slots != table.file.shape[0]:
            grown = _empty(slots)
            grown.used = table.used
            _rehash(table.first, table.second, table.file, grown.first, grown.second, grown.file)
            table = _tables[self.scan] = grown
        keep = np.empty(len(hashes), dtype=np.bool_)
        # A full table stops taking new texts: at most half its slots are used, so probes end.
        room = max(0, slots // 2 - table.used)
        table.used += _mark(
            table.first, table.second, table.file, hashes, self.file_number, room, keep
        )
        return keep


def _empty(slots: int) -> _HandedBack:
    return _HandedBack(
        np.zeros(slots, dtype=np.int64),
        np.zeros(slots, dtype=np.int64),
        np.full(slots, _EMPTY, dtype=np.int64),
    )


@compiled
def _rehash(
    first: npt.NDArray[np.int64],
    second: npt.NDArray[np.int64],
    file: npt.NDArray[np.int64],
    new_first: npt.NDArray[np.int64],
    new_second: npt.NDArray[np.int64],
    new_file: npt.NDArray[np.int64],
) -> None:
    mask = new_file.shape[0] - 1
    for old in range(file.shape[0]):
        if file[old] == _EMPTY:
            continue
        slot = first[old] & mask
        while new_file[slot] != _EMPTY:
            slot = (slot + 1) & mask
        new_first[slot], new_second[slot], new_file[slot] = first[old], second[old], file[old]


@compiled
def _mark(
    first: npt.NDArray[np.int64],
    second: npt.NDArray[np.int64],
    file: npt.NDArray[np.int64],
    hashes: npt.NDArray[np.int64],
    file_number: int,
    room: int,
    keep: npt.NDArray[np.bool_],
) -> int:
    """Fill ``keep`` (see CopyFilter.keep); returns how many texts were added to the table."""
    mask = file.shape[0] - 1
    added = 0
    for text in range(hashes.shape[0]):
        slot = hashes[text, 0] & mask
        while file[slot] != _EMPTY and not (
            first[slot] == hashes[text, 0] and second[slot] == hashes[text, 1]
        ):
            slot = (slot + 1) & mask
        if file[slot] == _EMPTY:
            keep[text] = True
            if added < room:
                first[slot], second[slot], file[slot] = (
                    hashes[text, 0],
                    hashes[text, 1],
                    file_number,
                )
                added += 1
        elif file[slot] <= file_number:
            keep[text] = False  # handed back already, for this file or an earlier one
        else:
            keep[text] = True  # seen in a later file first: this is the earlier copy
            file[slot] = file_number
    return added
