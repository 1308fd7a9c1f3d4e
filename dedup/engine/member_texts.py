"""The text of the documents that share text (that match, or hold passages that cluster),
read back from their files at the end of a scan (the scan keeps only where each passage is):
a plain UTF-8 file by the documents' bytes, here; any other read again in the workers. The
clustered passages' texts are cut from their documents'."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import repeat

import numpy as np
import numpy.typing as npt

from dedup.arrays import sorted_unique
from dedup.columns import SimilarityTable, SpanTable
from dedup.config import ScanConfig
from dedup.documents import DocumentRuns
from dedup.engine.base import Engine
from dedup.engine.byte_spans import NOT_IN_BYTES, texts_at
from dedup.engine.gather import Passages
from dedup.models import MatchedDocument, Passage, PassageSpan
from dedup.progress import progress
from dedup.read import (
    FoundFile,
    file_stamp,
    read_file,
)

CHANGED_WHILE_SCANNING = (
    "changed while dedup was scanning it; its passages are left out: scan again"
)


@dataclass(frozen=True, slots=True)
class Members:
    """The passages of the verified pairs, by index, with their text, and the verified pairs
    among them."""

    passages: dict[int, Passage]
    verified: SimilarityTable


def members_of(
    verified: SimilarityTable,
    spans: SpanTable,
    documents: DocumentRuns,
    read: Mapping[int, MatchedDocument],
) -> Members:
    """The member passages of ``verified``, their text cut from the documents holding them
    (``read``: by their numbers in ``documents``, read by :func:`read_documents`). A passage
    whose document is not there (its file changed since it was scanned) is left out, with
    its pairs."""
    indexes = sorted_unique(np.concatenate((verified.first, verified.second)))
    owners = documents.of(indexes).tolist()
    kept: list[int] = []
    holders: list[MatchedDocument] = []
    for row, owner in enumerate(owners):
        document = read.get(owner)
        if document is not None:
            kept.append(row)
            holders.append(document)
    rows = indexes[np.array(kept, dtype=np.int64)]
    members = dict(zip(rows.tolist(), spans.passages(rows, holders), strict=True))
    if len(rows) < len(indexes):
        verified = verified.where(np.isin(verified.first, rows) & np.isin(verified.second, rows))
    return Members(members, verified)


def read_texts(
    spans: SpanTable,
    byte_spans: npt.NDArray[np.int32],
    file_of: npt.NDArray[np.int64],
    files: Sequence[FoundFile],
    config: ScanConfig,
    engine: Engine,
    label: str,
) -> tuple[list[str | None], list[str]]:
    """The texts of ``spans`` (in file order; ``file_of`` indexes ``files``) read back from
    their files, and the paths of the files that changed since they were scanned (whose spans
    get None). A file whose spans are known by their bytes is read here, those bytes alone;
    any other is read once more in the workers, meanwhile."""
    rows = np.arange(len(spans))
    file_numbers, firsts = np.unique(file_of, return_index=True)
    groups = np.split(rows, firsts[1:]) if len(rows) else []
    found_files = [files[number] for number in file_numbers.tolist()]
    by_bytes = [bool((byte_spans[group] != NOT_IN_BYTES).all()) for group in groups]
    elsewhere = [number for number, known in enumerate(by_bytes) if not known]
    read_back = engine.in_any_order(
        passage_texts,
        [found_files[number] for number in elsewhere],
        repeat(config),
        [spans.take(groups[number]) for number in elsewhere],
    )
    here = (
        (number, _texts_by_bytes(found_files[number], spans, byte_spans, groups[number]))
        for number, known in enumerate(by_bytes)
        if known
    )
    texts: list[str | None] = [None] * len(spans)
    changed: list[str] = []
    # Mirror sites carry documents word for word: equal texts are held once (on a dump of
    # them, a sizable share of the report's memory: docs/performance.md).
    held: dict[str, str] = {}
    each_file = itertools.chain(here, ((elsewhere[task], got) for task, got in read_back))
    for number, group_texts in progress(
        each_file, label, "file", len(groups), config.show_progress
    ):
        if group_texts is None or None in group_texts:
            changed.append(found_files[number].path)
            continue
        for row, text in zip(groups[number].tolist(), group_texts, strict=True):
            texts[row] = text if text is None else held.setdefault(text, text)
    return texts, sorted(changed)


def _texts_by_bytes(
    file: FoundFile,
    spans: SpanTable,
    byte_spans: npt.NDArray[np.int32],
    rows: npt.NDArray[np.int64],
) -> list[str] | None:
    at = byte_spans[rows]
    starts, ends = spans.ends_of(rows)
    lengths = ends - starts
    return texts_at(
        file.fs_path, file.stamp, at[:, 0].tolist(), at[:, 1].tolist(), lengths.tolist()
    )


def passage_texts(
    file: FoundFile, config: ScanConfig, spans: Sequence[PassageSpan]
) -> list[str | None]:
    """The texts of ``spans``, all in ``file``, read from it once more (None where the file no
    longer has the span: it changed after it was scanned)."""
    table = spans if isinstance(spans, SpanTable) else SpanTable.of(spans)
    keys = [(path, record) for _source, path, record, _id in table.documents.columns()]
    wanted: dict[tuple[str, int | None], list[int]] = {}
    for position, document in enumerate(table.row_documents().tolist()):
        wanted.setdefault(keys[document], []).append(position)
    starts, ends = table.start.tolist(), table.end.tolist()
    texts: list[str | None] = [None] * len(table)
    if file.stamp is not None and file_stamp(file.fs_path) != file.stamp:
        return texts
    # A large file comes in pieces (a document's ``base`` is where its piece starts), and a
    # span (a long chapter, say) may run across several: its parts are joined in order.
    parts: list[list[str]] = [[] for _ in range(len(table))]
    for result in read_file(file, config):
        for document in result.documents:
            low, high = document.base, document.base + len(document.text)
            for position in wanted.get((document.path, document.record), ()):
                start, end = max(starts[position], low), min(ends[position], high)
                if start < end:
                    parts[position].append(document.text[start - low : end - low])
    for position, pieces in enumerate(parts):
        text = "".join(pieces)
        if len(text) == ends[position] - starts[position]:
            texts[position] = text
    return texts


def read_documents(
    numbers: npt.NDArray[np.int64],
    documents: DocumentRuns,
    passages: Passages,
    files: Sequence[FoundFile],
    config: ScanConfig,
    engine: Engine,
) -> tuple[dict[int, MatchedDocument], list[str]]:
    """The documents ``numbers`` (sorted) with their text, read back as member texts are; and
    the paths of the files that changed since they were scanned (their documents left out)."""
    spans, byte_spans = passages.spans, passages.byte_spans
    first, end = documents.passages_of(numbers)
    last = end - 1
    table = replace(spans.take(first), end=spans.ends_of(last)[1])
    # A document is some runs of spans, one after another: its bytes are from its first
    # run's start to its last run's end.
    at = np.column_stack(
        (byte_spans.take(spans.run_of(first))[:, 0], byte_spans.take(spans.run_of(last))[:, 1])
    )
    at[(at == NOT_IN_BYTES).any(axis=1)] = NOT_IN_BYTES
    texts, changed = read_texts(
        table, at, passages.file_of(first), files, config, engine, "document texts"
    )
    story = documents.story_chars[numbers].tolist()
    found: dict[int, MatchedDocument] = {}
    for row, (number, span, text) in enumerate(zip(numbers.tolist(), table, texts, strict=True)):
        if text is not None:
            found[number] = span.as_document(story[row], text)
    return found, changed
