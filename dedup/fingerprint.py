"""Fingerprint stage: normalized passages -> character n-gram shingles -> MinHash signatures.

Signatures are bit-identical to what ``datasketch.MinHash(num_perm, seed, scheme="affine32",
hashfunc=shingle_hash)`` computes from ``update_batch`` on the UTF-8 encoded shingles, so they
stay usable with datasketch's LSH, ``jaccard`` and ``LeanMinHash``. They are computed for many
passages at once with numpy, with no per-shingle Python loop.

The shingle hash: each shingle's code points are combined into a 64-bit key by a polynomial
(multiplier ``SHINGLE_MULTIPLIER``, arithmetic modulo 2**64) and mixed with the splitmix64
finalizer; the 32-bit shingle hash is the key's upper half. The 64-bit keys themselves serve
as shingle identities when verification compares shingle sets.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from datasketch import MinHash

SHINGLE_MULTIPLIER = np.uint64(0x100000001B3)  # the 64-bit FNV prime: odd, spreads code points
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_MASK64 = (1 << 64) - 1
# Shingles per block when applying the permutations: bounds memory at block * num_perm * 4 bytes.
_BLOCK_SHINGLES = 1 << 13

Keys = npt.NDArray[np.uint64]
Signatures = npt.NDArray[np.uint32]


def _splitmix(keys: Keys) -> Keys:
    keys = keys ^ (keys >> np.uint64(30))
    keys = keys * _MIX1
    keys = keys ^ (keys >> np.uint64(27))
    keys = keys * _MIX2
    return keys ^ (keys >> np.uint64(31))


def shingle_keys(text: str, ngram: int) -> Keys:
    """64-bit keys of every character n-gram of ``text``, in order (a text shorter than
    ``ngram`` is one shingle)."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if codes.size == 0:
        return np.empty(0, dtype=np.uint64)
    width = min(ngram, codes.size)
    count = codes.size - width + 1
    keys = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(width):
            keys = keys * SHINGLE_MULTIPLIER + codes[offset : offset + count]
        return _splitmix(keys)


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
    """The affine permutation parameters datasketch draws for ``(num_perm, seed)``."""
    a, b = MinHash(num_perm=num_perm, seed=seed, scheme="affine32").permutations
    return np.ascontiguousarray(a, dtype=np.uint32), np.ascontiguousarray(b, dtype=np.uint32)


def _fmix32(values: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """MurmurHash3's finalizer, which datasketch's affine32 scheme applies to every input hash."""
    values = values ^ (values >> np.uint32(16))
    values = values * np.uint32(0x85EBCA6B)
    values = values ^ (values >> np.uint32(13))
    values = values * np.uint32(0xC2B2AE35)
    return values ^ (values >> np.uint32(16))


def _batch_keys(texts: Sequence[str], ngram: int) -> tuple[Keys, npt.NDArray[np.int64]]:
    """The shingle keys of many texts at once, and how many each text has: one pass over their
    concatenated code points, shingles that would span two texts dropped (no per-text loop)."""
    joined = "".join(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    if any(0 < length < ngram for length in lengths.tolist()):
        # A text shorter than a shingle is one shingle of its own: the rare slow path.
        each = [shingle_keys(text, ngram) for text in texts]
        sizes = np.array([k.size for k in each], dtype=np.int64)
        return (np.concatenate(each) if each else np.empty(0, np.uint64)), sizes
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = max(0, codes.size - ngram + 1)
    polynomial = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(ngram):
            polynomial = polynomial * SHINGLE_MULTIPLIER + codes[offset : offset + count]
        keys = _splitmix(polynomial)
    per_text = np.maximum(lengths - ngram + 1, 0)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    # Shingle i is inside its text when i < start + per_text of that text.
    valid = np.zeros(count, dtype=np.bool_)
    for start, size in zip(
        starts[per_text > 0].tolist(), per_text[per_text > 0].tolist(), strict=True
    ):
        valid[start : start + size] = True
    return keys[valid], per_text


def signatures(texts: Sequence[str], ngram: int, num_perm: int, seed: int) -> Signatures:
    """MinHash signatures of many normalized texts at once: shape ``(len(texts), num_perm)``."""
    a, b = permutations(num_perm, seed)
    result = np.full((len(texts), num_perm), np.iinfo(np.uint32).max, dtype=np.uint32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    start = 0
    while start < len(texts):
        # A block of whole passages, about _BLOCK_SHINGLES shingles in all.
        total = np.cumsum(lengths[start:])
        stop = start + max(1, int(np.searchsorted(total, _BLOCK_SHINGLES)))
        keys, sizes = _batch_keys(texts[start:stop], ngram)
        _sign_block((keys >> np.uint64(32)).astype(np.uint32), sizes, a, b, result[start:stop])
        start = stop
    return result


def _sign_block(
    hashes: npt.NDArray[np.uint32],
    sizes: npt.NDArray[np.int64],
    a: npt.NDArray[np.uint32],
    b: npt.NDArray[np.uint32],
    out: Signatures,
) -> None:
    filled = sizes > 0
    if not filled.any():
        return
    mixed = _fmix32(hashes)
    # One row per permutation, shingles along the row: the min over each passage's shingles is
    # then a reduction over contiguous memory, an order of magnitude faster than the transpose.
    with np.errstate(over="ignore"):
        permuted = a[:, None] * mixed[None, :]
        permuted += b[:, None]
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))[filled]
    out[filled] = np.minimum.reduceat(permuted, starts, axis=1).T
