"""Compressed files and archives, read as streams: nothing is ever unpacked to disk.

``book.txt.gz`` (or .bz2, .xz, .zst) is the text file inside it. A ``.zip`` is a folder: each entry
is an input of its own, named ``archive.zip!/inner/path`` in the report. Entry names are only
names: one with ``..`` or an absolute path is skipped, never resolved against the file system.
Every input is read with a size cap, so a zip bomb costs at most the cap, then is skipped.

Damaged containers cost only what is damaged: a compressed file that ends early or turns to
garbage is read up to its last complete line before the damage, with a warning; a zip whose
index (central directory) is cut off is read entry by entry from the entries' own headers,
the cut entry skipped with a reason.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import IO, BinaryIO, Protocol, cast

from dedup.models import Skipped
from dedup.read.discover import COMPRESSIONS, FORMATS, FoundFile, shown

_CHUNK = 1 << 20


# Text and JSON Lines inputs larger than this are decoded and read as a stream, a piece at a
# time, so memory does not grow with the size of the largest file.
STREAM_BYTES = 64 << 20
STREAMABLE = ("txt", "jsonl")


@dataclass(frozen=True, slots=True)
class Limits:
    """How many bytes an input may hold once decompressed: any input, and one of a format
    that is parsed whole (not streamed), which takes several times its size in memory."""

    any_input: int
    parsed_whole: int

    def of(self, file_format: str) -> int:
        return (
            self.any_input if file_format in STREAMABLE else min(self.any_input, self.parsed_whole)
        )


@dataclass(frozen=True, slots=True)
class RawInput:
    """The bytes of one input: a file, or one entry of an archive. For a large text input,
    ``data`` is only its head and ``rest`` the open stream to read on from (valid until the
    next input is asked for). ``warnings``: what was wrong with the container (a damaged
    end); for a stream, filled in as it is read."""

    path: str
    source: str
    format: str
    data: bytes
    rest: IO[bytes] | None = None
    warnings: list[str] = field(default_factory=list)


class InputTooLarge(Exception):
    pass


class _CappedReader:
    """Reads on from a stream, failing once more than ``limit`` bytes came through."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.stream = stream
        self.left = limit

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.left -= len(data)
        if self.left < 0:
            raise InputTooLarge
        return data


# What a decompressor raises when its data ends early or is not what it should be.
try:
    from zstandard import ZstdError as _ZstdError
except ImportError:  # pragma: no cover - the zstd extra is not installed

    class _ZstdError(Exception):  # type: ignore[no-redef]
        pass


DAMAGE = (EOFError, OSError, lzma.LZMAError, zlib.error, zipfile.BadZipFile, _ZstdError)
_PIECE = 1 << 16
# A line longer than this is handed on without waiting for its end (a file with no line breaks).
_LONGEST_HELD = 1 << 20


class _IntactLines:
    """A decompressing stream read up to its damage, if any: should the data end early or turn
    to garbage, it ends at the last complete line before that, and says so in ``warnings``
    (the cut line could end inside a character, or hold half a record)."""

    def __init__(self, stream: IO[bytes], warnings: list[str]) -> None:
        self.stream = stream
        self.warnings = warnings
        self.held = b""  # what came after the last line end so far
        self.given = 0
        self.done = False

    def read(self, size: int = -1) -> bytes:
        # In small reads: a decompressor that hits the damage loses what it made in that read.
        size = min(size, _PIECE) if size > 0 else _PIECE
        while not self.done:
            try:
                data = self.stream.read(size)
            except DAMAGE as error:
                self._damaged(error)
                break
            if not data:
                self.done = True
                break
            data = self.held + data
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) < _LONGEST_HELD:
                self.held = data
                continue
            cut = cut or len(data)
            self.held = data[cut:]
            self.given += cut
            return data[:cut]
        tail, self.held = self.held, b""
        self.given += len(tail)
        return tail

    def _damaged(self, error: BaseException) -> None:
        self.done = True
        trailing = isinstance(error, gzip.BadGzipFile) and "Not a gzipped file" in str(error)
        if trailing:
            # A whole gzip member was read and something else follows it: the content is
            # complete, its last line too.
            self.given += len(self.held)
            self.warnings.append(
                f"bytes after the end of the compressed data are not {_what(error)}: ignored "
                f"(read the {self.given:,} bytes of content before them)"
            )
            return
        self.held = b""
        damaged = f"the compressed data is truncated or damaged ({_reason(error)})"
        if not self.given:
            self.warnings.append(f"{damaged} before its first complete line: nothing to read")
            return
        self.warnings.append(
            f"{damaged}: read the first {self.given:,} bytes of its content, to the last "
            "complete line; the rest is lost"
        )


def _what(error: BaseException) -> str:
    return "gzip" if isinstance(error, gzip.BadGzipFile) else "compressed data"


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _read_capped(stream: IO[bytes] | _CappedReader | _IntactLines, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputTooLarge


def _read_at_least(stream: IO[bytes], size: int) -> bytes:
    """At least ``size`` bytes of ``stream`` (a little more, as they come), or all of it."""
    chunks: list[bytes] = []
    total = 0
    while total < size:
        chunk = stream.read(min(_CHUNK, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _raw(
    path: str,
    source: str,
    file_format: str,
    stream: IO[bytes],
    limits: Limits,
    warnings: list[str] | None = None,
) -> RawInput:
    warnings = [] if warnings is None else warnings
    limit = limits.of(file_format)
    if file_format not in STREAMABLE:
        return RawInput(path, source, file_format, _read_capped(stream, limit), warnings=warnings)
    if limit <= STREAM_BYTES:
        head = _read_capped(stream, limit)
    else:
        head = _read_at_least(stream, STREAM_BYTES)
    if len(head) < STREAM_BYTES:
        return RawInput(path, source, file_format, head, warnings=warnings)
    rest = cast(IO[bytes], _CappedReader(stream, limit - len(head)))
    return RawInput(path, source, file_format, head, rest, warnings)


class _Frames:
    """A compressed stream of one frame (gzip member, bz2 or xz stream, zstd frame) or several
    one after the other, decompressed a piece at a time. Unlike the standard library's file
    wrappers it loses nothing it decompressed when the data turns bad, and unlike zstandard's
    stream reader it tells a truncated file from a whole one: EOFError when the data ends
    inside a frame, BadGzipFile("Not a gzipped file") for garbage after the last one. The
    compressed data is fed in small pieces, so that one read makes a bounded amount of output
    whatever the compression ratio."""

    _FEED = 4096

    def __init__(self, stream: BinaryIO, start: Callable[[], _Decompressor], magic: bytes) -> None:
        self.stream = stream
        self.start = start
        self.magic = magic
        self.frame = start()
        self.pending = b""
        self.begun = False  # whether the current frame has had any input
        self.problem: Exception | None = None

    def read(self, size: int = -1) -> bytes:
        """Up to about ``size`` bytes; what was decompressed before a problem is returned
        first, and the problem raised by the next read."""
        if self.problem is not None:
            raise self.problem
        out: list[bytes] = []
        try:
            self._read_into(out, size if size > 0 else _CHUNK)
        except DAMAGE as problem:
            if not out:
                raise
            self.problem = problem
        return b"".join(out)

    def _read_into(self, out: list[bytes], size: int) -> None:
        total = 0
        while total < size:
            if self.frame.eof:
                rest = self.frame.unused_data + self.pending
                self.pending = b""
                while len(rest) < len(self.magic):
                    more = self.stream.read(self._FEED)
                    if not more:
                        break
                    rest += more
                if not rest.strip(b"\0"):  # the end, or the zero padding some writers add
                    break
                if not rest.startswith(self.magic):
                    raise gzip.BadGzipFile("Not a gzipped file")  # garbage after the frames
                self.frame = self.start()
                self.begun = False
                self.pending = rest
            piece = self.pending or self.stream.read(self._FEED)
            self.pending = b""
            if not piece:
                if self.begun:
                    raise EOFError("the data ends inside a compressed frame")
                break
            self.begun = True
            data = self.frame.decompress(piece)
            if data:
                out.append(data)
                total += len(data)


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    @property
    def unused_data(self) -> bytes: ...

    def decompress(self, data: bytes, /) -> bytes: ...


def _zstd_frame() -> _Decompressor:
    import zstandard

    frame: _Decompressor = zstandard.ZstdDecompressor().decompressobj()
    return frame


def _zstd_open(stream: BinaryIO) -> IO[bytes]:
    try:
        import zstandard  # noqa: F401
    except ImportError as error:
        raise ModuleNotFoundError(
            "reading .zst needs the zstandard package: pip install 'dedup[zstd]'"
        ) from error
    return cast(IO[bytes], _Frames(stream, _zstd_frame, b"\x28\xb5\x2f\xfd"))


def _gzip_open(stream: BinaryIO) -> IO[bytes]:
    return cast(
        IO[bytes], _Frames(stream, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), b"\x1f\x8b")
    )


def _bz2_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], _Frames(stream, bz2.BZ2Decompressor, b"BZh"))


def _xz_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], _Frames(stream, lzma.LZMADecompressor, b"\xfd7zXZ\x00"))


# The caller closes the underlying file; these wrappers only read from it.
DECOMPRESSORS: dict[str, Callable[[BinaryIO], IO[bytes]]] = {
    ".gz": _gzip_open,
    ".bz2": _bz2_open,
    ".xz": _xz_open,
    ".zst": _zstd_open,
}
assert set(DECOMPRESSORS) == set(COMPRESSIONS)


def _decompressed(compression: str, stream: BinaryIO, warnings: list[str]) -> IO[bytes]:
    return cast(IO[bytes], _IntactLines(DECOMPRESSORS[compression](stream), warnings))


def _too_large(path: str, file_format: str, limits: Limits) -> Skipped:
    limit = limits.of(file_format)
    if limit < limits.any_input:
        return Skipped(
            path,
            f"larger than {limit // 1_000_000} MB once decompressed, and a .{file_format} input "
            "is parsed whole, in several times its size of memory; split it (JSON Lines and "
            "text are read as streams) or raise --max-whole-file-mb to read it",
        )
    return Skipped(
        path,
        f"larger than {limit // 1_000_000} MB once decompressed (a zip bomb, or a dump that "
        "should be split); raise --max-file-mb to read it",
    )


def raw_inputs(file: FoundFile, limits: Limits) -> Iterator[RawInput | Skipped]:
    """The inputs inside ``file``: itself, what its compression holds, or its archive entries."""
    try:
        with open(file.fs_path, "rb") as handle:
            if file.format == "zip":
                yield from _zip_entries(file, handle, limits)
                return
            stream: IO[bytes] = handle
            warnings: list[str] = []
            if file.compression:
                stream = _decompressed(file.compression, handle, warnings)
            yield _raw(file.path, file.source, file.format, stream, limits, warnings)
    except InputTooLarge:
        yield _too_large(file.path, file.format, limits)
    except PermissionError:
        yield Skipped(
            file.path, "permission denied; make the file readable (chmod +r) and scan again"
        )
    except ModuleNotFoundError as error:
        yield Skipped(file.path, str(error))
    except DAMAGE as error:
        yield Skipped(
            file.path,
            f"cannot read it ({_reason(error)}); the file may be truncated or not what its "
            "name says",
        )


def _entry_source(archive: FoundFile, inner: PurePosixPath, common_top: str | None) -> str:
    """An archive is a folder: an entry's source is its first folder inside the archive (after
    a single wrapping folder, as `zip -r dump.zip dump/` makes), else the archive's source."""
    parts = inner.parts[1:] if common_top else inner.parts
    return shown(parts[0]) if len(parts) > 1 else archive.source


@dataclass(frozen=True, slots=True)
class _Entry:
    """What an archive says of one entry, from its index or, in a truncated archive, from
    the entry's own header; ``open`` gives its bytes, decompressed."""

    name: str
    size: int  # once decompressed, as the archive says (-1: not said)
    open: Callable[[], IO[bytes]]
    problem: str | None = None  # why it cannot be read at all


def _zip_entries(file: FoundFile, handle: BinaryIO, limits: Limits) -> Iterator[RawInput | Skipped]:
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
        where = f"{file.path}!/{shown(name)}"
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
            yield _too_large(where, entry_format, limits)
            continue
        source = _entry_source(file, inner, common_top)
        warnings = list(notes)
        try:
            with entry.open() as member:
                stream: IO[bytes] = member
                if compression:
                    stream = _decompressed(compression, member, warnings)  # type: ignore[arg-type]
                raw = _raw(where, source, entry_format, stream, limits, warnings)
                yield raw  # a streamed entry is read on while this entry is open
        except InputTooLarge:
            yield _too_large(where, entry_format, limits)
        except (*DAMAGE, RuntimeError, NotImplementedError) as error:
            yield Skipped(where, f"cannot read this archive entry ({_reason(error)})")


_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"


def _entries_from_headers(handle: BinaryIO) -> Iterator[_Entry]:
    """The entries of a zip whose index is gone, walked from the start by their local headers;
    the walk stops at the first entry it cannot get past (cut off, or sized only after its
    data), which is listed with the reason."""
    handle.seek(0, 2)
    size = handle.tell()
    offset = 0
    while offset + _LOCAL_HEADER.size <= size:
        handle.seek(offset)
        header = handle.read(_LOCAL_HEADER.size)
        fields = _LOCAL_HEADER.unpack(header)
        signature, _version, flags, method, _time, _date, _crc, packed, unpacked = fields[:9]
        name_length, extra_length = fields[9:]
        if signature != _LOCAL_SIGNATURE:
            return
        raw_name = handle.read(name_length)
        name = raw_name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        start = offset + _LOCAL_HEADER.size + name_length + extra_length
        # Past this entry there is no telling where the next one starts.
        lost = bool(flags & 0x8 and packed == 0) or packed == 0xFFFFFFFF or start + packed > size
        problem = None
        if flags & 0x8 and packed == 0:
            problem = (
                "its size is written after its data, which an archive without its index "
                "does not let dedup find: not read"
            )
        elif packed == 0xFFFFFFFF:
            problem = "a zip64 entry in an archive without its index: not read"
        elif start + packed > size:
            problem = "cut off by the end of the truncated archive: not read"
        elif flags & 0x1:
            problem = "encrypted: not read"
        elif method not in _METHODS:
            problem = f"compressed with method {method}, which dedup cannot read: not read"
        if not name.endswith("/"):
            yield _Entry(name, unpacked, _slice_opener(handle, start, packed, method), problem)
        if lost:
            return
        offset = start + packed + (16 if flags & 0x8 else 0)


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
        size = size if size > 0 else _CHUNK
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
