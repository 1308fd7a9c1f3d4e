"""Compressed files and archives, read as streams: nothing is ever unpacked to disk.

``book.txt.gz`` (or .bz2, .xz, .zst) is the text file inside it. A ``.zip`` is a folder: each entry
is an input of its own, named ``archive.zip!/inner/path`` in the report. Entry names are only
names: one with ``..`` or an absolute path is skipped, never resolved against the file system.
Every input is read with a size cap, so a zip bomb costs at most the cap, then is skipped.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO, BinaryIO, cast

from dedup.models import Skipped
from dedup.read.discover import COMPRESSIONS, FORMATS, FoundFile

_CHUNK = 1 << 20


# Text and JSON Lines inputs larger than this are decoded and read as a stream, a piece at a
# time, so memory does not grow with the size of the largest file.
STREAM_BYTES = 64 << 20
STREAMABLE = ("txt", "jsonl")


@dataclass(frozen=True, slots=True)
class RawInput:
    """The bytes of one input: a file, or one entry of an archive. For a large text input,
    ``data`` is only its head and ``rest`` the open stream to read on from (valid until the
    next input is asked for)."""

    path: str
    source: str
    format: str
    data: bytes
    rest: IO[bytes] | None = None


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


def _raw(path: str, source: str, file_format: str, stream: IO[bytes], limit: int) -> RawInput:
    if file_format not in STREAMABLE:
        return RawInput(path, source, file_format, _read_capped(stream, limit))
    head = _read_capped(stream, limit) if limit <= STREAM_BYTES else stream.read(STREAM_BYTES)
    if len(head) < STREAM_BYTES:
        return RawInput(path, source, file_format, head)
    rest = cast(IO[bytes], _CappedReader(stream, limit - len(head)))
    return RawInput(path, source, file_format, head, rest)


class InputTooLarge(Exception):
    pass


def _read_capped(stream: IO[bytes], limit: int) -> bytes:
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


def _zstd_open(stream: BinaryIO) -> IO[bytes]:
    try:
        import zstandard
    except ImportError as error:
        raise ModuleNotFoundError(
            "reading .zst needs the zstandard package: pip install 'dedup[zstd]'"
        ) from error
    reader: IO[bytes] = zstandard.ZstdDecompressor().stream_reader(stream)
    return reader


def _gzip_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], gzip.GzipFile(fileobj=stream))


def _bz2_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], bz2.BZ2File(stream))


def _xz_open(stream: BinaryIO) -> IO[bytes]:
    return cast(IO[bytes], lzma.LZMAFile(stream))


# The caller closes the underlying file; these wrappers only read from it.
DECOMPRESSORS: dict[str, Callable[[BinaryIO], IO[bytes]]] = {
    ".gz": _gzip_open,
    ".bz2": _bz2_open,
    ".xz": _xz_open,
    ".zst": _zstd_open,
}
assert set(DECOMPRESSORS) == set(COMPRESSIONS)


def _too_large(path: str, limit: int) -> Skipped:
    return Skipped(
        path,
        f"larger than {limit // 1_000_000} MB once decompressed (a zip bomb, or a dump that "
        "should be split); raise --max-file-mb to read it",
    )


def raw_inputs(file: FoundFile, limit: int) -> Iterator[RawInput | Skipped]:
    """The inputs inside ``file``: itself, what its compression holds, or its archive entries."""
    try:
        with open(file.fs_path, "rb") as handle:
            if file.format == "zip":
                yield from _zip_entries(file, handle, limit)
                return
            stream: IO[bytes] = handle
            if file.compression:
                stream = DECOMPRESSORS[file.compression](handle)
            yield _raw(file.path, file.source, file.format, stream, limit)
    except InputTooLarge:
        yield _too_large(file.path, limit)
    except PermissionError:
        yield Skipped(
            file.path, "permission denied; make the file readable (chmod +r) and scan again"
        )
    except ModuleNotFoundError as error:
        yield Skipped(file.path, str(error))
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile) as error:
        what = getattr(error, "strerror", None) or str(error) or type(error).__name__
        yield Skipped(
            file.path,
            f"cannot read it ({what}); the file may be truncated or not what its name says",
        )


def _entry_source(archive: FoundFile, inner: PurePosixPath, common_top: str | None) -> str:
    """An archive is a folder: an entry's source is its first folder inside the archive (after
    a single wrapping folder, as `zip -r dump.zip dump/` makes), else the archive's source."""
    parts = inner.parts[1:] if common_top else inner.parts
    return parts[0] if len(parts) > 1 else archive.source


def _zip_entries(file: FoundFile, handle: BinaryIO, limit: int) -> Iterator[RawInput | Skipped]:
    with zipfile.ZipFile(handle) as archive:
        infos = sorted(
            (info for info in archive.infolist() if not info.is_dir()), key=lambda i: i.filename
        )
        tops = {PurePosixPath(info.filename).parts[0] for info in infos if "/" in info.filename}
        all_nested = all("/" in info.filename for info in infos)
        common_top = next(iter(tops)) if len(tops) == 1 and all_nested else None
        for info in infos:
            name = info.filename
            where = f"{file.path}!/{name}"
            inner = PurePosixPath(name)
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
                yield Skipped(
                    where, f"not a supported format inside an archive (supported: {known})"
                )
                continue
            if info.file_size > limit:
                yield _too_large(where, limit)
                continue
            source = _entry_source(file, inner, common_top)
            try:
                with archive.open(info) as member:
                    stream: IO[bytes] = member
                    if compression:
                        stream = DECOMPRESSORS[compression](member)  # type: ignore[arg-type]
                    raw = _raw(where, source, entry_format, stream, limit)
                    yield raw  # a streamed entry is read on while this entry is open
            except InputTooLarge:
                yield _too_large(where, limit)
            except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile, RuntimeError) as error:
                yield Skipped(where, f"cannot read this archive entry ({error})")
