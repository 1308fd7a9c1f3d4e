"""The scan, as the list of its stages.

read -> segment -> normalize -> fingerprint run per file in worker processes (``prepare_file``);
candidates -> verify -> cluster -> report run once over all passages (``scan``). Every stage is
timed; results never depend on the number of workers or the order of the input paths.
"""

from __future__ import annotations

import codecs
import contextlib
import gc
import itertools
import logging
import multiprocessing
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from dedup.arrays import concatenated, key_counts, sorted_unique
from dedup.candidates import candidate_pairs, lsh_params
from dedup.cluster import cluster_pairs
from dedup.codepoints import code_points
from dedup.config import ScanConfig
from dedup.copies import CopyFilter, forget_scan, new_scan
from dedup.errors import InputPathError
from dedup.fingerprint import SignatureTable, signatures
from dedup.lifetime import die_with_parent
from dedup.memory import release_freed_memory
from dedup.models import (
    Chapter,
    Cluster,
    Document,
    DocumentKey,
    InputFile,
    Passage,
    PassageSpan,
    Report,
    Skipped,
    SpanTable,
    Summary,
)
from dedup.normalize import (
    BATCH_CHARS,
    NormalizeConfig,
    NormalizeStats,
    in_batches,
    line_key_array,
    normalize,
    normalize_many,
    prepare_tables,
    repeated_lines_needed,
)
from dedup.read import (
    RECORD_FORMATS,
    FoundFile,
    ReadResult,
    discover_inputs,
    file_stamp,
    read_bytes,
    read_file,
)
from dedup.read.byte_spans import NOT_IN_BYTES, byte_offsets, texts_at
from dedup.read.containers import InputTooLarge
from dedup.read.decode import DecodeFailure
from dedup.segment import (
    ChapterTable,
    ChapterWindows,
    chapter_windows,
    split_chapters,
    split_passages,
    text_hashes,
)
from dedup.verify import SimilarityTable, verify_table

T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclass
class StageTimer:
    seconds: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - started)

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


@dataclass(frozen=True, slots=True)
class PreparedInput:
    """What one worker hands back for one input: its passages and their fingerprints."""

    entry: InputFile | None
    skipped: Skipped | None
    passages: SpanTable
    # None for a copy of a text this worker handed back for this or an earlier file (copies.py)
    normalized: tuple[str | None, ...]
    hashes: npt.NDArray[np.int64]  # two of each normalized text (equal texts, equal hashes)
    signatures: npt.NDArray[np.uint32]
    too_short: int
    # Per passage, where its text is in the file's bytes (start, end), or NOT_IN_BYTES twice.
    byte_spans: npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class PreparedFile:
    inputs: tuple[PreparedInput, ...]
    seconds: dict[str, float]


def prepare_file(
    file: FoundFile,
    config: ScanConfig,
    repeated: RepeatedLines | None = None,
    chapters: FileChapters = (),
    copies: CopyFilter | None = None,
) -> PreparedFile:
    """read -> segment -> normalize -> fingerprint for one file (every input inside it);
    ``chapters`` are those the learn pass found in it, if it ran; with ``copies``, texts
    handed back before are left out (see dedup.copies)."""
    timer = StageTimer()
    results = read_file(file, config)
    prepared: list[PreparedInput] = []
    for number in itertools.count():
        with timer("read"):
            result = next(results, None)
        if result is None:
            break
        known = chapters[number] if number < len(chapters) else ()
        prepared.append(
            _prepare_input(result, config, repeated or {}, known, timer, _whole_size(file), copies)
        )
    return PreparedFile(tuple(prepared), timer.seconds)


def _whole_size(file: FoundFile) -> int | None:
    """The size in bytes of ``file`` when its one input is all of its bytes as they are on
    disk (not an archive's entry, not compressed), else None."""
    if file.format != "txt" or file.compression is not None or file.stamp is None:
        return None
    return file.stamp[0]


def _prepare_input(
    result: ReadResult,
    config: ScanConfig,
    repeated: RepeatedLines,
    known: Sequence[ChapterTable | None],
    timer: StageTimer,
    whole_size: int | None = None,
    copies: CopyFilter | None = None,
) -> PreparedInput:
    """read -> .. fingerprint for one input; ``whole_size``: see _whole_size."""
    if result.skipped is not None:
        return _skipped_input(result.skipped, config)
    try:
        windows, chapter_count, records, stats = _segment_and_normalize(
            result, config, repeated, known, timer
        )
    except (DecodeFailure, InputTooLarge) as failure:
        # Only a large file read as a stream can fail part way; none of it is used.
        reason = (
            str(failure) or f"larger than {config.max_file_mb} MB; raise --max-file-mb to read it"
        )
        return _skipped_input(Skipped(result.path, reason), config)
    lengths = np.fromiter(map(len, windows.texts), dtype=np.int64, count=len(windows.texts))
    kept = np.flatnonzero(lengths >= config.min_passage_chars)
    converted = int(np.count_nonzero(windows.converted[kept] >= CONVERTED_PASSAGE))
    stats.add("passages-converted", converted)

    texts = tuple(windows.texts[i] for i in kept.tolist())
    hashes = windows.hashes[kept]
    # Copies of texts this worker handed back already go back without their text, and without
    # a signature (zeros): the main process uses neither, only the first passage of each text.
    handing_back = np.ones(len(texts), dtype=np.bool_) if copies is None else copies.keep(hashes)
    with timer("fingerprint"):
        fingerprints = _signatures_of(texts, handing_back, config)

    entry = InputFile(
        path=result.path,
        source=result.source,
        format=result.format,
        encoding=result.encoding,
        records=records if result.format in RECORD_FORMATS else 0,
        chapters=chapter_count,
        passages=len(kept),
        warnings=tuple(result.warnings),
        normalization=dict(sorted(stats.counts.items())),
    )
    passages = windows.spans.take(kept)
    if config.source_fields:
        entry = replace(entry, passages_by_source=_passages_by_source(passages, result.source))
    with timer("segment"):
        byte_spans = _byte_spans(result, passages, whole_size, config)
    handed_back = tuple(
        text if handing else None
        for text, handing in zip(texts, handing_back.tolist(), strict=True)
    )
    return PreparedInput(
        entry,
        None,
        passages,
        handed_back,
        hashes,
        fingerprints,
        len(lengths) - len(kept),
        byte_spans,
    )


def _passages_by_source(passages: SpanTable, own: str) -> dict[str, int]:
    """Passages per source their records name; empty when all are the file's own source."""
    sources = [source for source, _path, _record, _id in passages.documents]
    counts = np.bincount(passages.document, minlength=len(sources)).tolist()
    by_source: dict[str, int] = {}
    for source, count in zip(sources, counts, strict=True):
        if count:
            by_source[source] = by_source.get(source, 0) + count
    return {} if set(by_source) <= {own} else dict(sorted(by_source.items()))


def _signatures_of(
    texts: Sequence[str], handing_back: npt.NDArray[np.bool_], config: ScanConfig
) -> npt.NDArray[np.uint32]:
    """The signatures of the texts handed back; zeros for the others."""
    if handing_back.all():
        return signatures(texts, config.ngram, config.num_perm, config.seed)
    rows = np.flatnonzero(handing_back)
    made = np.zeros((len(texts), config.num_perm), dtype=np.uint32)
    made[rows] = signatures(
        [texts[row] for row in rows.tolist()], config.ngram, config.num_perm, config.seed
    )
    return made


def _byte_spans(
    result: ReadResult, passages: SpanTable, whole_size: int | None, config: ScanConfig
) -> npt.NDArray[np.int32]:
    """Where each passage's text is in the bytes of its file, when the input's one document
    is those bytes decoded as UTF-8, nothing replaced (after a byte-order mark, if any)."""
    unknown = np.full((len(passages), 2), NOT_IN_BYTES, dtype=np.int32)
    if whole_size is None or whole_size >= 1 << 31 or not isinstance(result.documents, tuple):
        return unknown
    try:
        encoding = codecs.lookup(result.encoding).name
    except LookupError:
        return unknown
    if encoding not in ("utf-8", "utf-8-sig") or len(result.documents) != 1:
        return unknown
    (document,) = result.documents
    if document.base or (config.errors != "strict" and "\ufffd" in document.text):
        return unknown
    ends = np.append(passages.end, len(document.text))
    offsets = byte_offsets(document.text, np.concatenate((passages.start, ends)))
    mark = whole_size - int(offsets[-1])  # the bytes before the text: a byte-order mark
    if mark not in ((0, len(codecs.BOM_UTF8)) if encoding == "utf-8-sig" else (0,)):
        return unknown
    return (offsets[:-1] + mark).reshape(2, -1).T.astype(np.int32)


def _skipped_input(skipped: Skipped, config: ScanConfig) -> PreparedInput:
    empty = np.empty((0, config.num_perm), dtype=np.uint32)
    no_hashes = np.empty((0, 2), dtype=np.int64)
    no_spans = np.empty((0, 2), dtype=np.int32)
    return PreparedInput(None, skipped, SpanTable.of(()), (), no_hashes, empty, 0, no_spans)


@dataclass
class _InputWindows:
    """The passages of one input as they are cut, chapter by chapter, in columns."""

    texts: list[str] = field(default_factory=list)
    chapters: list[tuple[ChapterWindows, DocumentKey, int | None, str | None]] = field(
        default_factory=list
    )

    def add(self, windows: ChapterWindows, document: Document, chapter: Chapter) -> None:
        self.texts += windows.texts
        key = (document.source, document.path, document.record, document.record_id)
        self.chapters.append((windows, key, chapter.index, chapter.title))

    @property
    def converted(self) -> npt.NDArray[np.float64]:
        return concatenated([windows.converted for windows, *_rest in self.chapters], np.float64)

    @property
    def hashes(self) -> npt.NDArray[np.int64]:
        parts = [windows.hashes for windows, *_rest in self.chapters]
        return concatenated(parts, np.int64, columns=2)

    @property
    def spans(self) -> SpanTable:
        documents: dict[DocumentKey, int] = {}
        titles: dict[str | None, int] = {}
        sizes = [len(windows.texts) for windows, *_rest in self.chapters]

        def each(values: list[int]) -> npt.NDArray[np.int64]:
            return np.repeat(np.array(values, dtype=np.int64), sizes)

        document = [documents.setdefault(key, len(documents)) for _w, key, _c, _t in self.chapters]
        title = [titles.setdefault(title, len(titles)) for _w, _k, _c, title in self.chapters]
        return SpanTable(
            tuple(documents),
            tuple(titles),
            each(document),
            each([-1 if number is None else number for _w, _k, number, _t in self.chapters]),
            each(title),
            concatenated([windows.starts for windows, *_rest in self.chapters], np.int64),
            concatenated([windows.ends for windows, *_rest in self.chapters], np.int64),
        )


def _segment_and_normalize(
    result: ReadResult,
    config: ScanConfig,
    repeated: RepeatedLines,
    known: Sequence[ChapterTable | None],
    timer: StageTimer,
) -> tuple[_InputWindows, int, int, NormalizeStats]:
    windows = _InputWindows()
    chapters_seen: set[tuple[int | None, int]] = set()
    stats = NormalizeStats()
    records = 0
    carry: Chapter | None = None  # the chapter a streamed piece goes on with
    next_index = 0
    documents = iter(result.documents)
    for number in itertools.count():
        with timer("read"):  # a streamed file is read as its documents are asked for
            document = next(documents, None)
        if document is None:
            break
        records += not document.continued
        with timer("segment"):
            if not document.continued:
                carry, next_index = None, 0
            table = known[number] if number < len(known) else None
            if table is not None and table.text_length == len(document.text):
                chapters = table.chapters()  # a document read afresh, as the learn pass read it
            else:
                chapters = split_chapters(document, carry, next_index)
        numbers = [c.index for c in chapters if c.index is not None]
        chapters_seen.update((document.record, number) for number in numbers)
        if chapters:
            carry = chapters[-1]
            next_index = max(numbers, default=next_index - 1) + 1
        normalize_config = NormalizeConfig(
            script=config.script,
            skip=frozenset(config.skip_steps),
            repeated_lines=repeated.get(document.source, frozenset()),
        )
        blocks = [
            Chapter(chapter.index, chapter.title, chapter.start, block_start, block_end)
            for chapter in chapters
            for block_start, block_end in _blocks(document.text, chapter)
        ]
        for batch in _batches(blocks):
            with timer("normalize"):
                texts = [document.text[block.body_start : block.end] for block in batch]
                normalized, batch_stats = normalize_many(texts, normalize_config)
            stats.merge(batch_stats)
            with timer("segment"):
                for block, text in zip(batch, normalized, strict=True):
                    cut = chapter_windows(
                        document, block, text, config.passage_chars, config.passage_overlap
                    )
                    windows.add(cut, document, block)
    return windows, len(chapters_seen), records, stats


# LSH is tuned for a Jaccard threshold of at most this (the default threshold), whatever
# --threshold is: stricter
# thresholds are applied by exact verification. Pairs found only by containment (a scene inside
# a longer passage) have a lower Jaccard similarity than the threshold, and a scan at a stricter
# threshold finds exactly the pairs a looser scan found that pass it (so `dedup report
# --threshold` equals a fresh scan).
CANDIDATE_CEILING = 0.4
# A passage counts as converted from the other script when script conversion changed at least
# this share of its characters (a Simplified text has a few characters OpenCC touches anyway).
CONVERTED_PASSAGE = 0.02
RepeatedLines = dict[str, frozenset[int]]
# Per source: its distinct chapters of a file (chapter_lines), merged across files by
# _repeated_lines.
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


def count_line_keys(file: FoundFile, config: ScanConfig) -> LearnedFile:
    """Per source: how many chapters, and in how many of them each line occurs."""
    started = time.perf_counter()
    learned = _count_line_keys(read_file(file, config))
    return replace(learned, seconds=time.perf_counter() - started)


def learn_and_prepare(
    file: FoundFile, config: ScanConfig, copies: CopyFilter | None = None
) -> PreparedFile:
    """``prepare_file`` for a file that is the only one of its source: the lines its source
    repeats are learned from it alone, so both passes are made from one read of it (a file
    read as a stream, which cannot be gone through twice, is read twice)."""
    timer = StageTimer()
    results: list[ReadResult] = []
    with timer("read"):
        for result in read_file(file, config):
            if not isinstance(result.documents, tuple):  # a stream
                learned = count_line_keys(file, config)
                repeated = _repeated_lines([learned])
                prepared = prepare_file(file, config, repeated, learned.chapters, copies)
                prepared.seconds["learn-lines"] = learned.seconds
                return prepared
            results.append(result)
    with timer("learn-lines"):
        learned = _count_line_keys(results)
        repeated = _repeated_lines([learned])
    inputs = tuple(
        _prepare_input(result, config, repeated, known, timer, _whole_size(file), copies)
        for result, known in zip(results, learned.chapters, strict=True)
    )
    return PreparedFile(inputs, timer.seconds)


def _count_line_keys(results: Iterable[ReadResult]) -> LearnedFile:
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


def _repeated_lines(learned: Iterable[LearnedFile]) -> RepeatedLines:
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


def _second_pass(
    file: FoundFile,
    config: ScanConfig,
    at_once: bool,
    repeated: RepeatedLines,
    chapters: FileChapters,
    copies: CopyFilter,
) -> PreparedFile:
    """The main pass over one file: learned from as it is prepared when it is read once
    (alone in its source), else prepared with what the learn pass found (if it ran)."""
    if at_once:
        return learn_and_prepare(file, config, copies)
    return prepare_file(file, config, repeated, chapters, copies)


def _read_once(files: Sequence[FoundFile], config: ScanConfig) -> list[bool]:
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


# A chapter body longer than this is normalized and windowed in blocks, cut at a sentence end
# (or a line end), so that a 200 MB file with no headings or line breaks needs memory for one
# block at a time rather than for the whole file several times over.
BLOCK_CHARS = 1 << 20
_BLOCK_END = re.compile(r"[。！？!?…\n][」』”’\"'）)]*")


def _blocks(text: str, chapter: Chapter) -> list[tuple[int, int]]:
    start, end = chapter.body_start, chapter.end
    blocks = []
    while end - start > BLOCK_CHARS:
        limit = start + BLOCK_CHARS
        window = text[limit - BLOCK_CHARS // 4 : limit]
        ends = [match.end() for match in _BLOCK_END.finditer(window)]
        cut = limit - BLOCK_CHARS // 4 + ends[-1] if ends else limit
        blocks.append((start, cut))
        start = cut
    blocks.append((start, end))
    return blocks


def _batches(blocks: list[Chapter]) -> Iterator[list[Chapter]]:
    """The chapter blocks in batches of about BATCH_CHARS characters, normalized together."""
    return in_batches(blocks, (block.end - block.body_start for block in blocks), BATCH_CHARS)


@contextlib.contextmanager
def _workers(config: ScanConfig, files: int) -> Iterator[ProcessPoolExecutor | None]:
    """The worker pool for a scan (None when one worker will do): read to fingerprint runs
    per file in it, and verification in chunks of pairs."""
    workers = min(config.worker_count, max(1, files))
    if workers == 1:
        yield None
        return
    _warm_up(config)
    # fork where the platform has it: a library caller's script needs no __main__ guard, and
    # workers start with the lookup tables built and the loops compiled.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    executor = ProcessPoolExecutor(
        workers, mp_context=context, initializer=die_with_parent, initargs=(os.getpid(),)
    )
    try:
        yield executor
    except BaseException:
        # An interrupt or an error: the workers' tasks are of no more use; stop them now
        # rather than wait for each to finish its file.
        for process in list(getattr(executor, "_processes", {}).values()):
            process.terminate()
        executor.shutdown(wait=True, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a scan (and its workers, forked inside): the scan
    makes records by the million (spans, passages, pairs) and no reference cycles to speak of
    (a 100 MB scan leaves some 400 unreachable objects), so every collection would walk the
    records again for nothing. At 1 GB the main process spent 3 s less (clustering 4.0 s ->
    2.8 s, member texts 5.5 s -> 4.7 s).

    Afterwards the records the scan made are moved to the oldest generation, as if they had
    survived collections (which they would: they are the report): otherwise the first young
    collection after the scan walks them all (0.4 s after a 1 GB scan). Not when the caller has
    frozen objects of its own, which moving would unfreeze."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()  # every tracked object into the permanent generation...
            gc.unfreeze()  # ...and from there into the oldest one
        if enabled:
            gc.enable()


@dataclass
class Prepared:
    """All the workers handed back, merged: one entry per passage of the dump, in file order.
    Each file's result is merged as it arrives and then let go, so that the passages' texts and
    signatures are held once, not twice."""

    signatures: SignatureTable
    span_parts: list[SpanTable] = field(default_factory=list)
    files: list[FoundFile] = field(default_factory=list)
    spans_per_file: list[int] = field(default_factory=list)
    normalized: list[str | None] = field(default_factory=list)
    hashes: list[npt.NDArray[np.int64]] = field(default_factory=list)
    byte_span_parts: list[npt.NDArray[np.int32]] = field(default_factory=list)
    inputs: list[InputFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    too_short: int = 0

    def add(self, file: FoundFile, result: PreparedFile) -> None:
        for item in result.inputs:
            self.span_parts.append(item.passages)
            self.files.append(file)
            self.spans_per_file.append(len(item.passages))
            self.normalized += item.normalized
            self.hashes.append(item.hashes)
            self.byte_span_parts.append(item.byte_spans)
            self.signatures.append(item.signatures)
            if item.entry is not None:
                self.inputs.append(item.entry)
            if item.skipped is not None:
                self.skipped.append(item.skipped)
            self.too_short += item.too_short

    def spans(self) -> tuple[SpanTable, npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Every passage's span, the index in ``files`` of the file it is in, and where it is in
        that file's bytes (see PreparedInput.byte_spans); the parts they were made of let go."""
        file_of = np.repeat(np.arange(len(self.files)), self.spans_per_file)
        spans = SpanTable.concatenate(self.span_parts)
        byte_spans = concatenated(self.byte_span_parts, np.int32, columns=2)
        self.span_parts.clear()
        self.byte_span_parts.clear()
        return spans, file_of, byte_spans


def _warm_up(config: ScanConfig) -> None:
    """Build the lookup tables and compile the loops (or load them from numba's cache) on a
    tiny chapter, once, before the workers fork, so that they inherit them all."""
    prepare_tables()
    text = "第一章 预热\n" + "他说什么著書，一路预热。" * 100
    line_key_array(code_points(text))
    document = Document("warm-up", "warm-up", None, text)
    for chapter in split_chapters(document):
        body = text[chapter.body_start : chapter.end]
        windows = split_passages(document, chapter, normalize(body), config.passage_chars)
        signatures([w.normalized for w in windows], config.ngram, config.num_perm, config.seed)


def _prepare_all(
    files: Sequence[FoundFile],
    config: ScanConfig,
    timer: StageTimer,
    executor: ProcessPoolExecutor | None,
) -> Prepared:
    """Every file read, segmented, normalized and fingerprinted. First the lines each source
    repeats are learned from the files of sources with several (a file alone in its source is
    learned from as it is prepared), then every file is prepared, in order."""
    learning = "repeated-lines" not in config.skip_steps
    # True: the file is learned from as it is prepared, in one read of it.
    at_once = _read_once(files, config) if learning else [False] * len(files)
    apart = [number for number, once in enumerate(at_once) if learning and not once]
    found = _mapped(executor, count_line_keys, [files[number] for number in apart], repeat(config))
    learned = dict(zip(apart, found, strict=True))
    for file_learned in learned.values():
        timer.add("learn-lines", file_learned.seconds)
    repeated = _repeated_lines(learned.values())
    # A copy of a text a worker already handed back comes back as None (see dedup.copies).
    scan = new_scan()
    results = _mapped(
        executor,
        _second_pass,
        files,
        repeat(config),
        at_once,
        repeat(repeated),
        [learned[number].chapters if number in learned else () for number in range(len(files))],
        [CopyFilter(scan, number) for number in range(len(files))],
    )
    learned.clear()
    prepared = Prepared(SignatureTable(config.num_perm))
    progress: dict[str, Any] = {
        "total": len(files),
        "unit": "file",
        "disable": not config.show_progress,
        "leave": False,
    }
    try:
        for file, result in zip(
            files, tqdm(results, desc="read+fingerprint", **progress), strict=True
        ):
            prepared.add(file, result)
            for stage, seconds in result.seconds.items():
                timer.add(stage, seconds)
    finally:
        forget_scan(scan)  # this process's table, when the files were prepared here
    return prepared


def _mapped(
    executor: Executor | None, function: Callable[..., T], *arguments: Iterable[Any]
) -> Iterator[T]:
    """``map`` in the workers (one call a task), or here when there are none."""
    if executor is None:
        return map(function, *arguments)
    return executor.map(function, *arguments, chunksize=1)


@dataclass(frozen=True, slots=True)
class NormalizedFile:
    """``dedup normalize``: a file's chapters as dedup compares them, and what each step did."""

    path: str
    encoding: str
    chapters: tuple[tuple[str | None, str], ...]
    stats: NormalizeStats
    warnings: tuple[str, ...]


def normalize_file(
    path: str, config: ScanConfig, data: bytes | None = None, explain: bool = False
) -> NormalizedFile:
    """Normalize one file (or ``data``, read from standard input) with the scan's own steps;
    the lines it repeats across its own chapters are learned from it alone."""
    if data is not None:
        results = [read_bytes("-", "stdin", "txt", data, config)]
    else:
        files, skipped = discover_inputs([path])
        if skipped or not files:
            reason = skipped[0].reason if skipped else "no file to read"
            raise InputPathError(f"{path}: {reason}")
        results = list(read_file(files[0], config))
    repeated = (
        {}
        if "repeated-lines" in config.skip_steps
        else _repeated_lines([_count_line_keys(results)])
    )
    if all(result.skipped is not None for result in results):
        reasons = "; ".join(
            f"{result.skipped.path}: {result.skipped.reason}"
            for result in results
            if result.skipped is not None
        )
        raise InputPathError(reasons or f"{path}: nothing to read")
    stats = NormalizeStats()
    chapters: list[tuple[str | None, str]] = []
    warnings: list[str] = []
    for result in results:
        if result.skipped is not None:
            warnings.append(f"skipped {result.skipped.path}: {result.skipped.reason}")
            continue
        warnings += [f"{result.path}: {warning}" for warning in result.warnings]
        for document in result.documents:
            normalize_config = NormalizeConfig(
                script=config.script,
                skip=frozenset(config.skip_steps),
                repeated_lines=repeated.get(document.source, frozenset()),
                explain=explain,
            )
            for chapter in split_chapters(document):
                normalized = normalize(
                    document.text[chapter.body_start : chapter.end], normalize_config
                )
                stats.merge(normalized.stats, examples=True)
                chapters.append((chapter.title, normalized.text))
    encoding = next((result.encoding for result in results if result.skipped is None), "")
    return NormalizedFile(path, encoding, tuple(chapters), stats, tuple(warnings))


def scan(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    config: ScanConfig | None = None,
    **options: Any,
) -> Report:
    """Scan the files under ``paths`` (one path, or several) for near-duplicate passages.

    Options are :class:`ScanConfig` fields, given as a ``config`` or as keywords
    (``scan(["dump/"], threshold=0.6)``); keywords given with a ``config`` override its fields.
    """
    from dedup import __version__

    config = scan_config(config, options)
    timer = StageTimer()
    started = time.perf_counter()

    with timer("discover"):
        files, skipped = discover_inputs(path_list(paths), config.follow_links)
    with _collector_paused(), _workers(config, len(files)) as executor:
        prepared = _prepare_all(files, config, timer, executor)  # read .. fingerprint
        spans, file_of, byte_spans = prepared.spans()
        texts = prepared.normalized
        fingerprints = prepared.signatures
        with timer("candidates"):
            # Exact copies (the same normalized text) are linked directly; LSH and verification
            # run once per distinct text, so a scene copied by a hundred sites costs a hundred
            # links, not ten thousand pairs.
            hashes = concatenated(prepared.hashes, np.int64, columns=2)
            distinct, copies = _exact_copies(texts, hashes)
            candidate_threshold = min(config.threshold, CANDIDATE_CEILING)
            pairs = candidate_pairs(
                fingerprints, *lsh_params(candidate_threshold, config.num_perm), among=distinct
            )
            pairs = _without_overlapping(pairs, spans)
        with timer("verify"):
            similar = verify_table(
                pairs,
                _texts_of(texts, pairs),
                fingerprints,
                config.ngram,
                config.threshold,
                config.containment,
            )
            verified = SimilarityTable.concatenate([copies, similar])
            exact = len(copies)
        # Normalized texts and signatures are done with: free them before texts are read back.
        prepared.normalized.clear()
        prepared.hashes.clear()
        del texts, fingerprints, copies, similar
        prepared.signatures = SignatureTable(config.num_perm)
        # They were unpickled on the pool's result thread, whose malloc arena keeps their
        # memory once freed, while the member texts are made on this thread, from another arena:
        # without handing it back, a 1 GB scan held both (peak RSS 1.69 -> 2.43 GB).
        release_freed_memory()
        with timer("member texts"):
            # Only the passages that cluster are shown with their text: read it back now rather
            # than carry the text of every passage of the dump through the scan.
            members, changed = _member_passages(
                verified, spans, byte_spans, prepared.files, file_of, config, executor
            )
            if changed:
                kept = np.fromiter(members, dtype=np.int64, count=len(members))
                verified = verified.where(
                    np.isin(verified.first, kept) & np.isin(verified.second, kept)
                )
                prepared.skipped += [Skipped(path, CHANGED_WHILE_SCANNING) for path in changed]
        with timer("cluster"):
            clusters = cluster_pairs(members, verified, config.keep, config.max_cluster_size)

    inputs = tuple(prepared.inputs)
    all_skipped = sorted([*skipped, *prepared.skipped], key=lambda entry: entry.path)
    summary = _summarize(
        inputs, all_skipped, prepared.too_short, len(pairs), len(verified), clusters, exact
    )
    _check_kept_sources(config.keep, inputs)
    timer.seconds["total"] = time.perf_counter() - started
    return Report(
        dedup_version=__version__,
        options=config.to_dict(),
        summary=summary,
        inputs=inputs,
        skipped=tuple(all_skipped),
        clusters=tuple(clusters),
        timings=dict(timer.seconds),
        jobs=min(config.worker_count, max(1, len(files))),
    )


def scan_config(config: ScanConfig | None, options: dict[str, Any]) -> ScanConfig:
    """``config`` with ``options`` (ScanConfig fields) applied; a misspelt one is a
    ConfigError."""
    if config is None:
        return ScanConfig.of(**options)
    return ScanConfig.of(**{**config.to_fields(), **options}) if options else config


def path_list(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[str]:
    """The paths a caller gave, as strings: one path (a string is one path, not a list of
    one-character paths) or several."""
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(path) for path in paths]


CHANGED_WHILE_SCANNING = (
    "changed while dedup was scanning it; its passages are left out: scan again"
)


def _member_passages(
    verified: SimilarityTable,
    spans: SpanTable,
    byte_spans: npt.NDArray[np.int32],
    files: Sequence[FoundFile],
    file_of: npt.NDArray[np.int64],
    config: ScanConfig,
    executor: Executor | None,
) -> tuple[dict[int, Passage], list[str]]:
    """The passages of the verified pairs, by index, with their text read back from their
    files; and the files whose text is no longer where the scan found it (changed since),
    whose passages are left out. A file whose passages are known by their bytes is read here,
    those bytes alone; any other is read once more in the worker pool, meanwhile."""
    indexes = sorted_unique(np.concatenate((verified.first, verified.second)))
    # Rows come in file order, so each file's members are one stretch of ``indexes``.
    file_numbers, firsts = np.unique(file_of[indexes], return_index=True)
    groups = np.split(indexes, firsts[1:]) if len(indexes) else []
    found_files = [files[number] for number in file_numbers.tolist()]
    by_bytes = [bool((byte_spans[group] != NOT_IN_BYTES).all()) for group in groups]
    elsewhere = [number for number, known in enumerate(by_bytes) if not known]
    read_back = _in_any_order(
        passage_texts,
        executor,
        [found_files[number] for number in elsewhere],
        repeat(config),
        [spans.take(groups[number]) for number in elsewhere],
    )
    here = (
        (number, _texts_by_bytes(found_files[number], spans, byte_spans, groups[number]))
        for number, known in enumerate(by_bytes)
        if known
    )
    members: dict[int, Passage] = {}
    changed: list[str] = []
    for number, group_texts in itertools.chain(
        here, ((elsewhere[task], texts) for task, texts in read_back)
    ):
        if group_texts is None or None in group_texts:
            changed.append(found_files[number].path)
            continue
        passages = spans.passages(groups[number], cast(list[str], group_texts))
        members.update(zip(groups[number].tolist(), passages, strict=True))
    return members, sorted(changed)


def _texts_by_bytes(
    file: FoundFile,
    spans: SpanTable,
    byte_spans: npt.NDArray[np.int32],
    rows: npt.NDArray[np.int64],
) -> list[str] | None:
    at = byte_spans[rows]
    lengths = spans.end[rows] - spans.start[rows]
    return texts_at(
        file.fs_path, file.stamp, at[:, 0].tolist(), at[:, 1].tolist(), lengths.tolist()
    )


def _in_any_order(
    function: Callable[..., T], executor: Executor | None, *arguments: Iterable[Any]
) -> Iterator[tuple[int, T]]:
    """(number, result) of ``function`` over the arguments, as the workers finish them: the
    caller works on each result while the others are still being made, rather than waiting
    for them in order. The tasks are handed to the workers at once, before this returns."""
    if executor is None:
        return enumerate(map(function, *arguments))
    futures = {
        executor.submit(function, *call): number
        for number, call in enumerate(zip(*arguments, strict=False))
    }
    return ((futures[future], future.result()) for future in as_completed(futures))


def passage_texts(
    file: FoundFile, config: ScanConfig, spans: Sequence[PassageSpan]
) -> list[str | None]:
    """The texts of ``spans``, all in ``file``, read from it once more (None where the file no
    longer has the span: it changed after it was scanned)."""
    table = spans if isinstance(spans, SpanTable) else SpanTable.of(spans)
    keys = [(path, record) for _source, path, record, _id in table.documents]
    wanted: dict[tuple[str, int | None], list[int]] = {}
    for position, document in enumerate(table.document.tolist()):
        wanted.setdefault(keys[document], []).append(position)
    starts, ends = table.start.tolist(), table.end.tolist()
    texts: list[str | None] = [None] * len(table)
    if file.stamp is not None and file_stamp(file.fs_path) != file.stamp:
        return texts
    for result in read_file(file, config):
        for document in result.documents:
            for position in wanted.get((document.path, document.record), ()):
                start = starts[position] - document.base
                end = ends[position] - document.base
                if start >= 0 and end <= len(document.text):
                    texts[position] = document.text[start:end]
    return texts


def _texts_of(texts: list[str | None], pairs: npt.NDArray[np.int64]) -> list[str]:
    """``texts``, checked to hold the text of every passage in ``pairs``: candidates are drawn
    from the first passage of each distinct text, which always comes with its text."""
    if any(texts[index] is None for index in sorted_unique(pairs).tolist()):
        raise RuntimeError("a candidate passage came without its text: please report this bug")
    return cast(list[str], texts)


def _exact_copies(
    texts: Sequence[str | None], hashes: npt.NDArray[np.int64] | None = None
) -> tuple[npt.NDArray[np.int64], SimilarityTable]:
    """The first passage of every distinct normalized text, and a verified link from each later
    copy to that first one (Jaccard, containment and MinHash estimate 1). ``hashes``: two per
    text (segment.text_hashes, made by the workers), equal for equal texts; texts with both
    equal are copies. A later copy's text may be None (a worker need not hand it back twice:
    dedup.copies); the first of each text is always there."""
    if hashes is None:
        hashes = text_hashes(cast(Sequence[str], texts))
    if not len(hashes):  # a dump with no passage at all (every input skipped, say)
        return np.empty(0, dtype=np.int64), SimilarityTable.of([])
    by_hash = np.lexsort((hashes[:, 1], hashes[:, 0]))  # stable: the first of equals first
    ordered = hashes[by_hash]
    new_group = np.append(True, (ordered[1:] != ordered[:-1]).any(axis=1))
    starts = np.flatnonzero(new_group)
    # Each text's group is led by its first passage (the lowest index).
    leader = np.empty(len(hashes), dtype=np.int64)
    leader[by_hash] = np.repeat(by_hash[starts], np.diff(np.append(starts, len(hashes))))
    copies = np.flatnonzero(leader != np.arange(len(hashes)))
    originals = leader[copies]
    ones = np.ones(len(copies), dtype=np.float64)
    leaders = cast(list[str], [texts[index] for index in originals.tolist()])
    lengths = np.fromiter(map(len, leaders), dtype=np.int64, count=len(leaders))
    links = SimilarityTable(originals, copies, ones, ones, ones, lengths)
    distinct = np.ones(len(hashes), dtype=np.bool_)
    distinct[copies] = False
    return np.flatnonzero(distinct).astype(np.int64), links


def _without_overlapping(pairs: npt.NDArray[np.int64], spans: SpanTable) -> npt.NDArray[np.int64]:
    """Drop pairs of passages that overlap in the same text (--passage-overlap): they share
    characters because they were cut that way, not because a site copied them."""
    if not len(pairs):
        return pairs
    texts: dict[tuple[str, int | None], int] = {}
    text_of_document = [
        texts.setdefault((path, record), len(texts)) for _s, path, record, _i in spans.documents
    ]
    document = np.array(text_of_document, dtype=np.int64)[spans.document]
    first, second = pairs[:, 0], pairs[:, 1]
    overlapping = (
        (document[first] == document[second])
        & (spans.start[first] < spans.end[second])
        & (spans.start[second] < spans.end[first])
    )
    return np.asarray(pairs[~overlapping], dtype=np.int64)


def _check_kept_sources(keep: str, inputs: Sequence[InputFile]) -> None:
    """--keep source:A,B names sources; say which of them the dump does not have (a typo
    would otherwise fall back to the longest member without a word)."""
    if not keep.startswith("source:"):
        return
    named = [name.strip() for name in keep.removeprefix("source:").split(",") if name.strip()]
    present = {source for entry in inputs for source in entry.source_passages()}
    missing = [name for name in named if name not in present]
    if not missing:
        return
    fallback = (
        "clusters are represented by their longest member"
        if len(missing) == len(named)
        else "the other sources listed are used"
    )
    logger.warning(
        "--keep %s: no source named %s in this dump (%s); the sources are %s",
        keep,
        ", ".join(missing),
        fallback,
        ", ".join(sorted(present)) or "none",
    )


def _summarize(
    inputs: Sequence[InputFile],
    skipped: Sequence[Skipped],
    too_short: int,
    candidates: int,
    verified: int,
    clusters: Sequence[Cluster],
    exact_copies: int,
) -> Summary:
    return Summary(
        files=len(inputs),
        files_skipped=len(skipped),
        records=sum(entry.records for entry in inputs),
        chapters=sum(entry.chapters for entry in inputs),
        passages=sum(entry.passages for entry in inputs),
        passages_too_short=too_short,
        candidate_pairs=candidates,
        verified_pairs=verified,
        clusters=len(clusters),
        duplicated_passages=sum(len(cluster.members) for cluster in clusters),
        exact_copy_pairs=exact_copies,
    )
