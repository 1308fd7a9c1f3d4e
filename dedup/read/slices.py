"""A large JSON Lines file in slices: byte ranges of whole lines, each prepared by a task of
its own, so that one big file is shared by all the workers rather than read by one.

A file is cut only where a line ends: at a 0x0A byte, which in the encodings of _LINE_SAFE
is never part of another character. Before the file is prepared, a task per slice decodes
it as the whole file is decoded and counts its lines (count_lines), which gives each slice
the record number of its first line. A slice that does not decode, or in which a line end
was swallowed by an invalid sequence (GB18030 with ``--errors replace`` can do that), leaves
the file to be read whole, as one stream. So a file read in slices gives what one read of it
gives: the same records and record numbers, warnings (dedup.read.jsonl.StreamWarnings,
merged) and skips.
"""

from __future__ import annotations

import codecs
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import IO, BinaryIO, cast

from dedup.config import ScanConfig
from dedup.errors import DecodeFailure
from dedup.read import streams
from dedup.read.decode import SAMPLE_BYTES, decode_stream, detect_encoding
from dedup.read.discover import FoundFile, FoundFiles
from dedup.read.location import open_input
from dedup.read.streams import CHUNK, RawInput

# A JSON Lines file past STREAM_BYTES is cut into slices of about this many bytes: enough
# tasks for every worker to take part in one file, each large enough that its start (a task,
# a file opened) costs nothing that shows.
SLICE_BYTES = 32 << 20
# Encodings in which a 0x0A byte is a line end and nothing else (codecs' names for them).
_LINE_SAFE = frozenset(
    (
        "utf-8", "utf-8-sig", "gb18030", "gbk", "gb2312", "big5", "big5hkscs", "cp950",
        "ascii", "iso8859-1", "cp1252",
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class FileSlice:
    """The bytes ``start:end`` of a file, whole lines. ``first_line`` is the record number of
    its first line; ``encoding`` the codec the whole file is read with (after the first
    slice, one that does not look for a byte-order mark)."""

    start: int
    end: int
    encoding: str
    first_line: int = 0


def planned_slices(file: FoundFile, config: ScanConfig) -> tuple[FileSlice, ...]:
    """Where ``file`` is cut, the slices' first lines not yet counted (count_lines); none when
    it is read whole: not a plain JSON Lines file past STREAM_BYTES, larger than
    ``--max-file-mb``, or in an encoding whose bytes 0x0A can be part of a character."""
    if _most_slices(file, config) == 1:
        return ()
    assert file.stamp is not None
    size = file.stamp[0]
    try:
        with open_input(file.fs_path) as handle:
            # Judged from the head, as a stream of the whole file is.
            encoding = detect_encoding(handle.read(SAMPLE_BYTES + 8), config.encoding)
            name = codecs.lookup(encoding).name
            if name not in _LINE_SAFE:
                return ()
            cuts = _line_starts(handle, size)
    except (OSError, LookupError, DecodeFailure):
        return ()  # read whole, which says what is wrong
    if len(cuts) < 2:
        return ()
    later = "utf-8" if name == "utf-8-sig" else encoding
    ends = [*cuts[1:], size]
    return tuple(
        FileSlice(start, end, encoding if start == 0 else later)
        for start, end in zip(cuts, ends, strict=True)
    )


def most_tasks(files: Sequence[FoundFile], config: ScanConfig) -> int:
    """How many tasks preparing ``files`` takes at most: one a file, or a slice (as many as
    planned_slices would cut, judged by the size alone), which is as many workers as the
    scan can use."""
    if not may_be_sliced(files):
        return len(files)
    return sum(_most_slices(file, config) for file in files)


def may_be_sliced(files: Sequence[FoundFile]) -> bool:
    """False where no file of ``files`` is cut in slices, without a look at each: found
    files know their formats, and only a JSON Lines file is cut (a crawl has millions of
    files, each made again from its row on disk for a look)."""
    return not isinstance(files, FoundFiles) or "jsonl" in files.formats


def _most_slices(file: FoundFile, config: ScanConfig) -> int:
    if file.format != "jsonl" or file.compression is not None or file.stamp is None:
        return 1
    size = file.stamp[0]
    if size <= streams.STREAM_BYTES or size > config.max_file_mb * 1_000_000:
        return 1
    return -(-size // SLICE_BYTES)


def _line_starts(handle: BinaryIO, size: int) -> list[int]:
    """0 and, every SLICE_BYTES, the start of the next line (a line longer than a slice is
    in one slice)."""
    starts = [0]
    for position in range(SLICE_BYTES, size, SLICE_BYTES):
        if position <= starts[-1]:
            continue
        handle.seek(position)
        while True:
            piece = handle.read(CHUNK)
            if not piece:
                return starts
            end = piece.find(b"\n")
            if end >= 0:
                break
            position += len(piece)
        start = position + end + 1
        if start >= size:
            break
        starts.append(start)
    return starts


def count_lines(file: FoundFile, part: FileSlice, config: ScanConfig) -> int | None:
    """How many line ends ``part`` holds, decoded as the whole file is; None when it does not
    decode, or when it holds another number of 0x0A bytes (one was taken into an invalid
    sequence): the file is then read whole."""
    try:
        with open_input(file.fs_path) as handle:
            reader = _Range(handle, part)
            line_ends = 0
            head, rest = reader.read(CHUNK), cast(IO[bytes], reader)
            for text in decode_stream(head, rest, part.encoding, config.errors):
                line_ends += text.count("\n")
    except (OSError, DecodeFailure):
        return None
    return line_ends if line_ends == reader.line_ends else None


def counted(parts: Sequence[FileSlice], lines: Sequence[int | None]) -> tuple[FileSlice, ...]:
    """``parts`` with their first lines, given how many lines each holds; none (the file read
    whole) when one could not be counted."""
    if not parts or any(count is None for count in lines):
        return ()
    firsts = itertools.accumulate((cast(int, count) for count in lines[:-1]), initial=0)
    return tuple(replace(part, first_line=first) for part, first in zip(parts, firsts, strict=True))


def slice_input(file: FoundFile, handle: BinaryIO, part: FileSlice) -> RawInput:
    """``part`` of the open ``file`` as an input read as a stream."""
    reader = _Range(handle, part)
    head = reader.read(CHUNK)
    return RawInput(file.path, file.source, file.format, head, cast(IO[bytes], reader), [], part)


class _Range:
    """The bytes of a slice, read on from its start, counting the 0x0A bytes passed."""

    def __init__(self, handle: BinaryIO, part: FileSlice) -> None:
        handle.seek(part.start)
        self.handle = handle
        self.left = part.end - part.start
        self.line_ends = 0

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(self.left if size < 0 else min(size, self.left))
        self.left -= len(data)
        self.line_ends += data.count(b"\n")
        return data
