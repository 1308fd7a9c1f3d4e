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

from collections.abc import Iterator
from typing import IO

from dedup.errors import InputTooLarge
from dedup.models import Skipped
from dedup.read.discover import FoundFile
from dedup.read.location import open_input
from dedup.read.slices import FileSlice, slice_input
from dedup.read.streams import DAMAGE, Limits, RawInput, decompressed, raw_input, reason, too_large
from dedup.read.zip import zip_entries

FILE_GONE = "gone: deleted or moved while dedup was scanning; scan again once the dump is settled"


def raw_inputs(
    file: FoundFile, limits: Limits, part: FileSlice | None = None
) -> Iterator[RawInput | Skipped]:
    """The inputs inside ``file``: itself, what its compression holds, or its archive entries;
    given ``part``, that slice of it."""
    try:
        with open_input(file.fs_path) as handle:
            if part is not None:
                yield slice_input(file, handle, part)
                return
            if file.format == "zip":
                yield from zip_entries(file, handle, limits)
                return
            stream: IO[bytes] = handle
            warnings: list[str] = []
            if file.compression:
                stream = decompressed(file.compression, handle, warnings)
            yield raw_input(file.path, file.source, file.format, stream, limits, warnings)
    except InputTooLarge:
        yield too_large(file.path, file.format, limits)
    except PermissionError:
        yield Skipped(
            file.path, "permission denied; make the file readable (chmod +r) and scan again"
        )
    except FileNotFoundError:  # found by discover, gone since
        yield Skipped(file.path, FILE_GONE)
    except ModuleNotFoundError as error:
        yield Skipped(file.path, str(error))
    except DAMAGE as error:
        yield Skipped(
            file.path,
            f"cannot read it ({reason(error)}); the file may be truncated or not what its "
            "name says",
        )
