"""Verify stage: the exact similarity of every candidate pair's shingle sets.

LSH only proposes; a pair is kept when its exact Jaccard similarity reaches the threshold, or
when one passage is mostly contained in the other (a scene copied into a longer passage).
Shingle sets are sets of 64-bit shingle keys (see ``fingerprint``); two different shingles
share a key with probability about 2**-64, so the values are exact in practice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, runs_of, sorted_unique
from dedup.cluster import components
from dedup.codepoints import TextRun, code_points
from dedup.columns import Similarity, SimilarityTable
from dedup.engine.base import HeldTexts, Threads
from dedup.engine.memory import release_freed_memory
from dedup.fingerprint import (
    HeldSignatures,
    Keys,
    Signatures,
    SignatureTable,
    shingle_key_batch,
    shingle_keys,
    shingle_keys_of_codes,
    shingle_offsets,
)
from dedup.kernels import compiled
from dedup.kernels.rows import search_sorted, with_room_for_rows
from dedup.kernels.tables import stamped_add, stamped_slot

T = TypeVar("T", bound=np.generic)


@dataclass(frozen=True, slots=True)
class NgramIndex:
    """Where each n-gram of a text starts: the text's code points, and its n-gram keys sorted
    (as int64), with the position of each (ascending among equal keys)."""

    codes: npt.NDArray[np.uint32]
    keys: npt.NDArray[np.int64]
    positions: npt.NDArray[np.int64]


def ngram_index(text: str, ngram: int, keys_of_text: Keys | None = None) -> NgramIndex:
    """Where each n-gram of ``text`` starts: build it once to compare many texts with the
    same one. ``keys_of_text``: its ``shingle_keys``, if made already."""
    if len(text) < ngram:
        keys = np.empty(0, np.int64)
    else:
        keys = (shingle_keys(text, ngram) if keys_of_text is None else keys_of_text).view(np.int64)
    order = np.argsort(keys, kind="stable")
    return NgramIndex(code_points(text), keys[order], order.astype(np.int64))


def shared_blocks(
    a: str,
    b: str,
    ngram: int,
    index_b: NgramIndex | None = None,
    keys_a: Keys | None = None,
) -> npt.NDArray[np.int64]:
    """Maximal stretches of ``a`` found in ``b``, at least ``ngram`` characters long, in the
    order of ``a``, as rows ``(a_start, b_start, length)``: ``a[a_start:a_start + length] ==
    b[b_start:b_start + length]``. Greedy and linear: each stretch starts at an n-gram of ``a``
    that ``b`` has (its first occurrence in ``b`` after the previous stretch, else its first)
    and grows as far as the two agree. ``index_b`` is ``ngram_index(b, ngram)`` and ``keys_a``
    ``shingle_keys(a, ngram)``, if already made."""
    if len(a) < ngram or len(b) < ngram:
        return np.empty((0, 3), dtype=np.int64)
    index = index_b if index_b is not None else ngram_index(b, ngram)
    return _shared_block_rows(
        code_points(a),
        (shingle_keys(a, ngram) if keys_a is None else keys_a).view(np.int64),
        index.codes,
        index.keys,
        index.positions,
        ngram,
    )


@compiled
def _shared_block_rows(
    a: npt.NDArray[np.uint32],
    a_keys: npt.NDArray[np.int64],
    b: npt.NDArray[np.uint32],
    b_keys: npt.NDArray[np.int64],
    b_positions: npt.NDArray[np.int64],
    ngram: int,
) -> npt.NDArray[np.int64]:
    """shared_blocks' stretches as rows ``(a_start, b_start, length)``: an n-gram of ``b``
    is one with ``a``'s key and the same characters (keys are hashes)."""
    rows = np.empty((16, 3), dtype=np.int64)
    count = 0
    cursor = 0
    index = 0
    while index <= a.shape[0] - ngram:
        key = a_keys[index]
        first, after = -1, -1
        row = search_sorted(b_keys, key)
        while row < b_keys.shape[0] and b_keys[row] == key:
            at = b_positions[row]
            row += 1
            offset = 0
            while offset < ngram and a[index + offset] == b[at + offset]:
                offset += 1
            if offset < ngram:
                continue
            if first < 0:
                first = at
            if at >= cursor:
                after = at
                break
        if first < 0:
            index += 1
            continue
        start = after if after >= 0 else first
        length = ngram
        while (
            index + length < a.shape[0]
            and start + length < b.shape[0]
            and a[index + length] == b[start + length]
        ):
            length += 1
        rows = with_room_for_rows(rows, count, 1)
        rows[count, 0], rows[count, 1], rows[count, 2] = index, start, length
        count += 1
        cursor = start + length
        index += length
    return rows[:count]


def sorted_unique_keys(text: str, ngram: int) -> Keys:
    """The text's shingle keys, sorted and unique (the set ``covered_chars`` compares with)."""
    return sorted_unique(shingle_keys(text, ngram))


def identical_chars(a: str, b: str, ngram: int) -> int:
    """雷同字数, the count plagiarism reviewers quote: characters of ``a`` that lie in an n-gram
    ``b`` also has (normalized text, so punctuation and script do not count)."""
    return covered_chars(shingle_keys(a, ngram), sorted_unique_keys(b, ngram), ngram, len(a))


def covered_chars(keys_a: Keys, unique_b: Keys, ngram: int, length: int) -> int:
    """How many of the ``length`` characters are covered by a shingle (``keys_a`` in order of
    position) that is in ``unique_b``."""
    if not keys_a.size or not unique_b.size:
        return 0
    return int(_covered_count(keys_a, unique_b, ngram, length))


@compiled
def _covered_count(keys_a: Keys, unique_b: Keys, ngram: int, length: int) -> int:
    """covered_chars' count: a binary search in ``unique_b`` for each key, a shingle found
    covering its characters (a run of them marked once: the next shingle's start)."""
    width = min(ngram, length)
    total = 0
    covered_to = 0  # the characters before it are counted already
    for start in range(keys_a.shape[0]):
        key = keys_a[start]
        position = search_sorted(unique_b, key)
        if position < unique_b.shape[0] and unique_b[position] == key:
            end = start + width
            total += end - max(start, covered_to)
            covered_to = end
    return total


def verify_pairs(
    pairs: npt.NDArray[np.int64],
    texts: Sequence[str],
    signatures: npt.NDArray[np.uint32] | SignatureTable,
    ngram: int,
    threshold: float,
    containment: float,
) -> list[Similarity]:
    """The pairs whose exact Jaccard similarity reaches ``threshold`` or whose containment
    reaches ``containment``, with both, the MinHash estimate and the identical characters.
    The shingle sets of the passages involved are built once, in one batch, and every pair is
    scored by one compiled loop (against a small hash table of one passage's keys), since a
    scene that many sites carry with small differences makes many pairs."""
    return list(verify_table(pairs, texts, signatures, ngram, threshold, containment))


def verify_table(
    pairs: npt.NDArray[np.int64],
    texts: Sequence[str],
    signatures: npt.NDArray[np.uint32] | SignatureTable,
    ngram: int,
    threshold: float,
    containment: float,
    threads: Threads | None = None,
) -> SimilarityTable:
    """:func:`verify_pairs`, as a table; with ``threads``, a chunk of the texts (their
    shingle sets) or of the pairs (their scores) at a time on each (the loops release the
    GIL), the same table whatever their number."""
    estimates = minhash_estimates(pairs, signatures, threads)
    return verify_estimated(pairs, texts, estimates, ngram, threshold, containment, threads)


def minhash_estimates(
    pairs: npt.NDArray[np.int64],
    signatures: npt.NDArray[np.uint32] | SignatureTable | HeldSignatures,
    threads: Threads | None = None,
) -> npt.NDArray[np.float64]:
    """The MinHash estimate of each pair's Jaccard similarity: made before verification, so
    that the signatures can go before the shingle sets are made (a scan's peak). Where the
    workers hold the signatures, made there."""
    if isinstance(signatures, HeldSignatures):
        return signatures.estimates(pairs)
    run = threads.in_threads if threads is not None else map
    table = SignatureTable.of(signatures).settled()  # read by several threads next
    estimated = list(
        run(
            lambda start: _estimates(pairs[start : start + _PAIRS_AT_ONCE], table),
            list(range(0, len(pairs), _PAIRS_AT_ONCE)),
        )
    )
    return concatenated(estimated, np.float64)


def verify_estimated(
    pairs: npt.NDArray[np.int64],
    texts: Sequence[str] | TextRun,
    estimates: npt.NDArray[np.float64],
    ngram: int,
    threshold: float,
    containment: float,
    threads: Threads | None = None,
    after: SimilarityTable | None = None,
) -> SimilarityTable:
    """:func:`verify_table`, given the pairs' MinHash ``estimates`` (:func:`minhash_estimates`),
    after the rows of ``after`` (pairs verified already).

    A pair joins two texts of one connected group of candidates (a scene and its copies), so
    the texts go a block of whole groups at a time (:func:`_text_blocks`): a block's shingle
    sets are made, its pairs scored, and the sets let go before the next block's are made.
    Within a block each text's keys in order, which its identical characters need, are held
    only while the pairs it is first of are scored. So verification holds the sets of one
    block, not of every text a candidate involves (a large dump's peak: docs/performance.md);
    the scores are the same whatever the blocks."""
    if not len(pairs):
        return after if after is not None else SimilarityTable.of([])
    run = threads.in_threads if threads is not None else map

    def lengths(involved: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        if isinstance(texts, TextRun):
            return texts.lengths(involved)
        return np.fromiter((len(texts[i]) for i in involved.tolist()), np.int64, len(involved))

    def batch_of(block: npt.NDArray[np.int64]) -> Sequence[str] | RunRows:
        if isinstance(texts, TextRun):
            return RunRows(texts, block, texts.lengths(block))
        return [texts[index] for index in block.tolist()]

    scores = _Scores(len(pairs))
    for block, rows, block_pairs in _blocks(pairs, lengths, _CHARACTERS_AT_ONCE):
        scores.put(rows, _scored_block(block_pairs, batch_of(block), ngram, run))
        # The block's sets were made in chunks on the threads, whose malloc arenas keep
        # what they free: hand it back before the next block's are made.
        release_freed_memory()
    return scores.passing(pairs, estimates, threshold, containment, after)


def verify_where_held(
    pairs: npt.NDArray[np.int64],
    texts: HeldTexts,
    estimates: npt.NDArray[np.float64],
    ngram: int,
    threshold: float,
    containment: float,
    after: SimilarityTable | None = None,
) -> SimilarityTable:
    """:func:`verify_estimated` where the workers keep the texts: a task per block of whole
    candidate groups (smaller blocks than here, so that every worker has some), each given
    the texts of its block; only the scores come back."""
    if not len(pairs):
        return after if after is not None else SimilarityTable.of([])
    # The lengths of the texts the pairs involve, looked up where they are kept, once.
    involved = sorted_unique(pairs)
    involved_lengths = texts.lengths_of(involved)

    def lengths(rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return involved_lengths[np.searchsorted(involved, rows)]

    blocks = [
        _in_scan_order(*block)
        for block in _blocks(
            pairs,
            lengths,
            _CHARACTERS_A_TASK,
            at_least=_TASKS_PER_THREAD * texts.threads,
        )
    ]
    scored = texts.map(
        scored_pairs,
        [block for block, _rows, _pairs in blocks],
        [lengths(block) for block, _rows, _pairs in blocks],
        [block_pairs for _block, _rows, block_pairs in blocks],
        repeat(ngram),
        stage="verify",
        form="code points",
    )
    scores = _Scores(len(pairs))
    for (_block, rows, _pairs), block_scores in zip(blocks, scored, strict=True):
        scores.put(rows, block_scores)
    return scores.passing(pairs, estimates, threshold, containment, after)


def _blocks(
    pairs: npt.NDArray[np.int64],
    lengths: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]],
    characters: int,
    at_least: int = 1,
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """The blocks :func:`_text_blocks` makes of the texts ``pairs`` involve (``lengths`` of
    them, given their numbers), each as its texts (numbers in the scan), its pairs (rows of
    ``pairs``) and those pairs as numbers into its texts: of ``characters`` at most, and of
    fewer where that makes ``at_least`` blocks (a group larger than a block is one alone)."""
    involved = sorted_unique(pairs)
    local = np.searchsorted(involved, pairs)
    place = np.empty(len(involved), dtype=np.int64)
    involved_lengths = lengths(involved)
    characters = max(1, min(characters, int(involved_lengths.sum()) // at_least))
    for block_texts, block_pairs in _text_blocks(local, involved_lengths, characters):
        place[block_texts] = np.arange(len(block_texts))
        yield involved[block_texts], block_pairs, place[local[block_pairs]]


def _in_scan_order(
    block: npt.NDArray[np.int64], rows: npt.NDArray[np.int64], block_pairs: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """A block (:func:`_blocks`) with its texts in the scan's order, its pairs numbered so: a
    worker then takes their code points with one loop a file (in the groups' order, one loop
    every few texts, which cost more than decoding them as strings). The scores are the
    same."""
    order = np.argsort(block, kind="stable")
    place = np.empty(len(order), dtype=np.int64)
    place[order] = np.arange(len(order))
    return block[order], rows, place[block_pairs]


def scored_pairs(
    codes: npt.NDArray[np.uint32],
    lengths: npt.NDArray[np.int64],
    pairs: npt.NDArray[np.int64],
    ngram: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Jaccard, containment and identical characters of ``pairs`` (numbers into the texts of
    ``lengths``, whose code points ``codes`` holds one after another), in their order, in
    one thread (a worker's task)."""
    return _scored_block(pairs, CodePoints.of(codes, lengths), ngram, map)


@dataclass(frozen=True, slots=True)
class CodePoints:
    """Texts as their code points, one text after another, sliced as a list of texts is: what
    a worker's verify task is given, taken from the texts it keeps without a string made
    (:func:`dedup.engine.shuffle._with_codes`)."""

    codes: npt.NDArray[np.uint32]  # read-only, as dedup.codepoints.code_points makes them
    lengths: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]  # text t's codes from starts[t] to starts[t + 1]

    @classmethod
    def of(cls, codes: npt.NDArray[np.uint32], lengths: npt.NDArray[np.int64]) -> CodePoints:
        codes = codes.view()
        codes.flags.writeable = False  # the loops are compiled (and shipped) for read-only
        return cls(codes, lengths, np.concatenate(([0], np.cumsum(lengths))).astype(np.int64))

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, part: slice) -> CodePoints:
        first, stop, _step = part.indices(len(self))
        start, end = int(self.starts[first]), int(self.starts[max(first, stop)])
        return CodePoints(
            self.codes[start:end],
            self.lengths[first:stop],
            self.starts[first : max(first, stop) + 1] - start,
        )


@dataclass(frozen=True, slots=True)
class RunRows:
    """Some texts of a :class:`TextRun` (its ``rows``), sliced as a list of texts is: what a
    block of verification is given here, each chunk's code points made where the chunk's
    shingles are (on the engine's threads), not the block's at once."""

    run: TextRun
    rows: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]  # of each of rows, in characters

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, part: slice) -> RunRows:
        return RunRows(self.run, self.rows[part], self.lengths[part])


def _keys_of(
    texts: Sequence[str] | CodePoints | RunRows, ngram: int
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    if isinstance(texts, RunRows):
        texts = CodePoints.of(texts.run.code_points(texts.rows), texts.lengths)
    if isinstance(texts, CodePoints):
        return shingle_keys_of_codes(texts.codes, texts.lengths, ngram)
    return shingle_key_batch(texts, ngram)


class _Scores:
    """Each candidate pair's scores, filled a block of pairs at a time."""

    def __init__(self, count: int) -> None:
        self.jaccard, self.contained = np.empty(count), np.empty(count)
        self.identical = np.empty(count, dtype=np.int64)

    def put(
        self,
        rows: npt.NDArray[np.int64],
        scores: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]],
    ) -> None:
        for into, part in zip((self.jaccard, self.contained, self.identical), scores, strict=True):
            into[rows] = part

    def passing(
        self,
        pairs: npt.NDArray[np.int64],
        estimates: npt.NDArray[np.float64],
        threshold: float,
        containment: float,
        after: SimilarityTable | None = None,
    ) -> SimilarityTable:
        """The pairs whose Jaccard passes ``threshold`` or whose containment ``containment``,
        after the rows of ``after`` (pairs verified already)."""
        after = after if after is not None else SimilarityTable.of([])
        passed = np.flatnonzero((self.jaccard >= threshold) | (self.contained >= containment))
        # A column at a time, each taken and joined to ``after``'s at once, and the scores let
        # go of as they are taken: a large dump's verified pairs are millions, and the table
        # is then held once, not three times.

        def joined(before: npt.NDArray[T], column: npt.NDArray[Any]) -> npt.NDArray[T]:
            return np.concatenate((before, column[passed].astype(before.dtype, copy=False)))

        first, second = joined(after.first, pairs[:, 0]), joined(after.second, pairs[:, 1])
        jaccard = joined(after.jaccard, self.jaccard)
        self.jaccard = np.empty(0)
        contained = joined(after.containment, self.contained)
        self.contained = np.empty(0)
        identical = joined(after.identical_chars, self.identical)
        self.identical = np.empty(0, dtype=np.int64)
        estimated = joined(after.minhash_jaccard, estimates)
        return SimilarityTable(first, second, jaccard, contained, estimated, identical)


def _text_blocks(
    local: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64], characters: int
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """The texts (numbers into ``lengths``) and pairs (rows of ``local``) of each block: whole
    connected groups of the pairs, in the order of their first texts, a block closed once
    it holds ``characters`` characters (a group larger than that is a block alone)."""
    group = components(local[:, 0], local[:, 1], len(lengths))
    by_group = np.argsort(group, kind="stable")
    ends = np.flatnonzero(np.diff(group[by_group], append=-1))  # each group's last text
    filled = np.cumsum(lengths[by_group])
    cuts: list[int] = []
    for end in ends.tolist():
        if filled[end] - (filled[cuts[-1]] if cuts else 0) >= characters:
            cuts.append(end)
    if not cuts or cuts[-1] != len(by_group) - 1:
        cuts.append(len(by_group) - 1)
    block_of = np.empty(len(lengths), dtype=np.int64)
    block_of[by_group] = np.searchsorted(np.array(cuts), np.arange(len(by_group)))
    pair_blocks = block_of[local[:, 0]]
    pair_order = np.argsort(pair_blocks, kind="stable")
    pair_bounds = np.searchsorted(pair_blocks[pair_order], np.arange(len(cuts) + 1))
    text_bounds = [0, *(cut + 1 for cut in cuts)]
    for block in range(len(cuts)):
        yield (
            by_group[text_bounds[block] : text_bounds[block + 1]],
            pair_order[pair_bounds[block] : pair_bounds[block + 1]],
        )


def _scored_block(
    local: npt.NDArray[np.int64],
    batch: Sequence[str] | CodePoints | RunRows,
    ngram: int,
    run: Callable[..., Iterable[Any]],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Jaccard, containment and identical characters of the pairs ``local`` (numbers into
    ``batch``), in their order: the batch's shingle sets made a chunk of texts at a time,
    the pairs scored a block of first texts at a time (``run`` maps over the chunks)."""
    text_chunks = [
        batch[start : start + _TEXTS_AT_ONCE] for start in range(0, len(batch), _TEXTS_AT_ONCE)
    ]
    lengths = (
        batch.lengths
        if isinstance(batch, CodePoints | RunRows)
        else np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
    )
    unique, unique_offsets = _joined_sets(
        run(lambda chunk: _shingle_sets(chunk, ngram), text_chunks), lengths, ngram
    )
    order = np.argsort(local[:, 0], kind="stable")
    by_first = local[order]
    firsts = range(0, len(batch), _FIRSTS_AT_ONCE)
    bounds = np.searchsorted(by_first[:, 0], [*firsts, len(batch)])

    def score(
        block: int,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        first = firsts[block]
        keys, offsets = _keys_of(batch[first : first + _FIRSTS_AT_ONCE], ngram)
        return _score_pairs(
            by_first[bounds[block] : bounds[block + 1]],
            first, keys, offsets, unique, unique_offsets, lengths, ngram,
        )  # fmt: skip

    scored = [part for part in run(score, range(len(firsts))) if len(part[0])]
    jaccard, contained = np.empty(len(local)), np.empty(len(local))
    identical = np.empty(len(local), dtype=np.int64)
    if scored:
        for into, part in zip(
            (jaccard, contained, identical), zip(*scored, strict=True), strict=True
        ):
            into[order] = np.concatenate(part)
    return jaccard, contained, identical


# Texts (shingle sets made), first texts (their keys made, their pairs scored) and pairs
# (their estimates) in a chunk: each chunk is a task for one of the engine's threads, and
# chunks of this size keep the join cheap.
_TEXTS_AT_ONCE = 5_000
_FIRSTS_AT_ONCE = 5_000
_PAIRS_AT_ONCE = 50_000
# The characters of the texts whose shingle sets are held at once (8 bytes a shingle): large
# enough that a block keeps both threads busy (some 60,000 texts), small beside a large dump's
# texts: at 1 GB, the block's sets were verification's peak (docs/performance.md).
_CHARACTERS_AT_ONCE = 20_000_000
# The characters of a block one worker's task verifies (on a cluster, dedup.engine.shuffle),
# at most: half the above, a worker's thread holding one block's sets; and fewer, so that
# each thread has a few blocks (with two, one worker's last took a second after the other's).
_CHARACTERS_A_TASK = 10_000_000
_TASKS_PER_THREAD = 4


def _shingle_sets(
    chunk: Sequence[str] | CodePoints | RunRows, ngram: int
) -> tuple[Keys, npt.NDArray[np.int64]]:
    """Each text's set of shingle keys (sorted), in one array with their offsets."""
    keys, offsets = _keys_of(chunk, ngram)
    return _sorted_unique_batch(keys, offsets)


def _joined_sets(
    chunks: Iterable[tuple[Keys, npt.NDArray[np.int64]]],
    lengths: npt.NDArray[np.int64],
    ngram: int,
) -> tuple[Keys, npt.NDArray[np.int64]]:
    """The chunks' shingle sets (text t's at ``unique[offsets[t]:offsets[t + 1]]``), chunk
    after chunk, as one: copied into an array made for all of them as each chunk comes, and
    let go of, so that they are held about once, not twice. The sets take at most as many
    slots as the texts have shingles; the slots left over are never touched, so they take no
    memory."""
    unique = np.empty(int(shingle_offsets(lengths, ngram)[-1]), dtype=np.uint64)
    unique_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    text = 0
    for chunk_unique, chunk_unique_offsets in chunks:
        count = len(chunk_unique_offsets) - 1
        base = int(unique_offsets[text])
        unique[base : base + len(chunk_unique)] = chunk_unique
        unique_offsets[text + 1 : text + count + 1] = chunk_unique_offsets[1:] + base
        text += count
    return unique[: int(unique_offsets[-1])], unique_offsets


@compiled
def _sorted_unique_batch(
    keys: Keys, offsets: npt.NDArray[np.int64]
) -> tuple[Keys, npt.NDArray[np.int64]]:
    """Each text's keys sorted and unique, in one array with their own offsets."""
    unique = np.empty(keys.shape[0], dtype=np.uint64)
    unique_offsets = np.zeros(offsets.shape[0], dtype=np.int64)
    size = 0
    for text in range(offsets.shape[0] - 1):
        ordered = np.sort(keys[offsets[text] : offsets[text + 1]])
        for position in range(ordered.shape[0]):
            if position == 0 or ordered[position] != ordered[position - 1]:
                unique[size] = ordered[position]
                size += 1
        unique_offsets[text + 1] = size
    return unique[:size], unique_offsets


@compiled
def _score_pairs(
    pairs: npt.NDArray[np.int64],
    first_base: int,
    keys: Keys,
    offsets: npt.NDArray[np.int64],
    unique: Keys,
    unique_offsets: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    ngram: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    """Jaccard similarity and containment of each pair's shingle sets, and the characters of
    the first passage covered by a shingle the second has (as ``covered_chars``): ``pairs``
    sorted by their first text, ``keys`` and ``offsets`` those of the first texts from
    ``first_base`` on. The first text's keys go into a stamped set (dedup.kernels.tables:
    never cleared) once for all its pairs, with the slot each of its shingles is in; the
    second's are looked up in it, each found marking its slot with the pair's number (the
    branches of a sorted merge or a binary search are unpredictable and cost more)."""
    count = pairs.shape[0]
    jaccard = np.zeros(count, dtype=np.float64)
    contained = np.zeros(count, dtype=np.float64)
    identical = np.zeros(count, dtype=np.int64)
    longest_set = 1
    for text in range(unique_offsets.shape[0] - 1):
        longest_set = max(longest_set, unique_offsets[text + 1] - unique_offsets[text])
    size = 1
    while size < 2 * longest_set:
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.zeros(size, dtype=np.uint64)
    stamps = np.zeros(size, dtype=np.int64)
    marks = np.zeros(size, dtype=np.int64)
    longest = max(1, lengths.max())
    slot_of = np.zeros(longest, dtype=np.int64)  # the slot of each of the first's shingles
    covered = np.zeros(longest, dtype=np.bool_)
    held, stamp = -1, 0
    for number in range(count):
        first, second = pairs[number, 0], pairs[number, 1]
        size_a = unique_offsets[first + 1] - unique_offsets[first]
        size_b = unique_offsets[second + 1] - unique_offsets[second]
        if size_a == 0 or size_b == 0:
            continue
        own = first - first_base
        if first != held:  # a new set: a new stamp
            held, stamp = first, stamp + 1
            for index in range(unique_offsets[first], unique_offsets[first + 1]):
                stamped_add(slots, stamps, mask, stamp, unique[index])
            for start in range(offsets[own + 1] - offsets[own]):
                key = keys[offsets[own] + start]
                slot_of[start] = stamped_slot(slots, stamps, mask, stamp, key)
        mark = number + 1
        shared = 0
        for index in range(unique_offsets[second], unique_offsets[second + 1]):
            slot = stamped_slot(slots, stamps, mask, stamp, unique[index])
            if slot >= 0:
                marks[slot] = mark
                shared += 1
        jaccard[number] = shared / (size_a + size_b - shared)
        contained[number] = shared / min(size_a, size_b)
        length = lengths[first]
        width = min(ngram, length)
        for position in range(length):
            covered[position] = False
        for start in range(offsets[own + 1] - offsets[own]):
            slot = slot_of[start]
            if slot >= 0 and marks[slot] == mark:
                for position in range(start, start + width):
                    covered[position] = True
        total = 0
        for position in range(length):
            total += covered[position]
        identical[number] = total
    return jaccard, contained, identical


def estimates_in_runs(
    pairs: npt.NDArray[np.int64], firsts: Sequence[int], runs: Sequence[Signatures]
) -> npt.NDArray[np.float64]:
    """The MinHash estimate of each pair of passages (numbered in the whole scan), given the
    signatures of runs of consecutive passages, ``runs[i]`` those from passage ``firsts[i]``
    on (ascending): every passage a pair names is in one of them."""
    table = SignatureTable(runs[0].shape[1], runs) if runs else SignatureTable(1)
    starts = np.asarray(firsts, dtype=np.int64)
    offsets = np.cumsum([0, *(len(run) for run in runs)])[:-1]

    def rows(passages: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        run = runs_of(starts, passages)
        return np.asarray(offsets[run] + passages - starts[run], dtype=np.int64)

    return _estimates(np.stack((rows(pairs[:, 0]), rows(pairs[:, 1])), axis=1), table)


def _estimates(pairs: npt.NDArray[np.int64], table: SignatureTable) -> npt.NDArray[np.float64]:
    """The MinHash estimate of every pair, in blocks of rows."""
    estimates = np.empty(len(pairs), dtype=np.float64)
    for start in range(0, len(pairs), 65536):
        block = pairs[start : start + 65536]
        equal = table.rows(block[:, 0]) == table.rows(block[:, 1])
        estimates[start : start + len(block)] = equal.mean(axis=1)
    return estimates


def verify_candidates(
    copies: SimilarityTable,
    pairs: npt.NDArray[np.int64],
    texts: TextRun | HeldTexts,
    estimates: npt.NDArray[np.float64],
    ngram: int,
    threshold: float,
    containment: float,
    threads: Threads | None = None,
) -> SimilarityTable:
    """The verified pairs: the exact copies' links (verified already), and the candidate
    ``pairs`` whose exact similarity passes ``threshold`` or ``containment`` (on ``threads``,
    a chunk at a time); ``estimates``: their MinHash estimates (:func:`minhash_estimates`).
    Where the workers keep the texts, on the workers (:func:`verify_where_held`)."""
    if isinstance(texts, HeldTexts):
        return verify_where_held(pairs, texts, estimates, ngram, threshold, containment, copies)
    return verify_estimated(
        pairs,
        candidate_texts(texts, pairs),
        estimates,
        ngram,
        threshold,
        containment,
        threads,
        after=copies,
    )


def candidate_texts(texts: TextRun, pairs: npt.NDArray[np.int64]) -> TextRun:
    """``texts``, checked to hold the text of every passage in ``pairs``: candidates are drawn
    from the first passage of each distinct text, which always comes with its text."""
    if not texts.held()[sorted_unique(pairs)].all():
        raise RuntimeError("a candidate passage came without its text: please report this bug")
    return texts
