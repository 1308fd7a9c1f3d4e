"""Rows of bytes appended one at a time and kept, a block at a time, in an unnamed temporary
file rather than in memory.

The driver of a scan keeps a row a file for the whole scan: the files found, their entries in
the report, the names of their documents (``RowSpool``), and where each run of passages is in
its file's bytes (``ArraySpool``); and the main pass's runs of passages and documents, until
they are read back into one table at its end. A crawl of a page a file has millions of files, and
issue 21 asks that the driver's memory not grow with the input. These rows are written once
and read back a few times (when a file's task is made, when the report is written), in order
mostly, so a ``RowSpool`` holds in memory only the block being filled, the place of each
block written (16 bytes a block of some 64 KiB: a thousand files or more) and the last few
blocks read. The file has no name (``tempfile.TemporaryFile``): it is gone when the process
ends, however it ends, and never shows in a folder.
"""

from __future__ import annotations

import array
import bisect
import errno
import itertools
import os
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any, ClassVar, overload

import numpy as np
import numpy.typing as npt

from dedup.errors import ScratchSpaceError

__all__ = ["ArraySpool", "KeyParts", "RowSpool"]

# Blocks read and kept, for rows read back out of order (a file's task made while another
# pass's are): each is as large as a block.
_BLOCKS_KEPT = 8
# A block past this (a row larger than a block) is not kept: read in order, its rows are
# read once, and eight of them could hold a sizable share of what they are read for.
_KEPT_BLOCK_BYTES = 1 << 20


class RowSpool(Sequence[bytes]):
    """Rows of bytes, appended in order and read back by number."""

    block_bytes: ClassVar[int] = 1 << 16  # a block is written once it holds this much

    def __init__(self, rows: Iterable[bytes] = ()) -> None:
        self._count = 0
        self._data = bytearray()  # the block being filled
        self._ends = array.array("I")  # the end of each of its rows in _data
        self._firsts = array.array("q")  # the first row of each block written
        self._places = array.array("q", [0])  # where each block written starts; the file's end
        self._scratch = _ScratchFile()
        self._read: dict[int, tuple[array.array[int], bytes]] = {}
        for row in rows:
            self.append(row)

    def append(self, row: bytes) -> int:
        """``row`` after the others; its number."""
        self._data += row
        self._ends.append(len(self._data))
        self._count += 1
        if len(self._data) >= self.block_bytes:
            self._write_block()
        return self._count - 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[bytes, ...]: ...

    def __getitem__(self, index: int | slice) -> bytes | tuple[bytes, ...]:
        if isinstance(index, slice):
            return tuple(self._row(row) for row in range(self._count)[index])
        return self._row(range(self._count)[index])  # an IndexError past the end

    def __iter__(self) -> Iterator[bytes]:
        return (self._row(row) for row in range(self._count))

    def __reduce__(self) -> tuple[type[RowSpool], tuple[list[bytes]]]:
        # Another process cannot read this one's file: the rows themselves go.
        return (type(self), (list(self),))

    def _row(self, row: int) -> bytes:
        filling = self._count - len(self._ends)
        data: bytes | bytearray
        if row >= filling:
            ends, data, at = self._ends, self._data, row - filling
        else:
            block = bisect.bisect_right(self._firsts, row) - 1
            ends, data = self._block(block)
            at = row - self._firsts[block]
        return bytes(data[ends[at - 1] if at else 0 : ends[at]])

    def _block(self, block: int) -> tuple[array.array[int], bytes]:
        found = self._read.get(block)
        if found is None:
            start, end = self._places[block], self._places[block + 1]
            data = self._scratch.read(end - start, start)
            rows = int.from_bytes(data[:4], "little")
            ends = array.array("I")
            ends.frombytes(data[4 : 4 + 4 * rows])
            found = (ends, data[4 + 4 * rows :])
            if len(data) > _KEPT_BLOCK_BYTES:
                return found  # a row of its own, read once (a join of span tables, say)
            if len(self._read) >= _BLOCKS_KEPT:
                self._read.clear()  # no lock: threads may read, and a fork may copy a lock held
            self._read[block] = found
        return found

    def _write_block(self) -> None:
        block = len(self._ends).to_bytes(4, "little") + self._ends.tobytes() + self._data
        self._scratch.write(block)
        self._firsts.append(self._count - len(self._ends))
        self._places.append(self._scratch.size)
        self._data = bytearray()
        self._ends = array.array("I")


class ArraySpool:
    """Rows of an array (``columns`` numbers of one ``dtype`` each) appended in parts and
    taken back by their numbers, kept as ``RowSpool``'s rows are: the block being filled in
    memory, whole blocks in an unnamed temporary file. A row's place is its number times
    its size, so nothing is held a block. For what the driver keeps of each run of passages
    (where it is in its file's bytes) and reads back for the few it reports."""

    block_bytes: ClassVar[int] = 1 << 16

    def __init__(self, dtype: npt.DTypeLike, columns: int) -> None:
        self._dtype = np.dtype(dtype)
        self._columns = columns
        self._row_bytes = self._dtype.itemsize * columns
        self._rows_a_block = max(1, self.block_bytes // self._row_bytes)
        self._count = 0
        self._pending = bytearray()  # the rows not written yet: less than a block
        self._scratch = _ScratchFile()
        self._heads = bytearray()  # each block's first row, for search: a row a block

    def append(self, rows: npt.NDArray[Any]) -> None:
        """``rows`` (of ``columns`` numbers each) after the others."""
        rows = np.ascontiguousarray(rows, dtype=self._dtype).reshape(-1, self._columns)
        each = self._rows_a_block
        self._heads += rows[-self._count % each :: each].tobytes()
        self._pending += rows.tobytes()
        self._count += len(rows)
        block = self._rows_a_block * self._row_bytes
        if len(self._pending) >= block:
            whole = len(self._pending) // block * block
            self._scratch.write(self._pending[:whole])
            del self._pending[:whole]

    def __len__(self) -> int:
        return self._count

    def take(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Rows ``rows`` (0 to len - 1), as an array of ``columns`` columns: each block
        they are in read once."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) and (rows.min() < 0 or rows.max() >= self._count):
            raise IndexError(f"rows {rows.min()} to {rows.max()} of {self._count}")
        taken = np.empty((len(rows), self._columns), dtype=self._dtype)
        for at, first, block in self._blocks_of(rows // self._rows_a_block):
            taken[at] = block[rows[at] - first]
        return taken

    def search(self, column: int, values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The last row whose number in ``column`` (ascending, row after row) is at most
        each of ``values``, -1 where none is: each block it is in read once."""
        values = np.asarray(values).reshape(-1)
        heads = np.frombuffer(self._heads, dtype=self._dtype).reshape(-1, self._columns)
        blocks = np.searchsorted(heads[:, column], values, side="right").astype(np.int64) - 1
        found = np.full(len(values), -1, dtype=np.int64)
        inside = np.flatnonzero(blocks >= 0)
        for at, first, block in self._blocks_of(blocks[inside]):
            at = inside[at]
            found[at] = first + np.searchsorted(block[:, column], values[at], side="right") - 1
        return found

    def _blocks_of(
        self, blocks: npt.NDArray[np.int64]
    ) -> Iterator[tuple[npt.NDArray[np.intp], int, npt.NDArray[Any]]]:
        """Each of the distinct ``blocks`` (block numbers), read once: where it is among
        them, its first row's number and its rows."""
        on_disk = self._scratch.size // self._row_bytes
        each = self._rows_a_block
        order = np.argsort(blocks, kind="stable")
        bounds = np.flatnonzero(np.diff(blocks[order], prepend=-1, append=-1))
        for low, high in itertools.pairwise(bounds.tolist()):
            at = order[low:high]
            first = int(blocks[at[0]]) * each
            if first >= on_disk:
                data, first = bytes(self._pending), on_disk
            else:
                data = self._scratch.read(each * self._row_bytes, first * self._row_bytes)
            yield at, first, np.frombuffer(data, dtype=self._dtype).reshape(-1, self._columns)

    def columns(self, *dtypes: npt.DTypeLike) -> list[npt.NDArray[Any]]:
        """Every row, as one array a column (of ``dtypes``, one a column, each wide enough
        for what was appended): each block read once into them, so that what is held is the
        columns and a block, not the rows whole and then their columns."""
        if len(dtypes) != self._columns:
            raise ValueError(f"{len(dtypes)} dtypes for {self._columns} columns")
        columns = [np.empty(self._count, dtype=dtype) for dtype in dtypes]
        for first, block in self.blocks():
            for column, values in zip(columns, block.T, strict=True):
                column[first : first + len(block)] = values
        return columns

    def blocks(self) -> Iterator[tuple[int, npt.NDArray[Any]]]:
        """Every row, a block at a time, in order: each block's first row's number and its
        rows (read-only), so that a sweep holds a block, not the rows whole."""
        on_disk = self._scratch.size // self._row_bytes
        for first in range(0, self._count, self._rows_a_block):
            if first >= on_disk:
                data = bytes(self._pending)
            else:
                size = min(self._rows_a_block, on_disk - first) * self._row_bytes
                data = self._scratch.read(size, first * self._row_bytes)
            yield first, np.frombuffer(data, dtype=self._dtype).reshape(-1, self._columns)

    def __reduce__(self) -> tuple[Any, ...]:
        # Another process cannot read this one's file: the rows themselves go.
        return (_array_spool_of, (self._dtype, self._columns, self.take(np.arange(self._count))))


def _array_spool_of(dtype: np.dtype[Any], columns: int, rows: npt.NDArray[Any]) -> ArraySpool:
    spool = ArraySpool(dtype, columns)
    spool.append(rows)
    return spool


class KeyParts:
    """Keys (64-bit numbers: a hash of each found file's real path), numbered as appended,
    kept in an unnamed temporary file in 256 parts by their top byte, to find those another
    key equals a part at a time. A crawl of a page a file finds millions of files: their
    keys held, and sorted together at the end, cost discovery's peak some 25 B a file
    (docs/performance.md, the fifty-sixth session). Held here: each part's block being
    filled (at most 4 KiB each) and the place of each block written (8 B a 256 keys)."""

    parts: ClassVar[int] = 256
    block_keys: ClassVar[int] = 256

    def __init__(self) -> None:
        self._count = 0
        self._filling = [array.array("q") for _part in range(self.parts)]  # key, number, ...
        self._places = [array.array("q") for _part in range(self.parts)]
        self._scratch = _ScratchFile()

    def append(self, key: int) -> None:
        part = (key >> 56) & (self.parts - 1)
        filling = self._filling[part]
        filling.append(key)
        filling.append(self._count)
        self._count += 1
        if len(filling) == 2 * self.block_keys:
            self._places[part].append(self._scratch.size)
            self._scratch.write(filling.tobytes())
            del filling[:]

    def __len__(self) -> int:
        return self._count

    def shared(self) -> npt.NDArray[np.int64]:
        """The numbers of the keys that another equals, in order."""
        block = 16 * self.block_keys
        found = []
        for places, filling in zip(self._places, self._filling, strict=True):
            data = b"".join(self._scratch.read(block, place) for place in places)
            pairs = np.frombuffer(data + filling.tobytes(), dtype=np.int64).reshape(-1, 2)
            order = np.argsort(pairs[:, 0], kind="stable")
            keys = pairs[order, 0]
            same = np.flatnonzero(keys[1:] == keys[:-1])
            found.append(pairs[order[np.union1d(same, same + 1)], 1])
        numbers: npt.NDArray[np.int64] = (
            np.sort(np.concatenate(found)) if found else np.array([], dtype=np.int64)
        )
        return numbers


class _ScratchFile:
    """An unnamed temporary file, written at its end and read anywhere, made on the first
    write; it is gone when the process ends, however it ends."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._writer = os.getpid()
        self.size = 0

    def write(self, data: bytes | bytearray) -> None:
        try:
            if self._file is None or self._writer != os.getpid():
                self._open_own_file()
            assert self._file is not None
            _write_all(self._file.fileno(), data, self.size)
        except OSError as error:
            full = error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            hint = (
                "free some space there, or set TMPDIR to a folder with room"
                if full
                else "set TMPDIR to a folder you can write to"
            )
            raise ScratchSpaceError(
                f"cannot write the scan's table of its files to {tempfile.gettempdir()} "
                f"({error.strerror or error}); {hint} (it takes some 200 bytes a file scanned)"
            ) from error
        self.size += len(data)

    def read(self, size: int, place: int) -> bytes:
        assert self._file is not None  # written before
        return _read_all(self._file.fileno(), size, place)

    def _open_own_file(self) -> None:
        """A file of this process's own: a forked copy that appends must not write over what
        its parent writes after the fork in the file they share."""
        written = self._file
        self._file = tempfile.TemporaryFile(prefix="dedup-rows-")  # noqa: SIM115  # as long as self
        weakref.finalize(self, self._file.close)
        self._writer = os.getpid()
        if written is not None:
            _write_all(self._file.fileno(), _read_all(written.fileno(), self.size, 0), 0)


def _write_all(descriptor: int, data: bytes | bytearray, place: int) -> None:
    view = memoryview(data)
    while view:
        written = os.pwrite(descriptor, view, place)
        view, place = view[written:], place + written


def _read_all(descriptor: int, size: int, place: int) -> bytes:
    parts = []
    while size > 0:
        part = os.pread(descriptor, size, place)
        if not part:
            raise OSError(f"the scan's temporary table ended {size} bytes early")
        parts.append(part)
        size, place = size - len(part), place + len(part)
    return b"".join(parts)
