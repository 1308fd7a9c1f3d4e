"""zlib's CRC-32 of the UTF-8 encoding of code points, inside compiled loops.

Content-defined cuts (segment) and line keys (normalize) hash short stretches of text by the
thousand; with the code points already in an array, a compiled loop does it without building
a Python string and bytes for each stretch. The values equal ``zlib.crc32(text.encode())``
(tested).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.compiled import compiled

__all__ = ["crc32_utf8"]


def _table() -> npt.NDArray[np.uint32]:
    table = np.empty(256, dtype=np.uint32)
    for byte in range(256):
        value = byte
        for _bit in range(8):
            value = (value >> 1) ^ 0xEDB88320 if value & 1 else value >> 1
        table[byte] = value
    return table


_TABLE = _table()


@compiled
def crc32_utf8(codes: npt.NDArray[np.uint32], start: int, stop: int) -> int:
    """``zlib.crc32`` of the UTF-8 encoding of ``codes[start:stop]`` (no lone surrogates)."""
    crc = 0xFFFFFFFF
    for index in range(start, stop):
        code = int(codes[index])
        if code < 0x80:
            crc = _byte(crc, code)
        elif code < 0x800:
            crc = _byte(crc, 0xC0 | (code >> 6))
            crc = _byte(crc, 0x80 | (code & 0x3F))
        elif code < 0x10000:
            crc = _byte(crc, 0xE0 | (code >> 12))
            crc = _byte(crc, 0x80 | ((code >> 6) & 0x3F))
            crc = _byte(crc, 0x80 | (code & 0x3F))
        else:
            crc = _byte(crc, 0xF0 | (code >> 18))
            crc = _byte(crc, 0x80 | ((code >> 12) & 0x3F))
            crc = _byte(crc, 0x80 | ((code >> 6) & 0x3F))
            crc = _byte(crc, 0x80 | (code & 0x3F))
    return crc ^ 0xFFFFFFFF


@compiled
def _byte(crc: int, byte: int) -> int:
    return int(_TABLE[(crc ^ byte) & 0xFF]) ^ (crc >> 8)
