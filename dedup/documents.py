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

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dedup.arrays import (
    Firsts,
    concatenated,
    found_in,
    key_counts,
    narrowed,
    numbered_afresh,
    partitioned,
    runs_of,
    sorted_unique,
)
from dedup.columns import IndexColumns, SimilarityTable, SpanTable
from dedup.kernels import compiled
from dedup.kernels.rows import with_room
from dedup.offset_steps import StepPacker

if TYPE_CHECKING:
    from dedup.candidates import Leaders
    from dedup.engine.base import HeldLengths, HeldSeeds, HeldSteps, Threads

MIN_SHARED_SEEDS = 2
MAX_SEED_DOCUMENTS = 64
_SPREAD = 0x5851F42D4C957F2D  # an odd multiplier below 2**63: slots of the pair-count table


@dataclass(frozen=True, slots=True)
class PassageAlignment:
    """What the align stage needs of each passage, made in the workers: its normalized
    length and lead (the characters it shares with the one before, --passage-overlap); where
    its normalized characters came from (dedup.offset_steps: steps one after another, passage
    after passage, and the steps too big for a byte by their index); and the winnowed seeds of
    the texts handed back (dedup.align), with the passage of each (a row of these)."""

    lengths: npt.NDArray[np.int64]
    # Empty where every passage's lead is 0 (no --passage-overlap) and a cluster's worker
    # keeps them (without_zero_leads): read through leads_of and own_lengths.
    leads: npt.NDArray[np.int64]
    steps: npt.NDArray[np.uint8]
    big_steps: npt.NDArray[np.int64]
    seeds: npt.NDArray[np.uint32]
    seed_passage: npt.NDArray[np.int64]
    # On a cluster, the seeds and the steps where the workers keep them, and in this process
    # the steps packed (this process's arrays of them are then empty): the stages that read
    # them hand them their work.
    held_seeds: HeldSeeds | None = None
    held_steps: HeldSteps | None = None
    # On a cluster, each passage's length and lead where the workers keep them (with the
    # steps; this process's lengths and leads are then empty): looked up a stage's passages
    # at a time (lengths_and_leads, story_chars), so that this process holds nothing a
    # passage (issue 21).
    held_lengths: HeldLengths | None = None

    def __len__(self) -> int:
        if self.held_lengths is not None:
            return len(self.held_lengths)
        return len(self.lengths)

    @property
    def _leads_held(self) -> bool:
        return self.held_lengths is None and len(self.leads) == len(self.lengths)

    def lengths_and_leads(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The length and the lead of each of ``rows``, wherever they are held."""
        if self.held_lengths is not None:
            return self.held_lengths.of(rows)
        return self.lengths[rows], self.leads_of(rows)

    def lengths_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The length of each of ``rows``, wherever they are held."""
        return self.lengths_and_leads(rows)[0]

    def leads_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The lead of each of ``rows`` held here (else :meth:`lengths_and_leads`)."""
        if self._leads_held:
            return self.leads[rows]
        return np.zeros(len(rows), dtype=np.int64)

    def story_chars(self, first: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The normalized characters of each document, all but its passages' leads: the
        documents are the runs of passages from each of ``first`` (ascending from 0) to the
        next."""
        if self.held_lengths is not None:
            return self.held_lengths.stories(first)
        return np.add.reduceat(self.own_lengths(), first)

    def own_lengths(self) -> npt.NDArray[np.int64]:
        """Each passage's own characters: its length less its lead (held here)."""
        if self._leads_held:
            return self.lengths - self.leads
        return self.lengths

    def dense_leads(self) -> npt.NDArray[np.int64]:
        """Every passage's lead, one a passage (the held array itself, when it is held)."""
        if self._leads_held:
            return self.leads
        return np.zeros(len(self), dtype=np.int64)

    def without_zero_leads(self) -> PassageAlignment:
        """The same, its leads not held when all of them are 0 (the default: no
        --passage-overlap): 8 B a passage less where a cluster's workers keep them."""
        if len(self.leads) and not self.leads.any():
            return replace(self, leads=np.empty(0, dtype=np.int64))
        return self

    @classmethod
    def empty(cls) -> PassageAlignment:
        none = np.empty(0, dtype=np.int64)
        steps, seeds = np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.uint32)
        return cls(none, none, steps, np.empty((0, 2), dtype=np.int64), seeds, none)

    def with_steps_packed(self) -> PassageAlignment:
        """With its offset steps packed, two bits a step (``offset_steps.PackedSteps``), as
        the main process holds a scan's."""
        packer = StepPacker()
        packer.append(self.steps, self.big_steps)
        return replace(
            self,
            steps=np.empty(0, dtype=np.uint8),
            big_steps=np.empty((0, 2), dtype=np.int64),
            held_steps=packer.packed(self.lengths),
        )

    def seeded_by(self, seeding: npt.NDArray[np.bool_]) -> PassageAlignment:
        """With the seeds of the passages ``seeding`` (a flag per passage) alone."""
        wanted = seeding[self.seed_passage]
        return replace(self, seeds=self.seeds[wanted], seed_passage=self.seed_passage[wanted])

    def kept(self, rows: npt.NDArray[np.int64], seeding: npt.NDArray[np.bool_]) -> PassageAlignment:
        """These passages' ``rows`` alone (sorted), with the seeds of the rows ``seeding`` (a
        flag per row kept) alone; indexes renumbered."""
        wanted = np.zeros(len(self), dtype=np.bool_)
        wanted[rows] = True
        by_char = np.repeat(wanted, self.lengths)
        new_step = np.cumsum(by_char) - 1
        big = self.big_steps[by_char[self.big_steps[:, 0]]]
        big = np.column_stack((new_step[big[:, 0]], big[:, 1])) if len(big) else big
        new_row = np.full(len(self), -1, dtype=np.int64)
        new_row[rows] = np.arange(len(rows))
        owner = new_row[self.seed_passage]
        seeded = owner >= 0
        seeded[seeded] = seeding[owner[seeded]]
        return PassageAlignment(
            self.lengths[rows],
            self.leads_of(rows),
            self.steps[by_char],
            big.astype(np.int64),
            self.seeds[seeded],
            owner[seeded],
        )

    @classmethod
    def concatenate(cls, parts: Sequence[PassageAlignment]) -> PassageAlignment:
        """The parts one after another: their step indexes and seeds' passages renumbered."""
        if not parts:
            return cls.empty()
        passages = np.cumsum([0, *(len(part) for part in parts)])[:-1].tolist()
        steps = np.cumsum([0, *(len(part.steps) for part in parts)])[:-1].tolist()
        # No lead held where no part with passages holds one (a cluster's driver joining
        # the files' results as they come: tasks.without_kept).
        held = any(len(part) and part._leads_held for part in parts)
        return cls(
            np.concatenate([part.lengths for part in parts]),
            np.concatenate([part.dense_leads() for part in parts])
            if held
            else np.empty(0, dtype=np.int64),
            np.concatenate([part.steps for part in parts]),
            np.concatenate(
                [
                    part.big_steps + np.array([first, 0])
                    for part, first in zip(parts, steps, strict=True)
                ]
            ),
            np.concatenate([part.seeds for part in parts]),
            np.concatenate(
                [part.seed_passage + first for part, first in zip(parts, passages, strict=True)]
            ),
        )


@dataclass(frozen=True, slots=True)
class DocumentRuns:
    """Each document as the run of its passages ``first[d]:end[d]`` (a document a run, and
    nothing a passage: :meth:`of` finds a passage's). A document ends where the next one
    starts, so both are views of one array of bounds (8 B a document, not 16: the driver
    holds them through the alignment, issue 21), and both it and each document's
    characters are four bytes each where they fit (4 B and 4 B a document, not 8 and 8)."""

    bounds: Firsts  # the documents' first passages, then the passages' count
    story_chars: Firsts  # normalized characters of each document

    @property
    def first(self) -> Firsts:
        return self.bounds[:-1]

    @property
    def end(self) -> Firsts:
        return self.bounds[1:]

    def __len__(self) -> int:
        return len(self.bounds) - 1

    def passages_of(
        self, numbers: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The first passage of each of documents ``numbers``, and the end of its passages."""
        return self.first[numbers].astype(np.int64), self.end[numbers].astype(np.int64)

    def of(self, passages: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The document of each of ``passages``."""
        return runs_of(self.first, passages)


def document_runs(
    spans: SpanTable, runs: IndexColumns, alignment: PassageAlignment
) -> DocumentRuns:
    """The documents of a dump's passages (in file order): a new one where the input, the
    record, the chapter or its title changes (``runs``: each run of ``spans``' input,
    document, chapter and title, as ``Passages.runs``)."""
    count = len(spans)
    if not count:
        return DocumentRuns(np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64))
    # The spans' runs of the same document, chapter and title, joined where they go on one
    # from the other; their documents number the documents of each input apart, and the
    # input tells them apart only with them, so both are compared. A block of runs at a
    # time (the driver's are on disk), each block's first run compared with the last before.
    firsts = []
    last: list[int] | None = None  # the input, document, chapter and title of the run before
    for first, keys in runs.blocks():
        block = spans.run_first.between(first, first + len(keys[0]))
        changed = np.zeros(len(block), dtype=np.bool_)
        for key in keys:
            changed[1:] |= key[1:] != key[:-1]
        changed[0] = last is None or last != [int(key[0]) for key in keys]
        firsts.append(block[changed].astype(np.int64))
        last = [int(key[-1]) for key in keys]
    bounds = np.append(concatenated(firsts, np.int64), count)
    return DocumentRuns(narrowed(bounds), narrowed(alignment.story_chars(bounds[:-1])))


def candidate_documents(
    documents: DocumentRuns,
    leader: Leaders,
    alignment: PassageAlignment,
    verified: SimilarityTable,
    threads: Threads,
) -> npt.NDArray[np.int64]:
    """Pairs (a, b), a < b, of documents to align, sorted: those holding the same passage
    text, those sharing seeds of different texts, and those a verified passage pair joins.
    A seed counts for every document that holds its passage's text (an exact copy's seeds are
    its first passage's: workers hand each text back once). The pairs of texts sharing seeds
    are counted on ``threads``, or where the workers keep the seeds
    (``alignment.held_seeds``), there."""
    count = max(1, len(documents))
    holding = TextHolders.of(leader, documents)
    # Pairs of texts a verified pair joins propose their documents without counting their
    # seeds (near copies share hundreds).
    texts = max(1, len(leader))
    one, two = leader.of(verified.first), leader.of(verified.second)
    apart = one != two
    known = np.minimum(one, two)[apart] * texts + np.maximum(one, two)[apart]
    # A verified pair of two texts proposes its documents below (its pair of texts is
    # known); those joining one text are kept apart now, before the seeds are counted.
    same = np.flatnonzero(~apart)
    del one, two, apart
    held_seeds = alignment.held_seeds
    if held_seeds is None:  # an alignment as the workers make it: its seeds as arrays
        held_seeds = SeedKeys.of(alignment.seeds, alignment.seed_passage)
    distinct = leader.distinct()
    shared = held_seeds.document_pairs(distinct, holding, MAX_SEED_DOCUMENTS, known, threads)
    copied_text = np.repeat(holding.copied, holding.end - holding.start)
    found = [_same_text_codes(holding.holders, copied_text, count, MAX_SEED_DOCUMENTS), shared]
    # Those joining one text are left, where more documents hold it than seeds count for.
    first, second = documents.of(verified.first[same]), documents.of(verified.second[same])
    apart = first != second
    low, high = np.minimum(first, second)[apart], np.maximum(first, second)[apart]
    found.append(low * count + high)
    joined = sorted_unique(np.concatenate(found))
    return np.column_stack((joined // count, joined % count))


@dataclass(frozen=True, slots=True)
class TextHolders:
    """The documents holding each passage text (a text is numbered by its first passage, of
    ``texts`` passages; a pair of texts is ``low * texts + high``), of ``documents`` in all
    (a pair of them is ``a * documents + b``, a < b). A text with no copy is held by its
    passage's document alone, found in the documents' first passages (``document_first``);
    a text with copies (``copied``, ascending) by ``holders[start[c]:end[c]]``, its own
    passage's document and then its copies', in the scan's order. So what is sent to every
    worker grows with the documents and the copies, not with the passages."""

    document_first: Firsts
    copied: npt.NDArray[np.int64]
    holders: npt.NDArray[np.int64]
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    texts: int

    @classmethod
    def of(cls, leader: Leaders, documents: DocumentRuns) -> TextHolders:
        """The holders of the texts of passages whose first passage of the same text is
        ``leader``'s, in ``documents``."""
        copied = sorted_unique(leader.originals)
        # Each copied text's passages, grouped by text and in the scan's order: the text's
        # own first, as it is the first of them.
        text_of = np.concatenate((copied, leader.originals))
        passages = np.concatenate((copied, leader.copies))
        order = np.lexsort((passages, text_of))
        grouped = text_of[order]
        return cls(
            documents.first,
            copied,
            documents.of(passages[order]),
            np.searchsorted(grouped, copied, side="left"),
            np.searchsorted(grouped, copied, side="right"),
            max(1, len(leader)),
        )

    @property
    def documents(self) -> int:
        return max(1, len(self.document_first))

    def counts(self, texts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """How many documents hold each of ``texts`` (first passages of their texts)."""
        return self._counts(texts, *found_in(self.copied, texts))

    def _counts(
        self, texts: npt.NDArray[np.int64], at: npt.NDArray[np.int64], found: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.int64]:
        counts = np.ones(len(texts), dtype=np.int64)
        counts[found] = (self.end - self.start)[at[found]]
        return counts

    def document_pairs(
        self,
        text_pairs: npt.NDArray[np.int64],
        counts: npt.NDArray[np.int64],
        least: int,
        share: tuple[int, int] = (0, 1),
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The pairs of documents holding ``text_pairs``, each with the seeds they share in
        all (each pair of texts' count added to every pair of documents that hold the two),
        those sharing ``least`` at least; of them, with ``share`` (k, n), those whose code
        is k modulo n (a thread's share: n threads' are the pairs of one)."""
        return self.of_pairs(text_pairs).document_pairs(counts, least, share)

    def of_pairs(self, text_pairs: npt.NDArray[np.int64]) -> PairHolders:
        """The holders of the texts ``text_pairs`` name, those texts numbered afresh (so
        that their holders lie side by side, whatever the scan's passages)."""
        named, (low, high) = numbered_afresh(
            (text_pairs // self.texts, text_pairs % self.texts), self.texts
        )
        holders, start, end = self._holders_of(named)
        size = max(1, len(named))
        low *= size
        low += high
        return PairHolders(low, size, holders, start, end, self.documents)

    def _holders_of(
        self, texts: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The holders of ``texts``, text i's ``holders[start[i]:end[i]]``."""
        at, found = found_in(self.copied, texts)
        counts = self._counts(texts, at, found)
        end = np.cumsum(counts)
        start = end - counts
        holders = np.empty(int(end[-1]) if len(end) else 0, dtype=np.int64)
        holders[start[~found]] = runs_of(self.document_first, texts[~found])
        # A copied text's holders, one run after another, where its range starts.
        runs = at[found]
        sizes = (self.end - self.start)[runs]
        within = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        holders[np.repeat(start[found], sizes) + within] = self.holders[
            np.repeat(self.start[runs], sizes) + within
        ]
        return holders, start, end


@dataclass(frozen=True, slots=True)
class PairHolders:
    """Pairs of texts numbered afresh (``low * texts + high``), with the documents holding
    each text: ``holders[start[t]:end[t]]`` (:meth:`TextHolders.of_pairs`)."""

    pairs: npt.NDArray[np.int64]
    texts: int
    holders: npt.NDArray[np.int64]
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    documents: int

    def document_pairs(
        self, counts: npt.NDArray[np.int64], least: int, share: tuple[int, int] = (0, 1)
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """:meth:`TextHolders.document_pairs` of these pairs, each counted ``counts``."""
        return _document_pair_counts(
            self.pairs,
            counts,
            self.texts,
            self.holders,
            self.start,
            self.end,
            self.documents,
            least,
            *share,
        )


class SeedKeys:
    """A scan's winnowed seeds as the main process holds them (an ``engine.base.HeldSeeds``):
    each seed and its passage as one key, ``seed << 32 | passage``, sorted, as
    :func:`_text_pair_counts` reads them. Made a file at a time as the files arrive
    (``append``), 8 bytes a seed rather than its 4 and its passage's 8, so that counting the
    pairs does not make the keys beside the seeds (14.2 M seeds at 1 GB:
    docs/performance.md)."""

    def __init__(self) -> None:
        self._parts: list[npt.NDArray[np.uint64]] = []
        self.keys = np.empty(0, dtype=np.uint64)

    @classmethod
    def of(cls, seeds: npt.NDArray[np.uint32], seed_passage: npt.NDArray[np.int64]) -> SeedKeys:
        """The keys of ``seeds``, of the passages ``seed_passage``."""
        keys = cls()
        keys.append(seeds, seed_passage, 0)
        return keys.settled()

    def append(
        self, seeds: npt.NDArray[np.uint32], seed_passage: npt.NDArray[np.int64], first: int
    ) -> None:
        """The seeds of some passages, numbered from ``first`` in the scan."""
        keys = seeds.astype(np.uint64)
        keys <<= np.uint64(32)
        keys |= (seed_passage + first).view(np.uint64)  # passage numbers are not negative
        self._parts.append(keys)

    def settled(self) -> SeedKeys:
        """Itself, its parts joined and sorted."""
        self.keys = concatenated([self.keys, *self._parts], np.uint64)
        self._parts = []
        self.keys.sort()
        return self

    def document_pairs(
        self,
        distinct: npt.NDArray[np.int64],
        holding: TextHolders,
        most: int,
        known: npt.NDArray[np.int64],
        threads: Threads,
    ) -> npt.NDArray[np.int64]:
        texts = holding.texts
        holder_end = np.zeros(texts, dtype=np.int64)
        holder_end[distinct] = holding.counts(distinct)
        holder_start, known_set = np.zeros(texts, dtype=np.int64), key_set(known)
        numbered_as_is = np.empty(0, dtype=np.int64)
        shares = max(1, threads.thread_count)

        # Each thread goes through every seed and counts its share of the pairs (pair codes
        # k modulo the threads): the counting tables' misses are most of the time, and they
        # wait side by side; each pair is counted whole by one thread, so no table holds a
        # pair another holds too (a thread's range of seeds would: near copies share seeds
        # in every range, and at 1 GB the copies took the scan past its peak).
        def text_pairs(
            share: int,
        ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
            return _text_pair_counts(
                self.keys,
                holder_start,
                holder_end,
                most,
                known_set,
                numbered_as_is,
                texts,
                share,
                shares,
            )

        counted = list(threads.in_threads(text_pairs, range(shares)))
        # The known pairs' set (16 bytes a verified pair) and the threads' parts go before
        # the pairs are joined: at 1 GB they set the scan's peak here (docs/performance.md).
        known_set = np.empty(0, dtype=np.int64)
        found_pairs = concatenated([pairs for pairs, _c in counted], np.int64)
        found_counts = concatenated([counts for _p, counts in counted], np.int64)
        del counted
        least = MIN_SHARED_SEEDS
        pairs, counts = with_known(found_pairs, found_counts, known, least)
        del found_pairs, found_counts
        held = holding.of_pairs(pairs)  # once for all the threads
        del pairs

        # And the pairs of their documents the same way, a share of those a thread.
        def document_pairs(share: int) -> npt.NDArray[np.int64]:
            return held.document_pairs(counts, least, (share, shares))[0]

        found = list(threads.in_threads(document_pairs, range(shares)))
        return np.sort(concatenated(found, np.int64))

    def let_go(self) -> None:
        self.keys = np.empty(0, dtype=np.uint64)


def with_known(
    text_pairs: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    known: npt.NDArray[np.int64],
    least: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pairs of texts with the seeds they share (``text_pairs``, the ``known`` ones left out)
    and the ``known`` pairs, counted ``least`` whatever they share."""
    known = sorted_unique(known)
    return (
        np.concatenate((text_pairs, known)),
        np.concatenate((counts, np.full(len(known), least, dtype=np.int64))),
    )


@dataclass(frozen=True, slots=True)
class SeedEntries:
    """Winnowed seeds of some passages bound for one partition of a shuffle (on a cluster,
    where the workers keep them): seed ``seeds[i]`` of passage ``passages[i]`` (numbered in
    the scan), whose text ``holders[i]`` documents hold."""

    seeds: npt.NDArray[np.uint32]
    passages: npt.NDArray[np.int64]
    holders: npt.NDArray[np.int64]


def seed_entries(
    runs: Sequence[tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]],
    taking_part: Sequence[npt.NDArray[np.int64]],
    holders: Sequence[npt.NDArray[np.int64]],
    firsts: Sequence[int],
    partitions: int,
) -> list[SeedEntries]:
    """The seeds of runs of consecutive passages (``runs[i]``: seeds and their passages,
    numbered in the run, from passage ``firsts[i]`` of the scan on) of the rows
    ``taking_part[i]`` (sorted; the first of each distinct text), each with ``holders[i]``
    (the documents holding that row's text), split into ``partitions`` by seed: all entries
    of a seed go to one partition (:func:`partition_text_pairs`)."""
    parts: list[tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    parts = []
    for (seeds, seed_passage), rows, held, first in zip(
        runs, taking_part, holders, firsts, strict=True
    ):
        at, taken = found_in(rows, seed_passage)
        parts.append((seeds[taken], seed_passage[taken] + first, held[at[taken]]))
    seeds = concatenated([part[0] for part in parts], np.uint32)
    passages = concatenated([part[1] for part in parts], np.int64)
    held = concatenated([part[2] for part in parts], np.int64)
    return [
        SeedEntries(seeds[rows], passages[rows], held[rows])
        for rows in partitioned(seeds.astype(np.uint64), partitions)
    ]


def partition_text_pairs(
    parts: Sequence[SeedEntries], texts: int, most: int, known: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pairs of texts (first passages, as ``low * texts + high``) sharing the seeds of one
    partition, given its entries from every run, and how many each shares: a seed whose texts'
    documents are more than ``most`` counts for none (as in _text_pair_counts, whose loop
    this runs with the partition's passages numbered afresh). The ``known`` pairs (verified,
    proposed anyway; a :func:`key_set`) are left out, not counted: a near copy's pair shares
    seeds in every partition."""
    seeds = concatenated([part.seeds for part in parts], np.uint32)
    passages = concatenated([part.passages for part in parts], np.int64)
    held = concatenated([part.holders for part in parts], np.int64)
    numbered, local = np.unique(passages, return_inverse=True)
    holder_end = np.zeros(len(numbered), dtype=np.int64)
    holder_end[local] = held
    codes, counts = _text_pair_counts(
        SeedKeys.of(seeds, local.astype(np.int64)).keys,
        np.zeros(len(numbered), dtype=np.int64),
        holder_end,
        most,
        known,
        numbered,
        texts,
        0,
        1,
    )
    size = max(1, len(numbered))
    return numbered[codes // size] * texts + numbered[codes % size], counts


def partition_document_pairs(
    parts: Sequence[SeedEntries],
    most: int,
    known: npt.NDArray[np.int64],
    holding: TextHolders,
    partitions: int,
) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """The pairs of documents holding the pairs of texts that share the seeds of one
    partition (:func:`partition_text_pairs`), each with the seeds they share in it, split
    into ``partitions`` by ``pair % partitions`` for :func:`summed_document_pairs`: a pair's
    count is the sum of its counts in every partition, and summed where its pairs meet."""
    text_pairs, counts = partition_text_pairs(parts, holding.texts, most, known)
    codes, shared = holding.document_pairs(text_pairs, counts, 1)
    part = codes % partitions
    return [(codes[part == number], shared[part == number]) for number in range(partitions)]


def summed_document_pairs(
    parts: Sequence[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]], least: int
) -> npt.NDArray[np.int64]:
    """The pairs of documents of one part of :func:`partition_document_pairs`' from every
    partition that share ``least`` seeds at least in all, sorted."""
    codes, counts = key_counts([codes for codes, _c in parts], [counts for _p, counts in parts])
    return codes[counts >= least]


@compiled
def _same_text_codes(
    holders: npt.NDArray[np.int64], text_of: npt.NDArray[np.int64], documents: int, most: int
) -> npt.NDArray[np.int64]:
    """Each pair (a < b) of the documents holding one passage text (``holders`` grouped by
    ``text_of``), as a * documents + b; a text held by more than ``most`` documents gives none
    (its copies' links join them, to its first)."""
    codes = np.empty(16, dtype=np.int64)
    count = 0
    start = 0
    while start < holders.shape[0]:
        stop = start + 1
        while stop < holders.shape[0] and text_of[stop] == text_of[start]:
            stop += 1
        if 1 < stop - start <= most:
            size = stop - start
            pairs = size * (size - 1) // 2
            codes = with_room(codes, count, pairs)
            for left in range(start, stop):
                for right in range(left + 1, stop):
                    one, two = holders[left], holders[right]
                    if one != two:
                        codes[count] = min(one, two) * documents + max(one, two)
                        count += 1
        start = stop
    return codes[:count]


@compiled
def _text_pair_counts(
    keys: npt.NDArray[np.uint64],
    holder_start: npt.NDArray[np.int64],
    holder_end: npt.NDArray[np.int64],
    most: int,
    known: npt.NDArray[np.int64],
    numbers: npt.NDArray[np.int64],
    known_texts: int,
    share: int,
    shares: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Pairs of different passage texts (t1 < t2, as t1 * texts + t2) and how many seeds each
    pair shares (``keys``: seed << 32 | passage, sorted: a seed once per pair); a seed of more than
    ``most`` documents counts for none. The ``known`` pairs (a key_set) are left out, their
    seeds not counted: a verified pair proposes its documents anyway (:func:`with_known`).
    ``known`` names a pair as ``numbers[t1] * known_texts + numbers[t2]`` where the passages
    are numbered afresh (a partition's), and as it is where ``numbers`` is empty. Only the
    pairs whose code is ``share`` modulo ``shares`` are counted."""
    texts = holder_start.shape[0]
    low = np.uint64(0xFFFFFFFF)
    pairs, counts, used = _new_counter()
    group = np.empty(most + 1, dtype=np.int64)
    start = 0
    while start < keys.shape[0]:
        seed = keys[start] >> np.uint64(32)
        stop = start + 1
        while stop < keys.shape[0] and keys[stop] >> np.uint64(32) == seed:
            stop += 1
        size = 0
        held = 0
        for row in range(start, stop):
            passage = np.int64(keys[row] & low)
            if row > start and keys[row] == keys[row - 1]:
                continue
            held += holder_end[passage] - holder_start[passage]
            if held > most:
                break
            group[size] = passage
            size += 1
        start = stop
        if held > most or size < 2:
            continue
        for left in range(size):
            for right in range(left + 1, size):
                code = group[left] * texts + group[right]
                if code % shares != share:
                    continue
                named = code
                if numbers.shape[0]:
                    named = numbers[group[left]] * known_texts + numbers[group[right]]
                if known[_slot(known, named)] == named:
                    continue
                pairs, counts, used = _counted(pairs, counts, used, code, 1)
    return _entries(pairs, counts, 0)


@compiled
def _document_pair_counts(
    text_pairs: npt.NDArray[np.int64],
    counts: npt.NDArray[np.int64],
    texts: int,
    holders: npt.NDArray[np.int64],
    holder_start: npt.NDArray[np.int64],
    holder_end: npt.NDArray[np.int64],
    documents: int,
    least: int,
    share: int,
    shares: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The pairs (a < b) of documents, as a * documents + b, holding texts that share at least
    ``least`` seeds in all, and how many (each pair of texts' count added to every pair of
    documents that hold the two: a chapter copied by ten sites with their own typos is a
    hundred pairs of documents per pair of texts, counted once, not once per seed); only
    those whose code is ``share`` modulo ``shares``."""
    pair_keys, pair_counts, pair_used = _new_counter()
    for row in range(text_pairs.shape[0]):
        one, two = text_pairs[row] // texts, text_pairs[row] % texts
        for first in range(holder_start[one], holder_end[one]):
            for second in range(holder_start[two], holder_end[two]):
                a, b = holders[first], holders[second]
                if a == b:
                    continue
                code = min(a, b) * documents + max(a, b)
                if code % shares != share:
                    continue
                pair_keys, pair_counts, pair_used = _counted(
                    pair_keys, pair_counts, pair_used, code, counts[row]
                )
    return _entries(pair_keys, pair_counts, least)


@compiled
def _entries(
    keys: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], least: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The keys of a counting table counted at least ``least`` times, and their counts, in
    slot order (the callers sort them)."""
    found = 0
    for slot in range(keys.shape[0]):
        found += keys[slot] != -1 and counts[slot] >= least
    taken_keys = np.empty(found, dtype=np.int64)
    taken_counts = np.empty(found, dtype=np.int64)
    at = 0
    for slot in range(keys.shape[0]):
        if keys[slot] != -1 and counts[slot] >= least:
            taken_keys[at], taken_counts[at] = keys[slot], counts[slot]
            at += 1
    return taken_keys, taken_counts


@compiled
def key_set(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``codes`` (none negative) as a hash set: a code is in it if found at its _slot."""
    slots = 16
    while slots < 2 * codes.shape[0]:
        slots *= 2
    keys = np.full(slots, -1, dtype=np.int64)
    for code in codes:
        keys[_slot(keys, code)] = code
    return keys


@compiled
def _new_counter() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """An empty counting table: keys (-1: a free slot), counts, and how many slots are used."""
    return np.full(1 << 12, -1, dtype=np.int64), np.zeros(1 << 12, dtype=np.int64), 0


@compiled
def _counted(
    keys: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], used: int, key: int, amount: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """The counting table with ``amount`` added to ``key``'s count (grown to twice its size
    first, when it is half full)."""
    if 2 * (used + 1) > keys.shape[0]:
        grown_keys = np.full(keys.shape[0] * 2, -1, dtype=np.int64)
        grown_counts = np.zeros(keys.shape[0] * 2, dtype=np.int64)
        for old in range(keys.shape[0]):
            if keys[old] != -1:
                slot = _slot(grown_keys, keys[old])
                grown_keys[slot] = keys[old]
                grown_counts[slot] = counts[old]
        keys, counts = grown_keys, grown_counts
    slot = _slot(keys, key)
    if keys[slot] == -1:
        keys[slot] = key
        used += 1
    counts[slot] += amount
    return keys, counts, used


@compiled
def _slot(keys: npt.NDArray[np.int64], key: int) -> int:
    """The slot of ``key`` in a counting table, or the free one where it would go."""
    mask = keys.shape[0] - 1
    slot = ((key ^ (key >> 29)) * _SPREAD) & mask
    while keys[slot] != -1 and keys[slot] != key:
        slot = (slot + 1) & mask
    return int(slot)


def verified_between(
    pairs: npt.NDArray[np.int64], documents: DocumentRuns, verified: SimilarityTable
) -> npt.NDArray[np.int64]:
    """For each pair (a, b), a < b, of documents: how many verified passage pairs join them."""
    count = max(1, len(documents))
    one, two = documents.of(verified.first), documents.of(verified.second)
    apart = one != two
    known, counts = key_counts([np.minimum(one, two)[apart] * count + np.maximum(one, two)[apart]])
    wanted = pairs[:, 0] * count + pairs[:, 1]
    at = np.searchsorted(known, wanted)
    found = at < len(known)
    found[found] = known[at[found]] == wanted[found]
    strength = np.zeros(len(pairs), dtype=np.int64)
    strength[found] = counts[at[found]]
    return strength
