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
        a, b = shingle_set(first), shingle_set(second)
        shared = np.intersect1d(a, b, assume_unique=True).size
        jaccard = shared / (a.size + b.size - shared)
        contained = shared / min(a.size, b.size)
        if jaccard >= threshold or contained >= containment:
            estimate = float(np.mean(signatures[first] == signatures[second]))
            verified.append(Similarity(first, second, jaccard, contained, estimate))
    return verified
