"""Zip archives as folders: every entry an input of its own (``archive.zip!/inner/path``), read
as a stream, never unpacked to disk. Entry names are only names: one with ``..`` or an
absolute path is skipped, never resolved against the file system; of two entries with one
name the first is read. A zip whose index (central directory) is cut off is read entry by
entry from the entries' own headers, the cut entry skipped with a reason."""

from __future__ import annotations

import bz2
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, BinaryIO, cast

from dedup.display import shown
from dedup.errors import InputTooLarge
from dedup.models import Skipped
from dedup.read.discover import FORMATS, FoundFile
from dedup.read.streams import (
    CHUNK,
    DAMAGE,
    DECOMPRESSORS,
    Limits,
    RawInput,
    decompressed,
    raw_input,
    reason,
    too_large,
)


def _entry_source(archive: FoundFile, inner: PurePosixPath, common_top: str | None) -> str:
    """An archive is a folder: an entry's source is its first folder inside the archive (after
    a single wrapping folder, as `zip -r dump.zip dump/` makes), else the archive's source."""
    parts = inner.parts[1:] if common_top else inner.parts
    return shown(parts[0]) if len(parts) > 1 else archive.source


ENTRY_MARK = "!/"  # between an archive's path and its entry's name, in an input's path


def entry_path(archive: str, name: str) -> str:
    """The path an input inside ``archive`` goes by: ``ARCHIVE!/NAME``, the name shown."""
    return f"{archive}{ENTRY_MARK}{shown(name)}"


def outer_path(path: str) -> str:
    """The file an input is read from: the archive of an entry's path, else ``path``."""
    return path.split(ENTRY_MARK, 1)[0]


@dataclass(frozen=True, slots=True)
class _Entry:
    """What an archive says of one entry, from its index or, in a truncated archive, from
    the entry's own header; ``open`` gives its bytes, decompressed."""

    name: str
    size: int  # once decompressed, as the archive says (-1: not said)
    open: Callable[[], IO[bytes]]
    problem: str | None = None  # why it cannot be read at all


def zip_entries(file: FoundFile, handle: BinaryIO, limits: Limits) -> Iterator[RawInput | Skipped]:
    try:
        archive = zipfile.ZipFile(handle)
    except zipfile.BadZipFile:
        handle.seek(0)
        entries = list(_entries_from_headers(handle))
        if not entries:
            raise
        warning = (
            "the archive's index is missing (a truncated or damaged zip): its entries were "
            "found from their own headers"
        )
        yield from _read_entries(file, entries, limits, [warning])
        return
    with archive:
        entries = [
            _Entry(info.filename, info.file_size, _opener(archive, info))
            for info in archive.infolist()
            if not info.is_dir()
        ]
        yield from _read_entries(file, entries, limits, [])


def _opener(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], IO[bytes]]:
    return lambda: archive.open(info)


def _read_entries(
    file: FoundFile, entries: list[_Entry], limits: Limits, notes: list[str]
) -> Iterator[RawInput | Skipped]:
    # In archive order first, so that of two entries with the same name the first is read.
    first_of_name: dict[str, int] = {}
    for number, entry in enumerate(entries):
        first_of_name.setdefault(entry.name, number)
    order = sorted(range(len(entries)), key=lambda number: (entries[number].name, number))
    names = [PurePosixPath(entry.name) for entry in entries]
    tops = {
        inner.parts[0] for inner, entry in zip(names, entries, strict=True) if "/" in entry.name
    }
    all_nested = all("/" in entry.name for entry in entries)
    common_top = next(iter(tops)) if len(tops) == 1 and all_nested else None
    for number in order:
        entry, inner = entries[number], names[number]
        name = entry.name
        where = entry_path(file.path, name)
        if first_of_name[name] != number:
            yield Skipped(
                f"{where} (entry {number + 1})",
                "a second entry with this name in the archive: not read (the first one is; "
                "unpacking would keep only one of them)",
            )
            continue
        if inner.is_absolute() or ".." in inner.parts or "\\" in name:
            yield Skipped(where, "unsafe entry name (absolute or with ..): not read")
            continue
        suffixes = [suffix.lower() for suffix in inner.suffixes[-2:]]
        compression = suffixes[-1] if suffixes and suffixes[-1] in DECOMPRESSORS else None
        format_suffix = (
            suffixes[-2] if compression and len(suffixes) == 2 else (suffixes or [""])[-1]
        )
        entry_format = FORMATS.get(format_suffix)
        if entry_format is None or entry_format == "zip":
            known = ", ".join(sorted(FORMATS))
            yield Skipped(where, f"not a supported format inside an archive (supported: {known})")
            continue
        if entry.problem is not None:
            yield Skipped(where, entry.problem)
            continue
        if entry.size > limits.of(entry_format):
            yield too_large(where, entry_format, limits)
            continue
        source = _entry_source(file, inner, common_top)
        warnings = list(notes)
        try:
            with entry.open() as member:
                stream: IO[bytes] = member
                if compression:
                    stream = decompressed(compression, member, warnings)  # type: ignore[arg-type]
                raw = raw_input(where, source, entry_format, stream, limits, warnings)
                yield raw  # a streamed entry is read on while this entry is open
        except InputTooLarge:
            yield too_large(where, entry_format, limits)
        except (*DAMAGE, RuntimeError, NotImplementedError) as error:
            yield Skipped(where, f"cannot read this archive entry ({reason(error)})")


_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


def _entries_from_headers(handle: BinaryIO) -> Iterator[_Entry]:
    """The entries of a zip whose index is gone, walked from the start by their local headers.
    An entry sized only after its data (a zip written as a stream) is measured by inflating it
    to its end; past anything it cannot measure, the walk looks for the next header. The cut
    entry is listed with the reason."""
    handle.seek(0, 2)
    size = handle.tell()
    offset = _next_header(handle, 0, size)
    while offset is not None and offset + _LOCAL_HEADER.size <= size:
        handle.seek(offset)
        fields = _LOCAL_HEADER.unpack(handle.read(_LOCAL_HEADER.size))
        _signature, _version, flags, method, _time, _date, _crc, packed, unpacked = fields[:9]
        name_length, extra_length = fields[9:]
        name = handle.read(name_length).decode("utf-8" if flags & 0x800 else "cp437", "replace")
        start = offset + _LOCAL_HEADER.size + name_length + extra_length
        problem = None
        if flags & 0x8 and packed == 0:  # sized after its data
            measured = _deflated_length(handle, start, size) if method == 8 else None
            if measured is None:
                problem = (
                    "its size is written after its data, which an archive without its index "
                    "does not let dedup find: not read"
                )
            else:
                packed, unpacked = measured, -1
        if problem is None:
            if packed == 0xFFFFFFFF:
                problem = "a zip64 entry in an archive without its index: not read"
            elif start + packed > size:
                problem = "cut off by the end of the truncated archive: not read"
            elif flags & 0x1:
                problem = "encrypted: not read"
            elif method not in _METHODS:
                problem = f"compressed with method {method}, which dedup cannot read: not read"
        if not name.endswith("/"):
            yield _Entry(name, unpacked, _slice_opener(handle, start, packed, method), problem)
        if start + packed > size:
            return
        offset = _next_header(handle, start + packed if problem is None else start, size)


def _next_header(handle: BinaryIO, offset: int, size: int) -> int | None:
    """Where the next local header starts, at ``offset`` or after it (past a data descriptor,
    or whatever else lies between), or None if there is none before the central directory."""
    while offset < size:
        handle.seek(offset)
        block = handle.read(1 << 16)
        found = block.find(_LOCAL_SIGNATURE)
        index = block.find(b"PK\x01\x02")  # the central directory: no entry after it
        if index >= 0 and (found < 0 or index < found):
            return None
        if found >= 0:
            return offset + found
        if len(block) < len(_LOCAL_SIGNATURE):
            return None
        offset += len(block) - (len(_LOCAL_SIGNATURE) - 1)
    return None


def _deflated_length(handle: BinaryIO, start: int, size: int) -> int | None:
    """How many bytes the deflate stream at ``start`` takes (inflated to its end), or None if
    it does not end before the file does."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    handle.seek(start)
    consumed = 0
    while not inflater.eof:
        piece = handle.read(1 << 16)
        if not piece:
            return None
        try:
            inflater.decompress(piece, 1 << 20)
            while inflater.unconsumed_tail and not inflater.eof:
                inflater.decompress(inflater.unconsumed_tail, 1 << 20)
        except zlib.error:
            return None
        consumed += len(piece)
    return consumed - len(inflater.unused_data) - len(inflater.unconsumed_tail)


_METHODS: dict[int, Callable[[IO[bytes]], IO[bytes]]] = {
    zipfile.ZIP_STORED: lambda stream: stream,
    zipfile.ZIP_DEFLATED: lambda stream: cast(IO[bytes], _Inflating(stream)),
    zipfile.ZIP_BZIP2: lambda stream: cast(IO[bytes], bz2.BZ2File(stream)),
}


class _Slice:
    """``size`` bytes of ``handle`` from ``start``, as a stream of its own."""

    def __init__(self, handle: BinaryIO, start: int, size: int) -> None:
        self.handle, self.position, self.left = handle, start, size

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        self.handle.seek(self.position)
        data = self.handle.read(size)
        self.position += len(data)
        self.left -= len(data)
        return data

    def __enter__(self) -> _Slice:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _Inflating:
    """Raw deflate data, inflated a piece at a time."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.inflater = zlib.decompressobj(-zlib.MAX_WBITS)

    def read(self, size: int = -1) -> bytes:
        size = size if size > 0 else CHUNK
        while True:
            if self.inflater.unconsumed_tail:
                data = self.inflater.decompress(self.inflater.unconsumed_tail, size)
            else:
                piece = self.stream.read(1 << 16)
                if not piece:
                    return self.inflater.flush()
                data = self.inflater.decompress(piece, size)
            if data or self.inflater.eof:
                return data

    def __enter__(self) -> _Inflating:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _slice_opener(handle: BinaryIO, start: int, size: int, method: int) -> Callable[[], IO[bytes]]:
    def opened() -> IO[bytes]:
        stream = cast(IO[bytes], _Slice(handle, start, size))
        return _METHODS[method](stream)

    return opened
