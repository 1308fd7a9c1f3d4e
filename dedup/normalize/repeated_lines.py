"""The lines each source repeats in many of its chapters (site boilerplate no pattern knows),
learned from the dump before it is normalized: which files are learned from in the same read
as they are prepared, the distinct chapters of each file and their line keys, and the keys a
source repeats often enough to be dropped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, key_counts, partitioned, sorted_unique
from dedup.codepoints import code_points
from dedup.config import ScanConfig
from dedup.errors import DecodeFailure, InputTooLarge
from dedup.models import Chapter
from dedup.normalize import (
    BATCH_CHARS,
    line_key_array,
    repeated_lines_needed,
)
from dedup.read import (
    RECORD_FORMATS,
    FoundFile,
    ReadResult,
)
from dedup.segment import (
    ChapterTable,
    split_chapters,
)

RepeatedLines = dict[str, frozenset[int]]

# Per source: its distinct chapters of a file (chapter_lines), merged across files by
# repeated_lines.
LineCounts = dict[str, "ChapterLines"]

# Per input of a file, in the order it is read, per document: the chapters found in it (None
# for a later piece of a file read in pieces, whose chapters go on from the piece before).
FileChapters = tuple[tuple[ChapterTable | None, ...], ...]


@dataclass(frozen=True, slots=True)
class LearnedFile:
    """What the learn pass found in one file: its line counts, and its chapters for the main
    pass to reuse."""

    line_counts: LineCounts
    chapters: FileChapters
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class LearnPass:
    """The learn pass over some files: the time it took; each one's chapters as the main
    pass's task for it is given them, in order; and the lines each source repeats. Nothing
    else a file: a record of each, held until the last, grew with the dump (a dump of a
    page a file) and left the allocator's pools in pieces."""

    seconds: float  # spent reading and learning from the files, summed
    # Per file, the chapters its main-pass task is given and which of them are the file's:
    # its own and None; on a cluster, the future of its batch's (kept on a worker, not here:
    # chapters_of) and the file's slice of them.
    chapters: Sequence[tuple[Any, slice | None]]
    repeated: RepeatedLines


def learn_lines(results: Iterable[ReadResult]) -> LearnedFile:
    found: list[LineCounts] = []
    file_chapters: list[tuple[ChapterTable | None, ...]] = []
    for result in results:
        tables: list[ChapterTable | None] = []
        counted: list[LineCounts] = []
        # The lines of consecutive documents of a source are keyed together, some BATCH_CHARS
        # characters at a time: a JSON Lines file of a record a chapter would otherwise pay
        # the keying's fixed costs a record.
        batch = _LearnBatch(counted)
        try:
            for document in result.documents:
                codes = code_points(document.text)
                document_chapters = split_chapters(document, codes=codes)
                tables.append(
                    None if document.continued else ChapterTable.of(document, document_chapters)
                )
                batch.add(document.source, codes, document_chapters)
            batch.done()
        except (DecodeFailure, InputTooLarge):
            # A large file read as a stream failed part way: the main pass lists it as
            # skipped, so none of it counts here either.
            file_chapters.append(())
            continue
        found += counted
        file_chapters.append(tuple(tables))
    return LearnedFile(merged_line_counts(found), tuple(file_chapters))


class _LearnBatch:
    """Documents of one source gathered until they hold BATCH_CHARS characters, then their
    chapters' lines keyed as one text: the documents joined by a line end, each chapter moved
    by its document's place. A chapter is known by its lines' keys alone, and each is kept
    where first seen, so this is :func:`chapter_lines` of each document merged in order
    (:meth:`ChapterLines.merged`)."""

    def __init__(self, counted: list[LineCounts]) -> None:
        self._counted = counted
        self._source = ""
        self._codes: list[npt.NDArray[np.uint32]] = []
        self._chapters: list[Chapter] = []
        self._chars = 0

    def add(self, source: str, codes: npt.NDArray[np.uint32], chapters: Sequence[Chapter]) -> None:
        if self._codes and source != self._source:
            self.done()
        self._source = source
        at = self._chars
        self._chapters += [
            Chapter(c.index, c.title, c.start + at, c.body_start + at, c.end + at) for c in chapters
        ]
        self._codes += [codes, _LINE_END]
        self._chars += len(codes) + 1
        if self._chars >= BATCH_CHARS:
            self.done()

    def done(self) -> None:
        if not self._codes:
            return
        codes = np.concatenate(self._codes[:-1]) if len(self._codes) > 2 else self._codes[0]
        self._counted.append({self._source: chapter_lines(codes, self._chapters)})
        self._codes, self._chapters, self._chars = [], [], 0


_LINE_END = np.array([ord("\n")], dtype=np.uint32)


def merged_line_counts(counts: Iterable[LineCounts]) -> LineCounts:
    """Line counts one after another as one: each source's chapters merged
    (:meth:`ChapterLines.merged`), the sources in the order first met."""
    parts: dict[str, list[ChapterLines]] = {}
    for count in counts:
        for source, lines in count.items():
            parts.setdefault(source, []).append(lines)
    return {source: ChapterLines.merged(source_parts) for source, source_parts in parts.items()}


@dataclass(frozen=True, slots=True)
class ChapterLines:
    """The lines of a source's distinct chapters: each chapter by a hash of its set of line
    keys (a chapter a source carries twice, or in two files, is one chapter here: its lines
    are no more "repeated" for being there twice), and each (chapter, line key) pair once."""

    chapters: npt.NDArray[np.int64]  # the distinct chapters' hashes, in the order first seen
    pair_chapters: npt.NDArray[np.int64]  # per pair, its chapter's hash
    pair_keys: npt.NDArray[np.int64]

    @classmethod
    def merged(cls, parts: Sequence[ChapterLines]) -> ChapterLines:
        """The chapters of ``parts`` in order, a chapter already seen in an earlier part left
        out of the later ones."""
        if len(parts) == 1:
            return parts[0]
        hashes = concatenated([part.chapters for part in parts], np.int64)
        first = _first_seen_rows(hashes)
        kept_hashes = hashes[first]
        # A pair is kept from the part where its chapter was first seen.
        part_of = np.repeat(np.arange(len(parts)), [len(part.chapters) for part in parts])
        home = dict(zip(hashes[first].tolist(), part_of[first].tolist(), strict=True))
        pair_chapters, pair_keys = [], []
        for number, part in enumerate(parts):
            at_home = np.array(
                [home[value] == number for value in part.chapters.tolist()], dtype=np.bool_
            )
            if not at_home.any():
                continue
            keep = np.isin(part.pair_chapters, part.chapters[at_home])
            pair_chapters.append(part.pair_chapters[keep])
            pair_keys.append(part.pair_keys[keep])
        return cls(
            kept_hashes,
            concatenated(pair_chapters, np.int64),
            concatenated(pair_keys, np.int64),
        )


# Multipliers of the hash of a chapter's line keys (odd 64-bit constants, splitmix64's).
_KEY_MIX = np.uint64(0x9E3779B97F4A7C15)

_KEY_MIX_AGAIN = np.uint64(0xBF58476D1CE4E5B9)


def chapter_lines(codes: npt.NDArray[np.uint32], chapters: Sequence[Chapter]) -> ChapterLines:
    """The distinct chapters of a document and the line keys of each (ChapterLines)."""
    unique = chapter_line_pairs(codes, chapters)
    chapter_of, keys = unique >> 32, unique & 0xFFFFFFFF
    if not len(unique):
        empty = np.empty(0, dtype=np.int64)
        return ChapterLines(empty, empty, empty)
    starts = np.flatnonzero(np.append(True, chapter_of[1:] != chapter_of[:-1]))
    # A chapter's hash: a sum of its keys each mixed (the keys are sorted and unique in it),
    # then mixed with how many there are; equal key sets, equal hashes.
    mixed = keys.astype(np.uint64) * _KEY_MIX
    mixed ^= mixed >> np.uint64(31)
    sums = np.add.reduceat(mixed, starts)
    sizes = np.diff(np.append(starts, len(keys))).astype(np.uint64)
    hashes = ((sums ^ sizes) * _KEY_MIX_AGAIN).view(np.int64)
    first = _first_seen_rows(hashes)
    kept = np.zeros(len(hashes), dtype=np.bool_)
    kept[first] = True
    per_pair = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(keys))))
    keep_pair = kept[per_pair]
    return ChapterLines(hashes[first], hashes[per_pair][keep_pair], keys[keep_pair])


def chapter_line_pairs(
    codes: npt.NDArray[np.uint32], chapters: Sequence[Chapter]
) -> npt.NDArray[np.int64]:
    """Each (chapter number, line key) of the chapters' bodies once, as ``number << 32 | key``,
    sorted: the same as keying each body's lines apart (a body starts at a line end and ends at
    a line start), made for the whole document at once rather than chapter by chapter."""
    keys = line_key_array(codes)
    newlines = np.flatnonzero(codes == ord("\n"))
    line_starts = np.concatenate(([0], newlines + 1))
    line_ends = np.append(newlines, len(codes))
    chapter_of_line = np.full(len(keys), -1, dtype=np.int64)
    for number, chapter in enumerate(chapters):
        first = np.searchsorted(line_starts, chapter.body_start, side="left")
        last = np.searchsorted(line_ends, chapter.end, side="right")
        chapter_of_line[first:last] = number
    kept = (chapter_of_line >= 0) & (keys >= 0)
    # A key has 32 bits: chapter and key fit one number, and one sort makes them unique.
    return sorted_unique((chapter_of_line[kept] << 32) | keys[kept])


def chapter_line_keys(
    codes: npt.NDArray[np.uint32], chapters: Sequence[Chapter]
) -> npt.NDArray[np.int64]:
    """The line keys of each chapter's body, once per chapter."""
    return chapter_line_pairs(codes, chapters) & 0xFFFFFFFF


def repeated_lines(learned: Iterable[LearnedFile]) -> RepeatedLines:
    """Per source, the keys of the lines it repeats in enough of its distinct chapters (files
    in scan order, a chapter counted where it is first seen)."""
    repeated: RepeatedLines = {}
    for source, lines in merged_line_counts(file.line_counts for file in learned).items():
        keys, times = key_counts([lines.pair_keys])
        needed = repeated_lines_needed(len(lines.chapters))
        repeated[source] = frozenset(keys[times >= needed].tolist())
    return repeated


def read_once(files: Sequence[FoundFile], config: ScanConfig) -> npt.NDArray[np.bool_]:
    """Which files are learned from and prepared in one read: those alone in their source,
    whose repeated lines are then theirs alone to learn. Not when some file can hold documents
    of other sources (an archive's folders, records naming their source), whose lines would
    count towards those sources too. Each file is looked at once (a crawl's files are read
    back from disk, ``FoundFiles``: each look makes a file's record again)."""
    sources: dict[str, int] = {}
    formats: set[str] = set()
    source_of = np.empty(len(files), dtype=np.int64)
    for number, file in enumerate(files):
        source_of[number] = sources.setdefault(file.source, len(sources))
        formats.add(file.format)
    if "zip" in formats or (config.source_fields and not formats.isdisjoint(RECORD_FORMATS)):
        return np.zeros(len(files), dtype=np.bool_)
    alone: npt.NDArray[np.bool_] = np.bincount(source_of, minlength=len(sources))[source_of] == 1
    return alone


# On a cluster (dedup.engine.shuffle), the workers that learn from the files keep their line
# keys, which grow with the dump (docs/performance.md), and hand back each source's
# distinct chapters alone. This process marks which of a batch's chapters are first seen in
# it; the workers then count the keys of those chapters in partitions by key, and only the
# repeated keys come back: the same keys repeated_lines finds from the whole.


def merged_learned(files: list[LearnedFile]) -> LearnedFile:
    """Files learned from (consecutive in the scan) as one: what a cluster's worker keeps of
    a batch of them."""
    return LearnedFile(
        merged_line_counts(file.line_counts for file in files),
        tuple(chapters for file in files for chapters in file.chapters),
        sum(file.seconds for file in files),
    )


@dataclass(frozen=True, slots=True)
class LearnedFiles:
    """Consecutive files learned from, as a cluster's worker hands them back (their line keys
    and chapters kept there: :func:`line_counts_of`, :func:`chapters_of`), as one: each
    source's chapters' hashes, one file's after another, and how many inputs each file has.
    A record a file cost this process some tens of microseconds of its one core a page of a
    crawl stored a page a file (docs/performance.md)."""

    chapters: dict[str, npt.NDArray[np.int64]]  # by source, in the order first met
    inputs: npt.NDArray[np.int64]  # of each file
    seconds: float

    @classmethod
    def of(cls, learned: Sequence[LearnedFile]) -> LearnedFiles:
        parts: dict[str, list[npt.NDArray[np.int64]]] = {}
        for file in learned:
            for source, lines in file.line_counts.items():
                parts.setdefault(source, []).append(lines.chapters)
        return cls(
            {source: concatenated(hashes, np.int64) for source, hashes in parts.items()},
            np.array([len(file.chapters) for file in learned], dtype=np.int64),
            sum(file.seconds for file in learned),
        )

    @property
    def files(self) -> int:
        return len(self.inputs)


def learned_back(learned: list[LearnedFile]) -> list[LearnedFiles]:
    """A piece of a batch's files learned from, as its worker hands them back: as one."""
    return [LearnedFiles.of(learned)]


class DistinctChapters:
    """Of files learned from (a batch's, handed back a piece at a time as
    :func:`learned_back` leaves them), each source's distinct chapters' hashes, in the order
    the worker that merged the batch keeps their keys (:func:`merged_learned`). Each piece's
    hashes alone are held until the batch is :meth:`taken`: a batch of 32 MB of pages is
    thousands of files, the largest item of the learn pass's peak (docs/performance.md)."""

    def __init__(self) -> None:
        self._parts: dict[str, list[npt.NDArray[np.int64]]] = {}

    def add(self, learned: LearnedFiles) -> None:
        """The next files of the batch."""
        for source, chapters in learned.chapters.items():
            self._parts.setdefault(source, []).append(chapters)

    def taken(self) -> dict[str, npt.NDArray[np.int64]]:
        """The batch's distinct chapters by source (the sources in the order first met, as
        :func:`merged_line_counts` orders them); then empty, for the next batch."""
        distinct = {}
        for source, parts in self._parts.items():
            hashes = concatenated(parts, np.int64)
            distinct[source] = hashes[_first_seen_rows(hashes)]
        self._parts = {}
        return distinct


def _first_seen_rows(hashes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The rows of ``hashes`` where each value is first seen, in order: a chapter's, where
    chapters are kept in the order first seen (a file's, a batch's, their merge)."""
    _unique, first = np.unique(hashes, return_index=True)
    first.sort()
    return first


def line_counts_of(learned: LearnedFile) -> LineCounts:
    """Each source's chapters and the line keys of each (what a cluster's worker keeps)."""
    return learned.line_counts


def chapters_of(learned: LearnedFile) -> FileChapters:
    """Each input's chapters (what a cluster's worker keeps for the main pass)."""
    return learned.chapters


@dataclass(frozen=True, slots=True)
class FirstChapters:
    """Of batches of files learned from (consecutive, in the scan's order), which of each
    batch's distinct chapters of each source (in :func:`merged_learned`'s order) are first
    seen in that batch; the sources, numbered; and per source (by number) in how many
    chapters a line must occur to be repeated."""

    first: tuple[dict[str, npt.NDArray[np.bool_]], ...]  # per batch, per source
    sources: tuple[str, ...]
    needed: npt.NDArray[np.int64]

    @classmethod
    def of(cls, batches: Sequence[Mapping[str, npt.NDArray[np.int64]]]) -> FirstChapters:
        """From each batch's distinct chapters (:func:`distinct_chapters`)."""
        held: dict[str, list[tuple[int, npt.NDArray[np.int64]]]] = {}
        for batch, by_source in enumerate(batches):
            for source, hashes in by_source.items():
                held.setdefault(source, []).append((batch, hashes))
        first: list[dict[str, npt.NDArray[np.bool_]]] = [{} for _batch in batches]
        needed = np.empty(len(held), dtype=np.int64)
        for number, (source, source_batches) in enumerate(held.items()):
            hashes = concatenated([chapters for _batch, chapters in source_batches], np.int64)
            _unique, seen_first = np.unique(hashes, return_index=True)
            flags = np.zeros(len(hashes), dtype=np.bool_)
            flags[seen_first] = True
            bounds = np.cumsum([len(chapters) for _batch, chapters in source_batches])[:-1]
            for (batch, _chapters), batch_flags in zip(
                source_batches, np.split(flags, bounds), strict=True
            ):
                first[batch][source] = batch_flags
            needed[number] = repeated_lines_needed(len(seen_first))
        sources = tuple(held)
        return cls(tuple(first), sources, needed)

    def numbers(self) -> dict[str, int]:
        return {source: number for number, source in enumerate(self.sources)}

    def repeated(self, codes: npt.NDArray[np.int64]) -> RepeatedLines:
        """The lines each source repeats, from the codes :func:`partition_repeated` found."""
        ordered = np.sort(codes)
        bounds = np.searchsorted(ordered >> 32, np.arange(len(self.sources) + 1))
        return {
            source: frozenset((ordered[low:high] & 0xFFFFFFFF).tolist())
            for source, low, high in zip(self.sources, bounds[:-1], bounds[1:], strict=True)
        }


def line_entries(
    batches: Sequence[LineCounts],
    first: Sequence[dict[str, npt.NDArray[np.bool_]]],
    numbers: dict[str, int],
    partitions: int,
) -> list[npt.NDArray[np.int64]]:
    """The line keys of the chapters first seen in each batch (``first``: FirstChapters'),
    as ``source number << 32 | key``, split into ``partitions`` by that code."""
    codes = []
    for counts, firsts in zip(batches, first, strict=True):
        for source, lines in counts.items():
            taken = np.isin(lines.pair_chapters, lines.chapters[firsts[source]])
            codes.append((np.int64(numbers[source]) << 32) | lines.pair_keys[taken])
    joined = concatenated(codes, np.int64)
    return [joined[rows] for rows in partitioned(joined.view(np.uint64), partitions)]


def partition_repeated(
    parts: Sequence[npt.NDArray[np.int64]], needed: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Of one partition's codes from every batch (:func:`line_entries`), those of lines in
    enough chapters of their source (``needed``, by source number) to be repeated."""
    codes, times = key_counts(list(parts))
    repeated: npt.NDArray[np.int64] = codes[times >= needed[codes >> 32]]
    return repeated
