"""Documents of a scan, and which pairs of them to align.

A document is a chapter of a file or record (or the whole of it, without headings): the run of
its passages, which come in reading order. Its normalized text is its passages' texts one after
another (each without the characters it shares with the one before, under
``--passage-overlap``).

Which pairs to align (retrieval): two documents are aligned when they share at least
``MIN_SHARED_SEEDS`` winnowed seeds (dedup.align), wherever their passage cuts fall, or a
verified passage pair (LSH's, or an exact copy). A seed held by more than ``MAX_SEED_DOCUMENTS``
documents (a stock phrase, a site's slogan) proposes no pair: its documents still meet through
their other seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.columns import SimilarityTable, SpanTable
from dedup.kernels import compiled

MIN_SHARED_SEEDS = 3
MAX_SEED_DOCUMENTS = 64


@dataclass(frozen=True, slots=True)
class DocumentRuns:
    """Each document as the run of its passages ``first[d]:end[d]``; ``of_passage`` the
    document of each passage, and ``own_start`` where a passage's own characters begin in its
    document's normalized text."""

    first: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    of_passage: npt.NDArray[np.int64]
    own_start: npt.NDArray[np.int64]
    story_chars: npt.NDArray[np.int64]  # normalized characters of each document

    def __len__(self) -> int:
        return len(self.first)


def document_runs(
    spans: SpanTable,
    file_of: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    leads: npt.NDArray[np.int64],
) -> DocumentRuns:
    """The documents of a dump's passages (in file order): a new one where the file, the
    record, the chapter or its title changes."""
    count = len(spans)
    if not count:
        none = np.empty(0, dtype=np.int64)
        return DocumentRuns(none, none, none, none, none)
    # spans.document numbers the documents of each input apart; the file tells inputs apart
    # only with it, so both are compared.
    changed = np.ones(count, dtype=np.bool_)
    changed[1:] = (
        (file_of[1:] != file_of[:-1])
        | (spans.document[1:] != spans.document[:-1])
        | (spans.chapter[1:] != spans.chapter[:-1])
        | (spans.title[1:] != spans.title[:-1])
    )
    first = np.flatnonzero(changed)
    end = np.append(first[1:], count)
    of_passage = np.cumsum(changed) - 1
    own = lengths - leads
    ends_within = np.cumsum(own)
    own_start = ends_within - own - np.repeat(ends_within[first] - own[first], end - first)
    story = np.add.reduceat(own, first)
    return DocumentRuns(first, end, of_passage, own_start, story)


def candidate_documents(
    documents: DocumentRuns,
    leader: npt.NDArray[np.int64],
    seeds: npt.NDArray[np.uint32],
    seed_passage: npt.NDArray[np.int64],
    verified: SimilarityTable,
) -> npt.NDArray[np.int64]:
    """Pairs (a, b), a < b, of documents to align, sorted: those sharing seeds, and those a
    verified passage pair joins. A seed counts for every document that holds its passage's
    text (an exact copy's seeds are its first passage's: workers hand each text back once)."""
    of_passage = documents.of_passage
    by_text = np.argsort(leader, kind="stable")
    holders = of_passage[by_text]
    holder_start = np.searchsorted(leader[by_text], np.arange(len(leader)), side="left")
    holder_end = np.searchsorted(leader[by_text], np.arange(len(leader)), side="right")
    order = np.argsort(seeds, kind="stable")
    codes = _seed_pair_codes(
        seeds[order],
        seed_passage[order],
        holders,
        holder_start,
        holder_end,
        len(documents),
        MAX_SEED_DOCUMENTS,
    )
    found: list[npt.NDArray[np.int64]] = []
    if len(codes):
        codes.sort()
        starts = np.flatnonzero(np.append(True, codes[1:] != codes[:-1]))
        counts = np.diff(np.append(starts, len(codes)))
        found.append(codes[starts[counts >= MIN_SHARED_SEEDS]])
    first, second = of_passage[verified.first], of_passage[verified.second]
    apart = first != second
    low, high = np.minimum(first, second)[apart], np.maximum(first, second)[apart]
    found.append(low * len(documents) + high)
    joined = np.unique(np.concatenate(found))
    return np.column_stack((joined // max(1, len(documents)), joined % max(1, len(documents))))


@compiled
def _seed_pair_codes(
    seeds: npt.NDArray[np.uint32],
    passages: npt.NDArray[np.int64],
    holders: npt.NDArray[np.int64],
    holder_start: npt.NDArray[np.int64],
    holder_end: npt.NDArray[np.int64],
    documents: int,
    max_documents: int,
) -> npt.NDArray[np.int64]:
    """For each run of equal seeds (sorted), each pair (a < b) of the distinct documents
    holding it, as a * documents + b, once per seed; none for a seed of too many documents."""
    codes = np.empty(max(16, seeds.shape[0]), dtype=np.int64)
    count = 0
    held = np.empty(max_documents + 1, dtype=np.int64)
    start = 0
    while start < seeds.shape[0]:
        stop = start + 1
        while stop < seeds.shape[0] and seeds[stop] == seeds[start]:
            stop += 1
        size = 0
        for seed in range(start, stop):
            passage = passages[seed]
            for at in range(holder_start[passage], holder_end[passage]):
                if size > max_documents:
                    break
                held[size] = holders[at]
                size += 1
        start = stop
        if size > max_documents or size < 2:
            continue
        unique = np.unique(held[:size])
        pairs = unique.shape[0] * (unique.shape[0] - 1) // 2
        if count + pairs > codes.shape[0]:
            grown = np.empty(max(2 * codes.shape[0], count + pairs), dtype=np.int64)
            grown[:count] = codes[:count]
            codes = grown
        for left in range(unique.shape[0]):
            for right in range(left + 1, unique.shape[0]):
                codes[count] = unique[left] * documents + unique[right]
                count += 1
    return codes[:count].copy()
