"""FNV-1a (64-bit) over code points, inside compiled loops: line keys, the OpenCC run cache and
the exact-copy hash of passages all step it one code point at a time, written once here."""

from __future__ import annotations

import numpy as np

from dedup.kernels.jit import compiled

__all__ = ["FNV_OFFSET", "FNV_PRIME", "fnv1a"]

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


@compiled
def fnv1a(value: np.uint64, code: np.uint64) -> np.uint64:
    """One step of FNV-1a: ``value`` with the code point ``code`` taken in."""
    return (value ^ code) * np.uint64(FNV_PRIME)
