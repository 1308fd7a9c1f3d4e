"""``dedup clean``: a copy of the collection without its duplicate documents, and the list of
what was left out for what.

The scan finds the documents that share text (dedup.pipeline); ``choose`` decides which are
copies of a kept one; ``rewrite`` writes each file again without them, in its own format and
encoding; every other file is copied byte for byte. The copy is written into a partial folder
beside DIR and renamed into place at the end (as a report folder is), so an interrupted clean
never leaves a DIR that looks complete.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dedup.clean.choose import (
    DEFAULT_COVERAGE,
    Removal,
    preference,
    removals,
    struck_stretches,
)
from dedup.clean.rewrite import CannotRewrite, Cut, can_rewrite, rewrite
from dedup.config import ScanConfig
from dedup.display import shown, unshown
from dedup.errors import ConfigError, ReportFolderError
from dedup.models import Report, Skipped
from dedup.pipeline import path_list, scan_files
from dedup.read import FoundFile, FoundFiles, discover_inputs
from dedup.read.discover import CLEAN_MARKER, REMOVED_CSV, REMOVED_JSONL
from dedup.read.location import is_plain_file, is_url, open_input, read_all, size_of
from dedup.read.zip import outer_path
from dedup.report.folder import ReportFolder
from dedup.report.tables import write_csv

__all__ = [
    "DEFAULT_COVERAGE", "CleanConfig", "CleanResult", "SourceTally", "clean",
    "clean_from_report", "preference",
]  # fmt: skip

# What a copy leaves out: whole documents, or the stretches they share.
Unit = Literal["document", "passage"]

REMOVED_COLUMNS = [
    "removed_source", "removed_path", "removed_record", "removed_chapter", "removed_title",
    "removed_start", "removed_end", "removed_story_chars", "kept_source", "kept_path",
    "kept_record", "kept_chapter", "kept_title", "kept_start", "kept_end", "coverage",
    "identical_chars", "removed_span_start", "removed_span_end", "kept_span_start",
    "kept_span_end",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourceTally:
    """Per source: its files, the documents removed from them and their characters (of the
    decoded text, headings included), and its bytes before and in the copy."""

    source: str
    files: int
    documents_removed: int
    chars_removed: int
    bytes_in: int
    bytes_out: int


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What ``clean`` did: the documents removed (each with the kept one it duplicates), the
    files written again, copied unchanged, and left out (nothing of them was kept), the
    files with duplicates it could not rewrite (copied unchanged, with why), the inputs it
    could not read (copied unchanged, or left out with ``skip_bad``), those of them not
    copied (``not_copied``: a link, a pipe, a file read and copied under another name), and
    per source tallies."""

    report: Report
    removed: tuple[Removal, ...]
    rewritten: tuple[str, ...]
    copied: tuple[str, ...]
    dropped: tuple[str, ...]
    not_rewritten: tuple[Skipped, ...]
    bad: tuple[Skipped, ...]
    sources: tuple[SourceTally, ...]
    dry_run: bool
    not_copied: tuple[str, ...] = ()

    @property
    def removed_share(self) -> float:
        """The share of the collection's bytes the copy leaves out."""
        total = sum(t.bytes_in for t in self.sources)
        return 1 - sum(t.bytes_out for t in self.sources) / total if total else 0.0


class CleanFolder(ReportFolder):
    """The folder a cleaned copy goes into: new or empty (or anything, with ``force``: it is
    replaced whole), never inside an input; written as a partial sibling and renamed."""

    def __init__(self, out: Path, inputs: Sequence[str], force: bool) -> None:
        super().__init__(out)
        self.force = force
        self.inputs = [Path(os.path.abspath(path)) for path in inputs]

    def _check_out(self) -> None:
        out = self.out
        for given in self.inputs:
            if out == given or out.is_relative_to(given) or given.is_relative_to(out):
                raise ReportFolderError(
                    f"--out {shown(self.given.as_posix())} is inside (or holds) the input "
                    f"{shown(given.as_posix())}; clean writes a copy elsewhere, never into "
                    "what it reads: choose a folder outside it"
                )
        if out.exists() and not out.is_dir():
            raise ReportFolderError(
                f"--out {shown(self.given.as_posix())} is a file; choose a folder"
            )
        if out.is_dir() and any(out.iterdir()) and not self.force:
            raise ReportFolderError(
                f"--out {shown(self.given.as_posix())} is not empty; choose a new or empty "
                "folder, or pass --force to replace it whole"
            )
        out.parent.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True, slots=True)
class CleanConfig:
    """What a cleaned copy leaves out and how it is written: ``keep`` (which copy stays:
    dedup.clean.choose.preference), ``coverage`` (the share of a document a kept one must
    cover), ``by`` (whole documents, or the shared stretches), ``dry_run`` (the lists only),
    ``force`` (replace a folder that is not empty), ``skip_bad`` (leave unreadable inputs out
    rather than copy them)."""

    keep: str = "longest"
    coverage: float = DEFAULT_COVERAGE
    by: Unit = "document"
    dry_run: bool = False
    force: bool = False
    skip_bad: bool = False

    def __post_init__(self) -> None:
        preference(self.keep, ())  # an unknown policy is refused before any work
        if not 0.0 < self.coverage <= 1.0:
            raise ConfigError(f"coverage must be in (0, 1], not {self.coverage}")
        if self.by not in ("document", "passage"):
            raise ConfigError(f"by must be document or passage, not {self.by!r}")


def clean(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    config: ScanConfig | None = None,
    options: CleanConfig | None = None,
    **choices: Any,
) -> CleanResult:
    """Scan ``paths`` and write a copy of them under ``out`` without the documents a kept
    document covers (at least ``coverage`` of their story characters), the kept one of each
    set of copies chosen by ``keep`` (see dedup.clean.choose). ``out``/removed.jsonl and
    removed.csv list each removed document with the one it duplicates. With ``dry_run``,
    only the lists are written. ``by="passage"`` strikes only the stretches a document
    shares with one ``keep`` prefers (cut back to whole sentences) and keeps the rest of it.
    ``choices``: CleanConfig fields, over ``options``."""
    config = config or ScanConfig()
    options = dataclasses.replace(options or CleanConfig(), **choices)
    roots = path_list(paths)
    names = [Path(os.path.abspath(root)).name for root in roots]
    if len(roots) > 1 and len(set(names)) < len(names):
        twice = sorted({name for name in names if names.count(name) > 1})
        raise ConfigError(
            f"two of the paths are named {shown(twice[0])}: the copy puts each path under its "
            "own name, so give paths of different names (or their common parent)"
        )
    found, skipped = discover_inputs(roots, config.follow_links)
    with CleanFolder(Path(out), roots, options.force) as folder:
        # Every pair of copies aligned: which of them a copy leaves out is decided document by
        # document, against every one kept before it (dedup.clean.choose).
        report = scan_files(found, skipped, dataclasses.replace(config, every_pair=True))
        return _write_copy(report, found, skipped, roots, folder, config, options)


def clean_from_report(
    report_folder: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: CleanConfig | None = None,
    **choices: Any,
) -> CleanResult:
    """``clean`` acting on a report already made (and reviewed: after ``dedup report
    --threshold``, say) rather than on a new scan: its inputs, read where the report found
    them, under the folder they share. A document whose text is no longer where the report
    says (its file changed since) is not removed: its file is copied unchanged, and said so."""
    from dedup.report.record import load_report, report_options

    options = dataclasses.replace(options or CleanConfig(), **choices)
    # refused before the report is read (its texts read back from the inputs)
    _check_matches_serve(report_options(Path(report_folder) / "report.json"), report_folder)
    # a file gone or changed since gives its documents an empty text, which no longer reads
    # where they were: such a file is copied as it is now, and said so
    report = load_report(Path(report_folder) / "report.json", changed="empty")
    config = ScanConfig.of_report(report.options)
    sources: dict[str, str] = {}
    for entry in report.inputs:
        sources.setdefault(outer_path(entry.path), entry.source)
    if not sources:
        raise ConfigError(f"{report_folder}: the report read no input; nothing to clean")
    # The report names files as they are shown (a name that is not UTF-8 escaped, \xff):
    # each is looked for on disk by the name it was shown from.
    on_disk = {path: _on_disk(path) for path in sorted(sources)}
    paths = [real or path for path, real in on_disk.items()]
    gone = [
        Skipped(path, "no longer there: not in the copy")
        for path, real in on_disk.items()
        if real is None
    ]
    present = [real for real in on_disk.values() if real is not None]
    found, _skipped = discover_inputs(present, config.follow_links)
    found = FoundFiles(dataclasses.replace(f, source=sources.get(f.path, f.source)) for f in found)
    common = os.path.commonpath([os.path.abspath(path) for path in paths])
    root = common if len(paths) > 1 or os.path.isdir(common) else os.path.dirname(common)
    roots = [_as_given(root, paths)]
    with CleanFolder(Path(out), paths, options.force) as folder:
        skipped = [*report.skipped, *gone]
        return _write_copy(report, found, skipped, roots, folder, config, options)


def _check_matches_serve(report_options: dict[str, Any], folder: str | os.PathLike[str]) -> None:
    """Only a report that aligned every pair of documents serves a clean: which copies a clean
    leaves out, and what it strikes of each, is decided against every document kept before
    it. A scan's report by default aligns each copy with the document its group keeps only,
    and two groups once, by those kept documents. (Reports made before the option aligned
    every pair.)"""
    if report_options.get("every_pair", True):
        return
    raise ConfigError(
        f"{shown(str(folder))}: the report aligns each copy with the document its group keeps "
        "only, and two groups of copies once, so it cannot say what every copy shares with "
        "the documents a clean keeps; scan again with --every-pair (dedup scan DUMP... "
        "--every-pair) and clean from that report, or clean the dump itself (dedup clean "
        "DUMP...)"
    )


def _as_given(root: str, paths: Sequence[str]) -> str:
    """``root`` written as the paths are (relative ones stay relative)."""
    if all(os.path.isabs(path) for path in paths):
        return root
    return os.path.relpath(root)


def _write_copy(
    report: Report,
    found: Sequence[FoundFile],
    skipped: Sequence[Skipped],
    roots: Sequence[str],
    folder: ReportFolder,
    config: ScanConfig,
    options: CleanConfig,
) -> CleanResult:
    """The copy of ``found`` (and of the ``skipped`` files) without the documents
    ``report`` shows to be copies, written into ``folder`` and put in place."""
    dry_run, skip_bad = options.dry_run, options.skip_bad
    if options.by == "document":
        removed = removals(report, options.keep, options.coverage)
    else:
        removed = struck_stretches(report, options.keep, config.min_match_chars)
    by_file: dict[str, list[Removal]] = {}
    for removal in removed:
        by_file.setdefault(outer_path(removal.removed.path), []).append(removal)
    bad = tuple(
        sorted({e.path: e for e in [*report.skipped, *skipped]}.values(), key=lambda e: e.path)
    )
    unreadable = {entry.path for entry in bad}
    rewritten, copied, dropped, not_rewritten = [], [], [], []
    kept_removals: list[Removal] = []
    tally = _Tally()
    for file in found:
        target = folder.path / _relative(file.fs_path, roots)
        documents = by_file.get(file.path, [])
        if documents and not can_rewrite(file):
            not_rewritten.append(Skipped(file.path, _why_not(file)))
            documents = []
        cuts = [_cut_of(removal) for removal in documents]
        size = size_of(file.fs_path)
        if not documents:
            if file.path in unreadable and skip_bad:
                tally.add(file.source, size, 0)
                continue
            if not dry_run:
                _copy(file.fs_path, target, folder)
            copied.append(file.path)
            tally.add(file.source, size, size)
            continue
        data = read_all(file.fs_path)
        try:
            result = rewrite(file, data, cuts, config)
        except CannotRewrite as reason:
            not_rewritten.append(Skipped(file.path, f"not rewritten: {reason}"))
            if not dry_run:
                _copy(file.fs_path, target, folder)
            copied.append(file.path)
            tally.add(file.source, size, size)
            continue
        done_here = documents
        kept_removals += done_here
        written = 0 if result.data is None else len(result.data)
        tally.add(file.source, size, written, len(done_here), result.removed_chars)
        if result.data is None:
            dropped.append(file.path)
        else:
            if not dry_run:
                with _writing(folder, target):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(result.data)
            rewritten.append(file.path)
    read = {file.path for file in found}
    # A file read under another name (reached through a linked folder, say) is in the copy.
    files_read = {os.path.realpath(file.fs_path) for file in found if not is_url(file.fs_path)}
    not_copied = []
    for entry in skipped:  # files dedup does not read (another format, say): as they are
        real = _on_disk(entry.path)
        if entry.path in read or skip_bad or real is None:
            continue
        if not is_plain_file(real) or os.path.realpath(real) in files_read:
            not_copied.append(entry.path)  # a link, a pipe, a file copied already
            continue
        if not dry_run:
            _copy(real, folder.path / _relative(real, roots), folder)
        copied.append(entry.path)
    done = tuple(sorted(kept_removals, key=lambda r: r.sort_key))
    with _writing(folder, folder.path):
        _write_lists(folder.path, done)
        (folder.path / CLEAN_MARKER).write_text("written by dedup clean\n", "utf-8")
        folder.commit()
    return CleanResult(
        report=report,
        removed=done,
        rewritten=tuple(rewritten),
        copied=tuple(copied),
        dropped=tuple(dropped),
        not_rewritten=tuple(not_rewritten),
        bad=bad,
        sources=tally.sources(),
        dry_run=dry_run,
        not_copied=tuple(not_copied),
    )


def _cut_of(removal: Removal) -> Cut:
    """What is cut from the file for ``removal``: its document's chapter, or its stretch."""
    if removal.span is None:
        return Cut.of_document(removal.removed)
    document, (start, end) = removal.removed, removal.span
    text = document.text[start - document.start : end - document.start]
    return Cut(document.path, document.record, start, end, text, chapter=False)


def _why_not(file: FoundFile) -> str:
    kind = file.format + (f".{file.compression.lstrip('.')}" if file.compression else "")
    return (
        f"not rewritten: dedup clean writes .txt, .jsonl, .json, .csv, .tsv and .parquet files "
        f"(plain, compressed, or in a .zip) again, not {kind} yet; copied unchanged, its "
        "duplicates still in it"
    )


def _on_disk(path: str) -> str | None:
    """The path on disk of a file named as dedup shows it (``display.shown``): as it is, or
    with its escapes undone (a name that is not UTF-8); None when neither is there."""
    for candidate in dict.fromkeys((path, unshown(path))):
        if is_url(candidate) or os.path.lexists(candidate):
            return candidate
    return None


def _relative(path: str, roots: Sequence[str]) -> Path:
    """Where ``path`` (under one of ``roots``) goes in the copy: below the copy's top as it
    was below its root when one root was given; under the root's own name when several."""
    for root in sorted(roots, key=len, reverse=True):
        base = Path(root)
        try:
            below = Path(path).relative_to(base)
        except ValueError:
            continue
        if below == Path("."):
            below = Path(base.name)
        return below if len(roots) == 1 else Path(base.name or "root") / below
    return Path(Path(path).name)


def _copy(source: str, target: Path, folder: ReportFolder) -> None:
    with open_input(source) as reading, _writing(folder, target):
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as writing:
            shutil.copyfileobj(reading, writing, 1 << 20)


@contextmanager
def _writing(folder: ReportFolder, where: Path) -> Iterator[None]:
    """A write into the copy that fails (a full disk, say) said as the copy's, naming the
    file and what to do; the partial copy is removed as the folder is left."""
    try:
        yield
    except OSError as error:
        raise folder.cannot_write(where, error) from error


def _write_lists(folder: Path, removed: Sequence[Removal]) -> None:
    with open(folder / REMOVED_JSONL, "w", encoding="utf-8", newline="\n") as lines:
        for removal in removed:
            lines.write(json.dumps(removal.to_dict(), ensure_ascii=False) + "\n")
    rows = (
        [
            *(getattr(removal.removed, name) for name in _WHERE),
            removal.removed.story_chars,
            *(getattr(removal.kept, name) for name in _WHERE),
            round(removal.coverage, 4),
            removal.identical_chars,
            *(removal.span or ("", "")),
            *(removal.kept_span or ("", "")),
        ]
        for removal in removed
    )
    with open(folder / REMOVED_CSV, "w", encoding="utf-8", newline="") as table:
        write_csv(table, rows, REMOVED_COLUMNS, _REMOVED_TEXT_COLUMNS)


_WHERE = ("source", "path", "record", "chapter", "title", "start", "end")
# the columns whose cells can be text from the inputs (write_csv guards them)
_REMOVED_TEXT_COLUMNS = tuple(
    f"{side}_{name}" for side in ("removed", "kept") for name in ("source", "path", "title")
)


class _Tally:
    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}

    def add(self, source: str, size: int, written: int, documents: int = 0, chars: int = 0) -> None:
        counts = self.counts.setdefault(source, [0, 0, 0, 0, 0])
        for position, value in enumerate((1, documents, chars, size, written)):
            counts[position] += value

    def sources(self) -> tuple[SourceTally, ...]:
        return tuple(SourceTally(name, *self.counts[name]) for name in sorted(self.counts))
