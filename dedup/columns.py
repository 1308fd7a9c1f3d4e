"""Column tables of the scan's stages: many records of one kind held as numpy columns (a
number a field a row) rather than as objects, which cost seconds by the million to make, to
send between processes and to read back. Row ``i`` of a table is the record ``table[i]``;
``rows`` makes the records of many rows in one go, ``take`` a smaller table of them. Their
base, ``ColumnTable``, is in dedup.models, with the tables a report holds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dedup.arrays import Firsts, concatenated, objects, runs_of
from dedup.models import (
    ColumnTable,
    CutPassage,
    DocumentKey,
    MatchedDocument,
    PackedPaths,
    PassageSpan,
    made_in_bulk,
)
from dedup.spool import ArraySpool, RowSpool


class HeldSpanEnds(Protocol):
    """The start and end of each row of a span table where the workers that made them keep
    them (a Dask cluster's), not in this process: looked up a few rows at a time."""

    def __len__(self) -> int: ...

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The start and the end of each of ``rows``."""
        ...

    def let_go(self) -> None:
        """The workers let the starts and ends go."""
        ...


@dataclass(frozen=True, slots=True)
class CountedRows:
    """Rows counted here whose start and end are kept elsewhere: a file's spans as a
    cluster's worker hands them back (dedup.engine.tasks.without_kept), until this process
    knows where the workers keep them."""

    count: int

    def __len__(self) -> int:
        return self.count

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        raise LookupError("these spans' starts and ends are kept by the workers")

    def let_go(self) -> None:
        pass


_NO_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True, slots=True, eq=False)
class Strings:
    """Strings, or None in their place, held as one: string ``i`` is
    ``joined[bounds[i]:bounds[i + 1]]``, None where ``absent[i]``. A Python string costs some
    50 bytes besides its characters, and a scan keeps a title a chapter and a record id a
    record of the whole dump, which a cluster's driver would otherwise hold as objects by the
    million (issue 21: the driver's memory), unpickled one by one from each file's result."""

    joined: str
    bounds: npt.NDArray[np.int64]
    absent: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, values: Sequence[str | None]) -> Strings:
        if all(value is None for value in values):
            return cls.none(len(values))
        sizes = np.fromiter((0 if v is None else len(v) for v in values), np.int64, len(values))
        bounds = np.zeros(len(values) + 1, dtype=np.int64)
        np.cumsum(sizes, out=bounds[1:])
        absent = np.fromiter((v is None for v in values), np.bool_, len(values))
        return cls("".join(v for v in values if v is not None), bounds, absent)

    @classmethod
    def none(cls, count: int) -> Strings:
        """``count`` Nones, held in a few bytes (read-only arrays of one value seen ``count``
        times): a dump whose records have no id of their own would otherwise keep a bound
        and a flag a record, of millions."""
        return cls(
            "",
            np.broadcast_to(np.zeros(1, dtype=np.int64), count + 1),
            np.broadcast_to(np.ones(1, dtype=np.bool_), count),
        )

    def __len__(self) -> int:
        return len(self.absent)

    def __getitem__(self, index: int) -> str | None:
        if self.absent[index]:
            return None
        return self.joined[self.bounds[index] : self.bounds[index + 1]]

    def values(self, indexes: npt.NDArray[np.int64] | None = None) -> list[str | None]:
        """The strings ``indexes`` (all of them without), as objects."""
        rows = range(len(self)) if indexes is None else indexes.tolist()
        joined, bounds, absent = self.joined, self.bounds.tolist(), self.absent.tolist()
        return [None if absent[i] else joined[bounds[i] : bounds[i + 1]] for i in rows]

    def take(self, indexes: npt.NDArray[np.int64]) -> Strings:
        return Strings.of(self.values(indexes))

    @classmethod
    def concatenate(cls, parts: Sequence[Strings | SpooledStrings]) -> Strings:
        """The strings of ``parts`` one after the other."""
        held = [part if isinstance(part, Strings) else Strings.of(part.values()) for part in parts]
        if not any(part.joined for part in held) and all(part.absent.all() for part in held):
            return cls.none(sum(len(part) for part in held))
        bounds = [np.zeros(1, dtype=np.int64)]
        chars = 0
        for part in held:
            bounds.append(part.bounds[1:] + chars)
            chars += int(part.bounds[-1])
        return cls(
            "".join(part.joined for part in held),
            np.concatenate(bounds),
            concatenated([part.absent for part in held], np.bool_),
        )


class SpooledStrings:
    """Strings, or None in their place, on disk a row each (``RowSpool``: a few bytes held a
    block of 64 KiB) and read by index as ``Strings`` are: the titles and the record ids of
    the driver's table of the scan (a dump of a record a page has a title and an id a
    record). Sent to another process, the strings themselves go (as ``Strings``)."""

    def __init__(self, rows: RowSpool) -> None:
        self._rows = rows

    @staticmethod
    def row_of(value: str | None) -> bytes:
        """``value`` as a row: empty for None, else a byte and its UTF-8 (surrogatepass: a
        title decoded from bytes that are not text comes back as it was)."""
        return b"" if value is None else b"s" + value.encode("utf-8", "surrogatepass")

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> str | None:
        return _string_in(self._rows[index])

    def values(self, indexes: npt.NDArray[np.int64] | None = None) -> list[str | None]:
        """The strings ``indexes`` (all of them without), as objects."""
        rows = range(len(self)) if indexes is None else indexes.tolist()
        return [_string_in(self._rows[row]) for row in rows]

    def take(self, indexes: npt.NDArray[np.int64]) -> Strings:
        return Strings.of(self.values(indexes))

    def __reduce__(self) -> tuple[Any, ...]:
        return (Strings.of, (self.values(),))


def _string_in(row: bytes) -> str | None:
    return row[1:].decode("utf-8", "surrogatepass") if row else None


def int32_column(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int32]:
    """``values`` (indexes into a table's names, documents or titles, chapter numbers) in
    four bytes each: a table of a dump's passages holds some a run or a document, millions
    of them on the driver. Past 2**31, an error rather than numbers wrapped round."""
    column = values.astype(np.int32)
    if not np.array_equal(column, values):
        raise OverflowError("a table of passages past 2**31 names, documents, chapters or titles")
    return column


class ScanNames(PackedPaths):
    """The names of a scan's documents (their sources and paths), each once, numbered as the
    files come: the driver's document keys of all the files share them, where a table a file
    would hold a string of its path (some 190 bytes a file of a crawl of a page a file,
    issue 21), and joined tables need not number them again. Paths are held packed
    (``PackedPaths``); a path is looked for among its own file's only, since no other file
    has it, and the other names (sources: few) among all."""

    def __init__(self) -> None:
        super().__init__()
        self._others: dict[str, int] = {}
        self._file = -1
        self._file_paths: dict[str, int] = {}  # file _file's

    def numbers(
        self,
        names: Sequence[str],
        used_as_path: npt.NDArray[np.bool_],
        file: int | npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        """The number here of each of ``names``, a table's of file ``file`` (or tables' of
        files in order, ``file`` the file of each name; those ``used_as_path`` its
        documents' paths)."""
        files = np.broadcast_to(np.asarray(file, dtype=np.int64), len(names)).tolist()
        numbers = np.empty(len(names), dtype=np.int64)
        for row, (name, is_path, of) in enumerate(
            zip(names, used_as_path.tolist(), files, strict=True)
        ):
            if of != self._file:
                self._file, self._file_paths = of, {}
            known = self._file_paths if is_path else self._others
            number = known.get(name)
            if number is None:
                number = known[name] = self.append(name)
            numbers[row] = number
        return numbers


class NumberColumn:
    """A column of numbers of eight bytes (documents' records: a file's may pass 32 bits),
    read by row: held in memory in a table a worker makes (:class:`HeldNumbers`), kept on
    disk in the driver's keys of a whole scan (:class:`SpooledNumbers`), where a JSON Lines
    crawl of a record a page has one a page (issue 21). Sent to another process, the column
    itself goes."""

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The numbers of ``rows``."""
        raise NotImplementedError

    def column(self) -> npt.NDArray[np.int64]:
        """Every row's number, as one column."""
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:
        return (HeldNumbers, (self.column(),))


class HeldNumbers(NumberColumn):
    """The numbers held in memory."""

    __slots__ = ("_values",)

    def __init__(self, values: npt.NDArray[np.int64]) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        taken: npt.NDArray[np.int64] = self._values[rows]
        return taken

    def column(self) -> npt.NDArray[np.int64]:
        return self._values


class SpooledNumbers(NumberColumn):
    """The numbers kept on disk, as column ``at`` of the rows of ``spool`` (an
    ``ArraySpool`` of eight-byte numbers)."""

    __slots__ = ("_at", "_spool")

    def __init__(self, spool: ArraySpool, at: int) -> None:
        self._spool, self._at = spool, at

    def __len__(self) -> int:
        return len(self._spool)

    def of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return np.ascontiguousarray(self._spool.take(rows)[:, self._at], dtype=np.int64)

    def column(self) -> npt.NDArray[np.int64]:
        column = np.empty(len(self), dtype=np.int64)
        _fill_from_blocks(column, self._spool, self._at)
        return column


def _fill_from_blocks(column: npt.NDArray[Any], spool: ArraySpool, at: int) -> None:
    """``column`` (of a row of ``spool`` each) filled with column ``at`` of its rows, a
    block read at a time."""
    for first, block in spool.blocks():
        column[first : first + len(block)] = block[:, at]


@dataclass(frozen=True, slots=True, eq=False)
class DocumentKeys:
    """The keys of many documents (their source, path, record and record id: a
    :data:`~dedup.models.DocumentKey` each) as columns: a document's source and path are
    indexes into ``names`` (a file's path, and the few sources, are shared by its records;
    the driver's tables of a scan share one ``ScanNames``), its record a number (-1: none),
    its record id one of ``record_ids``. A tuple a record costs some 150 bytes, and a dump
    of a page a record has millions (issue 21)."""

    names: Sequence[str]
    # Each document's source and path (four bytes each, int32_column), and its record:
    # on disk in the driver's keys of a whole scan.
    places: IndexColumns
    records: NumberColumn
    record_ids: Strings | SpooledStrings  # on disk in the driver's keys of a whole scan

    @classmethod
    def of(cls, keys: Sequence[DocumentKey]) -> DocumentKeys:
        names: dict[str, int] = {}
        columns = np.array(
            [
                (
                    names.setdefault(source, len(names)),
                    names.setdefault(path, len(names)),
                    -1 if record is None else record,
                )
                for source, path, record, _record_id in keys
            ],
            dtype=np.int64,
        ).reshape(-1, 3)
        return cls(
            tuple(names),
            HeldColumns(int32_column(columns[:, 0]), int32_column(columns[:, 1])),
            HeldNumbers(record_column(columns[:, 2].copy())),
            Strings.of([record_id for _source, _path, _record, record_id in keys]),
        )

    @property
    def source(self) -> npt.NDArray[np.int32]:
        """Each document's source (an index into ``names``): the whole column."""
        return self.places.columns()[0]

    @property
    def path(self) -> npt.NDArray[np.int32]:
        """Each document's path (an index into ``names``): the whole column."""
        return self.places.columns()[1]

    @property
    def record(self) -> npt.NDArray[np.int64]:
        """Each document's record (-1: none): the whole column."""
        return self.records.column()

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> DocumentKey:
        return self.columns(np.array([range(len(self))[index]], dtype=np.int64))[0]

    def __iter__(self) -> Iterator[DocumentKey]:
        return iter(self.columns())

    def columns(self, indexes: npt.NDArray[np.int64] | None = None) -> list[DocumentKey]:
        """The keys ``indexes`` (all of them without), made in one go."""
        sources, paths = self.places.columns() if indexes is None else self.places.of(indexes)
        records = self.records.column() if indexes is None else self.records.of(indexes)
        names = self.names
        return [
            (names[source], names[path], None if record < 0 else record, record_id)
            for source, path, record, record_id in zip(
                sources.tolist(),
                paths.tolist(),
                records.tolist(),
                self.record_ids.values(indexes),
                strict=True,
            )
        ]

    def take(self, indexes: npt.NDArray[np.int64]) -> DocumentKeys:
        """The keys ``indexes``, holding only the names they use (a table taken is sent to
        the workers, and a scan's names are those of all its files)."""
        source, path = self.places.of(indexes)
        used, inverse = np.unique(np.concatenate((source, path)), return_inverse=True)
        names = self.names
        renumbered = int32_column(inverse.reshape(-1).astype(np.int64))
        return DocumentKeys(
            tuple(names[name] for name in used.tolist()),
            HeldColumns(renumbered[: len(source)], renumbered[len(source) :]),
            HeldNumbers(record_column(self.records.of(indexes))),
            self.record_ids.take(indexes),
        )

    def texts(self) -> npt.NDArray[np.int64]:
        """A number for each document, equal for the documents of one text (a path's
        record)."""
        return _numbered(self.path, self.record)

    def named_in(self, names: ScanNames, file: int | npt.NDArray[np.int64]) -> DocumentKeys:
        """The keys with ``names`` for their own, their names numbered there (``file``: the
        number of the file they are of, or of the file of each name: ScanNames.numbers)."""
        source, path = self.places.columns()
        used_as_path = np.zeros(len(self.names), dtype=np.bool_)
        used_as_path[path] = True
        numbers = names.numbers(self.names, used_as_path, file)
        return replace(
            self,
            names=names,
            places=HeldColumns(int32_column(numbers[source]), int32_column(numbers[path])),
            records=HeldNumbers(record_column(self.record)),  # held whole again when unpickled
        )

    @classmethod
    def concatenate(
        cls, parts: Sequence[DocumentKeys]
    ) -> tuple[DocumentKeys, list[npt.NDArray[np.int64]]]:
        """The keys of ``parts`` one after the other, each once (a document that goes on from
        one part into the next, a large file's pieces, is one), with where each part's keys
        are in them."""
        shared_names = parts[0].names if parts else ()
        if all(part.names is shared_names for part in parts):
            # numbered alike already (the driver's tables of a scan, in one ScanNames)
            names: Sequence[str] = shared_names
            source = concatenated([part.source for part in parts], np.int32)
            paths = [part.path for part in parts]
        else:
            numbers: dict[str, int] = {}
            sources, paths = [], []
            for part in parts:
                renumbered = int32_column(
                    np.array(
                        [numbers.setdefault(name, len(numbers)) for name in part.names],
                        dtype=np.int64,
                    )
                )
                sources.append(renumbered[part.source])
                paths.append(renumbered[part.path])
            names = tuple(numbers)
            source = concatenated(sources, np.int32)
        path = concatenated(paths, np.int32)
        if all(_no_records(part.record) for part in parts):
            record = none_records(sum(len(part.record) for part in parts))
        else:
            record = concatenated([part.record for part in parts], np.int64)
        record_ids = Strings.concatenate([part.record_ids for part in parts])
        bounds = np.cumsum([0] + [len(part) for part in parts]).tolist()
        # A part holds each of its documents once, so only a document of a file that more
        # than one part holds (a large file's pieces or slices) can be in two; each is one
        # whatever record id it is given (one made from its record), in the order first seen.
        held, holders = np.unique(
            concatenated([np.unique(rows) for rows in paths], np.int32), return_counts=True
        )
        shared = np.flatnonzero(np.isin(path, held[holders > 1]))
        if not len(shared):  # the usual join: every document in one part
            return cls(names, HeldColumns(source, path), HeldNumbers(record), record_ids), [
                np.arange(low, high, dtype=np.int64) for low, high in pairwise(bounds)
            ]
        first_of = np.arange(len(path), dtype=np.int64)
        _keys, first, inverse = np.unique(
            _numbered(path[shared].astype(np.int64) * len(names) + source[shared], record[shared]),
            return_index=True,
            return_inverse=True,
        )
        first_of[shared] = shared[first][inverse.reshape(-1)]
        kept = first_of == np.arange(len(path))
        place = np.cumsum(kept) - 1
        joined = cls(
            names,
            HeldColumns(source[kept], path[kept]),
            HeldNumbers(record_column(record[kept])),
            record_ids if kept.all() else record_ids.take(np.flatnonzero(kept)),
        )
        at = place[first_of]
        return joined, [at[low:high] for low, high in pairwise(bounds)]


def record_column(records: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Documents' records, or where none is a record (-1 each: a dump of text files, a
    document a file or chapter) one -1 seen as many times, held in a few bytes rather than
    eight a document (issue 21: a crawl of a page a file has millions). Read-only then."""
    if len(records) and not _no_records(records) and (records == -1).all():
        return none_records(len(records))
    return records


def _no_records(records: npt.NDArray[np.int64]) -> bool:
    return not len(records) or (records.strides == (0,) and int(records[0]) == -1)


def none_records(count: int) -> npt.NDArray[np.int64]:
    """The records of ``count`` documents none of which is a record, in a few bytes."""
    return np.broadcast_to(np.full(1, -1, dtype=np.int64), count)


def _numbered(
    file: npt.NDArray[np.int32] | npt.NDArray[np.int64], record: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """A number for each (file, record), equal where both are: sorting one number is an
    order of magnitude faster than sorting rows (a large JSON Lines file's slices joined
    hold millions of records of one path; a dump of a record a page, millions of paths)."""
    _files, dense = np.unique(file, return_inverse=True)
    shifted = record + 1  # -1 (no record) is 0
    if len(shifted) and int(shifted.max()) >= 1 << 32:
        _pairs, row = np.unique(np.stack((file, record), axis=1), axis=0, return_inverse=True)
        return np.asarray(row.reshape(-1), dtype=np.int64)
    return np.asarray((dense.reshape(-1) << 32) | shifted, dtype=np.int64)


# Some rows' numbers, a column each (IndexColumns.of).
Numbers = tuple[npt.NDArray[np.int64], ...]


class IndexColumns:
    """A few columns of numbers of four bytes (indexes into a table's names, documents or
    titles, and chapter numbers), read by row: held in memory in a table a worker makes
    (:class:`HeldColumns`), kept on disk in the driver's tables of a whole scan
    (:class:`SpooledColumns`), where they are a row or two a file, and a crawl of a page a
    file has millions of files (issue 21). Sent to another process, the columns themselves
    go."""

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def of(self, rows: npt.NDArray[np.int64]) -> Numbers:
        """The numbers of ``rows``, a column each."""
        raise NotImplementedError

    def columns(self) -> tuple[npt.NDArray[np.int32], ...]:
        """Every row's numbers, as whole columns."""
        raise NotImplementedError

    def blocks(self) -> Iterator[tuple[int, tuple[npt.NDArray[Any], ...]]]:
        """Every row's numbers, some rows at a time, in order: each block's first row and
        its columns."""
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:
        return (HeldColumns, self.columns())


class HeldColumns(IndexColumns):
    """Columns held in memory."""

    __slots__ = ("_columns",)

    def __init__(self, *columns: npt.NDArray[np.int32]) -> None:
        self._columns = columns

    def __len__(self) -> int:
        return len(self._columns[0])

    def of(self, rows: npt.NDArray[np.int64]) -> Numbers:
        return tuple(column[rows].astype(np.int64) for column in self._columns)

    def columns(self) -> tuple[npt.NDArray[np.int32], ...]:
        return self._columns

    def blocks(self) -> Iterator[tuple[int, tuple[npt.NDArray[Any], ...]]]:
        yield 0, self._columns


class SpooledColumns(IndexColumns):
    """Columns kept on disk, as columns ``at`` to ``at + count - 1`` of the rows of
    ``spool`` (an ``ArraySpool``): read back a block at a time, the rows :meth:`of` names
    or all of them in turn (:meth:`blocks`)."""

    __slots__ = ("_at", "_spool", "_stop")

    def __init__(self, spool: ArraySpool, at: int, count: int) -> None:
        self._spool, self._at, self._stop = spool, at, at + count

    def __len__(self) -> int:
        return len(self._spool)

    def of(self, rows: npt.NDArray[np.int64]) -> Numbers:
        taken = self._spool.take(rows)
        return tuple(taken[:, at].astype(np.int64) for at in range(self._at, self._stop))

    def columns(self) -> tuple[npt.NDArray[np.int32], ...]:
        columns = tuple(np.empty(len(self), dtype=np.int32) for _ in range(self._at, self._stop))
        for first, block in self.blocks():
            for column, values in zip(columns, block, strict=True):
                column[first : first + len(values)] = values
        return columns

    def blocks(self) -> Iterator[tuple[int, tuple[npt.NDArray[Any], ...]]]:
        for first, rows in self._spool.blocks():
            yield first, tuple(rows[:, at] for at in range(self._at, self._stop))


class RunFirsts:
    """Each run's first row, ascending (a table's runs of rows: :class:`SpanTable`): held in
    memory in a table a worker makes (:class:`HeldFirsts`), kept on disk in the driver's
    table of a whole scan (:class:`SpooledFirsts`), where they are a run or two a file
    (issue 21). Sent to another process, the column itself goes."""

    __slots__ = ()

    def __len__(self) -> int:
        raise NotImplementedError

    def runs_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The run each of ``rows`` is in."""
        raise NotImplementedError

    def between(self, first: int, stop: int) -> Firsts:
        """The first rows of runs ``first`` to ``stop - 1``."""
        raise NotImplementedError

    def column(self) -> Firsts:
        """Every run's first row, as one column (four bytes each while the rows fit)."""
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:
        return (HeldFirsts, (self.column(),))


class HeldFirsts(RunFirsts):
    """The first rows held in memory."""

    __slots__ = ("_firsts",)

    def __init__(self, firsts: Firsts) -> None:
        self._firsts = firsts

    def __len__(self) -> int:
        return len(self._firsts)

    def runs_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return runs_of(self._firsts, rows)

    def between(self, first: int, stop: int) -> Firsts:
        return self._firsts[first:stop]

    def column(self) -> Firsts:
        return self._firsts


class SpooledFirsts(RunFirsts):
    """The first rows kept on disk, as column ``at`` of the rows of ``spool`` (an
    ``ArraySpool``), searched a block at a time (``ArraySpool.search``); ``rows`` is the
    table's count of rows, which the column's values are less than."""

    __slots__ = ("_at", "_rows", "_spool")

    def __init__(self, spool: ArraySpool, at: int, rows: int) -> None:
        self._spool, self._at, self._rows = spool, at, rows

    def __len__(self) -> int:
        return len(self._spool)

    def runs_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return self._spool.search(self._at, rows)

    def between(self, first: int, stop: int) -> Firsts:
        taken = self._spool.take(np.arange(first, min(stop, len(self)), dtype=np.int64))
        return self._narrow(taken[:, self._at])

    def column(self) -> Firsts:
        column: Firsts = (
            np.empty(len(self), np.int32) if self._rows < 2**31 else np.empty(len(self), np.int64)
        )
        _fill_from_blocks(column, self._spool, self._at)
        return column

    def _narrow(self, values: npt.NDArray[np.int64]) -> Firsts:
        return values.astype(np.int32) if self._rows < 2**31 else values


@dataclass(frozen=True, slots=True, eq=False)
class SpanTable(ColumnTable[PassageSpan]):
    """The spans of many passages as columns: what workers hand back and what a scan keeps for
    every passage of a dump (numbers rather than objects, which cost less to send between
    processes, to hold, and to compare in bulk). Row ``i`` is the :class:`PassageSpan`
    ``table[i]``.

    A passage's start and end are a row's own; its document, chapter and title are held once
    for each run of rows that share them (a chapter's passages, dozens), so that what a scan
    keeps of every passage of a dump is two numbers (issue 21: the driver's memory). On a
    cluster the workers keep those two (``held``; ``start`` and ``end`` are then empty), and
    :meth:`ends_of` looks up the rows a stage needs."""

    documents: DocumentKeys
    titles: Strings | SpooledStrings  # on disk in the driver's table of the scan
    # Run r is the rows run_first[r]:run_first[r + 1] (the last to the table's end); none
    # is empty, the first starts at row 0.
    run_first: RunFirsts
    # Each run's document (an index into documents), chapter (-1 where the run is in no
    # numbered chapter) and title (an index into titles): a dump of a record a page has a
    # run or two a record, and the driver's table of the scan keeps them on disk.
    labels: IndexColumns
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    held: HeldSpanEnds | None = None

    def __len__(self) -> int:
        return len(self.start) if self.held is None else len(self.held)

    @property
    def run_document(self) -> npt.NDArray[np.int32]:
        """Each run's document (an index into ``documents``): the whole column."""
        return self.labels.columns()[0]

    @property
    def run_chapter(self) -> npt.NDArray[np.int32]:
        """Each run's chapter, -1 where it is in no numbered chapter: the whole column."""
        return self.labels.columns()[1]

    @property
    def run_title(self) -> npt.NDArray[np.int32]:
        """Each run's title (an index into ``titles``): the whole column."""
        return self.labels.columns()[2]

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The start and the end of each of ``rows``."""
        if self.held is None:
            return self.start[rows], self.end[rows]
        return self.held.ends_of(rows)

    def without_ends(self) -> SpanTable:
        """The table with its rows' starts and ends left to the workers that keep them
        (counted, not held)."""
        return replace(self, start=_NO_ROWS, end=_NO_ROWS, held=CountedRows(len(self)))

    def ends_held_by(self, held: HeldSpanEnds) -> SpanTable:
        """The table of :meth:`without_ends` rows, their starts and ends found in ``held``."""
        if len(held) != len(self):
            raise ValueError(f"{len(held)} spans held for a table of {len(self)}")
        return replace(self, held=held)

    @classmethod
    def in_runs(
        cls,
        documents: DocumentKeys,
        titles: Strings,
        document: npt.NDArray[np.int64],
        chapter: npt.NDArray[np.int64],
        title: npt.NDArray[np.int64],
        start: npt.NDArray[np.int64],
        end: npt.NDArray[np.int64],
    ) -> SpanTable:
        """The table of rows whose ``document``, ``chapter`` and ``title`` are given a row
        each, held by runs."""
        changed = np.ones(len(start), dtype=np.bool_)
        changed[1:] = (
            (document[1:] != document[:-1])
            | (chapter[1:] != chapter[:-1])
            | (title[1:] != title[:-1])
        )
        first = np.flatnonzero(changed).astype(np.int64)
        return cls(
            documents,
            titles,
            HeldFirsts(first),
            HeldColumns(
                int32_column(document[first]),
                int32_column(chapter[first]),
                int32_column(title[first]),
            ),
            start,
            end,
        )

    @classmethod
    def of(cls, spans: Sequence[PassageSpan]) -> SpanTable:
        """The table of ``spans``."""
        documents: dict[DocumentKey, int] = {}
        titles: dict[str | None, int] = {}
        columns = np.array(
            [
                (
                    documents.setdefault(
                        (span.source, span.path, span.record, span.record_id), len(documents)
                    ),
                    -1 if span.chapter is None else span.chapter,
                    titles.setdefault(span.title, len(titles)),
                    span.start,
                    span.end,
                )
                for span in spans
            ],
            dtype=np.int64,
        ).reshape(-1, 5)
        return cls.in_runs(
            DocumentKeys.of(tuple(documents)),
            Strings.of(tuple(titles)),
            *(columns[:, i].copy() for i in range(5)),
        )

    @classmethod
    def concatenate(cls, tables: Sequence[SpanTable]) -> SpanTable:
        """The rows of ``tables`` one after the other (documents and titles shared; a run
        never goes on from one table into the next): of tables whose starts and ends are
        counted only (:meth:`without_ends`), a table of the same."""
        documents, document_index = DocumentKeys.concatenate([t.documents for t in tables])
        # A chapter's title once a table: titles are a chapter's, far fewer than the rows.
        titles: dict[str | None, int] = {}
        document_runs, title_runs, firsts = [], [], []
        rows = 0
        chapter_runs = []
        for table, in_documents in zip(tables, document_index, strict=True):
            title_index = [titles.setdefault(t, len(titles)) for t in table.titles.values()]
            document, chapter, title = table.labels.columns()
            document_runs.append(int32_column(in_documents[document]))
            chapter_runs.append(chapter)
            title_runs.append(int32_column(np.array(title_index, dtype=np.int64)[title]))
            firsts.append(table.run_first.column().astype(np.int64) + rows)
            rows += len(table)
        counted = [table.held is not None for table in tables if len(table)]
        if any(counted) and not all(counted):
            raise ValueError("tables with their starts and ends joined to tables without")
        return cls(
            documents,
            Strings.of(tuple(titles)),
            HeldFirsts(concatenated(firsts, np.int64)),
            HeldColumns(
                concatenated(document_runs, np.int32),
                concatenated(chapter_runs, np.int32),
                concatenated(title_runs, np.int32),
            ),
            concatenated([table.start for table in tables], np.int64),
            concatenated([table.end for table in tables], np.int64),
            CountedRows(rows) if any(counted) else None,
        )

    def run_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The run of each of ``rows``."""
        return self.run_first.runs_of(rows)

    def document_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The document (an index into ``documents``) of each of ``rows``."""
        return self.labels.of(self.run_of(rows))[0]

    def row_documents(self) -> npt.NDArray[np.int64]:
        """The document of every row, for looking up more rows than the table holds (the
        candidate pairs' ends: a gather costs a fifth of a search there)."""
        return np.repeat(self.run_document.astype(np.int64), self.run_sizes())

    def run_sizes(self) -> npt.NDArray[np.int64]:
        """The rows of each run."""
        return np.diff(np.append(self.run_first.column().astype(np.int64), len(self)))

    def rows(self, rows: npt.NDArray[np.int64]) -> list[PassageSpan]:
        """The spans of ``rows``, made in one go (faster than one ``table[i]`` at a time)."""
        return [
            PassageSpan(source, path, record, chapter, title, start, end, record_id)
            for (source, path, record, record_id), chapter, title, start, end in self._columns(rows)
        ]

    def passages(
        self, rows: npt.NDArray[np.int64], documents: Sequence[MatchedDocument]
    ) -> list[CutPassage]:
        """The passages of ``rows``, each with the document holding it, which its text is cut
        from (made column by column)."""
        columns = {
            **self.row_fields(rows, ids=False),  # a CutPassage makes its id when asked
            "document": [document.id for document in documents],
            "holder": documents,
        }
        return made_in_bulk(CutPassage, *(columns[name] for name in CutPassage.SLOTS))

    def row_fields(self, rows: npt.NDArray[np.int64], ids: bool = True) -> dict[str, list[Any]]:
        """The fields the passages of ``rows`` have, but their texts (and their ids, unless
        ``ids``), as columns: Passage field name -> one value per row."""
        # the documents and titles of these rows alone, each made once
        named, document, titled, title, chapters = self._used_by(self.run_of(rows))

        def per_row(values: Sequence[Any]) -> list[Any]:
            taken: list[Any] = objects(values)[document].tolist()
            return taken

        sources, paths, records, record_ids = (
            zip(*self.documents.columns(named), strict=True) if len(named) else ((), (), (), ())
        )
        starts, ends = (ends.tolist() for ends in self.ends_of(rows))
        chapters = chapters.tolist()
        fields: dict[str, list[Any]] = {}
        if ids:
            where = [
                path if record is None else f"{path}#{record}"
                for path, record in zip(paths, records, strict=True)
            ]
            fields["id"] = list(map("{}:{}-{}".format, per_row(where), starts, ends))
        return fields | {
            "source": per_row(sources),
            "path": per_row(paths),
            "record": per_row(records),
            "chapter": list(map({-1: None}.get, chapters, chapters)),  # -1: no numbered chapter
            "title": objects(self.titles.values(titled))[title].tolist(),
            "start": starts,
            "end": ends,
            "record_id": per_row(record_ids),
        }

    def take(self, rows: npt.NDArray[np.int64]) -> SpanTable:
        """A table of ``rows`` alone, holding only the documents and titles they use (small to
        send to a worker)."""
        documents, document, titles, title, chapter = self._used_by(self.run_of(rows))
        start, end = self.ends_of(rows)
        return SpanTable.in_runs(
            self.documents.take(documents),
            self.titles.take(titles),
            document,
            chapter,
            title,
            start,
            end,
        )

    def _used_by(
        self, run: npt.NDArray[np.int64]
    ) -> tuple[
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
        npt.NDArray[np.int64],
    ]:
        """The documents and the titles of the runs ``run`` names, each once (as indexes, in
        order), where each of ``run`` finds its document and its title among them, and the
        chapter of each."""
        documents, chapter, titles = self.labels.of(run)
        named, document = np.unique(documents, return_inverse=True)
        titled, title = np.unique(titles, return_inverse=True)
        return named, document.reshape(-1), titled, title.reshape(-1), chapter

    def _columns(
        self, rows: npt.NDArray[np.int64]
    ) -> Iterator[tuple[DocumentKey, int | None, str | None, int, int]]:
        named, document_of, titled, title_of, chapters = self._used_by(self.run_of(rows))
        documents, titles = self.documents.columns(named), self.titles.values(titled)
        starts, ends = self.ends_of(rows)
        for document, chapter, title, start, end in zip(
            document_of.tolist(),
            chapters.tolist(),
            title_of.tolist(),
            starts.tolist(),
            ends.tolist(),
            strict=True,
        ):
            yield documents[document], None if chapter < 0 else chapter, titles[title], start, end


@dataclass(frozen=True, slots=True)
class Similarity:
    first: int
    second: int
    jaccard: float
    containment: float
    minhash_jaccard: float
    identical_chars: int


@dataclass(frozen=True, slots=True, eq=False)
class SimilarityTable(ColumnTable[Similarity]):
    """Verified pairs as columns: a dump in which every scene has copies has about one pair per
    passage, and a million objects cost seconds to make and to read back."""

    first: npt.NDArray[np.int64]
    second: npt.NDArray[np.int64]
    jaccard: npt.NDArray[np.float64]
    containment: npt.NDArray[np.float64]
    minhash_jaccard: npt.NDArray[np.float64]
    identical_chars: npt.NDArray[np.int64]

    @classmethod
    def of(cls, pairs: Sequence[Similarity]) -> SimilarityTable:
        if isinstance(pairs, SimilarityTable):
            return pairs
        rows = [
            (p.first, p.second, p.jaccard, p.containment, p.minhash_jaccard, p.identical_chars)
            for p in pairs
        ]
        columns = list(zip(*rows, strict=True)) if rows else [()] * 6
        return cls(
            np.array(columns[0], dtype=np.int64),
            np.array(columns[1], dtype=np.int64),
            np.array(columns[2], dtype=np.float64),
            np.array(columns[3], dtype=np.float64),
            np.array(columns[4], dtype=np.float64),
            np.array(columns[5], dtype=np.int64),
        )

    @classmethod
    def concatenate(cls, tables: Sequence[SimilarityTable]) -> SimilarityTable:
        return cls(*(np.concatenate([getattr(t, name) for t in tables]) for name in _COLUMNS))

    def where(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.int64]) -> SimilarityTable:
        return SimilarityTable(*(getattr(self, name)[rows] for name in _COLUMNS))

    def __len__(self) -> int:
        return len(self.first)

    def take(self, rows: npt.NDArray[np.int64]) -> SimilarityTable:
        return self.where(rows)

    def rows(self, rows: npt.NDArray[np.int64]) -> list[Similarity]:
        columns = (getattr(self, name)[rows].tolist() for name in _COLUMNS)
        return [Similarity(*row) for row in zip(*columns, strict=True)]


_COLUMNS = ("first", "second", "jaccard", "containment", "minhash_jaccard", "identical_chars")
