"""Text as an array of code points and back: how the stages hand text to numpy and to their
compiled loops (one element per character, whatever the plane)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dedup.kernels.jit import compiled

__all__ = ["code_points", "from_code_points", "utf16_code_points", "utf16_gathered", "utf16_units"]


def code_points(text: str) -> npt.NDArray[np.uint32]:
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def from_code_points(codes: npt.NDArray[np.uint32]) -> str:
    return codes.astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")


def utf16_units(texts: Sequence[str]) -> tuple[bytes, npt.NDArray[np.int64]]:
    """The texts in UTF-16 (little-endian), one after another, and how many code units each
    took (its characters, and one more for each past U+FFFF)."""
    encoded = [text.encode("utf-16-le") for text in texts]
    return b"".join(encoded), np.fromiter(map(len, encoded), np.int64, len(encoded)) // 2


@compiled
def utf16_code_points(
    units: npt.NDArray[np.uint16], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]:
    """The code points of the UTF-16 texts ``units[starts[i]:ends[i]]``, one after another:
    what decoding each text and encoding their join as UTF-32 gives, without a string made
    (a surrogate pair is one character; the texts hold no lone surrogate, being encoded)."""
    codes = np.empty(int((ends - starts).sum()), dtype=np.uint32)
    at = 0
    for text in range(len(starts)):
        unit, end = starts[text], ends[text]
        while unit < end:
            code = np.uint32(units[unit])
            if 0xD800 <= code < 0xDC00 and unit + 1 < end:
                low = np.uint32(units[unit + 1])
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                unit += 1
            codes[at] = code
            at += 1
            unit += 1
    return codes[:at]


@compiled
def utf16_gathered(
    units: npt.NDArray[np.uint16], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint16]:
    """The UTF-16 texts ``units[starts[i]:ends[i]]``, one after another."""
    gathered = np.empty(int((ends - starts).sum()), dtype=np.uint16)
    at = 0
    for text in range(len(starts)):
        size = ends[text] - starts[text]
        gathered[at : at + size] = units[starts[text] : ends[text]]
        at += size
    return gathered
