"""The lines each source repeats in many of its chapters (site boilerplate no pattern knows),
learned from the dump before it is normalized: which files are learned from in the same read
as they are prepared, the distinct chapters of each file and their line keys, and the keys a
source repeats often enough to be dropped."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, key_counts, sorted_unique
from dedup.codepoints import code_points
from dedup.config import ScanConfig
from dedup.errors import DecodeFailure, InputTooLarge
from dedup.models import Chapter
from dedup.normalize import (
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


def learn_lines(results: Iterable[ReadResult]) -> LearnedFile:
    found: dict[str, list[ChapterLines]] = {}
    file_chapters: list[tuple[ChapterTable | None, ...]] = []
    for result in results:
        tables: list[ChapterTable | None] = []
        counted: list[tuple[str, ChapterLines]] = []
        try:
            for document in result.documents:
                codes = code_points(document.text)
                document_chapters = split_chapters(document, codes=codes)
                tables.append(
                    None if document.continued else ChapterTable.of(document, document_chapters)
                )
                counted.append((document.source, chapter_lines(codes, document_chapters)))
        except (DecodeFailure, InputTooLarge):
            # A large file read as a stream failed part way: the main pass lists it as
            # skipped, so none of it counts here either.
            file_chapters.append(())
            continue
        for source, lines in counted:
            found.setdefault(source, []).append(lines)
        file_chapters.append(tuple(tables))
    counts = {source: ChapterLines.merged(parts) for source, parts in found.items()}
    return LearnedFile(counts, tuple(file_chapters))


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
        _unique, first = np.unique(hashes, return_index=True)
        kept_hashes = hashes[np.sort(first)]
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
    _unique, first = np.unique(hashes, return_index=True)
    first.sort()
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
    parts: dict[str, list[ChapterLines]] = {}
    for file in learned:
        for source, lines in file.line_counts.items():
            parts.setdefault(source, []).append(lines)
    repeated: RepeatedLines = {}
    for source, source_parts in parts.items():
        lines = ChapterLines.merged(source_parts)
        keys, times = key_counts([lines.pair_keys])
        needed = repeated_lines_needed(len(lines.chapters))
        repeated[source] = frozenset(keys[times >= needed].tolist())
    return repeated


def read_once(files: Sequence[FoundFile], config: ScanConfig) -> list[bool]:
    """Which files are learned from and prepared in one read: those alone in their source,
    whose repeated lines are then theirs alone to learn. Not when some file can hold documents
    of other sources (an archive's folders, records naming their source), whose lines would
    count towards those sources too."""
    if any(file.format == "zip" for file in files) or (
        config.source_fields and any(file.format in RECORD_FORMATS for file in files)
    ):
        return [False] * len(files)
    files_per_source = Counter(file.source for file in files)
    return [files_per_source[file.source] == 1 for file in files]
