"""The lines each source repeats in many of its chapters (site boilerplate no pattern knows),
learned from the dump before it is normalized: which files are learned from in the same read
as they are prepared, the distinct chapters of each file and their line keys, and the keys a
source repeats often enough to be dropped."""

from __future__ import annotations

import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
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


@dataclass(frozen=True, slots=True)
class SourceRuns:
    """The files' sources as runs of consecutive files of one source, each source numbered as
    first met: a site's files are found together, so a crawl of millions of files is a few
    runs, where a source's number a file (and its count's) held 16-24 B a file at once
    (docs/performance.md, the fifty-sixth session)."""

    starts: npt.NDArray[np.int64]  # each run's first file, and past the last, the files' count
    source: npt.NDArray[np.int64]  # each run's source
    names: tuple[str, ...]  # each source's, by number

    @classmethod
    def of(cls, files: Iterable[FoundFile]) -> SourceRuns:
        numbers: dict[str, int] = {}
        starts, source = array.array("q"), array.array("q")
        count = 0
        for file in files:
            number = numbers.setdefault(file.source, len(numbers))
            if not source or source[-1] != number:
                starts.append(count)
                source.append(number)
            count += 1
        starts.append(count)
        return cls(np.array(starts, np.int64), np.array(source, np.int64), tuple(numbers))

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        return np.diff(self.starts)

    def files_of_each(self) -> npt.NDArray[np.int64]:
        """How many files each source has, by number."""
        counts = np.bincount(self.source, weights=self.lengths, minlength=len(self.names))
        return counts.astype(np.int64)


def read_once(
    files: Sequence[FoundFile], config: ScanConfig
) -> tuple[SourceRuns, npt.NDArray[np.bool_]]:
    """The files' sources in runs, and which runs are a file learned from and prepared in one
    read: a file alone in its source, whose repeated lines are then its own to learn. None
    when some file can hold documents of other sources (an archive's folders, records naming
    their source), whose lines would count towards those sources too. Each file is looked at
    once (a crawl's files are read back from disk, ``FoundFiles``: each look makes a file's
    record again)."""
    formats: set[str] = set()

    def noting_formats() -> Iterator[FoundFile]:
        for file in files:
            formats.add(file.format)
            yield file

    runs = SourceRuns.of(noting_formats())
    if "zip" in formats or (config.source_fields and not formats.isdisjoint(RECORD_FORMATS)):
        return runs, np.zeros(len(runs.source), dtype=np.bool_)
    alone: npt.NDArray[np.bool_] = runs.files_of_each()[runs.source] == 1
    return runs, alone


# On a cluster (dedup.engine.shuffle), the workers that learn from the files keep their line
# keys and chapters, which grow with the dump (docs/performance.md), and hand back only which
# sources each file's chapters are of. Two shuffles count there what repeated_lines counts
# from the whole: one of each batch's distinct chapters by hash, how many distinct chapters
# each source has (how often a line must occur in them to be repeated); one of each (chapter,
# line key) pair by key, in how many distinct chapters each line occurs. A chapter seen in two
# batches (the same key set, so the same hash and pairs) is counted once in each shuffle, as
# repeated_lines counts it where it is first seen. Only the repeated keys come back.


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
    and chapters kept there: :func:`line_counts_of`, :func:`chapters_of`), as one: the
    sources of their chapters, in the order first met, and how many inputs each file has.
    A record a file cost this process some tens of microseconds of its one core a page of a
    crawl stored a page a file, and their chapters' hashes, held here to the end of the learn
    pass, some 12 B a chapter (docs/performance.md)."""

    sources: tuple[str, ...]
    inputs: npt.NDArray[np.int64]  # of each file
    seconds: float

    @classmethod
    def of(cls, learned: Sequence[LearnedFile]) -> LearnedFiles:
        sources = dict.fromkeys(source for file in learned for source in file.line_counts)
        return cls(
            tuple(sources),
            np.array([len(file.chapters) for file in learned], dtype=np.int64),
            sum(file.seconds for file in learned),
        )

    @property
    def files(self) -> int:
        return len(self.inputs)


def learned_back(learned: list[LearnedFile]) -> list[LearnedFiles]:
    """A piece of a batch's files learned from, as its worker hands them back: as one."""
    return [LearnedFiles.of(learned)]


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


def chapter_entries(
    batches: Sequence[LineCounts], numbers: Mapping[str, int], partitions: int
) -> list[npt.NDArray[np.int64]]:
    """Each batch's distinct chapters, as rows of (source number, chapter hash), split into
    ``partitions`` by the hash: a chapter of a source lies in one partition."""
    rows = [
        np.column_stack((np.full(len(lines.chapters), numbers[source], np.int64), lines.chapters))
        for counts in batches
        for source, lines in counts.items()
    ]
    return _split_rows(rows, 1, partitions)


def distinct_chapter_counts(
    parts: Sequence[npt.NDArray[np.int64]], sources: int
) -> npt.NDArray[np.int64]:
    """Of one partition's rows from every batch (:func:`chapter_entries`), how many distinct
    chapters each source (by number) has there."""
    distinct = _distinct_rows(parts)
    return np.bincount(distinct[:, 0], minlength=sources).astype(np.int64)


def line_entries(
    batches: Sequence[LineCounts], numbers: Mapping[str, int], partitions: int
) -> list[npt.NDArray[np.int64]]:
    """Each batch's (chapter, line key) pairs, as rows of (``source number << 32 | key``,
    chapter hash), split into ``partitions`` by that code: a line of a source lies in one
    partition."""
    rows = [
        np.column_stack(((np.int64(numbers[source]) << 32) | lines.pair_keys, lines.pair_chapters))
        for counts in batches
        for source, lines in counts.items()
    ]
    return _split_rows(rows, 0, partitions)


def partition_repeated(
    parts: Sequence[npt.NDArray[np.int64]], chapter_counts: Sequence[npt.NDArray[np.int64]]
) -> npt.NDArray[np.int64]:
    """Of one partition's rows from every batch (:func:`line_entries`), the codes of lines in
    enough distinct chapters of their source to be repeated: as many as
    :func:`repeated_lines_needed` asks of the source's distinct chapters, summed over every
    partition's ``chapter_counts`` (:func:`distinct_chapter_counts`)."""
    chapters = np.vstack(list(chapter_counts)).sum(axis=0)
    needed = np.array([repeated_lines_needed(int(count)) for count in chapters], np.int64)
    distinct = _distinct_rows(parts)
    codes, times = key_counts([distinct[:, 0]])
    repeated: npt.NDArray[np.int64] = codes[times >= needed[codes >> 32]]
    return repeated


def _split_rows(
    rows: list[npt.NDArray[np.int64]], column: int, partitions: int
) -> list[npt.NDArray[np.int64]]:
    """Tables of two columns joined, split into ``partitions`` by ``column``."""
    joined = concatenated(rows, np.int64, columns=2)
    return [joined[part] for part in partitioned(joined[:, column].view(np.uint64), partitions)]


def _distinct_rows(parts: Sequence[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """The distinct rows of tables of two columns joined, sorted."""
    rows = concatenated(list(parts), np.int64, columns=2)
    if not len(rows):
        return rows
    ordered = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
    new = np.ones(len(ordered), dtype=np.bool_)
    new[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    return ordered[new]


def repeated_by_source(sources: Sequence[str], codes: npt.NDArray[np.int64]) -> RepeatedLines:
    """The lines each of ``sources`` (numbered in order) repeats, from the codes
    :func:`partition_repeated` found."""
    ordered = np.sort(codes)
    bounds = np.searchsorted(ordered >> 32, np.arange(len(sources) + 1))
    return {
        source: frozenset((ordered[low:high] & 0xFFFFFFFF).tolist())
        for source, low, high in zip(sources, bounds[:-1], bounds[1:], strict=True)
    }
