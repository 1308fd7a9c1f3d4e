"""Passages' texts read back by where they are in their file's bytes.

A scan keeps only each passage's span and reads the texts of the passages that cluster back at
the end. For a plain UTF-8 text file the decoded text is the file's bytes decoded, character
for character, so a passage's characters are one stretch of the file's bytes: knowing that
stretch, the scan reads its text with one slice and a decode of those bytes alone, rather than
having a worker read and decode the whole file again and send the texts across (the pickled
texts were decoded once more on arrival, so that was the same decoding, plus the file's, plus
the transfer).
"""

from __future__ import annotations

import mmap
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points
from dedup.errors import InputPathError
from dedup.kernels import compiled
from dedup.read.discover import file_stamp
from dedup.read.location import is_url, read_ranges

__all__ = ["NOT_IN_BYTES", "byte_offsets", "texts_at"]

# The byte offset of a passage whose text cannot be read back by its bytes.
NOT_IN_BYTES = -1
# Characters measured at a time: a document's code points in one array would take four bytes
# a character, on top of the text, for the longest file a scan reads whole.
_BLOCK_CHARS = 1 << 20


def byte_offsets(
    text: str, positions: npt.NDArray[np.int64], block_chars: int = _BLOCK_CHARS
) -> npt.NDArray[np.int64]:
    """Where each character position of ``text`` (0..len(text)) is in ``text`` encoded as
    UTF-8, measured ``block_chars`` characters at a time."""
    order = np.argsort(positions, kind="stable")
    ascending = positions[order]
    found = np.empty(len(ascending), dtype=np.int64)
    done = 0  # positions placed
    before = 0  # UTF-8 bytes of the blocks before this one
    for block_start in range(0, len(text) + 1, block_chars):
        codes = code_points(text[block_start : block_start + block_chars])
        done, before = _place(codes, block_start, ascending, done, before, found)
    if done != len(ascending):
        raise ValueError("positions outside the text")
    offsets = np.empty_like(found)
    offsets[order] = found
    return offsets


@compiled
def _place(
    codes: npt.NDArray[np.uint32],
    block_start: int,
    positions: npt.NDArray[np.int64],
    done: int,
    before: int,
    found: npt.NDArray[np.int64],
) -> tuple[int, int]:
    """Place the ascending ``positions`` that fall in this block (or at its end, which is where
    the next block starts); returns how many are placed and the bytes up to the block's end."""
    offset = before
    measured = 0  # characters of the block counted into offset
    size = codes.shape[0]
    while done < positions.shape[0] and positions[done] - block_start <= size:
        offset += _utf8_bytes(codes, measured, positions[done] - block_start)
        measured = positions[done] - block_start
        found[done] = offset
        done += 1
    return done, offset + _utf8_bytes(codes, measured, size)


@compiled
def _utf8_bytes(codes: npt.NDArray[np.uint32], start: int, end: int) -> int:
    """The length in UTF-8 of ``codes[start:end]``."""
    total = 0
    for index in range(start, end):
        code = codes[index]
        total += 1 + (code >= 0x80) + (code >= 0x800) + (code >= 0x10000)
    return total


def mapped(descriptor: int) -> mmap.mmap:
    """The file read-only in memory; where the system can, its pages mapped at once rather than
    one fault at a time as the slices reach them (a tenth less time for member texts)."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate:
        return mmap.mmap(descriptor, 0, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ)
    return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)


def texts_at(
    path: str,
    stamp: tuple[int, int] | None,
    byte_starts: Sequence[int],
    byte_ends: Sequence[int],
    lengths: Sequence[int],
) -> list[str] | None:
    """The UTF-8 texts at ``byte_starts[i]:byte_ends[i]`` of the file at ``path``, each
    ``lengths[i]`` characters long; None when the file is no longer as it was when it was
    scanned (``stamp``), or its bytes there no longer decode to texts of those lengths."""
    if stamp is None or file_stamp(path) != stamp:
        return None
    try:
        if is_url(path):
            texts = [chunk.decode("utf-8") for chunk in read_ranges(path, byte_starts, byte_ends)]
        else:
            with (
                open(path, "rb") as handle,
                mapped(handle.fileno()) as data,
            ):
                if len(data) != stamp[0]:
                    return None
                texts = [
                    data[start:end].decode("utf-8")
                    for start, end in zip(byte_starts, byte_ends, strict=True)
                ]
    # ValueError: an empty file, or a URL's filesystem refusing (UnicodeDecodeError is one too)
    except (OSError, ValueError, InputPathError):
        return None
    if list(map(len, texts)) != list(lengths):
        return None
    return texts
