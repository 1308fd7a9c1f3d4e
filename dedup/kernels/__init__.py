"""Compiled loops and hashes, each written once: the decorator every compiled loop of dedup
goes through (``compiled``), FNV-1a over code points (``hashing``), zlib's CRC-32 of UTF-8
(``crc``), open-addressing tables of 64-bit keys (``tables``), and tables of rows grown and sorted
by loops (``rows``)."""

from dedup.kernels.jit import compiled

__all__ = ["compiled"]
