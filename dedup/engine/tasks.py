"""The per-file task a worker runs: read -> segment -> normalize -> fingerprint for every input
inside one file, and what it hands back (spans, hashes, signatures; each distinct text once)."""

from __future__ import annotations

import codecs
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated
from dedup.codepoints import TextRun
from dedup.columns import (
    CountedRows,
    DocumentKeys,
    HeldColumns,
    HeldFirsts,
    HeldNumbers,
    SpanTable,
    Strings,
    int32_column,
    record_column,
)
from dedup.config import ScanConfig
from dedup.documents import PassageAlignment
from dedup.engine.byte_spans import NOT_IN_BYTES, byte_offsets
from dedup.engine.copies import CopyFilter
from dedup.errors import DecodeFailure, InputTooLarge
from dedup.fingerprint import signatures
from dedup.models import InputFile, Skipped
from dedup.normalize.repeated_lines import (
    FileChapters,
    LearnedFile,
    RepeatedLines,
    learn_lines,
    repeated_lines,
)
from dedup.read import (
    RECORD_FORMATS,
    FoundFile,
    ReadResult,
    read_file,
)
from dedup.read.jsonl import StreamWarnings
from dedup.read.slices import FileSlice
from dedup.segment import (
    ChapterTable,
)
from dedup.timing import StageTimer
from dedup.windows import input_windows


@dataclass(frozen=True, slots=True)
class PreparedInput:
    """What one worker hands back for one input: its passages and their fingerprints."""

    entry: InputFile | None
    skipped: Skipped | None
    passages: SpanTable
    # Empty for a copy of a text this worker handed back for this or an earlier file (copies.py)
    normalized: TextRun
    hashes: npt.NDArray[np.int64]  # two of each normalized text (equal texts, equal hashes)
    signatures: npt.NDArray[np.uint32]  # of the passages handed back with their text, in order
    too_short: int
    # Per run of passages (passages.run_first), where the run's text is in the file's bytes:
    # its first passage's start and its last one's end, or NOT_IN_BYTES twice.
    byte_spans: npt.NDArray[np.int32]
    alignment: PassageAlignment
    # Read as a stream, its warnings in parts: the slices of a file merge them (joined_slices).
    stream_warnings: StreamWarnings | None = None


@dataclass(frozen=True, slots=True)
class PreparedFile:
    inputs: tuple[PreparedInput, ...]
    seconds: dict[str, float]


# A passage counts as converted from the other script when script conversion changed at least
# this share of its characters (a Simplified text has a few characters OpenCC touches anyway).
CONVERTED_PASSAGE = 0.02


def prepare_file(
    file: FoundFile,
    config: ScanConfig,
    repeated: RepeatedLines | None = None,
    chapters: FileChapters = (),
    copies: CopyFilter | None = None,
    part: FileSlice | None = None,
) -> PreparedFile:
    """read -> segment -> normalize -> fingerprint for one file (every input inside it), or
    for ``part`` of it; ``chapters`` are those the learn pass found in it, if it ran; with
    ``copies``, texts handed back before are left out (see dedup.engine.copies)."""
    timer = StageTimer()
    results = read_file(file, config, part)
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
        windows, chapter_count, records, stats = input_windows(
            result, config, repeated, known, timer
        )
    except (DecodeFailure, InputTooLarge) as failure:
        # Only a large file read as a stream can fail part way; none of it is used.
        reason = (
            str(failure) or f"larger than {config.max_file_mb} MB; raise --max-file-mb to read it"
        )
        return _skipped_input(Skipped(result.path, reason), config)
    alignment = windows.alignment
    lengths = alignment.lengths
    kept = np.flatnonzero(lengths >= config.min_passage_chars)
    converted = int(np.count_nonzero(windows.converted[kept] >= CONVERTED_PASSAGE))
    stats.add("passages-converted", converted)

    texts = tuple(windows.texts[i] for i in kept.tolist())
    hashes = windows.hashes[kept]
    # Copies of texts this worker handed back already go back without their text, and without
    # a signature: the main process uses neither, only the first passage of each text.
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
    handed_back = TextRun.of(
        [
            text if handing else None
            for text, handing in zip(texts, handing_back.tolist(), strict=True)
        ]
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
        alignment.kept(kept, handing_back),
        result.warnings if isinstance(result.warnings, StreamWarnings) else None,
    )


def joined_slices(parts: Sequence[PreparedFile], config: ScanConfig) -> PreparedFile:
    """The slices of one file, each prepared by a task of its own (dedup.read.slices), as the
    one input that preparing the file in one task hands back."""
    inputs = [part.inputs[0] for part in parts]  # a slice is one input
    seconds = _summed_seconds(parts)
    skipped = next((item.skipped for item in inputs if item.skipped is not None), None)
    if skipped is not None:  # the file changed since its slices were counted
        return PreparedFile((_skipped_input(skipped, config),), seconds)
    entries = [item.entry for item in inputs if item.entry is not None]
    normalization: dict[str, int] = {}
    for entry in entries:
        for step, count in entry.normalization.items():
            normalization[step] = normalization.get(step, 0) + count
    warnings = StreamWarnings.merged(
        [item.stream_warnings for item in inputs if item.stream_warnings is not None]
    )
    passages = SpanTable.concatenate([item.passages for item in inputs])
    entry = replace(
        entries[0],
        records=sum(entry.records for entry in entries),
        chapters=sum(entry.chapters for entry in entries),
        passages=sum(entry.passages for entry in entries),
        warnings=tuple(warnings.lines()),
        normalization=dict(sorted(normalization.items())),
    )
    if config.source_fields:
        entry = replace(entry, passages_by_source=_passages_by_source(passages, entry.source))
    joined = PreparedInput(
        entry,
        None,
        passages,
        TextRun.joined([item.normalized for item in inputs]),
        concatenated([item.hashes for item in inputs], np.int64, columns=2),
        concatenated([item.signatures for item in inputs], np.uint32, columns=config.num_perm),
        sum(item.too_short for item in inputs),
        concatenated([item.byte_spans for item in inputs], np.int32, columns=2),
        PassageAlignment.concatenate([item.alignment for item in inputs]),
        warnings,
    )
    return PreparedFile((joined,), seconds)


def merged_files(prepared: list[PreparedFile]) -> PreparedFile:
    """Prepared files as one, their inputs one after another: what a cluster's worker keeps
    of a batch of files prepared by one task (dedup.engine.shuffle)."""
    inputs = tuple(item for result in prepared for item in result.inputs)
    return PreparedFile(inputs, _summed_seconds(prepared))


def _summed_seconds(parts: Sequence[PreparedFile]) -> dict[str, float]:
    """Each stage's seconds over ``parts``."""
    seconds: dict[str, float] = {}
    for part in parts:
        for stage, spent in part.seconds.items():
            seconds[stage] = seconds.get(stage, 0.0) + spent
    return seconds


def signatures_of(prepared: PreparedFile) -> npt.NDArray[np.uint32]:
    """The signatures of every passage of a prepared file (of all its inputs), in order: what a
    cluster's workers keep of it (dedup.engine.shuffle)."""
    return concatenated(
        [item.signatures for item in prepared.inputs],
        np.uint32,
        columns=prepared.inputs[0].signatures.shape[1] if prepared.inputs else 1,
    )


def texts_of(prepared: PreparedFile) -> TextRun:
    """The normalized texts of every passage of a prepared file (of all its inputs), in
    order; a text not handed back (see dedup.engine.copies) is empty."""
    return TextRun.joined([item.normalized for item in prepared.inputs])


def lengths_and_steps_of(prepared: PreparedFile) -> PassageAlignment:
    """Each passage's length and lead, and the offset steps of every passage, of a prepared
    file (of all its inputs), one after another, without seeds (no lead where all are 0):
    what a cluster's workers keep of it for the align stage's look-ups and the spans'
    mapping back (dedup.engine.shuffle)."""
    alignment = PassageAlignment.concatenate([item.alignment for item in prepared.inputs])
    none = np.empty(0, np.int64)
    return replace(alignment, seeds=np.empty(0, np.uint32), seed_passage=none).without_zero_leads()


def seeds_of(prepared: PreparedFile) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """The winnowed seeds of every passage of a prepared file (of all its inputs), with the
    passage (numbered in the file) of each."""
    alignment = PassageAlignment.concatenate([item.alignment for item in prepared.inputs])
    return alignment.seeds, alignment.seed_passage


def hashes_of(prepared: PreparedFile) -> npt.NDArray[np.int64]:
    """The two hashes of every passage's normalized text of a prepared file (of all its
    inputs), in order: what a cluster's workers keep of it, to find the exact copies there."""
    return concatenated([item.hashes for item in prepared.inputs], np.int64, columns=2)


def span_ends_of(prepared: PreparedFile) -> npt.NDArray[np.int64]:
    """The start and end of every passage of a prepared file (of all its inputs), a row
    each, in order: what a cluster's workers keep of its spans (the rest comes back)."""
    starts = [item.passages.start for item in prepared.inputs]
    ends = [item.passages.end for item in prepared.inputs]
    return np.column_stack((concatenated(starts, np.int64), concatenated(ends, np.int64)))


def ends_in_runs(
    runs: Sequence[npt.NDArray[np.int64]], rows: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The start and end of each of ``rows`` (numbered from the first run's first passage)
    in consecutive runs of :func:`span_ends_of` rows: a worker's look-up of the spans it
    keeps."""
    return np.concatenate(runs)[rows]


def without_kept(prepared: PreparedFile) -> PreparedFile:
    """A prepared file as it is handed back when the workers keep its signatures, texts,
    hashes, spans' starts and ends, passages' lengths and leads, offset steps and seeds (an
    empty table of signatures and of hashes per input, spans counted, no text, no length,
    no step, no seed)."""
    inputs = tuple(
        replace(
            item,
            passages=item.passages.without_ends(),
            signatures=np.empty((0, item.signatures.shape[1]), np.uint32),
            normalized=TextRun.of(()),
            hashes=np.empty((0, 2), np.int64),
            alignment=PassageAlignment.empty(),
        )
        for item in prepared.inputs
    )
    return replace(prepared, inputs=inputs)


def passage_count(prepared: PreparedFile | PreparedFiles) -> int:
    """How many passages a prepared file (or files) holds (in all its inputs)."""
    if isinstance(prepared, PreparedFiles):
        return len(prepared.passages)
    return sum(len(item.passages) for item in prepared.inputs)


@dataclass(frozen=True, slots=True)
class PreparedFiles:
    """Consecutive files, each of one input or none, as a cluster's worker hands them back
    where the workers keep the rest (:func:`without_kept`): every input's span table one
    after another as one table, with each run's input. Handed back a record each, a file
    cost this process some forty objects to unpickle and a dozen arrays to merge, a quarter
    of a millisecond of its one core a page of a crawl stored a page a file: past eight or
    so workers, what set the scan's pace (docs/performance.md)."""

    has_input: npt.NDArray[np.bool_]  # of each file
    # Every input's spans (counted: SpanTable.without_ends), each input's documents, their
    # names and its titles its own, one input's after another: files differ, so no
    # document or title goes on from one input into the next (as a large file's pieces').
    passages: SpanTable
    name_input: npt.NDArray[np.int32]  # the input of each of the documents' names
    run_input: npt.NDArray[np.int32]  # the input of each run
    byte_spans: npt.NDArray[np.int32]  # each run's (PreparedInput.byte_spans)
    entries: tuple[InputFile | None, ...]  # each input's
    skipped: tuple[Skipped | None, ...]  # each input's
    too_short: int
    seconds: dict[str, float]

    @property
    def files(self) -> int:
        return len(self.has_input)

    @classmethod
    def of(cls, prepared: Sequence[PreparedFile]) -> PreparedFiles:
        """``prepared`` (each of one input or none, as :func:`without_kept` leaves it) as
        one."""
        if any(len(result.inputs) > 1 for result in prepared):
            raise ValueError("files of several inputs joined as files of one")
        inputs = [item for result in prepared for item in result.inputs]
        tables = [item.passages for item in inputs]
        if any(table.held is None for table in tables):
            raise ValueError("files joined with their spans' starts and ends")
        documents = [table.documents for table in tables]
        names = [len(keys.names) for keys in documents]
        rows = [len(table) for table in tables]
        labels = [table.labels.columns() for table in tables]

        def joined(parts: Sequence[npt.NDArray[Any]], sizes: Sequence[int]) -> Any:
            """``parts`` one after another, each numbering the rows of its size of ``sizes``
            (its table's), from where the tables before end."""
            bases = list(itertools.accumulate(sizes, initial=0))[:-1]
            shifted = [part.astype(np.int64) + at for part, at in zip(parts, bases, strict=True)]
            return concatenated(shifted, np.int64)

        document_keys = DocumentKeys(
            tuple(name for keys in documents for name in keys.names),
            HeldColumns(
                int32_column(joined([keys.source for keys in documents], names)),
                int32_column(joined([keys.path for keys in documents], names)),
            ),
            HeldNumbers(record_column(concatenated([k.record for k in documents], np.int64))),
            Strings.concatenate([keys.record_ids for keys in documents]),
        )
        document, chapter, title = zip(*labels, strict=True) if labels else ((), (), ())
        passages = SpanTable(
            document_keys,
            Strings.concatenate([table.titles for table in tables]),
            HeldFirsts(joined([table.run_first.column() for table in tables], rows)),
            HeldColumns(
                int32_column(joined(document, [len(keys) for keys in documents])),
                concatenated(list(chapter), np.int32),
                int32_column(joined(title, [len(table.titles) for table in tables])),
            ),
            np.empty(0, dtype=np.int64),  # their starts and ends kept by the workers
            np.empty(0, dtype=np.int64),
            CountedRows(sum(rows)),
        )
        return cls(
            np.array([len(result.inputs) == 1 for result in prepared], dtype=np.bool_),
            passages,
            np.repeat(np.arange(len(inputs), dtype=np.int32), names),
            np.repeat(np.arange(len(inputs), dtype=np.int32), [len(t.run_first) for t in tables]),
            concatenated([item.byte_spans for item in inputs], np.int32, columns=2),
            tuple(item.entry for item in inputs),
            tuple(item.skipped for item in inputs),
            sum(item.too_short for item in inputs),
            _summed_seconds(prepared),
        )


def handed_back(prepared: list[PreparedFile]) -> list[PreparedFile | PreparedFiles]:
    """A piece of a batch's prepared files as its worker hands them back where the workers
    keep the rest: as one (:class:`PreparedFiles`) where there are several and each is of
    one input or none (an archive's inputs, or a slice, a record each, as before)."""
    back = [without_kept(result) for result in prepared]
    if len(back) > 1 and all(len(result.inputs) <= 1 for result in back):
        return [PreparedFiles.of(back)]
    return list(back)


def _passages_by_source(passages: SpanTable, own: str) -> dict[str, int]:
    """Passages per source their records name; empty when all are the file's own source."""
    keys = passages.documents
    sources = [keys.names[name] for name in keys.source.tolist()]
    counts = np.bincount(
        passages.run_document, passages.run_sizes(), minlength=len(sources)
    ).astype(np.int64)
    by_source: dict[str, int] = {}
    for source, count in zip(sources, counts.tolist(), strict=True):
        if count:
            by_source[source] = by_source.get(source, 0) + count
    return {} if set(by_source) <= {own} else dict(sorted(by_source.items()))


def _signatures_of(
    texts: Sequence[str], handing_back: npt.NDArray[np.bool_], config: ScanConfig
) -> npt.NDArray[np.uint32]:
    """The signatures of the texts handed back (a row each, in order)."""
    if not handing_back.all():
        texts = [texts[row] for row in np.flatnonzero(handing_back).tolist()]
    return signatures(texts, config.ngram, config.num_perm, config.seed)


def _byte_spans(
    result: ReadResult, passages: SpanTable, whole_size: int | None, config: ScanConfig
) -> npt.NDArray[np.int32]:
    """Where the text of each run of ``passages`` is in the bytes of its file, when the
    input's one document is those bytes decoded as UTF-8, nothing replaced (after a
    byte-order mark, if any): a document's passages are some runs, one after another."""
    firsts = passages.run_first.column()
    unknown = np.full((len(firsts), 2), NOT_IN_BYTES, dtype=np.int32)
    if not len(firsts):  # no passage (a text too short for one): nothing to place
        return unknown
    lasts = np.append(firsts[1:], len(passages)) - 1
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
    ends = np.append(passages.end[lasts], len(document.text))
    offsets = byte_offsets(document.text, np.concatenate((passages.start[firsts], ends)))
    mark = whole_size - int(offsets[-1])  # the bytes before the text: a byte-order mark
    if mark not in ((0, len(codecs.BOM_UTF8)) if encoding == "utf-8-sig" else (0,)):
        return unknown
    return (offsets[:-1] + mark).reshape(2, -1).T.astype(np.int32)


def _skipped_input(skipped: Skipped, config: ScanConfig) -> PreparedInput:
    empty = np.empty((0, config.num_perm), dtype=np.uint32)
    no_hashes = np.empty((0, 2), dtype=np.int64)
    no_spans = np.empty((0, 2), dtype=np.int32)
    return PreparedInput(
        None,
        skipped,
        SpanTable.of(()),
        TextRun.of(()),
        no_hashes,
        empty,
        0,
        no_spans,
        PassageAlignment.empty(),
    )


def count_line_keys(
    file: FoundFile, config: ScanConfig, part: FileSlice | None = None
) -> LearnedFile:
    """Per source: how many chapters, and in how many of them each line occurs (in ``part``
    of the file, if given)."""
    started = time.perf_counter()
    learned = learn_lines(read_file(file, config, part))
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
                repeated = repeated_lines([learned])
                prepared = prepare_file(file, config, repeated, learned.chapters, copies)
                prepared.seconds["learn-lines"] = learned.seconds
                return prepared
            results.append(result)
    with timer("learn-lines"):
        learned = learn_lines(results)
        repeated = repeated_lines([learned])
    inputs = tuple(
        _prepare_input(result, config, repeated, known, timer, _whole_size(file), copies)
        for result, known in zip(results, learned.chapters, strict=True)
    )
    return PreparedFile(inputs, timer.seconds)


def second_pass(
    file: FoundFile,
    config: ScanConfig,
    at_once: bool,
    repeated: RepeatedLines,
    chapters: FileChapters,
    copies: CopyFilter | None,
    part: FileSlice | None = None,
    within: slice | None = None,
) -> PreparedFile:
    """The main pass over one file (or ``part`` of it): learned from as it is prepared when
    it is read once (alone in its source, not in slices), else prepared with what the learn
    pass found (if it ran): its ``chapters``, or (on a cluster) those of its batch of the
    learn pass, of which the file's are ``within``."""
    if at_once:
        return learn_and_prepare(file, config, copies)
    own = chapters if within is None else chapters[within]
    return prepare_file(file, config, repeated, own, copies, part)
