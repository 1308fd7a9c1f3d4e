"""Exact copies a worker need not hand back twice.

The main process needs a passage's normalized text only to verify candidate pairs, and those
are drawn from the first passage of each distinct text alone (the later copies of a text are
linked to it by its hashes: ``candidates.exact_copies``). Sites and rounds of scraping repeat
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

from dedup.kernels import compiled
from dedup.kernels.tables import empty_table, probe, rehashed

__all__ = ["CopyFilter", "forget_scan", "new_scan"]

_FIRST_SLOTS = 1 << 12
_MOST_SLOTS = 1 << 21  # 48 MB a worker when full: two hashes and a file number a slot
_EMPTY = -1
_FIRST, _SECOND, _FILE = 0, 1, 2  # the columns of a record
_scans = itertools.count()


@dataclass
class _HandedBack:
    """An open-addressing table (dedup.kernels.tables): a row per text handed back, its two
    hashes and its file (_EMPTY where the slot is free)."""

    records: npt.NDArray[np.int64]
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
        slots = table.records.shape[0]
        while 2 * (table.used + len(hashes)) > slots and slots < _MOST_SLOTS:
            slots *= 2
        if slots != table.records.shape[0]:
            table.records = rehashed(table.records, slots, _FIRST, _FILE, _EMPTY)
        keep = np.empty(len(hashes), dtype=np.bool_)
        # A full table stops taking new texts: at most half its slots are used, so probes end.
        room = max(0, slots // 2 - table.used)
        table.used += _mark(table.records, hashes, self.file_number, room, keep)
        return keep


def _empty(slots: int) -> _HandedBack:
    return _HandedBack(empty_table(slots, 3, _FILE, _EMPTY))


@compiled
def _mark(
    records: npt.NDArray[np.int64],
    hashes: npt.NDArray[np.int64],
    file_number: int,
    room: int,
    keep: npt.NDArray[np.bool_],
) -> int:
    """Fill ``keep`` (see CopyFilter.keep); returns how many texts were added to the table."""
    added = 0
    for text in range(hashes.shape[0]):
        first, second = hashes[text, 0], hashes[text, 1]
        slot = probe(records, first, _FIRST, first, _SECOND, second, _FILE, _EMPTY)
        if records[slot, _FILE] == _EMPTY:
            keep[text] = True
            if added < room:
                records[slot, _FIRST] = first
                records[slot, _SECOND] = second
                records[slot, _FILE] = file_number
                added += 1
        elif records[slot, _FILE] <= file_number:
            keep[text] = False  # handed back already, for this file or an earlier one
        else:
            keep[text] = True  # seen in a later file first: this is the earlier copy
            records[slot, _FILE] = file_number
    return added
