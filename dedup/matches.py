"""Match stage: every candidate pair of documents aligned (dedup.align), the shared spans mapped
back to the original text, and the documents that are copies of one another grouped.

- Alignment runs on the normalized texts, which the scan holds once per distinct passage text
  (a document is its passages' texts one after another), in chunks of pairs the engine runs
  on its threads (the loops release the GIL).
- Each span's ends are mapped back through the passages' offset steps (dedup.offset_steps):
  ``text[a_start:a_end]`` is the shared stretch of document a, exactly, from its first story
  character to its last.
- A match's ``coverage_a`` is the share of a's story characters inside its spans. Documents
  whose matches cover at least ``GROUP_COVERAGE`` of both sides are one group (union-find):
  the same chapter on several sites; a scene shared by otherwise different documents is a
  match, not a group. A group's representative is chosen by ``--keep`` as a cluster's is, the
  document's story characters counting as its length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from dedup.align import seed_table, spans_with_table
from dedup.cluster import components
from dedup.columns import SpanTable
from dedup.config import AlignConfig
from dedup.documents import DocumentRuns, PassageAlignment
from dedup.engine.base import Threads
from dedup.kernels import compiled
from dedup.kernels.rows import with_room_for_rows
from dedup.models import DocumentGroup, Match, MatchedDocument, SharedSpan, made_in_bulk
from dedup.offset_steps import original_offsets

T = TypeVar("T")

GROUP_COVERAGE = 0.8
_CHUNKS = 64  # pairs are aligned in this many chunks, across the threads


@dataclass(frozen=True, slots=True)
class NormalizedTexts:
    """The normalized text of each distinct passage text, as code points one after another:
    passage ``p``'s text is ``codes[start[p]:start[p] + lengths[p]]`` (a copy's start is its
    first passage's)."""

    codes: npt.NDArray[np.uint32]
    start: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    leads: npt.NDArray[np.int64]

    @classmethod
    def of(
        cls,
        texts: Sequence[str | None],
        leader: npt.NDArray[np.int64],
        alignment: PassageAlignment,
    ) -> NormalizedTexts:
        lengths, leads = alignment.lengths, alignment.leads
        # The first passage of each text only: a copy's text, when a worker handed it back
        # too, is the same code points again.
        held = np.array([text is not None for text in texts], dtype=np.bool_)
        held &= leader == np.arange(len(texts))
        start = np.zeros(len(texts), dtype=np.int64)
        start[held] = np.cumsum(lengths[held]) - lengths[held]
        parts = [
            np.frombuffer("".join(texts[row] or "" for row in rows).encode("utf-32-le"), np.uint32)
            for rows in np.array_split(np.flatnonzero(held), max(1, len(texts) // 100_000))
        ]
        codes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
        return cls(codes, start[leader], lengths, leads)


@dataclass(frozen=True, slots=True)
class AlignedPairs:
    """Shared spans of the document pairs that share any: rows of (pair number, a_start,
    a_end, b_start, b_end, identical_chars) in normalized characters of each document."""

    pairs: npt.NDArray[np.int64]  # (a, b) documents, a < b
    spans: npt.NDArray[np.int64]


def align_pairs(
    pairs: npt.NDArray[np.int64],
    documents: DocumentRuns,
    texts: NormalizedTexts,
    config: AlignConfig,
    engine: Threads,
) -> AlignedPairs:
    """Every pair of documents aligned, in chunks on the engine's threads; the same spans in
    the same order whatever their number."""
    # Each pair is aligned with a seed table of its longer document (made once for all the
    # pairs that hold it): a book without headings paired with every chapter of a copy that
    # has them is scanned once, not once per chapter.
    story = documents.story_chars
    hold_a = story[pairs[:, 0]] >= story[pairs[:, 1]] if len(pairs) else np.ones(0, np.bool_)
    held = np.where(hold_a, pairs[:, 0], pairs[:, 1]) if len(pairs) else pairs[:, 0]
    order = np.lexsort((np.arange(len(pairs)), held))
    chunks = [chunk for chunk in np.array_split(order, _CHUNKS) if len(chunk)]

    def run(chunk: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return _align_chunk(
            texts.codes,
            texts.start,
            texts.lengths,
            texts.leads,
            documents.first,
            documents.end,
            pairs[chunk],
            hold_a[chunk],
            chunk,
            config.seed_chars,
            config.max_gap,
            config.min_identical,
        )

    parts = list(engine.in_threads(run, chunks))
    spans = np.concatenate(parts) if parts else np.empty((0, 6), dtype=np.int64)
    # back in the order of the pairs (each pair's spans are in order along a already)
    return AlignedPairs(pairs, spans[np.argsort(spans[:, 0], kind="stable")])


@compiled
def _document_codes(
    codes: npt.NDArray[np.uint32],
    start: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    leads: npt.NDArray[np.int64],
    first: int,
    end: int,
) -> npt.NDArray[np.uint32]:
    total = 0
    for passage in range(first, end):
        total += lengths[passage] - leads[passage]
    text = np.empty(total, dtype=np.uint32)
    at = 0
    for passage in range(first, end):
        own = lengths[passage] - leads[passage]
        begin = start[passage] + leads[passage]
        text[at : at + own] = codes[begin : begin + own]
        at += own
    return text


@compiled
def _same_texts(
    start: npt.NDArray[np.int64],
    leads: npt.NDArray[np.int64],
    first: int,
    end: int,
    other_first: int,
    other_end: int,
) -> bool:
    """Whether two documents are the same passage texts in the same order (exact copies,
    passage for passage: their one shared span is all of both, without aligning)."""
    if end - first != other_end - other_first:
        return False
    for offset in range(end - first):
        one, two = first + offset, other_first + offset
        if start[one] != start[two] or leads[one] != leads[two]:
            return False
    return True


@compiled
def _align_chunk(
    codes: npt.NDArray[np.uint32],
    start: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    leads: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    pairs: npt.NDArray[np.int64],
    hold_a: npt.NDArray[np.bool_],
    numbers: npt.NDArray[np.int64],
    k: int,
    max_gap: int,
    min_identical: int,
) -> npt.NDArray[np.int64]:
    """Rows (pair number, a_start, a_end, b_start, b_end, identical) of the pairs' spans; the
    pairs come grouped by the document whose seed table is held (a if ``hold_a``, else b)."""
    found = np.empty((16, 6), dtype=np.int64)
    count = 0
    current = -1
    held = np.empty(0, dtype=np.uint32)
    table = seed_table(held, k)
    for pair in range(pairs.shape[0]):
        left, right = pairs[pair, 0], pairs[pair, 1]
        if _same_texts(start, leads, first[left], end[left], first[right], end[right]):
            spans = np.empty((1, 5), dtype=np.int64)
            size = 0
            for passage in range(first[left], end[left]):
                size += lengths[passage] - leads[passage]
            spans[0, 0], spans[0, 1], spans[0, 2], spans[0, 3], spans[0, 4] = 0, size, 0, size, size
        else:
            holding, other = (left, right) if hold_a[pair] else (right, left)
            if holding != current:
                held = _document_codes(codes, start, lengths, leads, first[holding], end[holding])
                table = seed_table(held, k)
                current = holding
            scanned = _document_codes(codes, start, lengths, leads, first[other], end[other])
            spans = spans_with_table(scanned, held, table, hold_a[pair], k, max_gap, min_identical)
        found = with_room_for_rows(found, count, spans.shape[0])
        for row in range(spans.shape[0]):
            found[count, 0] = numbers[pair]
            for column in range(5):
                found[count, column + 1] = spans[row, column]
            count += 1
    return found[:count].copy()


def original_spans(
    aligned: AlignedPairs,
    documents: DocumentRuns,
    spans: SpanTable,
    alignment: PassageAlignment,
) -> npt.NDArray[np.int64]:
    """Each aligned span's ends in the decoded text of its documents: rows (a_start, a_end,
    b_start, b_end), the ends one past the last shared story character."""
    rows = aligned.spans
    if not len(rows):
        return np.empty((0, 4), dtype=np.int64)
    lengths, leads = alignment.lengths, alignment.leads
    base = np.cumsum(documents.story_chars) - documents.story_chars
    own_starts = base[documents.of_passage] + documents.own_start
    step_first = np.cumsum(lengths) - lengths
    found = []
    for side, column in ((0, 1), (1, 3)):
        document = aligned.pairs[rows[:, 0], side]
        for position, end in ((rows[:, column], False), (rows[:, column + 1] - 1, True)):
            at = base[document] + position
            passage = np.searchsorted(own_starts, at, side="right") - 1
            index = at - own_starts[passage] + leads[passage]
            offset = original_offsets(
                alignment.steps,
                alignment.big_steps,
                step_first[passage],
                spans.start[passage],
                index,
            )
            found.append(offset + 1 if end else offset)
    return np.column_stack(found)


def matches_of(
    aligned: AlignedPairs,
    original: npt.NDArray[np.int64],
    documents: Mapping[int, MatchedDocument],
) -> list[Match]:
    """The matches, one per pair of documents that share spans (both documents' texts at
    hand), in reading order of a, then b. Made in bulk: a dump of mirror sites has about as
    many matches as documents."""
    rows = aligned.spans
    if not len(rows):
        return []
    starts = np.flatnonzero(np.append(True, rows[1:, 0] != rows[:-1, 0]))
    stops = np.append(starts[1:], len(rows))
    spans = made_in_bulk(
        SharedSpan, *(original[:, column].tolist() for column in range(4)), rows[:, 5].tolist()
    )
    shared_a = np.add.reduceat(rows[:, 2] - rows[:, 1], starts).tolist()
    shared_b = np.add.reduceat(rows[:, 4] - rows[:, 3], starts).tolist()
    made: list[Match] = []
    for number, (begin, stop) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
        left, right = aligned.pairs[rows[begin, 0]].tolist()
        if left not in documents or right not in documents:
            continue  # a file that changed while it was scanned: left out, and listed
        a, b = documents[left], documents[right]
        shared = tuple(spans[begin:stop])
        one, two = shared_a[number], shared_b[number]
        if b.sort_key < a.sort_key:
            a, b, one, two = b, a, two, one
            shared = tuple(
                sorted(
                    (SharedSpan(s.b_start, s.b_end, s.a_start, s.a_end, s.identical_chars)
                     for s in shared),
                    key=lambda s: s.a_start,
                )
            )  # fmt: skip
        made.append(
            Match(a, b, one, two, one / max(1, a.story_chars), two / max(1, b.story_chars), shared)
        )
    made.sort(key=lambda match: (match.a.sort_key, match.b.sort_key))
    return made


def document_groups(matches: Sequence[Match], keep: str) -> list[DocumentGroup]:
    """Documents joined by matches that cover at least GROUP_COVERAGE of both sides."""
    close = [m for m in matches if min(m.coverage_a, m.coverage_b) >= GROUP_COVERAGE]
    documents = sorted(
        {d.id: d for m in close for d in (m.a, m.b)}.values(), key=lambda d: d.sort_key
    )
    number = {document.id: index for index, document in enumerate(documents)}
    first = np.array([number[m.a.id] for m in close], dtype=np.int64)
    second = np.array([number[m.b.id] for m in close], dtype=np.int64)
    roots = components(first, second, len(documents)).tolist()
    members: dict[int, list[MatchedDocument]] = {}
    for document, root in zip(documents, roots, strict=True):
        members.setdefault(root, []).append(document)
    groups = sorted(members.values(), key=lambda group: (-len(group), group[0].sort_key))
    return [
        DocumentGroup(
            id=f"g{index}",
            representative=_kept(group, keep).id,
            documents=tuple(document.id for document in group),
            sources=tuple(sorted({document.source for document in group})),
        )
        for index, group in enumerate(groups, start=1)
    ]


def _kept(group: Sequence[MatchedDocument], keep: str) -> MatchedDocument:
    """The document a group keeps, by the keep policy (as dedup.cluster chooses a member);
    ``group`` is in reading order, and ties go to the first."""
    if keep == "first":
        return group[0]
    names: list[str] = []
    if keep.startswith("source:"):
        names = [name.strip() for name in keep.removeprefix("source:").split(",")]
    rank = {name: position for position, name in enumerate(names)}
    return min(group, key=lambda d: (rank.get(d.source, len(rank)), -d.story_chars))
