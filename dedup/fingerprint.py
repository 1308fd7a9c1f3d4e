"""Fingerprint stage: normalized passages -> character n-gram shingles -> MinHash signatures.

Signatures are bit-identical to what ``datasketch.MinHash(num_perm, seed, scheme="affine32",
hashfunc=shingle_hash)`` computes from ``update_batch`` on the UTF-8 encoded shingles, so they
stay usable with datasketch's LSH, ``jaccard`` and ``LeanMinHash``. They are computed for many
passages at once by one compiled loop (numba): a passage's shingle hashes are computed into a
buffer, then each permutation's minimum is a reduction over that buffer, which the compiler
vectorizes. ``benchmarks/bench_scan.py`` prints the stage against rensa; a numpy version of the
same arithmetic was 6.5x slower (see docs/performance.md).

The shingle hash: each shingle's code points are combined into a 64-bit key by a polynomial
(multiplier ``SHINGLE_MULTIPLIER``, arithmetic modulo 2**64) and mixed with the splitmix64
finalizer; the 32-bit shingle hash is the key's upper half. The 64-bit keys themselves serve
as shingle identities when verification compares shingle sets.
"""

from __future__ import annotations

import functools
import mmap
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points
from dedup.kernels import compiled

SHINGLE_MULTIPLIER = np.uint64(0x100000001B3)  # the 64-bit FNV prime: odd, spreads code points
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1
_MAX_HASH = np.uint32(0xFFFFFFFF)
_CHUNK_CHARS = 1 << 15

Keys = npt.NDArray[np.uint64]
Signatures = npt.NDArray[np.uint32]


def shingle_keys(text: str, ngram: int) -> Keys:
    """64-bit keys of every character n-gram of ``text``, in order (a text shorter than
    ``ngram`` is one shingle)."""
    return shingle_key_batch([text], ngram)[0]


def shingle_hash(shingle: bytes) -> int:
    """The 32-bit hash of one UTF-8 encoded shingle: pass it to datasketch as ``hashfunc``."""
    key = 0
    for char in shingle.decode("utf-8"):
        key = (key * int(SHINGLE_MULTIPLIER) + ord(char)) & _MASK64
    key ^= key >> 30
    key = (key * int(_MIX1)) & _MASK64
    key ^= key >> 27
    key = (key * int(_MIX2)) & _MASK64
    key ^= key >> 31
    return key >> 32


def shingles(text: str, ngram: int) -> list[str]:
    """The shingles ``shingle_keys`` hashes, as strings (for datasketch and for people)."""
    if len(text) <= ngram:
        return [text] if text else []
    return [text[index : index + ngram] for index in range(len(text) - ngram + 1)]


@functools.cache
def permutations(num_perm: int, seed: int) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32]]:
    """The affine permutation parameters ``datasketch.MinHash(num_perm, seed,
    scheme="affine32").permutations`` draws (the test suite holds them equal), drawn the way
    it draws them: importing datasketch, which imports its LSH and scipy with it, took about
    a second of every scan."""
    generator = np.random.RandomState(seed)
    a = generator.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = generator.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def signatures(texts: Sequence[str], ngram: int, num_perm: int, seed: int) -> Signatures:
    """MinHash signatures of many normalized texts at once: shape ``(len(texts), num_perm)``.
    An empty text keeps the empty signature (every value 2**32 - 1), as in datasketch."""
    a, b = permutations(num_perm, seed)
    result = np.full((len(texts), num_perm), _MAX_HASH, dtype=np.uint32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    first = 0
    while first < len(texts):
        # A chunk of texts at a time: its joined and encoded copies are small enough to come
        # from memory just freed by the chunk before, not from fresh pages (whose first touch
        # cost a fifth of the stage when all texts were joined at once).
        before = int(ends[first] - lengths[first])
        stop = max(first + 1, int(np.searchsorted(ends, before + _CHUNK_CHARS, side="right")))
        codes = code_points("".join(texts[first:stop]))
        starts = np.concatenate((np.zeros(1, dtype=np.int64), ends[first:stop] - before))
        _sign_kernel(codes, starts, ngram, a, b, result[first:stop])
        first = stop
    return result


def shingle_offsets(lengths: npt.NDArray[np.int64], ngram: int) -> npt.NDArray[np.int64]:
    """Where each text's shingle keys start in a batch of texts of these ``lengths`` (and,
    last, their number): a text shorter than ``ngram`` has one shingle, itself."""
    counts = np.where(lengths > 0, np.maximum(lengths - ngram + 1, 1), 0)
    return np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(counts)))


def shingle_key_batch(texts: Sequence[str], ngram: int) -> tuple[Keys, npt.NDArray[np.int64]]:
    """``shingle_keys`` of many texts at once: all keys in one array, text t's at
    ``keys[offsets[t]:offsets[t + 1]]``."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    return shingle_keys_of_codes(code_points("".join(texts)), lengths, ngram)


def shingle_keys_of_codes(
    codes: npt.NDArray[np.uint32], lengths: npt.NDArray[np.int64], ngram: int
) -> tuple[Keys, npt.NDArray[np.int64]]:
    """:func:`shingle_key_batch` of texts given as their code points one after another
    (``codes``, read-only as :func:`code_points` makes them) and their ``lengths``."""
    offsets = shingle_offsets(lengths, ngram)
    starts = np.concatenate((np.zeros(1, dtype=np.int64), np.cumsum(lengths)))
    keys = np.empty(int(offsets[-1]), dtype=np.uint64)
    _key_batch(codes, starts, offsets, ngram, keys)
    return keys, offsets


@runtime_checkable
class HeldSignatures(Protocol):
    """The signatures of a scan's passages where the workers that made them keep them (a Dask
    cluster's), not in this process: what is computed from them runs there too, and only
    pairs and numbers come back (dedup.engine.shuffle)."""

    def __len__(self) -> int: ...

    def pair_codes(
        self, bands: int, rows: int, among: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """``candidates.candidate_pairs``' pairs as codes (``low * len(self) + high``),
        sorted and unique."""
        ...

    def estimates(self, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The MinHash estimate of each pair (``verify.minhash_estimates``)."""
        ...

    def let_go(self) -> None:
        """The workers let the signatures go."""
        ...


@compiled
def _key_batch(
    codes: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    ngram: int,
    keys: Keys,
) -> None:
    for text in range(starts.shape[0] - 1):
        _shingle_keys_into(
            codes, starts[text], starts[text + 1] - starts[text], ngram, keys[offsets[text] :]
        )


@compiled
def _shingle_keys_into(
    codes: npt.NDArray[np.uint32], first: int, length: int, ngram: int, keys: Keys
) -> int:
    """The shingle keys of ``codes[first:first + length]`` into ``keys``; how many there are.
    The arithmetic of ``shingle_keys``: uint64 polynomial of the code points, then splitmix64."""
    if length == 0:
        return 0
    width = min(ngram, length)
    count = length - width + 1
    keys[:count] = 0
    for offset in range(width):
        for shingle in range(count):
            keys[shingle] = keys[shingle] * SHINGLE_MULTIPLIER + np.uint64(
                codes[first + shingle + offset]
            )
    for shingle in range(count):
        key = keys[shingle]
        key ^= key >> np.uint64(30)
        key *= _MIX1
        key ^= key >> np.uint64(27)
        key *= _MIX2
        keys[shingle] = key ^ (key >> np.uint64(31))
    return count


def _prefaulted(rows: int, columns: int) -> Signatures:
    """An empty signature array whose memory the kernel maps in one go (MAP_POPULATE, where
    there is one) rather than a page fault at a time as it is first written: faulting fresh
    memory in page by page was most of the cost of joining a large scan's signatures on the
    virtual machines measured (docs/performance.md)."""
    size = rows * columns * 4
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if not populate or not size:
        return np.empty((rows, columns), dtype=np.uint32)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate
    try:
        memory = mmap.mmap(-1, size, flags=flags)
    except OSError:  # no mapping to be had: the allocator's memory will do
        return np.empty((rows, columns), dtype=np.uint32)
    return np.frombuffer(memory, dtype=np.uint32).reshape(rows, columns)


class SignatureTable:
    """The signatures of all passages of a scan, kept in the arrays they arrived in from the
    workers: joining them into one array would hold every signature twice at that moment (and
    the freed parts rarely go back to the system). Small parts are joined as they come, so the
    parts stay few. A later copy of a text comes without a signature (dedup.engine.copies):
    the table reads as zeros there, and holds nothing."""

    JOIN_BYTES = 8 << 20

    def __init__(self, num_perm: int, parts: Sequence[Signatures] = ()) -> None:
        self.num_perm = num_perm
        self._parts: list[Signatures] = []
        self._pending: list[Signatures] = []
        self._pending_bytes = 0  # summed as parts come: summing at each append is quadratic
        self._starts = [0]  # the first row of each part
        # Per part appended, which of its passages have a row (or how many passages, all do).
        self._present: list[npt.NDArray[np.bool_] | int] = []
        self._passages = 0
        self._row_of: npt.NDArray[np.int64] | None = None  # each passage's row, or -1
        self._mapped = 0  # how many passages _row_of is of
        for part in parts:
            self.append(part)

    @classmethod
    def of(cls, signatures: Signatures | SignatureTable) -> SignatureTable:
        """``signatures`` as a table (an array becomes a table of one part)."""
        if isinstance(signatures, SignatureTable):
            return signatures
        return cls(signatures.shape[1], [signatures])

    def __len__(self) -> int:
        return self._passages

    def append(self, part: Signatures, present: npt.NDArray[np.bool_] | None = None) -> None:
        """The signatures of the next passages: ``part`` a row each, or with ``present`` (a
        flag per passage), a row each of those flagged."""
        if present is None or present.all():
            self._present.append(len(part))
        else:
            self._present.append(present)
        self._passages += len(part) if present is None else len(present)
        self._pending.append(part)
        self._pending_bytes += part.nbytes
        if self._pending_bytes >= self.JOIN_BYTES:
            self._join_pending()

    def _join_pending(self) -> None:
        if self._pending:
            joined = self._pending[0]
            if len(self._pending) > 1:
                rows = sum(len(part) for part in self._pending)
                joined = np.concatenate(self._pending, out=_prefaulted(rows, self.num_perm))
            self._parts.append(joined)
            self._starts.append(self._starts[-1] + len(joined))
            self._pending, self._pending_bytes = [], 0

    def settled(self) -> SignatureTable:
        """This table with every part joined (and its rows found), which ``columns`` and
        ``rows`` otherwise do on their first call: after it, several threads may read the
        table at once."""
        self._join_pending()
        self._rows(np.empty(0, dtype=np.int64))
        return self

    def columns(
        self, start: int, stop: int, rows: npt.NDArray[np.int64] | None = None
    ) -> Signatures:
        """Columns ``start:stop`` of the given rows (sorted), or of every row."""
        self._join_pending()
        if rows is None:
            rows = np.arange(len(self), dtype=np.int64)
        held = self._rows(rows)
        if held is not rows:  # some passages have no row: zeros there
            out = np.zeros((len(rows), stop - start), dtype=np.uint32)
            present = held >= 0
            out[present] = self._columns_of_rows(start, stop, held[present])
            return out
        return self._columns_of_rows(start, stop, rows)

    def _rows(self, passages: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The rows of these passages (-1 for one without), or ``passages`` itself when every
        passage has its row."""
        if self._mapped != self._passages:
            self._row_of, self._mapped = self._rows_of_passages(), self._passages
        return passages if self._row_of is None else self._row_of[passages]

    def _rows_of_passages(self) -> npt.NDArray[np.int64] | None:
        """Each passage's row (-1 for one without), or None when every passage has its row."""
        if all(isinstance(present, int) for present in self._present):
            return None
        parts, row = [], 0
        for present in self._present:
            count = present if isinstance(present, int) else int(np.count_nonzero(present))
            rows = np.arange(row, row + count, dtype=np.int64)
            if not isinstance(present, int):
                rows, rows[present] = np.full(len(present), -1, dtype=np.int64), rows
            parts.append(rows)
            row += count
        return np.concatenate(parts)

    def _columns_of_rows(self, start: int, stop: int, rows: npt.NDArray[np.int64]) -> Signatures:
        out = np.empty((len(rows), stop - start), dtype=np.uint32)
        bounds = np.searchsorted(rows, self._starts)
        for number, part in enumerate(self._parts):
            low, high = int(bounds[number]), int(bounds[number + 1])
            if low < high:
                out[low:high] = part[rows[low:high] - self._starts[number], start:stop]
        return out

    def rows(self, indexes: npt.NDArray[np.int64]) -> Signatures:
        """Whole signatures of the given rows, in the order given."""
        order = np.argsort(indexes, kind="stable")
        out = np.empty((len(indexes), self.num_perm), dtype=np.uint32)
        out[order] = self.columns(0, self.num_perm, indexes[order])
        return out


@compiled
def _sign_kernel(
    codes: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    ngram: int,
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    out: Signatures,
) -> None:
    """Text t is ``codes[starts[t]:starts[t + 1]]``; its signature goes to ``out[t]``. The
    arithmetic is that of shingle_keys, shingle_hash and datasketch's affine32 scheme: uint64
    polynomial and splitmix64, upper half, MurmurHash3's fmix32, then ``a * h + b`` mod 2**32."""
    longest = 0
    for text in range(starts.shape[0] - 1):
        longest = max(longest, starts[text + 1] - starts[text])
    # One text's shingle keys and hashes, reused. Each step is its own loop over the shingles,
    # which the compiler vectorizes (one loop doing all steps per shingle is 15% slower).
    keys = np.empty(longest, dtype=np.uint64)
    hashes = np.empty(longest, dtype=np.uint32)
    for text in range(starts.shape[0] - 1):
        first = starts[text]
        length = starts[text + 1] - first
        if length == 0:
            continue
        count = _shingle_keys_into(codes, first, length, ngram, keys)
        for shingle in range(count):
            key = keys[shingle]
            value = np.uint32(key >> np.uint64(32))
            value ^= value >> np.uint32(16)
            value = np.uint32(value * np.uint32(0x85EBCA6B))
            value ^= value >> np.uint32(13)
            value = np.uint32(value * np.uint32(0xC2B2AE35))
            value ^= value >> np.uint32(16)
            hashes[shingle] = value
        for permutation in range(a.shape[0]):
            multiplier = a[permutation]
            offset_b = b[permutation]
            least = _MAX_HASH
            for shingle in range(count):
                least = min(least, np.uint32(multiplier * hashes[shingle] + offset_b))
            out[text, permutation] = least
