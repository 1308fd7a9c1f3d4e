"""Find the files to read under the paths the user gave, and the source (site) of each."""

from __future__ import annotations

import heapq
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, NamedTuple

from dedup.display import shown
from dedup.errors import InputPathError
from dedup.models import AppendedRows, Skipped
from dedup.read.location import is_url, open_input, url_files, url_stamp
from dedup.spool import KeyParts

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

    def __reduce__(self) -> tuple[type[FoundFile], tuple[Any, ...]]:
        # By its fields in order: a slotted dataclass's own pickling asks dataclasses for
        # its fields at each file, both ways (a pass sends a crawl's millions).
        fields = (self.path, self.source, self.format, self.fs_path, self.compression)
        return FoundFile, (*fields, self.stamp)

    def to_send(self) -> FoundFile:
        """This file with paths of its own, to pickle for a worker: pickling a string that
        is not all ASCII stores its UTF-8 in it for as long as it lives, and a caller may
        hold its found files for the whole scan (a list of them: ``FoundFiles`` makes each
        one's strings afresh), some 70 B a file of a crawl of a page a file
        (docs/performance.md)."""
        path = _own_copy(self.path)
        fs_path = path if self.fs_path == self.path else _own_copy(self.fs_path)
        return FoundFile(path, self.source, self.format, fs_path, self.compression, self.stamp)


def _own_copy(text: str) -> str:
    """``text`` as a string no one else holds (an ASCII string's UTF-8 is itself: as it is)."""
    return text if text.isascii() else "".join((text[:1], text[1:]))


class FoundFiles(AppendedRows[FoundFile]):
    """Found files, in order, held as ``AppendedRows``' rows: a ``FoundFile`` is made when
    one is asked for. A crawl of a page a file finds millions, and as objects, each with its
    stamp's tuple and numbers, they would cost some 260 bytes a file besides its path, for
    the whole scan (docs/performance.md). Here a file is a row of its path and a few numbers
    (its source, format and compression named once each, its stamp); its path on the
    filesystem only where it is not the same."""

    def __init__(self, files: Iterable[FoundFile] = ()) -> None:
        super().__init__()
        self._fs_paths: dict[int, str] = {}
        self._formats: set[str] = set()
        for file in files:
            self.append(file)

    @property
    def formats(self) -> frozenset[str]:
        """The formats of the files, each once: a question of all of them (is any JSON
        Lines?) answered without making each file's record again."""
        return frozenset(self._formats)

    def append(self, file: FoundFile) -> None:
        self._formats.add(file.format)
        compression = -1 if file.compression is None else self._number(file.compression)
        codes = (self._number(file.source), self._number(file.format), compression)
        # size and time, the time in seconds and nanoseconds: four bytes each while the
        # size does (_packed_numbers)
        stamp = () if file.stamp is None else (file.stamp[0], *divmod(file.stamp[1], 10**9))
        row = self._append_row((*codes, *stamp), file.path)
        if file.fs_path != file.path:
            self._fs_paths[row] = file.fs_path

    def size_of(self, row: int) -> int:
        """File ``row``'s size when it was found (-1 if not known), its record not made:
        a pass's batches are sized from every file's, once or twice (making a record took
        some 5 µs a file, docs/performance.md)."""
        numbers = self._read_numbers(row)
        return numbers[3] if len(numbers) > 3 else -1

    def _row(self, row: int) -> FoundFile:
        named = self._named
        (source, file_format, compression, *stamp), path = self._read_row(row)
        return FoundFile(
            path,
            named[source],
            named[file_format],
            self._fs_paths.get(row, path),
            None if compression < 0 else named[compression],
            (stamp[0], stamp[1] * 10**9 + stamp[2]) if stamp else None,
        )


def _display(path: PurePath | str) -> str:
    return shown(PurePath(path).as_posix())


def _folder_source(root: Path, folder: str) -> str:
    """The source of the files in ``folder``: one folder per site, the first folder under
    the scanned root, else the root's own name."""
    relative = Path(folder).relative_to(root)
    if relative.parts:
        return shown(relative.parts[0])
    return _folder_name(folder)


def _parent_name(file: Path) -> str:
    return _folder_name(os.path.dirname(os.path.abspath(file)))


def _folder_name(folder: str) -> str:
    return shown(Path(os.path.abspath(folder)).name or ".")


# A copy dedup clean wrote holds this file, and its lists of what it left out: scanned again,
# the copy's lists are not inputs.
CLEAN_MARKER = ".dedup-clean"
REMOVED_JSONL = "removed.jsonl"
REMOVED_CSV = "removed.csv"
# A folder dedup is writing a report into holds this file until the report is complete.
WRITING_MARKER = ".dedup-writing"
# ``.OUT.dedup-lock`` beside a report folder OUT, while a dedup writes it.
LOCK_SUFFIX = ".dedup-lock"


def is_report_folder(folder: Path | str) -> bool:
    """Whether ``folder`` is a report dedup wrote (or is writing): scanning it would read the
    report's own tables back in as a source."""
    folder = Path(folder)
    if os.path.lexists(folder / WRITING_MARKER):
        return True
    return _is_report_json(str(folder / "report.json"))


def _is_report_json(where: str) -> bool:
    """Whether the file at ``where`` (a path or a URL) begins as a dedup report.json does."""
    try:
        with open_input(where) as handle:
            head = handle.read(128)
    except OSError:
        return False
    return head.replace(b" ", b"").replace(b"\n", b"").startswith(b'{"report_format":')


NOT_REGULAR = "not a regular file"
_REPORT_LEFT_OUT = "a report dedup wrote: left out (its tables are not a source)"


def discover_inputs(
    paths: Iterable[str], follow_links: bool = False
) -> tuple[FoundFiles, list[Skipped]]:
    """List every file under ``paths`` in a fixed order, whatever order the paths were given in.

    A path that does not exist is the user's mistake and stops the scan; a bad file inside a
    folder (broken link, unknown format) is listed as skipped and the scan goes on. Inside a
    folder, a link is read only when it points into that folder, unless ``follow_links``.
    The files found are rows on disk as they come (``FoundFiles``), in the order of their
    paths.
    """
    skipped: dict[str, Skipped] = {}
    streams: list[Iterable[tuple[FoundFile, str]]] = []
    for given in sorted(set(paths)):
        if is_url(given):
            files, others = url_files(given)
            found: dict[str, tuple[FoundFile, str]] = {}
            for url, below in _url_inputs(files, skipped):
                _add_url(url, below, found, skipped)
            for url in others:  # not _skip: a path's display would fold the URL's //
                skipped[shown(url)] = Skipped(shown(url), NOT_REGULAR)
            streams.append(sorted(found.values()))  # a listing held whole already
            continue
        root = Path(given)
        try:
            os.lstat(root)
        except PermissionError as error:
            raise InputPathError(
                f"{shown(given)}: cannot reach it ({error.strerror}): a folder above it is not "
                "searchable for this user; make it searchable (chmod +x) and try again"
            ) from error
        except (OSError, ValueError) as error:
            raise InputPathError(
                f"{shown(given)}: no such file or folder; check the path and try again"
            ) from error
        entries: Iterable[_Entry] = (
            _walk(root, skipped, follow_links)
            if root.is_dir()
            else [_Entry(os.fspath(root), _display(root), _parent_name(root), None)]
        )
        streams.append(_found(entries, skipped))
    # Each path's files come in the order of their paths: merged, they are in order, and a
    # file two paths hold under one name comes twice in a row (the first path's is kept).
    # Only a hash of each file's real path is kept, on disk (a crawl of a page a file finds
    # millions): a file found under two names is looked for among those at the end.
    walked = FoundFiles()
    real_hashes = KeyParts()
    last = None
    for file, real in heapq.merge(*streams, key=_path_of):
        if file.path != last:
            walked.append(file)
            real_hashes.append(hash(real))
            last = file.path
    found_files = _read_once(walked, real_hashes.shared().tolist(), skipped)
    return found_files, sorted(skipped.values(), key=lambda entry: entry.path)


def _path_of(candidate: tuple[FoundFile, str]) -> str:
    return candidate[0].path


class _Entry(NamedTuple):
    """A file a walk found: its path on this machine and as shown, its source, and its real
    path where the walk knows it (a file that is not a link, in a folder whose real path
    is known), else None."""

    fs_path: str
    path: str
    source: str
    real: str | None


def _found(
    entries: Iterable[_Entry], skipped: dict[str, Skipped]
) -> Iterator[tuple[FoundFile, str]]:
    """The files of ``entries`` that are read, each with its real path; the others skipped."""
    for entry in entries:
        candidate = _candidate(entry, skipped)
        if candidate is not None:
            yield candidate


def _read_once(walked: FoundFiles, shared: list[int], skipped: dict[str, Skipped]) -> FoundFiles:
    """``walked`` but for a second name of a file found under several (a link to it, or two
    given paths), which is listed as skipped: the file is read once, under its own name
    rather than a link's (a cleaned copy then holds it where it is), else the first in
    order. ``shared``: the files whose real path's hash another's equals, whose real paths
    are looked at again (in order)."""
    by_real: dict[str, list[FoundFile]] = {}
    for row in shared:
        file = walked[row]
        real = file.fs_path if is_url(file.fs_path) else os.path.realpath(file.fs_path)
        by_real.setdefault(real, []).append(file)
    second: set[str] = set()
    for real, files in by_real.items():
        if len(files) > 1:
            first = min(files, key=lambda name: _links_in(name, real))
            reason = f"the same file as {first.path}, read under that name"
            for other in files:
                if other is not first:
                    skipped[other.path] = Skipped(other.path, reason)
                    second.add(other.path)
    if not second:
        return walked
    return FoundFiles(file for file in walked if file.path not in second)


def _skip(skipped: dict[str, Skipped], path: Path | str, reason: str) -> None:
    where = _display(path)
    skipped[where] = Skipped(where, reason)


def _walk(root: Path, skipped: dict[str, Skipped], follow_links: bool) -> Iterator[_Entry]:
    """The files under ``root`` with their sources, in the order of their paths, a folder
    at a time (a crawl of a page a file has millions: their paths are not all held at once,
    nor sorted together). What is the same for a folder's files (how its path is shown,
    its source, its real path) is found once for the folder: a file's own real path (each
    folder above it looked at again) and its path parsed cost more than its stat."""
    inside = os.path.realpath(root)
    seen_folders = {inside}

    def on_error(error: OSError) -> None:
        _skip(
            skipped,
            error.filename or root,
            f"cannot list this folder ({error.strerror}); check its permissions",
        )

    def outside(path: Path | str) -> bool:
        real = os.path.realpath(path)
        return os.path.commonpath([inside, real]) != inside

    def folder_files(folder: str) -> Iterator[_Entry]:
        try:
            with os.scandir(folder) as listing:
                entries = [
                    (entry.name, _is_folder(entry), _may_be_link(entry)) for entry in listing
                ]
        except OSError as error:
            on_error(error)
            return
        dirnames = sorted(name for name, is_folder, _link in entries if is_folder)
        filenames = [(name, link) for name, is_folder, link in entries if not is_folder]
        del entries
        for dirname in list(dirnames):
            subdir = Path(folder, dirname)
            if dirname.endswith(f".partial-{os.getpid()}"):
                dirnames.remove(dirname)  # the report this very run is about to write
            elif is_report_folder(subdir):
                dirnames.remove(dirname)
                _skip(skipped, subdir, _REPORT_LEFT_OUT)
            elif not follow_links and _is_link(subdir):
                dirnames.remove(dirname)
                _skip(
                    skipped,
                    subdir,
                    "a link to a folder, not followed (scan the folder it points to instead, "
                    "or pass --follow-links)",
                )
            elif follow_links and _is_link(subdir) and not outside(subdir):
                dirnames.remove(dirname)  # else its files might be read under the link's name
                _skip(
                    skipped,
                    subdir,
                    "a link to a folder inside the scanned folder: its files are read under "
                    "their own names",
                )
            elif follow_links:
                real = os.path.realpath(subdir)
                if real in seen_folders:  # a link loop, or a folder reached twice
                    dirnames.remove(dirname)
                seen_folders.add(real)
        cleaned = any(name == CLEAN_MARKER for name, _link in filenames)
        # In the order of their paths as shown (discover_inputs merges the given paths' files
        # by it): a folder's files come where its name with a "/" after it sorts among the
        # names of the files beside it.
        named = [(shown(name), name, False, link) for name, link in filenames]
        named += [(f"{shown(name)}/", name, True, False) for name in dirnames]
        shown_folder, source = _display(folder), _folder_source(root, folder)
        real_folder = os.path.realpath(folder)
        for shown_name, name, is_folder, link in sorted(named):
            if is_folder:
                yield from folder_files(_joined(folder, name))
                continue
            file = _joined(folder, name)
            if name.startswith(".") and name.endswith(LOCK_SUFFIX):
                continue  # dedup's lock on a report being written beside it: not an input
            if cleaned and name in (CLEAN_MARKER, REMOVED_JSONL, REMOVED_CSV):
                continue  # a cleaned copy's own lists: not part of the collection
            if not follow_links and link and outside(file):
                target = shown(os.path.realpath(file))
                _skip(
                    skipped,
                    file,
                    f"a link to a file outside the scanned folder ({target}): not followed; "
                    "pass --follow-links to read it",
                )
                continue
            known_real = None if link else os.path.join(real_folder, name)
            yield _Entry(file, _below(shown_folder, shown_name), source, known_real)

    return folder_files(os.fspath(root))


def _is_folder(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder, or a link to one (as ``os.walk`` has it: a link to a
    folder is walked, or skipped as one, rather than read as a file)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _may_be_link(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a symbolic link, or may be (the system would not say): its real
    path is then looked for (_candidate), which says what it is."""
    try:
        return entry.is_symlink()
    except OSError:
        return True


def _joined(folder: str, name: str) -> str:
    """``name`` in ``folder``, as ``Path`` joins them (``./a`` is ``a``)."""
    return name if folder == "." else os.path.join(folder, name)


def _below(folder: str, name: str) -> str:
    """The path shown of a file named ``name`` (shown) in ``folder`` (shown, ``_display``),
    as ``_display`` shows the two joined."""
    if folder == ".":
        return name
    return f"{folder}{name}" if folder.endswith("/") else f"{folder}/{name}"


def _is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link; False where the system will not say (in a folder
    that can be listed but not searched, chmod -x: the file is then skipped as such, _add)."""
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _suffixes(name: str) -> list[str]:
    """``PurePath(name).suffixes``, without parsing a file's own name as a path (a crawl
    has millions)."""
    if "/" in name or name in ("", "."):
        name = PurePath(name).name
    if name.endswith("."):
        return []
    return ["." + suffix for suffix in name.lstrip(".").split(".")[1:]]


def _format_of(name: str) -> tuple[str, str | None] | str:
    """(format, compression) of a file by its name, or why it is not read."""
    suffixes = [suffix.lower() for suffix in _suffixes(name)[-2:]]
    compression = suffixes[-1] if suffixes and suffixes[-1] in COMPRESSIONS else None
    if compression:
        suffixes = suffixes[:-1]
    file_format = FORMATS.get(suffixes[-1]) if suffixes else None
    if file_format is None or (compression and file_format in ("zip", "epub", "parquet")):
        known = ", ".join(sorted(FORMATS))
        squeezed = ", ".join(COMPRESSIONS)
        return f"not a supported format (supported: {known}, each also as {squeezed})"
    return file_format, compression


def _url_inputs(
    files: list[tuple[str, tuple[str, ...]]], skipped: dict[str, Skipped]
) -> list[tuple[str, tuple[str, ...]]]:
    """The files under a URL that are inputs, as _walk finds them in a folder: a report
    dedup wrote (or is writing) is left out and listed, and so are a cleaned copy's lists
    and a report's lock."""
    reports: set[tuple[str, ...]] = set()
    cleaned: set[tuple[str, ...]] = set()
    for url, below in files:
        folder, name = below[:-1], below[-1] if below else ""
        if name == WRITING_MARKER or (name == "report.json" and _is_report_json(url)):
            reports.add(folder)
        elif name == CLEAN_MARKER:
            cleaned.add(folder)
    inputs = []
    for url, below in files:
        folder, name = below[:-1], below[-1] if below else ""
        report = next((below[:n] for n in range(len(below)) if below[:n] in reports), None)
        if report is not None:
            where = shown(url[: len(url) - len("/".join(below[len(report) :])) - 1])
            skipped[where] = Skipped(where, _REPORT_LEFT_OUT)
        elif folder in cleaned and name in (CLEAN_MARKER, REMOVED_JSONL, REMOVED_CSV):
            continue
        elif not (name.startswith(".") and name.endswith(LOCK_SUFFIX)):
            inputs.append((url, below))
    return inputs


def _add_url(
    url: str,
    below: tuple[str, ...],
    found: dict[str, tuple[FoundFile, str]],
    skipped: dict[str, Skipped],
) -> None:
    """A file found under a URL (dedup.read.location): its source is the first folder under
    the given URL, as for a folder, else the name of the folder it is in."""
    where = shown(url)
    kind = _format_of(below[-1] if below else url)
    if isinstance(kind, str):
        skipped[where] = Skipped(where, kind)
        return
    if len(below) > 1:
        source = shown(below[0])
    else:
        source = shown(url.rstrip("/").rsplit("/", 2)[-2] if url.count("/") > 2 else ".")
    found.setdefault(url, (FoundFile(where, source, kind[0], url, kind[1], url_stamp(url)), url))


def file_stamp(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of ``path``; None if it cannot be read. For a URL,
    its size and a digest of its change fields (dedup.read.location.url_stamp)."""
    if is_url(path):
        return url_stamp(path)
    try:
        return _stamp_of(os.stat(path))
    except OSError:
        return None


def _stamp_of(status: os.stat_result) -> tuple[int, int]:
    """A file's stamp, from its status: its size and modification time in ns."""
    return status.st_size, status.st_mtime_ns


def _candidate(entry: _Entry, skipped: dict[str, Skipped]) -> tuple[FoundFile, str] | None:
    """The file of ``entry`` as found, with its real path; None if it is not read (listed as
    skipped)."""
    where = entry.path
    try:
        real = entry.real or os.path.realpath(entry.fs_path, strict=True)
        status = os.stat(real)
    except PermissionError:
        skipped[where] = Skipped(
            where,
            "permission denied on the folder it is in; make the folder searchable "
            "(chmod +x) and scan again",
        )
        return None
    except (OSError, RuntimeError):
        skipped[where] = Skipped(where, "broken symbolic link (or a link loop): nothing to read")
        return None
    if not stat.S_ISREG(status.st_mode):
        skipped[where] = Skipped(where, NOT_REGULAR)
        return None
    kind = _format_of(os.path.basename(entry.fs_path))
    if isinstance(kind, str):
        skipped[where] = Skipped(where, kind)
        return None
    file_format, compression = kind
    # One string for what is the same (a dump of a page a file holds tens of thousands).
    fs_path = where if entry.fs_path == where else entry.fs_path
    stamp = _stamp_of(status)
    return FoundFile(
        where, sys.intern(entry.source), file_format, fs_path, compression, stamp
    ), real


def _links_in(file: FoundFile, real: str) -> tuple[bool, bool, FoundFile]:
    """Which of two names of one file to read it under, the first of their order: a name that
    is not a link itself, then one that goes through no linked folder, then the first."""
    return _is_link(Path(file.fs_path)), os.path.abspath(file.fs_path) != real, file
