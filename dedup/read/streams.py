"""Compressed streams and raw inputs: the bytes of one input, read with a size cap, decompressed
a frame at a time (gzip, bz2, xz, zstd alike), and kept up to the last complete line before
any damage, with a warning."""

from __future__ import annotations

import bz2
import lzma
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, BinaryIO, Protocol, cast

from dedup.errors import InputTooLarge
from dedup.models import Skipped
from dedup.read.discover import COMPRESSIONS

if TYPE_CHECKING:
    from dedup.read.slices import FileSlice

CHUNK = 1 << 20


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
    end); for a stream, filled in as it is read. ``part``: the slice of its file the stream
    is, if it is one (dedup.read.slices)."""

    path: str
    source: str
    format: str
    data: bytes
    rest: IO[bytes] | None = None
    warnings: list[str] = field(default_factory=list)
    part: FileSlice | None = None


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


class TrailingData(Exception):
    """Something other than compressed data follows the last frame of a compressed file."""

    def __init__(self, compression: str) -> None:
        super().__init__(f"bytes after the last {compression} frame")
        self.compression = compression


DAMAGE = (
    EOFError,
    OSError,
    lzma.LZMAError,
    zlib.error,
    zipfile.BadZipFile,
    _ZstdError,
    TrailingData,
)
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
        if isinstance(error, TrailingData):
            # Whole frames were read and something else follows them: the content is
            # complete, its last line too.
            self.given += len(self.held)
            self.warnings.append(
                f"bytes after the end of the compressed data are not {error.compression} "
                f"data: ignored (read the {self.given:,} bytes of content before them)"
            )
            return
        self.held = b""
        damaged = f"the compressed data is truncated or damaged ({reason(error)})"
        if not self.given:
            self.warnings.append(f"{damaged} before its first complete line: nothing to read")
            return
        self.warnings.append(
            f"{damaged}: read the first {self.given:,} bytes of its content, to the last "
            "complete line; the rest is lost"
        )


def reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _read_capped(stream: IO[bytes] | _CappedReader | _IntactLines, limit: int) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - total))
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
        chunk = stream.read(min(CHUNK, size - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def raw_input(
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
    inside a frame, TrailingData for garbage after the last one. The
    compressed data is fed in small pieces, so that one read makes a bounded amount of output
    whatever the compression ratio."""

    _FEED = 4096

    def __init__(
        self,
        stream: BinaryIO,
        start: Callable[[], _Decompressor],
        magic: bytes,
        compression: str,
    ) -> None:
        self.compression = compression
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
            self._read_into(out, size if size > 0 else CHUNK)
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
                    raise TrailingData(self.compression)
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
    return cast(IO[bytes], _Frames(stream, _zstd_frame, b"\x28\xb5\x2f\xfd", "zstd"))


def _gzip_open(stream: BinaryIO) -> IO[bytes]:
    return cast(
        IO[bytes],
        _Frames(stream, lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), b"\x1f\x8b", "gzip"),
    )


def _bz2_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], _Frames(stream, bz2.BZ2Decompressor, b"BZh", "bz2"))


def _xz_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], _Frames(stream, lzma.LZMADecompressor, b"\xfd7zXZ\x00", "xz"))


# The caller closes the underlying file; these wrappers only read from it.
DECOMPRESSORS: dict[str, Callable[[BinaryIO], IO[bytes]]] = {
    ".gz": _gzip_open,
    ".bz2": _bz2_open,
    ".xz": _xz_open,
    ".zst": _zstd_open,
}
assert set(DECOMPRESSORS) == set(COMPRESSIONS)


def decompressed(compression: str, stream: BinaryIO, warnings: list[str]) -> IO[bytes]:
    return cast(IO[bytes], _IntactLines(DECOMPRESSORS[compression](stream), warnings))


def too_large(path: str, file_format: str, limits: Limits) -> Skipped:
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
