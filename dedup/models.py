"""Typed records passed between the pipeline stages.

Every passage keeps where it came from (file, record, chapter) and its character span in the
decoded text of that file or record, so every later stage can point back at what the user has.
"""

from __future__ import annotations

import array
import functools
import hashlib
import io
import itertools
import json
import operator
import struct
from abc import abstractmethod
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from itertools import repeat
from typing import Any, ClassVar, Generic, Literal, TextIO, TypeVar, overload

import numpy as np
import numpy.typing as npt

from dedup.spool import RowSpool

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Document:
    """One decoded text: a whole file, or one record of a multi-record file (JSONL)."""

    path: str
    source: str
    record: int | None
    text: str
    title: str | None = None  # a title given by the record itself (JSONL ``title`` field)
    record_id: str | None = None  # the record's own id (``--id-field``), for people to find it
    # A large file read as a stream comes in pieces: ``text`` starts at offset ``base`` of the
    # file's decoded text, and ``continued`` says it goes on from the previous piece.
    base: int = 0
    continued: bool = False


@dataclass(frozen=True, slots=True)
class Chapter:
    """A chapter of a document: ``text[start:end]``, its heading line included.

    ``body_start`` is where the text after the heading line begins; passages are cut from
    ``text[body_start:end]`` so that sites titling the same chapter differently still match.
    """

    index: int | None
    title: str | None
    start: int
    body_start: int
    end: int


@dataclass(frozen=True, slots=True)
class PassageSpan:
    """Where a passage is, without its text: what a scan keeps for every passage (a dump has
    millions; only the passages that end up in a cluster need their text, read back at the end).
    ``id`` and ``sort_key`` are those of the :class:`Passage` it becomes."""

    source: str
    path: str
    record: int | None
    chapter: int | None
    title: str | None
    start: int
    end: int
    record_id: str | None = None

    @property
    def id(self) -> str:
        return passage_id(self.path, self.record, self.start, self.end)

    @property
    def sort_key(self) -> tuple[str, int, int, int]:
        return reading_order(self.path, self.record, self.start, self.end)

    def as_document(self, story_chars: int, text: str) -> MatchedDocument:
        """This span as a matched document's (a document's span: its passages' from first to
        last)."""
        return MatchedDocument(
            id=self.id,
            source=self.source,
            path=self.path,
            record=self.record,
            record_id=self.record_id,
            chapter=self.chapter,
            title=self.title,
            start=self.start,
            end=self.end,
            story_chars=story_chars,
            text=text,
        )

    def with_text(self, text: str, document: str) -> Passage:
        return Passage(
            id=self.id,
            source=self.source,
            path=self.path,
            record=self.record,
            chapter=self.chapter,
            title=self.title,
            start=self.start,
            end=self.end,
            text=text,
            document=document,
            record_id=self.record_id,
        )


# What a span's document is: source, path, record, record id.
DocumentKey = tuple[str, str, int | None, str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage(PassageSpan):
    """A scene window: where it is (its PassageSpan's fields), its text, its id, and the id of
    the document (:class:`MatchedDocument`) that holds it, as members of a cluster are
    reported: ``text == document.text[start - document.start : end - document.start]``."""

    id: str  # passage_id(path, record, start, end), kept: reports read back keep theirs
    text: str
    document: str

    def to_dict(self, text: MemberText = "none") -> dict[str, Any]:
        """The member as reports write it: its id, source, document and span (its document
        has the rest of where it is, and its text, once); in report.json without its text,
        in clusters.jsonl with an excerpt or, asked for, the whole text."""
        data = {
            "id": self.id,
            "source": self.source,
            "document": self.document,
            "start": self.start,
            "end": self.end,
        }
        if text == "excerpt":
            data["excerpt"] = self.excerpt
        elif text == "full":
            data["text"] = self.text
        return data

    @property
    def excerpt(self) -> str:
        """Its first EXCERPT_CHARS characters."""
        return self.text[:EXCERPT_CHARS]


def members_json(members: Sequence[Passage], text: MemberText = "none") -> str:
    """``json.dumps([m.to_dict(text) for m in members], ensure_ascii=False,
    separators=COMPACT)``, as clusters.jsonl has them, made without a dictionary a member (a
    large dump's members are hundreds of thousands): each string encoded by json's own C
    function (as ``ensure_ascii=False`` does), the rest formatted here."""
    quoted = json.encoder.encode_basestring
    heads = [
        f'{{"id":{quoted(m.id)},"source":{quoted(m.source)},"document":'
        f'{quoted(m.document)},"start":{m.start},"end":{m.end}'
        for m in members
    ]
    if text == "none":
        return "[" + ",".join([head + "}" for head in heads]) + "]"
    if text == "excerpt":
        texts = [f',"excerpt":{quoted(m.excerpt)}}}' for m in members]
    else:
        texts = [f',"text":{quoted(m.text)}}}' for m in members]
    return "[" + ",".join(map(operator.add, heads, texts)) + "]"


def members_placed_json(members: Sequence[Passage], documents: Mapping[str, int]) -> str:
    """The members as report.json has them: each its document's number (in ``documents``,
    the report's documents by id) and its span, ``{"document":N,"start":S,"end":E}``; the
    rest (its id, source, path, ...) is its document's."""
    placed = [
        f'{{"document":{documents[m.document]},"start":{m.start},"end":{m.end}}}' for m in members
    ]
    return "[" + ",".join(placed) + "]"


# report.json's format (docs/report-format.md): 5 since members, matches and groups name
# documents by their number in ``documents``, and clusters their members by number; 4 (the
# same, by ids) and 3 (documents always with their text) are read too.
REPORT_FORMAT = 5
READS_FORMATS = (3, 4, 5)
# How much of a member's text a report line carries: none (report.json, whose documents hold
# it), an excerpt (clusters.jsonl, clusters.csv), or all of it (with --full-text).
MemberText = Literal["none", "excerpt", "full"]
# An excerpt is a text's first characters: enough to recognise the scene in a table.
EXCERPT_CHARS = 80
# Reports' lines are JSON without the spaces after "," and ":" (json's default): a 1 GB
# mirror dump's report.json has millions of pairs and members (docs/performance.md).
COMPACT = (",", ":")


# The fields of a Passage, in order.
PASSAGE_FIELDS = tuple(field.name for field in fields(Passage))


class CutPassage(Passage):
    """A passage as a scan makes it for a cluster: equal to the :class:`Passage` with the same
    fields, its text among them, but that text is cut from its document's (``holder``) each
    time it is read rather than held beside it. A member's text is its document's, and a
    report holds both: on a 1 GB dump the members held a second copy of nearly all of its
    text (docs/performance.md). Its id is made from where it is when asked for, not held.
    Made by :func:`made_in_bulk`, one column per ``SLOTS``."""

    __slots__ = ("holder",)
    holder: MatchedDocument
    SLOTS: ClassVar[tuple[str, ...]] = (
        *(n for n in PASSAGE_FIELDS if n not in ("text", "id")),
        "holder",
    )

    @property
    def id(self) -> str:
        return passage_id(self.path, self.record, self.start, self.end)

    @property
    def text(self) -> str:
        holder = self.holder
        return holder.text[self.start - holder.start : self.end - holder.start]

    @property
    def excerpt(self) -> str:
        holder = self.holder
        start = self.start - holder.start
        return holder.text[start : start + min(EXCERPT_CHARS, self.end - self.start)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Passage):
            return NotImplemented
        return _field_values(self) == _field_values(other)

    __hash__ = Passage.__hash__

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the plain Passage it equals (its holder is not pickled with it)."""
        return (_passage_of, (_field_values(self),))


def _field_values(passage: Passage) -> tuple[Any, ...]:
    return tuple(getattr(passage, name) for name in PASSAGE_FIELDS)


def _passage_of(values: tuple[Any, ...]) -> Passage:
    return Passage(**dict(zip(PASSAGE_FIELDS, values, strict=True)))


# In a report a passage is a cluster "member"; the library uses both names for the same record.
Member = Passage


# A frozen dataclass's __init__ sets each field through object.__setattr__, which looks the
# field up by name, slowly. A scan makes passages and pairs by the million (all the members
# and pairs of its clusters), so they are made in bulk: the objects first, then each slot of
# all of them through the slot's own setter, mapped over a column (C calls, no Python call per
# object or field; docs/performance.md has the figures). The objects are the same (tested
# against the dataclass's __init__).
def made_in_bulk(cls: type[R], *columns: Sequence[Any]) -> list[R]:
    """``[cls(*row) for row in zip(*columns)]`` for a frozen, slotted dataclass, one value
    column per field, in the order of the fields (for a :class:`CutPassage`, of its
    ``SLOTS``)."""
    setters = _slot_setters(cls)
    if len(columns) != len(setters):
        raise TypeError(f"{cls.__name__} has {len(setters)} fields, not {len(columns)}")
    count = len(columns[0])
    if any(len(column) != count for column in columns):
        raise ValueError("columns of different lengths")
    made: list[R] = list(map(object.__new__, repeat(cls, count)))
    for setter, column in zip(setters, columns, strict=True):
        deque(map(setter, made, column), maxlen=0)
    return made


def _slot_setters(cls: type) -> tuple[Any, ...]:
    """Each field's slot setter, from the class that defines the slot (a base's, for the
    fields a subclass inherits)."""
    names = getattr(cls, "SLOTS", None) or [field.name for field in fields(cls)]
    return tuple(
        next(k.__dict__[name] for k in cls.__mro__ if name in k.__dict__).__set__ for name in names
    )


def reading_order(path: str, record: int | None, start: int, end: int) -> tuple[str, int, int, int]:
    """The sort key of a passage: by file, record and position (ids would sort offsets as
    strings)."""
    return (path, -1 if record is None else record, start, end)


def passage_id(path: str, record: int | None, start: int, end: int) -> str:
    """A stable, readable id: the file, the record if any, and the character span."""
    where = path if record is None else f"{path}#{record}"
    return f"{where}:{start}-{end}"


@dataclass(frozen=True, slots=True)
class InputFile:
    """One file that was read, with what came out of it."""

    path: str
    source: str
    format: str
    encoding: str
    records: int
    chapters: int
    passages: int
    warnings: tuple[str, ...] = ()
    normalization: dict[str, int] = field(default_factory=dict)
    # When records name their own source (--source-field): passages per source they name;
    # empty when every passage is the file's ``source``.
    passages_by_source: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "path": self.path,
            "source": self.source,
            "format": self.format,
            "encoding": self.encoding,
            "records": self.records,
            "chapters": self.chapters,
            "passages": self.passages,
            "normalization": self.normalization,
            "warnings": list(self.warnings),
        }
        if self.passages_by_source:
            data["passages_by_source"] = self.passages_by_source
        return data

    def source_passages(self) -> dict[str, int]:
        """Passages per source this input holds."""
        return self.passages_by_source or {self.source: self.passages}


# Folders an AppendedRows table looks a new row's up among (its last rows'), at most.
_RECENT_FOLDERS = 64


class AppendedRows(Sequence[R]):
    """Records appended one at a time, each kept as a row of bytes in a ``RowSpool`` (on
    disk, a block at a time: the driver keeps a row a file, and a crawl of a page a file has
    millions) and made again when one is asked for (``_row``). A row is a few numbers and a
    path (``_append_row``): the numbers four bytes each where all fit, else eight
    (``_packed_numbers``), the path's folder (up to its last ``/``) by number and the rest
    as UTF-8. Names many records share (sources, formats) are held once each, by number
    (``_number``); folders, which a crawl has by the thousand (a folder a book and site),
    are rows of a ``RowSpool`` too, numbered as they come (``_folder_number``). It equals a
    sequence of the same records, as an ``EqualAsRecords`` table does."""

    def __init__(self) -> None:
        self._names: dict[str, int] = {}  # every name, by its number in _named
        self._named: list[str] = []
        self._rows = RowSpool()
        self._folders = RowSpool()  # each folder's UTF-8, by its number
        # The folders of the last rows, by number: the files of a folder come together (the
        # order they are found in), so a folder met again later is written again, not looked
        # for among all of them.
        self._recent_folders: dict[str, int] = {}
        self._folder_read: tuple[int, str] = (-1, "")  # the last folder read, by number

    def _number(self, name: str) -> int:
        number = self._names.get(name)
        if number is None:
            number = self._names[name] = len(self._named)
            self._named.append(name)
        return number

    def _folder_number(self, folder: str) -> int:
        number = self._recent_folders.get(folder)
        if number is None:
            if len(self._recent_folders) >= _RECENT_FOLDERS:
                self._recent_folders.clear()
            # surrogatepass: a path of a name that is not UTF-8 comes back as it was
            number = self._folders.append(folder.encode("utf-8", "surrogatepass"))
            self._recent_folders[folder] = number
        return number

    def _folder(self, number: int) -> str:
        read = self._folder_read  # one tuple: threads may read rows at once
        if read[0] != number:
            read = (number, self._folders[number].decode("utf-8", "surrogatepass"))
            self._folder_read = read
        return read[1]

    def _append_row(self, numbers: Sequence[int], path: str) -> int:
        """A row of ``numbers`` and ``path``; its number."""
        cut = path.rfind("/") + 1
        head = _packed_numbers((*numbers, self._folder_number(path[:cut])))
        return self._rows.append(head + path[cut:].encode("utf-8", "surrogatepass"))

    def _read_row(self, row: int) -> tuple[list[int], str]:
        """The numbers and the path of row ``row``."""
        data = self._rows[row]
        numbers, at = _numbers_from(data)
        folder = numbers.pop()
        return numbers, self._folder(folder) + data[at:].decode("utf-8", "surrogatepass")

    def _read_numbers(self, row: int) -> list[int]:
        """The numbers of row ``row``, its path neither read nor made."""
        numbers = _numbers_from(self._rows[row])[0]
        numbers.pop()  # its folder's
        return numbers

    def __len__(self) -> int:
        return len(self._rows)

    @abstractmethod
    def _row(self, row: int) -> R:
        """Record ``row`` (0 to len - 1) made from its row of bytes."""

    @overload
    def __getitem__(self, index: int) -> R: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[R, ...]: ...

    def __getitem__(self, index: int | slice) -> R | tuple[R, ...]:
        if isinstance(index, slice):
            return tuple(self._row(row) for row in range(len(self))[index])
        return self._row(range(len(self))[index])  # an IndexError past the end, as a tuple's

    def __iter__(self) -> Iterator[R]:
        return (self._row(row) for row in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(other) == len(self) and all(map(operator.eq, self, other))

    __hash__ = None  # type: ignore[assignment]  # appended to: not a key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"


class PackedPaths(AppendedRows[str]):
    """Strings (paths, mostly) appended one at a time and held as ``AppendedRows``' rows: a
    Python string of a path with a Chinese book's name in it costs some 190 bytes, and a
    crawl of a page a file holds millions of paths in a few thousand folders (issue 21: the
    driver's memory). String ``i`` is made again when asked for (an equal string, not the
    same one)."""

    def __init__(self, strings: Iterable[str] = ()) -> None:
        super().__init__()
        for string in strings:
            self.append(string)

    def append(self, string: str) -> int:
        """``string`` after the others; its number."""
        return self._append_row((), string)

    def _row(self, row: int) -> str:
        return self._read_row(row)[1]


class InputFiles(AppendedRows[InputFile]):
    """The report's entries of the files read, in order, held as ``AppendedRows``' rows: an
    ``InputFile`` is made when one is asked for. As objects (an object, two dictionaries and
    their numbers an entry), unpickled among each file's other results and kept where those
    were let go of, they cost this process as much again in the allocator's pools it could
    not hand back (a dump of a page a file lists millions: docs/performance.md). Here an
    entry is a row of its path and numbers: its source, format and encoding (named once
    each), its records, chapters and passages, and its normalization's counts (their names'
    tuple by number); warnings and per-source counts, which few entries have, by entry."""

    def __init__(self, entries: Iterable[InputFile] = ()) -> None:
        super().__init__()
        self._orders: dict[tuple[int, ...], int] = {}
        self._ordered: list[tuple[int, ...]] = []
        self._totals = [0, 0, 0]
        self._warnings: dict[int, tuple[str, ...]] = {}
        self._by_source: dict[int, dict[str, int]] = {}
        for entry in entries:
            self.append(entry)

    def append(self, entry: InputFile) -> None:
        """``entry`` after the others."""
        codes = [self._number(name) for name in (entry.source, entry.format, entry.encoding)]
        names = tuple(self._number(name) for name in entry.normalization)
        order = self._orders.setdefault(names, len(self._orders))
        if len(self._ordered) < len(self._orders):
            self._ordered.append(names)
        records, chapters, passages = entry.records, entry.chapters, entry.passages
        counts = (records, chapters, passages, *entry.normalization.values())
        row = self._append_row((*codes, order, *counts), entry.path)
        totals = self._totals
        totals[0] += records
        totals[1] += chapters
        totals[2] += passages
        if entry.warnings:
            self._warnings[row] = entry.warnings
        if entry.passages_by_source:
            self._by_source[row] = {
                self._named[self._number(name)]: count
                for name, count in entry.passages_by_source.items()
            }

    def _row(self, row: int) -> InputFile:
        named = self._named
        (source, file_format, encoding, order, records, chapters, passages, *counts), path = (
            self._read_row(row)
        )
        return InputFile(
            path,
            named[source],
            named[file_format],
            named[encoding],
            records,
            chapters,
            passages,
            self._warnings.get(row, ()),
            {named[name]: count for name, count in zip(self._ordered[order], counts, strict=True)},
            dict(self._by_source.get(row, {})),
        )

    def totals(self) -> tuple[int, int, int]:
        """Records, chapters and passages of all the entries."""
        records, chapters, passages = self._totals
        return records, chapters, passages


def _packed_numbers(numbers: Sequence[int]) -> bytes:
    """``numbers`` as the bytes of a row: their count, then each in four bytes where all fit
    (a file's counts, mostly), else in eight (its count's high bit set). One ``struct`` call
    each way: a row is made as each file's task is, and read as each file's report entry is
    written (a crawl of a page a file has millions)."""
    count = len(numbers)
    try:
        return _layout(count, wide=False).pack(count, *numbers)
    except struct.error:  # a number past 32 bits (a file's size or time, a count)
        return _layout(count, wide=True).pack(count | 0x80, *numbers)


def _numbers_from(data: bytes) -> tuple[list[int], int]:
    """The numbers ``_packed_numbers`` put at the start of ``data``, and where they end."""
    layout = _layout(data[0] & 0x7F, wide=data[0] >= 0x80)
    return list(layout.unpack_from(data)[1:]), layout.size


@functools.cache
def _layout(count: int, wide: bool) -> struct.Struct:
    if count > 0x7F:
        raise ValueError(f"a row holds at most 127 numbers, not {count}")
    return struct.Struct(f"<B{count}{'q' if wide else 'i'}")


def extended(numbers: array.array[int], values: Iterable[int]) -> array.array[int]:
    """``numbers`` with ``values`` after them: four bytes each while every one fits (a
    file's counts or numbers, of millions of files: some 30 B a file less), eight once one
    does not."""
    values = tuple(values)
    before = len(numbers)
    try:
        numbers.extend(values)
    except OverflowError:
        del numbers[before:]  # those appended before the one that did not fit
        numbers = array.array("q", numbers)
        numbers.extend(values)
    return numbers


@dataclass(frozen=True, slots=True)
class Skipped:
    """An input that was not used, and why, in words the user can act on."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Pair:
    """A verified near-duplicate pair; ``a`` comes before ``b`` in reading order."""

    a: str
    b: str
    jaccard: float
    containment: float
    minhash_jaccard: float
    identical_chars: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            **dict(zip(PAIR_VALUES, self.values(), strict=True)),
        }

    def values(self) -> list[float | int]:
        """Its measures as reports write them (rounded to 4 decimals), in PAIR_VALUES' order."""
        return [
            round(self.jaccard, 4),
            round(self.containment, 4),
            round(self.minhash_jaccard, 4),
            self.identical_chars,
        ]


# A pair's measures, in the order its rows list them after the two members' numbers.
PAIR_VALUES = ("jaccard", "containment", "minhash_jaccard", "identical_chars")


class ColumnTable(Sequence[R], Generic[R]):
    """What every column table does by its rows: a table is a sequence of its records, held
    as numpy columns (a number a field a row) rather than as objects, which cost seconds by
    the million to make, to send between processes and to read back. ``rows`` makes the
    records of many rows in one go; ``table[i]`` is one. The tables of passages and
    similarities are in dedup.columns; those a report holds by the million (a cluster's
    pairs, a match's spans) are here, and equal the sequence of their records
    (:class:`EqualAsRecords`)."""

    __slots__ = ()

    def rows(self, rows: npt.NDArray[np.int64]) -> list[R]:
        """The records of ``rows``, made in one go (faster than one ``table[i]`` at a time)."""
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    @overload
    def __getitem__(self, row: int) -> R: ...

    @overload
    def __getitem__(self, row: slice) -> Sequence[R]: ...

    def __getitem__(self, row: int | slice) -> R | Sequence[R]:
        if isinstance(row, slice):
            return self.rows(np.arange(len(self))[row])
        if not -len(self) <= row < len(self):
            raise IndexError(row)
        return self.rows(np.array([row % len(self)], dtype=np.int64))[0]

    def __iter__(self) -> Iterator[R]:
        return iter(self.rows(np.arange(len(self))))


class EqualAsRecords(ColumnTable[R]):
    """A column table that equals (and hashes as) the sequence of its records: a record's
    field may be given as that sequence (``Cluster.pairs``, ``Match.spans``)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


def _four_decimals(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64] | None:
    """``round(value, 4) * 10**4`` of each value (as Python's ``round`` rounds the exact
    binary value), or None if one is not in [0, 1]."""
    scaled = values * 10_000
    if not (len(values) and scaled.min() >= 0 and scaled.max() <= 10_000):
        return None
    numbers = np.rint(scaled).astype(np.int64)
    # Only a value within a hair of half way can round otherwise than its product with 10**4
    # does (that product is off by at most a few units in its last place): those, as Python.
    near = np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < 1e-6)
    for row in near.tolist():
        numbers[row] = round(round(float(values[row]), 4) * 10_000)
    return numbers


@functools.cache
def _four_decimal_floats() -> npt.NDArray[np.float64]:
    """``round(value, 4)`` for a value in [0, 1], by that times 10**4."""
    return np.array([round(k / 10_000, 4) for k in range(10_001)], dtype=np.float64)


@functools.cache
def _four_decimal_texts() -> npt.NDArray[np.object_]:
    """What json.dumps writes of ``round(value, 4)`` for a value in [0, 1], by that times
    10**4."""
    return np.array([json.dumps(value) for value in _four_decimal_floats().tolist()], dtype=object)


class MemberIds(Sequence[str]):
    """The ids of a cluster's members, each made when it is asked for, as a scan's members
    make theirs (:class:`CutPassage`): a large dump's ids held are a good part of the report's
    memory (docs/performance.md)."""

    __slots__ = ("members",)

    def __init__(self, members: Sequence[Passage]) -> None:
        self.members = members

    def __len__(self) -> int:
        return len(self.members)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [member.id for member in self.members[index]]
        return self.members[index].id

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (list(self),))


@dataclass(frozen=True, slots=True, eq=False)
class PairTable(EqualAsRecords[Pair]):
    """A cluster's verified pairs as columns: ``a`` and ``b`` are numbers of the cluster's
    members (``ids``, in the cluster's order), ``a`` before ``b`` in reading order. A cluster
    of k near copies has about k²/2 pairs (a 1 GB mirror dump's clusters, millions): a row
    is 40 bytes here rather than an object."""

    ids: Sequence[str]
    a: npt.NDArray[np.int32]
    b: npt.NDArray[np.int32]
    jaccard: npt.NDArray[np.float64]
    containment: npt.NDArray[np.float64]
    minhash_jaccard: npt.NDArray[np.float64]
    identical_chars: npt.NDArray[np.int64]

    @classmethod
    def of(cls, pairs: Iterable[Pair], ids: Sequence[str]) -> PairTable:
        """The table of ``pairs``, whose members are among ``ids``."""
        number = {member: position for position, member in enumerate(ids)}
        listed = list(pairs)
        return cls(
            tuple(ids),
            np.array([number[pair.a] for pair in listed], dtype=np.int32),
            np.array([number[pair.b] for pair in listed], dtype=np.int32),
            np.array([pair.jaccard for pair in listed], dtype=np.float64),
            np.array([pair.containment for pair in listed], dtype=np.float64),
            np.array([pair.minhash_jaccard for pair in listed], dtype=np.float64),
            np.array([pair.identical_chars for pair in listed], dtype=np.int64),
        )

    def listed(self, measures: Sequence[str] = PAIR_VALUES) -> list[list[float | int]]:
        """The pairs as reports write them, ``[a, b, jaccard, containment, minhash_jaccard,
        identical_chars]`` (or ``measures`` of those), the scores rounded to 4 decimals."""
        columns: list[Iterable[float | int]] = [self.a.tolist(), self.b.tolist()]
        for name in measures:
            values = getattr(self, name)
            numbers = None if name == "identical_chars" else _four_decimals(values)
            if numbers is not None:  # a scan's scores: rounded in bulk, as round() does
                columns.append(_four_decimal_floats()[numbers].tolist())
            else:  # a count, or scores not in [0, 1]
                listed = values.tolist()
                columns.append(
                    listed if name == "identical_chars" else map(round, listed, repeat(4))
                )
        return list(map(list, zip(*columns, strict=True)))

    def rows_json(self) -> str:
        """``json.dumps(self.listed(), separators=COMPACT)``, made faster
        (:meth:`rows_json_of`)."""
        return PairTable.rows_json_of([self])[0]

    @staticmethod
    def rows_json_of(tables: Sequence[PairTable]) -> list[str]:
        """Each table's :meth:`rows_json`, the tables' scores rounded and encoded together:
        a 1 GB mirror dump's clusters have millions of pairs, and rounding and encoding each
        value on its own was most of the time report.json took to write, and then the
        arrays' passes over each of thousands of small clusters (docs/performance.md)."""
        counts = [len(table.a) for table in tables]
        if not sum(counts):
            return ["[]"] * len(tables)

        def joined(name: str) -> npt.NDArray[Any]:
            return np.concatenate([getattr(table, name) for table in tables])

        texts = _four_decimal_texts()
        columns = []
        for name in PAIR_VALUES[:3]:
            numbers = _four_decimals(joined(name))
            if numbers is None:  # not in [0, 1]: not what a scan gives
                return [json.dumps(table.listed(), separators=COMPACT) for table in tables]
            columns.append(texts[numbers].tolist())
        jaccard, containment, estimated = columns
        rows = zip(
            joined("a").tolist(),
            joined("b").tolist(),
            jaccard,
            containment,
            estimated,
            joined("identical_chars").tolist(),
            strict=True,
        )
        encoded = [f"[{a},{b},{j},{c},{m},{i}]" for a, b, j, c, m, i in rows]
        bounds = itertools.pairwise(itertools.accumulate(counts, initial=0))
        return ["[" + ",".join(encoded[start:end]) + "]" for start, end in bounds]

    def __len__(self) -> int:
        return len(self.a)

    def rows(self, rows: npt.NDArray[np.int64]) -> list[Pair]:
        ids = list(self.ids)  # each made once, not once a pair
        return made_in_bulk(
            Pair,
            [ids[number] for number in self.a[rows].tolist()],
            [ids[number] for number in self.b[rows].tolist()],
            self.jaccard[rows].tolist(),
            self.containment[rows].tolist(),
            self.minhash_jaccard[rows].tolist(),
            self.identical_chars[rows].tolist(),
        )


@dataclass(frozen=True, slots=True)
class Cluster:
    id: str
    representative: str
    members: tuple[Passage, ...]
    # A sequence of Pairs given is kept as their table.
    pairs: PairTable
    # Members with no verified pair with the representative: they belong only through others.
    linked_through_others: tuple[str, ...] = ()
    giant: bool = False  # more members than max_cluster_size: most likely site boilerplate

    def __post_init__(self) -> None:
        if not isinstance(self.pairs, PairTable):
            ids = [member.id for member in self.members]
            object.__setattr__(self, "pairs", PairTable.of(self.pairs, ids))

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(sorted({member.source for member in self.members}))

    def to_dict(
        self,
        text: MemberText = "none",
        pairs: bool = True,
        documents: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """The cluster as reports write it: with ``documents`` (the report's documents' numbers
        by id) as report.json does, its representative and members linked through others by
        their numbers in ``members``, each member by its document's number and its span;
        without, as clusters.jsonl does, by their ids, each member with its id, source,
        document id and span, and its ``text`` as asked."""
        data = self._head(documents)
        if documents is None:
            data["members"] = [member.to_dict(text) for member in self.members]
        else:
            data["members"] = [
                {"document": documents[m.document], "start": m.start, "end": m.end}
                for m in self.members
            ]
        if pairs:
            data["pairs"] = self.pair_rows()
        return data

    def to_json(
        self,
        text: MemberText = "none",
        pairs: bool | str = True,
        documents: Mapping[str, int] | None = None,
    ) -> str:
        """``json.dumps(self.to_dict(text, pairs, documents), ensure_ascii=False,
        separators=COMPACT)``, made faster: its members encoded by
        :func:`members_placed_json` or :func:`members_json`, its pairs by
        ``PairTable.rows_json`` (a 1 GB mirror dump's report has 800 k members and 5.5 M
        pairs), or given as ``pairs``, that JSON, made already (``PairTable.rows_json_of``)."""
        head = json.dumps(self._head(documents), ensure_ascii=False, separators=COMPACT)
        if pairs is True:
            pairs = self.pairs.rows_json()
        rows = f',"pairs":{pairs}' if pairs else ""
        if documents is None:
            members = members_json(self.members, text)
        else:
            members = members_placed_json(self.members, documents)
        return f'{head[:-1]},"members":{members}{rows}}}'

    def _head(self, documents: Mapping[str, int] | None) -> dict[str, Any]:
        representative: str | int = self.representative
        linked: list[str] | list[int] = list(self.linked_through_others)
        if documents is not None:
            number = {member.id: position for position, member in enumerate(self.members)}
            representative = number[self.representative]
            linked = [number[member] for member in self.linked_through_others]
        return {
            "id": self.id,
            "representative": representative,
            "sources": list(self.sources),
            "giant": self.giant,
            "linked_through_others": linked,
        }

    def pair_rows(self) -> list[list[float | int]]:
        """Its pairs as rows, ``[a, b, jaccard, containment, minhash_jaccard,
        identical_chars]``, ``a`` and ``b`` numbers of ``members`` (from 0): a cluster of k
        near copies has about k²/2 pairs, and ids in each would make them most of a report."""
        return self.pairs.listed()


@dataclass(frozen=True, slots=True)
class MatchedDocument:
    """A document (a chapter of a file or record, or the whole of it) that shares text with
    another: where it is (``start``, ``end``: its story text in the decoded text, as passages'
    spans are), how many story characters it has, and its text (``text ==
    decoded[start:end]``), kept once however many matches it is in."""

    id: str  # passage_id of its span
    source: str
    path: str
    record: int | None
    record_id: str | None
    chapter: int | None
    title: str | None
    start: int
    end: int
    story_chars: int  # its characters after normalization (what coverage is a share of)
    text: str

    @property
    def sort_key(self) -> tuple[str, int, int, int]:
        return reading_order(self.path, self.record, self.start, self.end)

    def location(self) -> dict[str, Any]:
        """Where it is, as reports write it (its text apart)."""
        return {
            "id": self.id,
            "source": self.source,
            "path": self.path,
            "record": self.record,
            "record_id": self.record_id,
            "chapter": self.chapter,
            "title": self.title,
            "start": self.start,
            "end": self.end,
        }

    def to_dict(self, text: bool = True) -> dict[str, Any]:
        """As report.json writes it: where it is, its size, its text's SHA-256 (of its UTF-8),
        and, if asked, its text."""
        data = {
            **self.location(),
            "story_chars": self.story_chars,
            "text_sha256": text_sha256(self.text),
        }
        if text:
            data["text"] = self.text
        return data


def text_sha256(text: str) -> str:
    """The SHA-256 of ``text``'s UTF-8, in hex: how report.json tells that a document's text
    read back from its input is still what was scanned."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class SharedSpan:
    """A stretch two documents share: ``a``'s decoded text ``[a_start:a_end]`` and ``b``'s
    ``[b_start:b_end]`` (offsets as passages' are), ``identical_chars`` of their story
    characters the same, in the same order."""

    a_start: int
    a_end: int
    b_start: int
    b_end: int
    identical_chars: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "a_start": self.a_start,
            "a_end": self.a_end,
            "b_start": self.b_start,
            "b_end": self.b_end,
            "identical_chars": self.identical_chars,
        }


# A shared span's fields, in the order of its columns.
SPAN_FIELDS = ("a_start", "a_end", "b_start", "b_end", "identical_chars")


@dataclass(frozen=True, slots=True, eq=False)
class SharedSpans(EqualAsRecords[SharedSpan]):
    """A match's shared spans, a :class:`SharedSpan` each when read: rows ``first`` to
    ``end`` of ``table`` (a row a span, its fields in the order of ``SPAN_FIELDS``), a table
    the matches of a scan share. A large dump's matches share millions of spans: 40 bytes a
    span and about 100 a match here, against an object of some 200 bytes a span (and numpy
    views a match, over 100 bytes each, would cost more than the spans they hold)."""

    table: npt.NDArray[np.int64]
    first: int
    end: int

    @classmethod
    def of(cls, spans: Iterable[SharedSpan]) -> SharedSpans:
        rows = [[getattr(span, name) for name in SPAN_FIELDS] for span in spans]
        return cls(np.array(rows, dtype=np.int64).reshape(-1, len(SPAN_FIELDS)), 0, len(rows))

    def numbers(self) -> npt.NDArray[np.int64]:
        """The spans, a row of numbers each (a view into the shared table)."""
        return self.table[self.first : self.end]

    @property
    def identical_chars(self) -> npt.NDArray[np.int64]:
        return self.table[self.first : self.end, SPAN_FIELDS.index("identical_chars")]

    def dicts(self) -> list[dict[str, int]]:
        """Each span as its ``to_dict``."""
        return [dict(zip(SPAN_FIELDS, row, strict=True)) for row in self.numbers().tolist()]

    def __len__(self) -> int:
        return self.end - self.first

    def rows(self, rows: npt.NDArray[np.int64]) -> list[SharedSpan]:
        listed = self.numbers()[rows].tolist()
        return made_in_bulk(SharedSpan, *zip(*listed, strict=True)) if listed else []

    def __reduce__(self) -> tuple[type[SharedSpans], tuple[npt.NDArray[np.int64], int, int]]:
        """Pickled with its own rows only, not the table it shares."""
        return SharedSpans, (np.ascontiguousarray(self.numbers()), 0, len(self))


@dataclass(frozen=True, slots=True)
class Match:
    """Two documents that share text, ``a`` before ``b`` in reading order: the shared spans,
    and how much of each document's story characters they cover."""

    a: MatchedDocument
    b: MatchedDocument
    shared_chars_a: int
    shared_chars_b: int
    coverage_a: float
    coverage_b: float
    # A sequence of SharedSpans given is kept as their table.
    spans: SharedSpans

    def __post_init__(self) -> None:
        if not isinstance(self.spans, SharedSpans):
            object.__setattr__(self, "spans", SharedSpans.of(self.spans))

    @property
    def id(self) -> str:
        return f"{self.a.id}~{self.b.id}"

    @property
    def identical_chars(self) -> int:
        return int(self.spans.identical_chars.sum())

    def to_dict(self, documents: Mapping[str, int] | None = None) -> dict[str, Any]:
        """As reports write it: its documents by id, or by their number in ``documents``
        (the report's by id), as report.json does."""
        return {
            "a": self.a.id if documents is None else documents[self.a.id],
            "b": self.b.id if documents is None else documents[self.b.id],
            "shared_chars_a": self.shared_chars_a,
            "shared_chars_b": self.shared_chars_b,
            "coverage_a": round(self.coverage_a, 4),
            "coverage_b": round(self.coverage_b, 4),
            "identical_chars": self.identical_chars,
            "spans": self.spans.dicts(),
        }


@dataclass(frozen=True, slots=True)
class DocumentGroup:
    """Documents that are copies of one another (joined by matches covering most of both
    sides): the same chapter on several sites, with the one to keep."""

    id: str
    representative: str  # a document id
    documents: tuple[str, ...]
    sources: tuple[str, ...]

    def to_dict(self, documents: Mapping[str, int] | None = None) -> dict[str, Any]:
        """As reports write it: its documents by id, or by their number in ``documents``
        (the report's by id), as report.json does."""
        if documents is None:
            return {
                "id": self.id,
                "representative": self.representative,
                "sources": list(self.sources),
                "documents": list(self.documents),
            }
        return {
            "id": self.id,
            "representative": documents[self.representative],
            "sources": list(self.sources),
            "documents": [documents[document] for document in self.documents],
        }


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts per stage. Deterministic, so they belong in the report."""

    files: int
    files_skipped: int
    records: int
    chapters: int
    passages: int
    passages_too_short: int
    candidate_pairs: int  # pairs LSH proposed among distinct texts (exact copies apart)
    verified_pairs: int  # exact copies' links included
    clusters: int
    duplicated_passages: int
    exact_copy_pairs: int = 0  # links from a passage to an earlier one of the same text
    documents: int = 0  # chapters of files and records (or whole ones), each with passages
    document_pairs_aligned: int = 0
    document_matches: int = 0
    matched_documents: int = 0
    document_groups: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "files_skipped": self.files_skipped,
            "records": self.records,
            "chapters": self.chapters,
            "passages": self.passages,
            "passages_too_short": self.passages_too_short,
            "candidate_pairs": self.candidate_pairs,
            "verified_pairs": self.verified_pairs,
            "exact_copy_pairs": self.exact_copy_pairs,
            "clusters": self.clusters,
            "duplicated_passages": self.duplicated_passages,
            "documents": self.documents,
            "document_pairs_aligned": self.document_pairs_aligned,
            "document_matches": self.document_matches,
            "matched_documents": self.matched_documents,
            "document_groups": self.document_groups,
        }


@dataclass(frozen=True, slots=True)
class SourceCounts:
    """What one source (site) holds and how much of it is duplicated elsewhere."""

    name: str
    files: int  # inputs holding a passage of it (or that are its, when empty)
    passages: int
    in_clusters: int  # its passages that are members of a cluster
    duplicated_chars: int  # the characters of those members

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "passages": self.passages,
            "in_clusters": self.in_clusters,
            "duplicated_chars": self.duplicated_chars,
        }


def source_counts(inputs: Sequence[InputFile], clusters: Sequence[Cluster]) -> list[SourceCounts]:
    """Per source, in name order: files, passages and the passages in clusters. Passages are
    counted under the source their records name (--source-field), not their file's."""
    files: dict[str, int] = {}
    passages: dict[str, int] = {}
    for entry in inputs:
        for source, count in entry.source_passages().items():
            files[source] = files.get(source, 0) + 1
            passages[source] = passages.get(source, 0) + count
    members: dict[str, int] = {}
    characters: dict[str, int] = {}
    for cluster in clusters:
        for member in cluster.members:
            members[member.source] = members.get(member.source, 0) + 1
            # its text's length, without cutting the text from its document's
            characters[member.source] = characters.get(member.source, 0) + member.end - member.start
    return [
        SourceCounts(
            name,
            files.get(name, 0),
            passages.get(name, 0),
            members.get(name, 0),
            characters.get(name, 0),
        )
        for name in sorted(set(files) | set(members))
    ]


@dataclass(frozen=True, slots=True)
class Report:
    """The result of a scan. ``timings`` (seconds per stage), ``jobs`` and ``engine`` (where it
    ran, in words) describe this run only and are kept out of ``to_json()`` so that the report
    is byte-identical between runs."""

    dedup_version: str
    options: dict[str, Any]
    summary: Summary
    inputs: Sequence[InputFile]  # InputFiles, of a scan
    skipped: tuple[Skipped, ...]
    clusters: tuple[Cluster, ...]
    # The documents that share text (each once, with its text), the matches between them, and
    # the groups of copies among them.
    documents: tuple[MatchedDocument, ...] = ()
    matches: tuple[Match, ...] = ()
    document_groups: tuple[DocumentGroup, ...] = ()
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    jobs: int = field(default=1, compare=False)
    engine: str = field(default="local, 1 process", compare=False)
    # The directory its relative paths are relative to (the one the scan ran in: run.json's
    # ``directory``), and whether its report.json holds the documents' texts (read back from
    # one that does) rather than their SHA-256 alone.
    directory: str = field(default="", compare=False)
    texts_held: bool = field(default=False, compare=False)

    def to_dict(self, clusters: bool = True, document_texts: bool = False) -> dict[str, Any]:
        """The report as plain data, as report.json has it (the documents with their texts if
        asked; without the documents, matches and clusters, which are most of it, if asked)."""
        data = {
            **self._top_fields(),
            "inputs": [entry.to_dict() for entry in self.inputs],
            "skipped": [entry.to_dict() for entry in self.skipped],
        }
        if clusters:
            numbers = self.document_numbers()
            data["documents"] = [document.to_dict(document_texts) for document in self.documents]
            data["matches"] = [match.to_dict(numbers) for match in self.matches]
            data["document_groups"] = [group.to_dict(numbers) for group in self.document_groups]
            data["clusters"] = [cluster.to_dict(documents=numbers) for cluster in self.clusters]
        return data

    def _top_fields(self) -> dict[str, Any]:
        return {
            "report_format": REPORT_FORMAT,
            "dedup_version": self.dedup_version,
            "options": self.options,
            "summary": self.summary.to_dict(),
        }

    def document_numbers(self) -> dict[str, int]:
        """Each document's number in ``documents`` (from 0), by id: how report.json's
        members, matches and groups name them (format 5)."""
        return _DocumentNumbers(
            (document.id, number) for number, document in enumerate(self.documents)
        )

    def to_json(self, document_texts: bool = False) -> str:
        """report.json's text (docs/report-format.md)."""
        buffer = io.StringIO()
        self.write_json(buffer, document_texts=document_texts)
        return buffer.getvalue()

    def write_json(
        self,
        out: TextIO,
        lines: TextIO | None = None,
        clusters: Iterable[Cluster] | None = None,
        lines_text: MemberText = "excerpt",
        document_texts: bool = False,
    ) -> None:
        """report.json, written as it is built: the top level indented, then the documents
        (each once, with its text if ``document_texts``: a report of a large dump of copies
        would otherwise hold all of its text again) and one cluster per line (each item
        encoded on its own, by json's C encoder, and written before the next is). Given
        ``lines``, the clusters go there too, one per line (clusters.jsonl), their members
        with ``lines_text`` and without their pairs (report.json has them), in the same
        pass. ``clusters``: this report's clusters as the caller goes through them (counted
        on a progress bar, say)."""
        out.writelines(self.json_head())
        numbers = self.document_numbers()
        for name in JSON_SECTIONS:
            self.write_json_section(out, name, document_texts, numbers)
        self.write_json_clusters(out, lines, clusters, lines_text, numbers)

    def json_head(self) -> Iterator[str]:
        """The start of report.json, in pieces: its top level, with the inputs and the
        skipped an item at a time (a dump of a page a file lists millions: as one string,
        with a dictionary an item, they were the report stage's peak), up to the lists
        :meth:`write_json_section` writes. The same text as ``json.dumps`` of
        :meth:`to_dict` with an indent of 2 gives."""
        head = json.dumps(self._top_fields(), ensure_ascii=False, indent=2)
        yield head[: -len("\n}")]
        lists: tuple[tuple[str, Sequence[InputFile | Skipped]], ...] = (
            ("inputs", self.inputs),
            ("skipped", self.skipped),
        )
        for name, items in lists:
            yield f',\n  "{name}": ['
            for number, item in enumerate(items):
                # json.dumps writes a newline in no string: each is one of the layout's
                text = json.dumps(item.to_dict(), ensure_ascii=False, indent=2)
                yield (",\n    " if number else "\n    ") + text.replace("\n", "\n    ")
            yield "\n  ]" if items else "]"

    def write_json_section(
        self,
        out: TextIO,
        name: str,
        document_texts: bool = False,
        numbers: Mapping[str, int] | None = None,
    ) -> None:
        """One list of report.json before its clusters (``JSON_SECTIONS``), an item a line:
        what :meth:`write_json` writes after :meth:`json_head`, in that order."""
        items: Sequence[MatchedDocument | Match | DocumentGroup] = getattr(self, name)
        numbers = self.document_numbers() if numbers is None else numbers
        out.write(f',\n  "{name}": [')
        for number, item in enumerate(items):
            out.write(",\n    " if number else "\n    ")
            data = (
                item.to_dict(document_texts)
                if isinstance(item, MatchedDocument)
                else item.to_dict(numbers)
            )
            out.write(json.dumps(data, ensure_ascii=False, separators=COMPACT))
        out.write("\n  ]" if items else "]")

    def write_json_clusters(
        self,
        out: TextIO,
        lines: TextIO | None = None,
        clusters: Iterable[Cluster] | None = None,
        lines_text: MemberText = "excerpt",
        numbers: Mapping[str, int] | None = None,
    ) -> None:
        """The clusters and the end of report.json (and clusters.jsonl into ``lines``), as
        :meth:`write_json` writes them last."""
        numbers = self.document_numbers() if numbers is None else numbers
        out.write(',\n  "clusters": [')
        for number, (cluster, pairs) in enumerate(
            _with_pairs_json(self.clusters if clusters is None else clusters)
        ):
            out.write(",\n" if number else "\n")
            out.write(cluster.to_json("none", pairs, numbers))
            if lines is not None:
                lines.write(cluster.to_json(lines_text, False) + "\n")
        out.write("\n  ]\n}\n" if self.clusters else "]\n}\n")


# report.json's lists before its clusters, in order (Report attributes)
JSON_SECTIONS = ("documents", "matches", "document_groups")


class _DocumentNumbers(dict[str, int]):
    """A report's documents' numbers by id, which say so when one is not there."""

    def __missing__(self, key: str) -> int:
        raise ValueError(
            f"{key} is named by a member, match or group of the report but is not among its "
            "documents, by whose numbers report.json names them: give the Report every "
            "document its clusters' members and its matches name"
        )


def _with_pairs_json(clusters: Iterable[Cluster]) -> Iterator[tuple[Cluster, str]]:
    """Each cluster with its pairs' JSON, made for some clusters at a time
    (``PairTable.rows_json_of``)."""
    batch: list[Cluster] = []
    pairs = 0
    for cluster in clusters:
        batch.append(cluster)
        pairs += len(cluster.pairs)
        if len(batch) == _CLUSTERS_ENCODED_AT_ONCE or pairs >= _PAIRS_ENCODED_AT_ONCE:
            yield from zip(batch, PairTable.rows_json_of([c.pairs for c in batch]), strict=True)
            batch, pairs = [], 0
    yield from zip(batch, PairTable.rows_json_of([c.pairs for c in batch]), strict=True)


# Clusters whose pairs are encoded together: enough that the arrays' passes cost little per
# cluster, few enough that their rows' text (about 100 bytes a pair as strings) is small
# beside the report (a cluster with more pairs is encoded alone).
_CLUSTERS_ENCODED_AT_ONCE = 256
_PAIRS_ENCODED_AT_ONCE = 100_000


def document_overlap(report: Report) -> dict[tuple[str, str], list[int]]:
    """For each two sources, by name (a source with itself too): [copies, partial]. Copies are the
    pairs of documents of one group, matched with each other or not (a scan matches each
    copy with the one its group keeps); partial, the pairs of documents of no group in common
    that share text: for two groups a match joins (a document of none is a group of its own),
    every document of one with every document of the other (a scan aligns two groups once)."""
    between: dict[tuple[str, str], list[int]] = {}
    source_of = {document.id: document.source for document in report.documents}
    group_of: dict[str, str] = {}
    held_in: dict[str, Counter[str]] = {}
    for group in report.document_groups:
        group_of.update((document, group.id) for document in group.documents)
        held_in[group.id] = Counter(source_of[document] for document in group.documents)

    def count(one: str, two: str, pairs: int, kind: int) -> None:
        if pairs:
            between.setdefault((min(one, two), max(one, two)), [0, 0])[kind] += pairs

    for held in held_in.values():
        names = sorted(held)
        for position, one in enumerate(names):
            for two in names[position:]:
                same = one == two
                count(
                    one, two, held[one] * (held[one] - 1) // 2 if same else held[one] * held[two], 0
                )
    joined: set[tuple[str, str]] = set()
    for match in report.matches:
        ends = [group_of.get(side.id, side.id) for side in (match.a, match.b)]
        key = (min(ends), max(ends))
        if ends[0] == ends[1] or key in joined:
            continue
        joined.add(key)
        sides = [held_in.get(end) or Counter([source_of[end]]) for end in ends]
        for one, of_one in sides[0].items():
            for two, of_two in sides[1].items():
                count(one, two, of_one * of_two, 1)
    return between
