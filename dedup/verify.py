"""Verify stage: the exact similarity of every candidate pair's shingle sets.

LSH only proposes; a pair is kept when its exact Jaccard similarity reaches the threshold, or
when one passage is mostly contained in the other (a scene copied into a longer passage).
Shingle sets are sets of 64-bit shingle keys (see ``fingerprint``); two different shingles
share a key with probability about 2**-64, so the values are exact in practice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.fingerprint import shingle_keys


@dataclass(frozen=True, slots=True)
class Similarity:
    first: int
    second: int
    jaccard: float
    containment: float
    minhash_jaccard: float
    identical_chars: int


@dataclass(frozen=True, slots=True)
class Block:
    """``a[a_start:a_start+length] == b[b_start:b_start+length]`` in normalized text."""

    a_start: int
    b_start: int
    length: int


def shared_blocks(a: str, b: str, ngram: int) -> list[Block]:
    """Maximal stretches of ``a`` found in ``b``, at least ``ngram`` characters long, in the
    order of ``a``. Greedy and linear: each stretch starts at an n-gram of ``a`` that ``b`` has
    (its first occurrence in ``b`` after the previous stretch, else its first) and grows as far
    as the two agree."""
    if len(a) < ngram or len(b) < ngram:
        return []
    positions: dict[str, list[int]] = {}
    for index in range(len(b) - ngram + 1):
        positions.setdefault(b[index : index + ngram], []).append(index)
    blocks: list[Block] = []
    cursor_b = 0
    index = 0
    while index <= len(a) - ngram:
        candidates = positions.get(a[index : index + ngram])
        if not candidates:
            index += 1
            continue
        start_b = next((p for p in candidates if p >= cursor_b), candidates[0])
        length = ngram
        while (
            index + length < len(a)
            and start_b + length < len(b)
            and a[index + length] == b[start_b + length]
        ):
            length += 1
        blocks.append(Block(index, start_b, length))
        cursor_b = start_b + length
        index += length
    return blocks


def identical_chars(a: str, b: str, ngram: int) -> int:
    """雷同字数, the count plagiarism reviewers quote: characters of ``a`` in stretches of at
    least ``ngram`` characters that ``b`` also has (normalized, so punctuation and script do
    not count)."""
    return sum(block.length for block in shared_blocks(a, b, ngram))


def verify_pairs(
    pairs: npt.NDArray[np.int64],
    texts: Sequence[str],
    signatures: npt.NDArray[np.uint32],
    ngram: int,
    threshold: float,
    containment: float,
) -> list[Similarity]:
    shingle_sets: dict[int, npt.NDArray[np.uint64]] = {}

    def shingle_set(index: int) -> npt.NDArray[np.uint64]:
        found = shingle_sets.get(index)
        if found is None:
            found = shingle_sets[index] = np.unique(shingle_keys(texts[index], ngram))
        return found

    verified: list[Similarity] = []
    for first, second in pairs.tolist():
        if texts[first] == texts[second]:
            # The commonest case in a dump of copies: the same normalized text, nothing to count.
            estimate = float(np.mean(signatures[first] == signatures[second]))
            same = len(texts[first]) if len(texts[first]) >= ngram else 0
            verified.append(Similarity(first, second, 1.0, 1.0, estimate, same))
            continue
        a, b = shingle_set(first), shingle_set(second)
        shared = np.intersect1d(a, b, assume_unique=True).size
        jaccard = shared / (a.size + b.size - shared)
        contained = shared / min(a.size, b.size)
        if jaccard >= threshold or contained >= containment:
            estimate = float(np.mean(signatures[first] == signatures[second]))
            identical = identical_chars(texts[first], texts[second], ngram)
            verified.append(Similarity(first, second, jaccard, contained, estimate, identical))
    return verified
