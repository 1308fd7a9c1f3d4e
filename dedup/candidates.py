"""Candidates stage: LSH banding over MinHash signatures -> candidate passage pairs.

The signature is cut into ``bands`` bands of ``rows`` rows (chosen for the threshold by
datasketch's own optimizer); two passages are candidates when any band is identical. Band keys
are grouped by sorting compact arrays, not by one Python object per passage per band.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, found_in, partitioned, sorted_unique
from dedup.columns import SimilarityTable, SpanTable
from dedup.engine.base import Threads
from dedup.fingerprint import HeldSignatures, SignatureTable
from dedup.segment import text_hashes

Pairs = npt.NDArray[np.int64]  # shape (n, 2), each row (i, j) with i < j
# A bucket this large is boilerplate repeated across a dump (a site's disclaimer after every
# chapter): all its pairs would be quadratic in number. Its members are linked to its first
# member instead, which keeps them together in one cluster with a linear number of pairs.
# (A scene republished by a few hundred sites still gets every pair compared.)
MAX_BUCKET_PAIRS_MEMBERS = 500


@functools.cache
def lsh_params(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) minimising false positives plus false negatives at ``threshold``, with
    equal weights, as ``datasketch.MinHashLSH`` chooses them: of every (bands, rows) that fits
    in ``num_perm``, the first in datasketch's order (bands, then rows, ascending) with the
    least weighted error. A pair of Jaccard similarity s shares a band with probability
    1 - (1 - s^rows)^bands; the false positives are its integral below the threshold, the
    false negatives that of its complement above. Integrated by Gauss-Legendre quadrature
    over all pairs at once (datasketch calls scipy's quad once per pair: its choice is tested
    equal)."""
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    bands = np.array([b for b, _r in pairs], dtype=np.float64)[:, None]
    rows = np.array([r for _b, r in pairs], dtype=np.float64)[:, None]
    nodes, weights = np.polynomial.legendre.leggauss(_QUADRATURE_POINTS)

    def integral(low: float, high: float, above: bool) -> npt.NDArray[np.float64]:
        s = (high - low) / 2 * nodes[None, :] + (high + low) / 2
        shared = 1 - (1 - s**rows) ** bands
        values = 1 - shared if above else shared
        return np.asarray((high - low) / 2 * (values * weights).sum(axis=1))

    error = 0.5 * integral(0.0, threshold, False) + 0.5 * integral(threshold, 1.0, True)
    best_bands, best_rows = pairs[int(np.argmin(error))]  # argmin: the first of equals
    return best_bands, best_rows


_QUADRATURE_POINTS = 64


def _band_keys(block: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    """The key of each band of ``block`` (its last axis: a band's rows of the signature)."""
    keys = np.zeros(block.shape[:-1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(block.shape[-1]):
            keys = keys * np.uint64(0x9E3779B97F4A7C15) + block[..., column].astype(np.uint64)
    return keys


def band_keys(signatures: SignatureTable, bands: int, rows: int) -> npt.NDArray[np.int64]:
    """Each passage's LSH band keys (one row per passage, one column per band), as candidate
    pairs are found by: an index keeps them to find stored passages that share a band. Every
    band at once: an index adds a file at a time, and a page's few passages a band at a time
    cost more in numpy's calls than in its work."""
    block = signatures.columns(0, bands * rows).reshape(len(signatures), bands, rows)
    return _band_keys(block).view(np.int64)


def candidate_pairs(
    signatures: npt.NDArray[np.uint32] | SignatureTable | HeldSignatures,
    bands: int,
    rows: int,
    among: npt.NDArray[np.int64] | None = None,
    threads: Threads | None = None,
) -> Pairs:
    """All pairs of passages that share at least one band, sorted and unique. With ``among``
    (sorted row numbers), only those rows take part; pairs are still of row numbers. Each band
    is taken from the signatures on its own, so no copy of all of them is made; with
    ``threads``, a band on each (numpy's sorts and comparisons release the GIL). Near copies
    share most of their bands, so each band's pairs are made unique and merged into those of
    the bands before as they come: every band's pairs held at once were most of a scan's
    peak memory (docs/performance.md). Signatures the workers hold are grouped there, a
    partition of the buckets at a time (dedup.engine.shuffle)."""
    if isinstance(signatures, HeldSignatures):
        count = len(signatures)
        taking_part = np.arange(count, dtype=np.int64) if among is None else among
        return pairs_of_codes(signatures.pair_codes(bands, rows, taking_part), count)
    table = SignatureTable.of(signatures).settled()  # read by several threads next
    count = len(table)

    def band_codes(band: int) -> npt.NDArray[np.int64]:
        keys = _band_keys(table.columns(band * rows, (band + 1) * rows, among))
        return _pair_codes(_bucket_pairs(keys), among, count)

    run = threads.in_threads if threads is not None else map
    codes = np.empty(0, dtype=np.int64)
    for found in run(band_codes, list(range(bands))):
        codes = merged_codes(codes, found)
    return pairs_of_codes(codes, count)


@dataclass(frozen=True, slots=True)
class BandEntries:
    """Band keys of some passages bound for one partition of a shuffle (on a cluster, where
    the workers that made the signatures keep them): entry i is band ``bands[i]``'s key
    ``keys[i]`` of passage ``passages[i]`` (numbered in the whole scan), in order of band,
    then passage."""

    bands: npt.NDArray[np.int16]
    keys: npt.NDArray[np.uint64]
    passages: npt.NDArray[np.int64]


def band_entries(
    runs: Sequence[npt.NDArray[np.uint32]],
    taking_part: Sequence[npt.NDArray[np.int64]],
    firsts: Sequence[int],
    bands: int,
    rows: int,
    partitions: int,
) -> list[BandEntries]:
    """The band keys of runs of consecutive passages of a scan (``runs[i]``: the signatures
    of passages from ``firsts[i]`` on, the runs in the scan's order), of the rows
    ``taking_part[i]`` of each (sorted), split into ``partitions`` by their band and key: all
    entries of one bucket (a band's key) go to one partition, so each partition's pairs are
    found apart from the others' (:func:`partition_pair_codes`)."""
    num_perm = runs[0].shape[1] if runs else bands * rows
    table = SignatureTable(num_perm, runs)
    offsets = np.cumsum([0, *(len(run) for run in runs)])
    rows_taking_part = concatenated(
        [part + offset for part, offset in zip(taking_part, offsets.tolist(), strict=False)],
        np.int64,
    )
    passages = concatenated(
        [part + first for part, first in zip(taking_part, firsts, strict=True)], np.int64
    )
    keys = concatenated(
        [
            _band_keys(table.columns(band * rows, (band + 1) * rows, rows_taking_part))
            for band in range(bands)
        ],
        np.uint64,
    )
    band_of = np.repeat(np.arange(bands, dtype=np.int16), len(passages))
    passages = np.tile(passages, bands)
    with np.errstate(over="ignore"):
        bucket = keys * np.uint64(0x100000001B3) + band_of.astype(np.uint64)
    # In order within a partition: by band, then passage.
    return [
        BandEntries(band_of[rows], keys[rows], passages[rows])
        for rows in partitioned(bucket, partitions)
    ]


def partition_pair_codes(parts: Sequence[BandEntries], count: int) -> npt.NDArray[np.int64]:
    """The candidate pairs of one partition's buckets, given its entries from every run of
    passages in the scan's order, as ``low * count + high`` (one integer a pair, sorted and
    unique): the pairs :func:`candidate_pairs` finds in these buckets."""
    band_of = concatenated([part.bands for part in parts], np.int16)
    keys = concatenated([part.keys for part in parts], np.uint64)
    passages = concatenated([part.passages for part in parts], np.int64)
    # Stable: within a band the passages stay in the scan's order, ascending, as _pair_codes
    # needs of ``among``.
    order = np.argsort(band_of, kind="stable")
    ordered = band_of[order]
    codes = np.empty(0, dtype=np.int64)
    if not len(order):
        return codes
    starts = np.flatnonzero(np.append(True, ordered[1:] != ordered[:-1])).tolist()
    for low, high in zip(starts, [*starts[1:], len(order)], strict=True):
        rows = order[low:high]
        found = _bucket_pairs(keys[rows])
        codes = merged_codes(codes, _pair_codes(found, passages[rows], count))
    return codes


def pairs_of_codes(codes: npt.NDArray[np.int64], count: int) -> Pairs:
    """Pairs given as ``low * count + high`` (:func:`_pair_codes`) as rows (low, high)."""
    return np.stack((codes // count, codes % count), axis=1)


def _pair_codes(
    found: list[Pairs], among: npt.NDArray[np.int64] | None, count: int
) -> npt.NDArray[np.int64]:
    """Pairs of positions (of ``among``'s rows, if given) as one integer per pair of rows,
    ``low * count + high``, sorted and unique: a 1-D unique is many times faster than one
    over rows, and takes half the memory."""
    codes = []
    while found:
        pairs = found.pop()
        low, high = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
        if among is not None:  # sorted, so the lower position is the lower row
            low, high = among[low], among[high]
        codes.append(low.astype(np.int64) * count + high)
    return sorted_unique(concatenated(codes, np.int64))


def merged_codes(one: npt.NDArray[np.int64], two: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Two sorted arrays of unique values as one: a stable sort (timsort) of the two runs one
    after the other merges them in one pass."""
    joined = np.concatenate((one, two))
    joined.sort(kind="stable")
    if joined.size < 2:
        return joined
    return joined[np.concatenate(([True], joined[1:] != joined[:-1]))]


def _bucket_pairs(keys: npt.NDArray[np.uint64]) -> list[Pairs]:
    """Pairs of positions with equal keys, without a Python loop over buckets: after sorting,
    members of one bucket are adjacent, so pairing each position with the one ``distance``
    places on, for distance 1, 2, ... up to the largest bucket, yields every pair once."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    boundaries = np.flatnonzero(np.diff(ordered)) + 1
    starts = np.concatenate(([0], boundaries))
    sizes = np.diff(np.concatenate((starts, [keys.size])))
    size_at = np.repeat(sizes, sizes)
    found: list[Pairs] = []
    for start, size in zip(
        starts[sizes > MAX_BUCKET_PAIRS_MEMBERS],
        sizes[sizes > MAX_BUCKET_PAIRS_MEMBERS],
        strict=True,
    ):
        members = order[start : start + size]
        hub = np.full(size - 1, members.min())
        found.append(np.stack((hub, members[members != hub[0]]), axis=1))
    pairable = (size_at > 1) & (size_at <= MAX_BUCKET_PAIRS_MEMBERS)
    distance = 1
    while distance < keys.size:
        same = (ordered[:-distance] == ordered[distance:]) & pairable[:-distance]
        if not same.any():
            break
        left = np.flatnonzero(same)
        found.append(np.stack((order[left], order[left + distance]), axis=1))
        distance += 1
    return found


# LSH is tuned for a Jaccard threshold of at most this (the default threshold), whatever
# --threshold is: stricter
# thresholds are applied by exact verification. Pairs found only by containment (a scene inside
# a longer passage) have a lower Jaccard similarity than the threshold, and a scan at a stricter
# threshold finds exactly the pairs a looser scan found that pass it (so `dedup report
# --threshold` equals a fresh scan).
CANDIDATE_CEILING = 0.4


@runtime_checkable
class HeldHashes(Protocol):
    """The two hashes of each passage's normalized text where the workers that made them keep
    them (a Dask cluster's), not in this process: the exact copies are found there, and only
    the copies come back (dedup.engine.shuffle)."""

    def __len__(self) -> int: ...

    def copies(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Each later copy of a text (ascending) and the first passage of that text:
        :func:`copies_of` over all the passages."""
        ...

    def let_go(self) -> None:
        """The workers let the hashes go."""
        ...


def copies_of(
    hashes: npt.NDArray[np.int64], passages: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Of ``passages`` (ascending) with these ``hashes`` (two a text, equal for equal texts),
    each later copy of a text (ascending) and the first passage with the same two hashes."""
    by_hash = np.lexsort((hashes[:, 1], hashes[:, 0]))  # stable: the first of equals first
    ordered = hashes[by_hash]
    new_group = np.append(True, (ordered[1:] != ordered[:-1]).any(axis=1))
    starts = np.flatnonzero(new_group)
    # Each text's group is led by its first passage (the lowest).
    leader = np.empty(len(hashes), dtype=np.int64)
    leader[by_hash] = np.repeat(by_hash[starts], np.diff(np.append(starts, len(hashes))))
    copies = np.flatnonzero(leader != np.arange(len(hashes)))
    return passages[copies], passages[leader[copies]]


def exact_copies(
    texts: Sequence[str | None],
    hashes: npt.NDArray[np.int64] | HeldHashes | None = None,
    lengths_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]] | None = None,
) -> tuple[npt.NDArray[np.int64], SimilarityTable]:
    """The first passage of every distinct normalized text, and a verified link from each later
    copy to that first one (Jaccard, containment and MinHash estimate 1). ``hashes``: two per
    text (segment.text_hashes, made by the workers), equal for equal texts; texts with both
    equal are copies. A later copy's text may be None (a worker need not hand it back twice:
    dedup.engine.copies); the first of each text is always there. Given the texts' hashes and
    ``lengths_of`` (the length of the text of each of some passages), the texts themselves are
    not read (a cluster's workers keep them, the hashes and the lengths)."""
    if hashes is None:
        hashes = text_hashes(cast(Sequence[str], texts))
    if not len(hashes):  # a dump with no passage at all (every input skipped, say)
        return np.empty(0, dtype=np.int64), SimilarityTable.of([])
    if isinstance(hashes, HeldHashes):
        copies, originals = hashes.copies()
    else:
        copies, originals = copies_of(hashes, np.arange(len(hashes), dtype=np.int64))
    ones = np.ones(len(copies), dtype=np.float64)
    if lengths_of is None:
        leaders = cast(list[str], [texts[index] for index in originals.tolist()])
        lengths = np.fromiter(map(len, leaders), dtype=np.int64, count=len(leaders))
    else:
        lengths = lengths_of(originals)
    links = SimilarityTable(originals, copies, ones, ones, ones, lengths)
    distinct = np.ones(len(hashes), dtype=np.bool_)
    distinct[copies] = False
    return np.flatnonzero(distinct).astype(np.int64), links


@dataclass(frozen=True, slots=True)
class HashEntries:
    """The hashes of some passages bound for one partition of a shuffle (on a cluster, where
    the workers that made them keep them): passage ``passages[i]``'s (numbered in the whole
    scan) are ``hashes[i]``, the passages ascending."""

    hashes: npt.NDArray[np.int64]
    passages: npt.NDArray[np.int64]


def hash_entries(
    runs: Sequence[npt.NDArray[np.int64]], firsts: Sequence[int], partitions: int
) -> list[HashEntries]:
    """The hashes of runs of consecutive passages of a scan (``runs[i]``: those of the
    passages from ``firsts[i]`` on, the runs in the scan's order), split into ``partitions``
    by their first hash: all copies of a text go to one partition, so each partition's copies
    are found apart from the others' (:func:`partition_copies`)."""
    hashes = concatenated(list(runs), np.int64, columns=2)
    passages = concatenated(
        [
            np.arange(len(run), dtype=np.int64) + first
            for run, first in zip(runs, firsts, strict=True)
        ],
        np.int64,
    )
    return [
        HashEntries(hashes[rows], passages[rows])
        for rows in partitioned(hashes[:, 0].view(np.uint64), partitions)
    ]


def partition_copies(
    parts: Sequence[HashEntries],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The copies one partition holds, given its entries from every run of passages in the
    scan's order: each later copy (ascending) and the first passage of its text, as
    :func:`copies_of` finds them among all the passages."""
    return copies_of(
        concatenated([part.hashes for part in parts], np.int64, columns=2),
        concatenated([part.passages for part in parts], np.int64),
    )


def without_overlapping(pairs: npt.NDArray[np.int64], spans: SpanTable) -> npt.NDArray[np.int64]:
    """Drop pairs of passages that overlap in the same text (--passage-overlap): they share
    characters because they were cut that way, not because a site copied them."""
    if not len(pairs):
        return pairs
    texts = spans.documents.texts()
    if 2 * len(pairs) < len(spans):
        # fewer rows than the table holds: each one's run searched, no array of a row a
        # passage made (issue 21: the driver's memory past the pairs)
        one, two = (texts[spans.document_of(pairs[:, side])] for side in (0, 1))
    else:
        text_of = texts[spans.row_documents()]
        one, two = text_of[pairs[:, 0]], text_of[pairs[:, 1]]
    same_text = np.flatnonzero(one == two)
    # Only the pairs within one text need their passages' ends (which a cluster's workers
    # keep): a few neighbours in a chapter, where all the pairs are millions.
    starts, ends = spans.ends_of(pairs[same_text].T.ravel())
    first, second = np.split(np.arange(2 * len(same_text)), 2)
    overlapping = (starts[first] < ends[second]) & (starts[second] < ends[first])
    return np.asarray(np.delete(pairs, same_text[overlapping], axis=0), dtype=np.int64)


@dataclass(frozen=True, slots=True)
class Leaders:
    """The first passage of each of ``count`` passages' text (its leader): itself, but for
    the later copies of a text (``copies``, ascending), whose leaders are ``originals``.
    Held as the copies alone, not a number a passage (issue 21: the driver's memory)."""

    count: int
    copies: npt.NDArray[np.int64]
    originals: npt.NDArray[np.int64]

    @classmethod
    def of_array(cls, leader: npt.NDArray[np.int64]) -> Leaders:
        """The leaders given one a passage."""
        copies = np.flatnonzero(leader != np.arange(len(leader))).astype(np.int64)
        return cls(len(leader), copies, leader[copies])

    def __len__(self) -> int:
        return self.count

    def of(self, passages: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The leader of each of ``passages``."""
        leader = np.array(passages, dtype=np.int64)
        at, copy = found_in(self.copies, leader)
        leader[copy] = self.originals[at[copy]]
        return leader

    def distinct(self) -> npt.NDArray[np.int64]:
        """The passages that lead their text (the first of each distinct text)."""
        leads = np.ones(self.count, dtype=np.bool_)
        leads[self.copies] = False
        return np.flatnonzero(leads).astype(np.int64)

    def dense(self) -> npt.NDArray[np.int64]:
        """The leader of every passage, a number each."""
        leader = np.arange(self.count, dtype=np.int64)
        leader[self.copies] = self.originals
        return leader


@dataclass(frozen=True, slots=True)
class Candidates:
    """What the candidates stage proposes: each later copy of a text linked to its first
    passage (verified already: the same normalized text), and pairs of distinct texts LSH
    found alike enough to verify."""

    copies: SimilarityTable
    pairs: npt.NDArray[np.int64]

    def leaders(self, count: int) -> Leaders:
        """For each of ``count`` passages, the first passage of its text (itself, mostly)."""
        return Leaders(count, self.copies.second, self.copies.first)


def find_candidates(
    lengths_of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.int64]],
    hashes: npt.NDArray[np.int64] | HeldHashes,
    signatures: SignatureTable | HeldSignatures,
    spans: SpanTable,
    threshold: float,
    num_perm: int,
    threads: Threads | None = None,
) -> Candidates:
    """Exact copies (the same normalized text: its two ``hashes``) are linked directly; LSH
    runs once per distinct text, so a scene copied by a hundred sites costs a hundred links,
    not ten thousand pairs. Pairs of passages that overlap in one text are left out.
    ``lengths_of``: the normalized characters of each of some passages; ``threads``: where
    the bands are grouped (dedup.engine)."""
    distinct, copies = exact_copies((), hashes, lengths_of)
    bands, rows = lsh_params(min(threshold, CANDIDATE_CEILING), num_perm)
    pairs = candidate_pairs(signatures, bands, rows, among=distinct, threads=threads)
    return Candidates(copies, without_overlapping(pairs, spans))
