"""One input's passages: its chapters (by their headings) normalized in blocks and batches, and
cut into passage windows, in columns (segment + normalize for one input)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated
from dedup.columns import DocumentKeys, HeldColumns, HeldFirsts, SpanTable, Strings, int32_column
from dedup.config import ScanConfig
from dedup.documents import PassageAlignment
from dedup.models import Chapter, Document, DocumentKey
from dedup.normalize import (
    BATCH_CHARS,
    NormalizeStats,
    normalize_many,
)
from dedup.normalize.repeated_lines import RepeatedLines
from dedup.read import (
    ReadResult,
)
from dedup.segment import (
    ChapterTable,
    ChapterWindows,
    chapter_windows,
    split_chapters,
)
from dedup.timing import StageTimer


@dataclass
class InputWindows:
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
    def alignment(self) -> PassageAlignment:
        return PassageAlignment.concatenate([windows.alignment for windows, *_r in self.chapters])

    @property
    def spans(self) -> SpanTable:
        documents: dict[DocumentKey, int] = {}
        titles: dict[str | None, int] = {}
        sizes = np.array([len(windows.texts) for windows, *_rest in self.chapters], np.int64)
        held = np.flatnonzero(sizes)  # a chapter too short for a passage holds no run

        def each(values: list[int]) -> npt.NDArray[np.int32]:
            return int32_column(np.array(values, dtype=np.int64)[held])

        document = [documents.setdefault(key, len(documents)) for _w, key, _c, _t in self.chapters]
        title = [titles.setdefault(title, len(titles)) for _w, _k, _c, title in self.chapters]
        return SpanTable(
            DocumentKeys.of(tuple(documents)),
            Strings.of(tuple(titles)),
            HeldFirsts((np.cumsum(sizes) - sizes)[held]),
            HeldColumns(
                each(document),
                each([-1 if number is None else number for _w, _k, number, _t in self.chapters]),
                each(title),
            ),
            concatenated([windows.starts for windows, *_rest in self.chapters], np.int64),
            concatenated([windows.ends for windows, *_rest in self.chapters], np.int64),
        )


def input_windows(
    result: ReadResult,
    config: ScanConfig,
    repeated: RepeatedLines,
    known: Sequence[ChapterTable | None],
    timer: StageTimer,
) -> tuple[InputWindows, int, int, NormalizeStats]:
    windows = InputWindows()
    chapters_seen: set[tuple[int | None, int]] = set()
    stats = NormalizeStats()
    records = 0
    carry: Chapter | None = None  # the chapter a streamed piece goes on with
    next_index = 0
    # Chapter blocks are normalized together in batches of about BATCH_CHARS, across the
    # documents of the input that share a source (and so the lines it repeats): a JSON
    # Lines file of a record a chapter would otherwise pay the steps' fixed costs a record.
    batch = _Batch(windows, stats, config, timer)
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
        lines = repeated.get(document.source, _NO_LINES)
        for chapter in chapters:
            for block_start, block_end in _blocks(document.text, chapter):
                block = Chapter(chapter.index, chapter.title, chapter.start, block_start, block_end)
                batch.add(document, block, lines)
    batch.done()
    return windows, len(chapters_seen), records, stats


_NO_LINES: frozenset[int] = frozenset()


class _Batch:
    """Chapter blocks gathered until they hold BATCH_CHARS characters (or the repeated lines
    they are normalized against change), then normalized together and cut into windows, in
    the order they came."""

    def __init__(
        self, windows: InputWindows, stats: NormalizeStats, config: ScanConfig, timer: StageTimer
    ) -> None:
        self._windows, self._stats, self._config, self._timer = windows, stats, config, timer
        self._blocks: list[tuple[Document, Chapter]] = []
        self._chars = 0
        self._lines = _NO_LINES

    def add(self, document: Document, block: Chapter, lines: frozenset[int]) -> None:
        if self._blocks and lines is not self._lines and lines != self._lines:
            self.done()
        self._lines = lines
        self._blocks.append((document, block))
        self._chars += block.end - block.body_start
        if self._chars >= BATCH_CHARS:
            self.done()

    def done(self) -> None:
        """Normalize and cut the blocks gathered."""
        if not self._blocks:
            return
        normalize_config = replace(self._config.normalize, repeated_lines=self._lines)
        with self._timer("normalize"):
            texts = [
                document.text[block.body_start : block.end] for document, block in self._blocks
            ]
            normalized, batch_stats = normalize_many(texts, normalize_config)
        self._stats.merge(batch_stats)
        passage_chars, overlap = self._config.passage_chars, self._config.passage_overlap
        with self._timer("segment"):
            for (document, block), text in zip(self._blocks, normalized, strict=True):
                cut = chapter_windows(document, block, text, passage_chars, overlap)
                self._windows.add(cut, document, block)
        self._blocks, self._chars = [], 0


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
