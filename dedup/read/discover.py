"""Find the files to read under the paths the user gave, and the source (site) of each."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from dedup.errors import InputPathError
from dedup.models import Skipped

# Extension -> reader format name. Anything else is listed in the report as skipped.
FORMATS = {
    ".txt": "txt",
    ".text": "txt",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".epub": "epub",
    ".zip": "zip",
}
# A compressed file is read as the file inside it: book.txt.gz is a .txt.
COMPRESSIONS = (".gz", ".bz2", ".xz", ".zst")


@dataclass(frozen=True, slots=True, order=True)
class FoundFile:
    # path: as the user will see it, the given path joined with the part below it, '/'-separated
    path: str
    source: str
    format: str
    fs_path: str
    compression: str | None = None
    # (size, modification time in ns) when found: a later read can tell the file has changed
    stamp: tuple[int, int] | None = None


def _display(path: PurePath | str) -> str:
    return PurePath(path).as_posix()


def _source_for(root: Path, file: Path) -> str:
    """One folder per site: the first folder under the scanned root, else the parent's name."""
    relative = file.relative_to(root)
    if len(relative.parts) > 1:
        return relative.parts[0]
    return Path(os.path.abspath(file)).parent.name or "."


def discover_inputs(paths: Iterable[str]) -> tuple[list[FoundFile], list[Skipped]]:
    """List every file under ``paths`` in a fixed order, whatever order the paths were given in.

    A path that does not exist is the user's mistake and stops the scan; a bad file inside a
    folder (broken link, unknown format) is listed as skipped and the scan goes on.
    """
    found: dict[str, FoundFile] = {}
    skipped: dict[str, Skipped] = {}
    roots = sorted(set(paths))
    for given in roots:
        root = Path(given)
        if not os.path.lexists(root):
            raise InputPathError(f"{given}: no such file or folder; check the path and try again")
        if root.is_dir():
            entries = _walk(root, skipped)
        else:
            entries = [(root, Path(os.path.abspath(root)).parent.name or ".")]
        for file, source in entries:
            _add(file, source, found, skipped)
    return sorted(found.values()), sorted(skipped.values(), key=lambda entry: entry.path)


def _walk(root: Path, skipped: dict[str, Skipped]) -> list[tuple[Path, str]]:
    entries: list[tuple[Path, str]] = []

    def on_error(error: OSError) -> None:
        where = _display(error.filename or root)
        skipped[where] = Skipped(
            where, f"cannot list this folder ({error.strerror}); check its permissions"
        )

    for folder, dirnames, filenames in os.walk(root, onerror=on_error):
        dirnames.sort()
        for dirname in list(dirnames):
            subdir = Path(folder, dirname)
            if subdir.is_symlink():
                dirnames.remove(dirname)
                where = _display(subdir)
                skipped[where] = Skipped(
                    where, "a link to a folder, not followed (scan the folder it points to instead)"
                )
        for filename in sorted(filenames):
            file = Path(folder, filename)
            entries.append((file, _source_for(root, file)))
    return entries


def file_stamp(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of ``path``; None if it cannot be read."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


def _add(file: Path, source: str, found: dict[str, FoundFile], skipped: dict[str, Skipped]) -> None:
    where = _display(file)
    try:
        real = os.path.realpath(file, strict=True)
    except (OSError, RuntimeError):
        skipped[where] = Skipped(where, "broken symbolic link (or a link loop): nothing to read")
        return
    if not os.path.isfile(real):
        skipped[where] = Skipped(where, "not a regular file")
        return
    suffixes = [suffix.lower() for suffix in file.suffixes[-2:]]
    compression = suffixes[-1] if suffixes and suffixes[-1] in COMPRESSIONS else None
    if compression:
        suffixes = suffixes[:-1]
    file_format = FORMATS.get(suffixes[-1]) if suffixes else None
    if file_format is None or (compression and file_format in ("zip", "epub", "parquet")):
        known = ", ".join(sorted(FORMATS))
        squeezed = ", ".join(COMPRESSIONS)
        skipped[where] = Skipped(
            where, f"not a supported format (supported: {known}, each also as {squeezed})"
        )
        return
    candidate = FoundFile(where, source, file_format, str(file), compression, file_stamp(real))
    # The same file reached through two given paths is read once, under the first name in order.
    previous = found.get(real)
    if previous is None or candidate.path < previous.path:
        found[real] = candidate
