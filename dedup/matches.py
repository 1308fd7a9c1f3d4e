"""Match stage: candidate pairs of documents aligned (dedup.align), the shared spans mapped
back to the original text, and the documents that are copies of one another grouped.

- Copies are aligned once each (``align_through_groups``), not with one another: a chapter
  that 17 sites carry is 16 alignments with the copy its group keeps, not 136. Each document
  is aligned first with the one it shares most verified passages with; documents those
  alignments join into groups are then aligned with their group's kept document. Two groups
  (a document in none is a group of its own) that candidate pairs join are aligned once, by
  their kept documents, not every copy of one with every copy of the other: a scene that two
  chapters share, each on 17 sites, is one alignment, not 289. Where the kept ones share
  nothing, the strongest candidate pair between the groups is aligned instead (a kept copy
  may lack what the others share). ``--every-pair`` aligns every candidate pair.

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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from dedup.align import seed_table, spans_with_table
from dedup.arrays import Firsts, concatenated, sorted_unique
from dedup.candidates import Leaders
from dedup.cluster import components
from dedup.codepoints import TextRun
from dedup.columns import SpanTable
from dedup.config import AlignConfig, kept_sources
from dedup.documents import DocumentRuns, PassageAlignment
from dedup.engine.base import HeldTexts, Threads
from dedup.kernels import compiled
from dedup.kernels.rows import with_room_for_rows
from dedup.models import (
    DocumentGroup,
    Match,
    MatchedDocument,
    SharedSpans,
    reading_order,
)

T = TypeVar("T")

GROUP_COVERAGE = 0.8
PROBE_ROUNDS = 2  # a third round finds next to nothing more (docs/performance.md)
_CHUNKS = 64  # pairs are aligned in about this many chunks, across the threads
# Where the workers keep the texts, chunks per worker thread: each task is given the texts of
# the files its chunk names, so fewer chunks move fewer texts (docs/performance.md).
_CHUNKS_PER_WORKER = 4
_TABLE_COST = 4  # a held character costs about this many scanned ones (its seed table)


@dataclass(frozen=True, slots=True)
class NormalizedTexts:
    """The normalized text of each distinct passage text, one after another, as UTF-16 code
    units (2 bytes a character rather than a code point's 4: at 1 GB this is the align
    stage's largest array; and a cluster's workers keep their texts so): passage ``p``'s
    text starts at ``units[start[p]]`` (a copy's start is its first passage's) and is
    ``lengths[p]`` characters long."""

    units: npt.NDArray[np.uint16]
    start: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    leads: npt.NDArray[np.int64]

    @classmethod
    def of(
        cls, texts: TextRun, leader: npt.NDArray[np.int64], alignment: PassageAlignment
    ) -> NormalizedTexts:
        """The texts as the workers handed them back (the first passage of each distinct
        text with its text: a copy's start is its first passage's), their code units as
        they are, nothing copied."""
        return cls(
            texts.code_units, texts.starts()[leader], alignment.lengths, alignment.dense_leads()
        )


@dataclass(frozen=True, slots=True)
class HeldNormalizedTexts:
    """:class:`NormalizedTexts` where the workers keep the texts (a cluster's): each passage's
    first passage of its text (``leader``) here, the texts there, and its length and lead
    looked up there (``alignment.lengths_and_leads``)."""

    held: HeldTexts
    leader: Leaders
    alignment: PassageAlignment  # each passage's length and lead (held there)


def texts_to_align(
    texts: TextRun | HeldTexts, leader: Leaders, alignment: PassageAlignment
) -> NormalizedTexts | HeldNormalizedTexts:
    """The texts as the alignment reads them: here, in UTF-16 once per distinct text;
    where the workers keep them, left there."""
    if isinstance(texts, HeldTexts):
        return HeldNormalizedTexts(texts, leader, alignment)
    return NormalizedTexts.of(texts, leader.dense(), alignment)


@dataclass(frozen=True, slots=True)
class AlignedPairs:
    """Shared spans of the document pairs that share any: rows of (pair number, a_start,
    a_end, b_start, b_end, identical_chars) in normalized characters of each document."""

    pairs: npt.NDArray[np.int64]  # (a, b) documents, a < b
    spans: npt.NDArray[np.int64]


def align_through_groups(
    pairs: npt.NDArray[np.int64],
    strength: npt.NDArray[np.int64],
    preferred: npt.NDArray[np.int64],
    documents: DocumentRuns,
    texts: NormalizedTexts | HeldNormalizedTexts,
    config: AlignConfig,
    engine: Threads,
) -> AlignedPairs:
    """The candidate ``pairs`` (sorted (a, b), a < b) aligned, each copy with its group's
    kept document rather than with every other copy (every pair, with ``config.every_pair``).
    ``strength``: the verified passage pairs joining each pair's documents; ``preferred``:
    each document's place in the order ``--keep`` prefers them (0 first)."""
    if config.every_pair or not len(pairs):
        return align_pairs(pairs, documents, texts, config, engine)
    count = len(documents)
    aligned = AlignedPairs(np.empty((0, 2), dtype=np.int64), np.empty((0, 6), dtype=np.int64))
    group = np.arange(count)
    waiting = np.ones(len(pairs), dtype=np.bool_)
    # Rounds of each document with its strongest candidate in another group: a copy whose
    # strongest partner was a page of it, or a copy with too many changes, joins its group
    # in a later round rather than being aligned with every member of it.
    for _round in range(PROBE_ROUNDS):
        across = waiting & (group[pairs[:, 0]] != group[pairs[:, 1]])
        probe = _strongest_pairs(pairs, np.where(across, strength, 0), count)
        if not probe.any():
            break
        aligned = _joined(aligned, align_pairs(pairs[probe], documents, texts, config, engine))
        waiting &= ~probe
        group = _groups(aligned, documents.story_chars)
    # The rest: each copy with its group's kept document, and the pairs whose documents no
    # copies join, once for each two groups they join (a scene that two chapters share is
    # not aligned again for every copy of each): between the groups' kept documents, and
    # where those share nothing, as the strongest of the candidate pairs between the groups.
    # Groups joined by the rest have their members aligned with the new kept one.
    across = waiting & (group[pairs[:, 0]] != group[pairs[:, 1]])
    rest, rest_strength = pairs[across], strength[across]
    while True:
        kept = _kept_of_groups(group, preferred)
        wanted = np.concatenate(
            (
                _to_kept(group, kept),
                _between_kept(rest, group, kept),
                _strongest_where_kept_share_nothing(rest, rest_strength, group, kept, aligned),
            )
        )
        if not len(wanted := _not_aligned(wanted, aligned.pairs, count)):
            return aligned
        aligned = _joined(aligned, align_pairs(wanted, documents, texts, config, engine))
        group = _groups(aligned, documents.story_chars)


def _strongest_pairs(
    pairs: npt.NDArray[np.int64], strength: npt.NDArray[np.int64], count: int
) -> npt.NDArray[np.bool_]:
    """Each document's pair with the most verified passage pairs (the lower partner of equal
    ones), where it has one with any: a flag per pair. (The partner --keep prefers among the
    strong ones was tried: a page then met the whole chapter more often, which joins no
    group, and more pairs were aligned.)"""
    number = np.arange(len(pairs))
    side = np.concatenate((pairs[:, 0], pairs[:, 1]))
    partner = np.concatenate((pairs[:, 1], pairs[:, 0]))
    score = np.concatenate((strength, strength))
    of = np.concatenate((number, number))
    order = np.lexsort((partner, -score, side))
    firsts = order[np.append(True, side[order][1:] != side[order][:-1])]
    chosen = np.zeros(len(pairs), dtype=np.bool_)
    chosen[of[firsts[score[firsts] > 0]]] = True
    return chosen


def _groups(aligned: AlignedPairs, story: Firsts) -> npt.NDArray[np.int64]:
    """Each document's group (a document of its own, if none): documents joined by aligned
    pairs whose spans cover GROUP_COVERAGE of both, as document_groups joins matches."""
    rows = aligned.spans
    shared = np.zeros((len(aligned.pairs), 2), dtype=np.int64)
    np.add.at(shared[:, 0], rows[:, 0], rows[:, 2] - rows[:, 1])
    np.add.at(shared[:, 1], rows[:, 0], rows[:, 4] - rows[:, 3])
    pairs = aligned.pairs
    cover_a = shared[:, 0] / np.maximum(1, story[pairs[:, 0]])
    cover_b = shared[:, 1] / np.maximum(1, story[pairs[:, 1]])
    close = pairs[np.minimum(cover_a, cover_b) >= GROUP_COVERAGE]
    return components(close[:, 0], close[:, 1], len(story))


def _kept_of_groups(
    group: npt.NDArray[np.int64], preferred: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """For each document, the one its group keeps (the first ``preferred``)."""
    order = np.lexsort((preferred, group))
    firsts = order[np.append(True, group[order][1:] != group[order][:-1])]
    kept_of = np.empty(int(group.max()) + 1 if len(group) else 0, dtype=np.int64)
    kept_of[group[firsts]] = firsts
    return kept_of[group]


def _to_kept(group: npt.NDArray[np.int64], kept: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Pairs (a, b), a < b, of each document of a group with the one the group keeps."""
    members = np.flatnonzero(kept != np.arange(len(group)))
    return np.column_stack((np.minimum(members, kept[members]), np.maximum(members, kept[members])))


def _between_kept(
    rest: npt.NDArray[np.int64], group: npt.NDArray[np.int64], kept: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Pairs (a, b), a < b, of the kept documents of the two groups each of ``rest`` joins."""
    ends: npt.NDArray[np.int64] = np.sort(
        kept[rest[group[rest[:, 0]] != group[rest[:, 1]]]], axis=1
    )
    return ends


def _strongest_where_kept_share_nothing(
    rest: npt.NDArray[np.int64],
    strength: npt.NDArray[np.int64],
    group: npt.NDArray[np.int64],
    kept: npt.NDArray[np.int64],
    aligned: AlignedPairs,
) -> npt.NDArray[np.int64]:
    """For each two groups that pairs of ``rest`` join, whose kept documents were aligned, and
    that no aligned pair with a span joins (a kept copy may lack what the others share): the
    strongest of those pairs (the first in order of equal ones)."""
    count = len(group)
    separate = group[rest[:, 0]] != group[rest[:, 1]]
    apart: npt.NDArray[np.int64] = rest[separate]
    strength = strength[separate]
    if not len(apart):
        return apart
    key = _codes(np.sort(group[apart], axis=1), count)
    tried = np.isin(_codes(np.sort(kept[apart], axis=1), count), _codes(aligned.pairs, count))
    matched = np.sort(group[aligned.pairs[sorted_unique(aligned.spans[:, 0])]], axis=1)
    rows = np.flatnonzero(tried & ~np.isin(key, _codes(matched, count)))
    order = rows[np.lexsort((apart[rows, 1], apart[rows, 0], -strength[rows], key[rows]))]
    firsts = order[np.append(True, key[order][1:] != key[order][:-1])] if len(order) else order
    return apart[firsts]


def _codes(pairs: npt.NDArray[np.int64], count: int) -> npt.NDArray[np.int64]:
    """A number for each pair (a, b) of documents of ``count``."""
    codes: npt.NDArray[np.int64] = pairs[:, 0] * count + pairs[:, 1]
    return codes


def _not_aligned(
    wanted: npt.NDArray[np.int64], done: npt.NDArray[np.int64], count: int
) -> npt.NDArray[np.int64]:
    """The pairs of ``wanted`` not in ``done``, once each, sorted."""
    codes = np.setdiff1d(_codes(wanted, count), _codes(done, count))
    return np.column_stack((codes // count, codes % count))


def _joined(one: AlignedPairs, two: AlignedPairs) -> AlignedPairs:
    """Both sets of aligned pairs as one, the pairs sorted and the spans in their order."""
    pairs = np.concatenate((one.pairs, two.pairs))
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    place = np.empty(len(pairs), dtype=np.int64)
    place[order] = np.arange(len(pairs))
    spans = np.concatenate((one.spans, two.spans))
    spans[:, 0] = place[np.concatenate((one.spans[:, 0], two.spans[:, 0] + len(one.pairs)))]
    return AlignedPairs(pairs[order], spans[np.argsort(spans[:, 0], kind="stable")])


def align_pairs(
    pairs: npt.NDArray[np.int64],
    documents: DocumentRuns,
    texts: NormalizedTexts | HeldNormalizedTexts,
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
    scanned = np.where(hold_a, pairs[:, 1], pairs[:, 0]) if len(pairs) else held
    count = (
        _CHUNKS_PER_WORKER * texts.held.threads
        if isinstance(texts, HeldNormalizedTexts)
        else _CHUNKS
    )
    chunks = _chunks(
        order, held, story[scanned].astype(np.int64), story[held].astype(np.int64), count
    )
    if isinstance(texts, HeldNormalizedTexts):
        parts = list(_aligned_where_held(chunks, pairs, hold_a, documents, texts, config))
    else:
        parts = _aligned_in_threads(chunks, pairs, hold_a, documents, texts, config, engine)
    spans = np.concatenate(parts) if parts else np.empty((0, 6), dtype=np.int64)
    # back in the order of the pairs (each pair's spans are in order along a already)
    return AlignedPairs(pairs, spans[np.argsort(spans[:, 0], kind="stable")])


def _aligned_in_threads(
    chunks: Sequence[npt.NDArray[np.int64]],
    pairs: npt.NDArray[np.int64],
    hold_a: npt.NDArray[np.bool_],
    documents: DocumentRuns,
    texts: NormalizedTexts,
    config: AlignConfig,
    engine: Threads,
) -> list[npt.NDArray[np.int64]]:
    """The spans of the pairs of each of ``chunks``, aligned on this process's threads."""
    # the documents' bounds in eight bytes, as the loop is built for (while it runs)
    bounds = np.asarray(documents.bounds, dtype=np.int64)

    def run(chunk: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return _align_chunk(
            texts.units,
            texts.start,
            texts.lengths,
            texts.leads,
            bounds[:-1],
            bounds[1:],
            pairs[chunk],
            hold_a[chunk],
            chunk,
            config.seed_chars,
            config.max_gap,
            config.min_identical,
        )

    return list(engine.in_threads(run, chunks))


def _aligned_where_held(
    chunks: Sequence[npt.NDArray[np.int64]],
    pairs: npt.NDArray[np.int64],
    hold_a: npt.NDArray[np.bool_],
    documents: DocumentRuns,
    texts: HeldNormalizedTexts,
    config: AlignConfig,
) -> Iterator[npt.NDArray[np.int64]]:
    """Each chunk's spans, aligned by a task on the workers given the texts of its documents
    (each distinct text once): the chunk's documents and passages numbered afresh, the
    arrays :func:`_align_chunk` reads made here for them alone."""
    planned = []
    for chunk in chunks:
        shown = sorted_unique(pairs[chunk])
        first, end = documents.passages_of(shown)
        sizes = end - first
        passages = np.repeat(first - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
        planned.append((chunk, shown, sizes, passages))
    # The passages' lengths and leads, looked up where they are kept, once for the chunks.
    every = concatenated([passages for *_chunk, passages in planned], np.int64)
    bounds = np.cumsum([0, *(len(passages) for *_chunk, passages in planned)]).tolist()
    lengths, leads = texts.alignment.lengths_and_leads(every)
    calls: list[tuple[Any, ...]] = []
    for (chunk, shown, sizes, passages), (low, high) in zip(planned, pairwise(bounds), strict=True):
        local_end = np.cumsum(sizes)
        # Each distinct text once, from the first of the chunk's passages that has it: a
        # copy's text is its text's (the same start, as _same_texts needs), numbered in
        # the order the task is given them.
        leader = texts.leader.of(passages)
        leaders, at = np.unique(leader, return_index=True)
        fetched = np.sort(at)
        number = np.empty(len(passages), dtype=np.int64)
        number[fetched] = np.arange(len(fetched))
        text_of = number[at[np.searchsorted(leaders, leader)]]
        calls.append(
            (
                passages[fetched],
                (
                    text_of,
                    lengths[low:high],
                    leads[low:high],
                    local_end - sizes,
                    local_end,
                    np.searchsorted(shown, pairs[chunk]),
                    hold_a[chunk],
                    chunk,
                    config.seed_chars,
                    config.max_gap,
                    config.min_identical,
                ),
            )
        )
    return texts.held.map(
        aligned_on_worker,
        [fetched for fetched, _rest in calls],
        [rest for _f, rest in calls],
        stage="align",
        form="utf-16",
    )


def aligned_on_worker(
    texts: tuple[npt.NDArray[np.uint16], npt.NDArray[np.int64]], arrays: tuple[Any, ...]
) -> npt.NDArray[np.int64]:
    """A chunk's spans (:func:`_align_chunk`), on the worker that has its texts (``texts``:
    each distinct text of the chunk's passages once, as UTF-16, and where each starts;
    ``arrays``' first, which of those texts each passage's is)."""
    units, starts = texts
    text_of, *rest = arrays
    return _align_chunk(units, starts[text_of], *rest)


def _chunks(
    order: npt.NDArray[np.int64],
    held: npt.NDArray[np.int64],
    scanned_chars: npt.NDArray[np.int64],
    held_chars: npt.NDArray[np.int64],
    count: int,
) -> list[npt.NDArray[np.int64]]:
    """The pairs in ``order`` (grouped by the document held) cut into about ``count`` runs of
    like cost: a held document's seed table is built once per chunk, so its pairs are cut
    apart only where each piece scans more than twice what building the table costs (an
    even cut had a book's table built in most chunks, which took longer than aligning)."""
    in_order = held[order]
    first_of_run = np.append(True, in_order[1:] != in_order[:-1])[: len(order)]
    table_cost = _TABLE_COST * held_chars[order]
    target = (scanned_chars[order].sum() + table_cost[first_of_run].sum()) / count
    held_of, scans, tables = in_order.tolist(), scanned_chars[order].tolist(), table_cost.tolist()
    chunks, begin, cost, since_table = [], 0, 0.0, 0
    for index, (document, scan, table) in enumerate(zip(held_of, scans, tables, strict=True)):
        new_run = index == 0 or document != held_of[index - 1]
        if index > begin and cost >= target and (new_run or since_table >= 2 * table):
            chunks.append(order[begin:index])
            begin, cost = index, 0.0
            new_run = True  # the next chunk builds its table again
        if new_run:
            cost, since_table = cost + table, 0
        cost += scan
        since_table += scan
    if begin < len(order):
        chunks.append(order[begin:])
    return chunks


@compiled
def _document_codes(
    units: npt.NDArray[np.uint16],
    start: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    leads: npt.NDArray[np.int64],
    first: int,
    end: int,
) -> npt.NDArray[np.uint32]:
    """The code points of a document's text: its passages' texts (in UTF-16 in ``units``),
    each less its lead (what the passage before holds too)."""
    total = 0
    for passage in range(first, end):
        total += lengths[passage] - leads[passage]
    text = np.empty(total, dtype=np.uint32)
    at = 0
    for passage in range(first, end):
        unit = start[passage]
        for _lead in range(leads[passage]):
            unit += 2 if 0xD800 <= units[unit] < 0xDC00 else 1
        for _character in range(lengths[passage] - leads[passage]):
            code = np.uint32(units[unit])
            if 0xD800 <= code < 0xDC00:  # a surrogate pair: one character past U+FFFF
                code = 0x10000 + ((code - 0xD800) << 10) + (np.uint32(units[unit + 1]) - 0xDC00)
                unit += 1
            text[at] = code
            at += 1
            unit += 1
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
    units: npt.NDArray[np.uint16],
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
                held = _document_codes(units, start, lengths, leads, first[holding], end[holding])
                table = seed_table(held, k)
                current = holding
            scanned = _document_codes(units, start, lengths, leads, first[other], end[other])
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
    b_start, b_end), the ends one past the last shared story character, mapped back by the
    offset steps where they are held (``alignment.held_steps``: packed in this process, or
    on a cluster's workers)."""
    rows = aligned.spans
    if not len(rows):
        return np.empty((0, 4), dtype=np.int64)
    # The passages of the documents the spans are in, one document after another, with
    # where each one's own characters (all but its lead) end in those documents' stories
    # (a document's story is its passages' own characters), made in place of its length.
    shown = sorted_unique(aligned.pairs[sorted_unique(rows[:, 0])])
    first, stop = documents.passages_of(shown)
    sizes = stop - first
    local_first = np.cumsum(sizes) - sizes
    passage_of = np.repeat(first - local_first, sizes) + np.arange(sizes.sum())
    own_ends, leads = alignment.lengths_and_leads(passage_of)
    own_ends -= leads
    np.cumsum(own_ends, out=own_ends)

    def own_start(local: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return np.where(local > 0, own_ends[local - 1], 0)

    base = own_start(local_first)
    # The four ends of every span (a's start and end, b's), mapped back in one go: each in
    # the passage whose own characters hold it.
    passages, indexes, ends = [], [], []
    for side, column in ((0, 1), (1, 3)):
        document = np.searchsorted(shown, aligned.pairs[rows[:, 0], side])
        for position, end in ((rows[:, column], False), (rows[:, column + 1] - 1, True)):
            at = base[document] + position
            local = np.searchsorted(own_ends, at, side="right")
            passages.append(passage_of[local])
            indexes.append(at - own_start(local) + leads[local])
            ends.append(end)
    passage, index = np.concatenate(passages), np.concatenate(indexes)
    held = alignment.held_steps or alignment.with_steps_packed().held_steps
    assert held is not None
    offset = held.original_offsets(passage, index, spans.ends_of(passage)[0])
    found = [part + 1 if end else part for part, end in zip(np.split(offset, 4), ends, strict=True)]
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
    shared_a = np.add.reduceat(rows[:, 2] - rows[:, 1], starts).tolist()
    shared_b = np.add.reduceat(rows[:, 4] - rows[:, 3], starts).tolist()
    sides: list[tuple[MatchedDocument, MatchedDocument] | None] = []
    for begin in starts.tolist():
        left, right = aligned.pairs[rows[begin, 0]].tolist()
        if left not in documents or right not in documents:
            sides.append(None)  # a file that changed while it was scanned: left out, and listed
        else:
            sides.append((documents[left], documents[right]))
    # A match is between its documents in reading order: where the aligned pair had them the
    # other way round, its spans' sides are turned and the spans put in the order of the new a.
    turned = np.array(
        [side is not None and side[1].sort_key < side[0].sort_key for side in sides], np.bool_
    )
    match_of = np.repeat(np.arange(len(starts)), stops - starts)
    turned_row = turned[match_of]
    table = np.column_stack((original[:, :4], rows[:, 5])).astype(np.int64)
    table[turned_row] = table[turned_row][:, [2, 3, 0, 1, 4]]
    place = np.arange(len(rows)) - starts[match_of]
    table = table[np.lexsort((np.where(turned_row, table[:, 0], place), match_of))]
    made: list[Match] = []
    for number, (begin, stop) in enumerate(zip(starts.tolist(), stops.tolist(), strict=True)):
        side = sides[number]
        if side is None:
            continue
        (a, b), one, two = side, shared_a[number], shared_b[number]
        if turned[number]:
            a, b, one, two = b, a, two, one
        shared = SharedSpans(table, begin, stop)
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
    ties go to the first in reading order."""
    key = keep_key(keep)
    return min(group, key=lambda d: key(d.source, d.story_chars, d.sort_key))


def keep_key(keep: str) -> Callable[[str, int, tuple[Any, ...]], tuple[Any, ...]]:
    """The sort key of a document by the keep policy, from its source, story characters and
    reading order: the one a group keeps sorts first."""
    if keep == "first":
        return lambda _source, _story, order: (order,)
    rank = {name: position for position, name in enumerate(kept_sources(keep))}
    return lambda source, story, order: (rank.get(source, len(rank)), -story, order)


def keep_order(
    documents: DocumentRuns, spans: SpanTable, keep: str, pairs: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Each document's place in the order the keep policy prefers them (0 first), as
    ``_kept`` chooses among them (a document's span is its passages' from first to last), of
    the documents ``pairs`` name: only documents a pair joins are ever in a group with
    another, so the others are placed after them all, unordered. A sort key made in Python
    for every document of a dump cost some hundreds of bytes a document at once, however few
    have a copy (issue 21: the driver's memory past the pairs)."""
    key = keep_key(keep)
    named = sorted_unique(pairs)
    first, stop = documents.passages_of(named)
    last = stop - 1
    keys = []
    for (source, path, record, _record_id), story, start, end in zip(
        spans.documents.columns(spans.document_of(first)),
        documents.story_chars[named].tolist(),
        spans.ends_of(first)[0].tolist(),
        spans.ends_of(last)[1].tolist(),
        strict=True,
    ):
        keys.append(key(source, story, reading_order(path, record, start, end)))
    order = sorted(range(len(keys)), key=keys.__getitem__)
    place = np.full(len(documents), len(named), dtype=np.int64)
    place[named[order]] = np.arange(len(named))
    return place
