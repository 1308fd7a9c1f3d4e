"""zlib's CRC-32 of the UTF-8 encoding of code points, inside compiled loops.

Content-defined cuts (segment) and line keys (normalize) hash short stretches of text by the
thousand; with the code points already in an array, a compiled loop does it without building
a Python string and bytes for each stretch. The values equal ``zlib.crc32(text.encode())``
(tested).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.kernels import compiled

__all__ = ["CRC_START", "crc32_update", "crc32_utf8"]


def _tables() -> npt.NDArray[np.int64]:
    """zlib's CRC-32 table and the three derived from it for "slicing": ``tables[k][b]`` is the
    CRC of byte b followed by k zero bytes, so the bytes of one character are taken in one step
    of independent lookups instead of one step per byte."""
    tables = np.empty((4, 256), dtype=np.int64)
    for byte in range(256):
        value = byte
        for _bit in range(8):
            value = (value >> 1) ^ 0xEDB88320 if value & 1 else value >> 1
        tables[0, byte] = value
    for k in range(1, 4):
        for byte in range(256):
            previous = int(tables[k - 1, byte])
            tables[k, byte] = (previous >> 8) ^ int(tables[0, previous & 0xFF])
    return tables


_TABLES = _tables()


@compiled
def crc32_utf8(codes: npt.NDArray[np.uint32], start: int, stop: int) -> int:
    """``zlib.crc32`` of the UTF-8 encoding of ``codes[start:stop]`` (no lone surrogates)."""
    crc = CRC_START
    for index in range(start, stop):
        crc = crc32_update(crc, np.int64(codes[index]))
    return int(crc ^ CRC_START)


CRC_START = np.int64(0xFFFFFFFF)  # the running value starts so, and is finished by xor with it


@compiled
def crc32_update(crc: np.int64, code: np.int64) -> np.int64:
    """The running CRC after the UTF-8 encoding of one more code point."""
    if code < 0x80:
        return np.int64(_TABLES[0, (crc ^ code) & 0xFF] ^ (crc >> 8))
    if code < 0x800:
        crc ^= (0xC0 | (code >> 6)) | ((0x80 | (code & 0x3F)) << 8)
        return np.int64(_TABLES[1, crc & 0xFF] ^ _TABLES[0, (crc >> 8) & 0xFF] ^ (crc >> 16))
    if code < 0x10000:
        crc ^= (
            (0xE0 | (code >> 12))
            | ((0x80 | ((code >> 6) & 0x3F)) << 8)
            | ((0x80 | (code & 0x3F)) << 16)
        )
        return np.int64(
            _TABLES[2, crc & 0xFF]
            ^ _TABLES[1, (crc >> 8) & 0xFF]
            ^ _TABLES[0, (crc >> 16) & 0xFF]
            ^ (crc >> 24)
        )
    crc ^= (
        (0xF0 | (code >> 18))
        | ((0x80 | ((code >> 12) & 0x3F)) << 8)
        | ((0x80 | ((code >> 6) & 0x3F)) << 16)
        | ((0x80 | (code & 0x3F)) << 24)
    )
    return np.int64(
        _TABLES[3, crc & 0xFF]
        ^ _TABLES[2, (crc >> 8) & 0xFF]
        ^ _TABLES[1, (crc >> 16) & 0xFF]
        ^ _TABLES[0, crc >> 24]
    )
