"""The report stage: a report's files written into its folder (report.json and run.json always,
the page, tables and JSON Lines as asked), whole or not at all (dedup.report.folder)."""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import multiprocessing.process
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dedup.config import DEFAULT_FORMATS
from dedup.engine.lifetime import can_fork, die_with_parent
from dedup.models import JSON_SECTIONS, MemberText, Report
from dedup.progress import progress
from dedup.report.folder import ReportFolder

if TYPE_CHECKING:
    from dedup.report.html import ClusterPart

REPORT_FILE = "report.json"

RUN_FILE = "run.json"


def run_to_json(report: Report) -> str:
    run = {
        "dedup_version": report.dedup_version,
        "jobs": report.jobs,
        "engine": report.engine,
        "directory": report.directory or os.getcwd(),
        "seconds": {stage: round(seconds, 3) for stage, seconds in report.timings.items()},
    }
    return json.dumps(run, ensure_ascii=False, indent=2) + "\n"


def write_report(
    report: Report,
    directory: str | os.PathLike[str] | ReportFolder,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    two_processes: bool | None = None,
    show_progress: bool = False,
    full_text: bool = False,
    document_texts: bool | None = None,
) -> list[Path]:
    """Write report.json, run.json and the file outputs in ``formats`` into ``directory``,
    which holds the whole report or, after an error or an interrupt, what it held before
    (see dedup.report.folder); returns the files written, where they are in the end.

    report.json holds where each shared document is and its text's SHA-256, and its text too
    if ``document_texts`` (by default, with ``full_text`` or when ``report`` was read from a
    report.json that held them): without it, ``load_report`` reads the texts back from the
    inputs. clusters.csv and clusters.jsonl give each member an
    excerpt of its text, or, with ``full_text``, all of it.

    With ``two_processes`` (by default, when the scan ran more than one worker), the page is
    written by a forked copy of this process while this one writes report.json's clusters
    and clusters.jsonl; the CSV tables, then report.json's other lists, then the page's
    parts of clusters by whichever of the two is done first, where the system can fork
    (docs/performance.md: which half takes longer depends on the report); report.json's
    parts are joined here at the end. The copy shares this process's memory until it touches
    it, and touching the records copies most of it, which a ``--jobs 1`` run does without.
    Should the copy fail, its files are written here, so any error is this process's own.
    """
    texts = (full_text or report.texts_held) if document_texts is None else document_texts
    if isinstance(directory, ReportFolder):
        return _write_into(
            report, directory, formats, two_processes, show_progress, full_text, texts
        )
    with ReportFolder(Path(directory)) as folder:
        return _write_into(report, folder, formats, two_processes, show_progress, full_text, texts)


@dataclass(frozen=True)
class _Job:
    """What either process writes a file of the report from."""

    report: Report
    directory: Path
    formats: tuple[str, ...]
    full_text: bool
    document_texts: bool
    # The page's parts of clusters, by file name, when they are files of their own that
    # either process may write (the rest of the page does not wait for them); else none,
    # and they are written with the page.
    cluster_parts: Mapping[str, ClusterPart]

    def write(self, name: str) -> None:
        """A file either process may write: a table, the page, a part of its clusters, or a
        list of report.json."""
        from dedup.report.html import write_cluster_part

        if name.startswith(f"{REPORT_FILE}#"):
            section = name.split("#", 1)[1]
            with _written_apart(self.directory, section) as handle:
                self.report.write_json_section(handle, section, self.document_texts)
        elif name in self.cluster_parts:
            write_cluster_part(self.report, self.directory, self.cluster_parts[name])
        else:
            _write_page_or_table(self, name)


def _write_into(
    report: Report,
    folder: ReportFolder,
    formats: tuple[str, ...],
    two_processes: bool | None,
    show_progress: bool,
    full_text: bool,
    document_texts: bool,
) -> list[Path]:
    from dedup.report.html import cluster_parts, empty_parts_folder
    from dedup.report.tables import CLUSTERS_JSONL

    directory = folder.path
    if two_processes is None:
        two_processes = report.jobs > 1
    writing = REPORT_FILE
    # With a forked copy, report.json's lists before its clusters are written apart too, by
    # whichever process is free (at 1 GB report.json took 10.6 s here and the page 6.0 s
    # there; at 250 MB the page is the longer, 3.0 s against 2.0 s), then joined here; and so
    # are the page's parts of clusters (their palettes are most of the page's work).
    split = two_processes and can_fork()
    sections = [_section_name(name) for name in JSON_SECTIONS] if split else []
    parts = (
        {part.name: part for part in cluster_parts(report)} if split and "html" in formats else {}
    )
    if parts:
        empty_parts_folder(directory)
    job = _Job(report, directory, formats, full_text, document_texts, parts)
    # the larger tables first (table_names lists matches.csv, clusters.csv, pairs.csv), so
    # that the process taking the last finishes not long after the other; the sections and
    # the page's parts, smaller, after them
    tables = _Claims(_tables(formats)[::-1] + sections + list(parts))
    member_text: MemberText = "full" if full_text else "excerpt"
    try:
        copy = _ForkedWriter(_write_page_and_claimed, job, tables, fork=split and tables.shared)
        try:
            with contextlib.ExitStack() as files:
                lines = None
                if "jsonl" in formats:
                    lines = files.enter_context(
                        open(directory / CLUSTERS_JSONL, "w", encoding="utf-8", newline="")
                    )
                clusters = progress(
                    report.clusters,
                    "writing report",
                    "cluster",
                    len(report.clusters),
                    show_progress,
                )
                if sections:
                    handle = files.enter_context(_written_apart(directory, "clusters"))
                    report.write_json_clusters(handle, lines, clusters, member_text)
                else:
                    handle = files.enter_context(
                        open(directory / REPORT_FILE, "w", encoding="utf-8")
                    )
                    report.write_json(handle, lines, clusters, member_text, document_texts)
            writing = RUN_FILE
            (directory / RUN_FILE).write_text(run_to_json(report), encoding="utf-8")
            written = [REPORT_FILE, RUN_FILE]
            mine = []  # the files the copy had not taken yet
            while (name := tables.claim()) is not None:
                writing = _shown_name(name)
                job.write(name)
                mine.append(name)
            if not copy.succeeded():  # it failed, or there is none: its files once more, here
                for name in _pages_and_tables(formats) + sections + list(parts):
                    if name not in mine:
                        writing = _shown_name(name)
                        job.write(name)
            if sections:
                writing = REPORT_FILE
                _join_sections(report, directory)
            written += _pages_and_tables(formats)
            if "jsonl" in formats:
                written.append(CLUSTERS_JSONL)
        finally:
            copy.stop()
    except OSError as error:
        raise folder.cannot_write(folder.given / writing, error) from error
    folder.commit()
    return [folder.given / name for name in written]


def _section_name(name: str) -> str:
    """The claim for report.json's list ``name``, written apart."""
    return f"{REPORT_FILE}#{name}"


def _shown_name(name: str) -> str:
    """The file a claim writes, as the user knows it."""
    return REPORT_FILE if name.startswith(f"{REPORT_FILE}#") else name


def _apart(directory: Path, name: str) -> Path:
    """Where report.json's list ``name`` (or its clusters and end) is written apart."""
    return directory / f".{REPORT_FILE}.{name}"


@contextlib.contextmanager
def _written_apart(directory: Path, name: str) -> Iterator[TextIO]:
    """A file for report.json's list ``name``, in place under its name only once whole: a
    list a process began and did not finish is not taken for done."""
    partial = directory / f".{REPORT_FILE}.{name}.partial"
    with open(partial, "w", encoding="utf-8") as handle:
        yield handle
    partial.replace(_apart(directory, name))


def _join_sections(report: Report, directory: Path) -> None:
    """report.json: its head, then its lists and clusters as they were written apart (each
    whole: a list the copy did not finish was written again here, under the same name)."""
    with open(directory / REPORT_FILE, "wb") as out:
        for piece in report.json_head():
            out.write(piece.encode("utf-8"))
        for name in (*JSON_SECTIONS, "clusters"):
            part = _apart(directory, name)
            with open(part, "rb") as handle:
                shutil.copyfileobj(handle, out, _COPY_BYTES)
            part.unlink()


_COPY_BYTES = 1 << 22


def _write_page_and_claimed(job: _Job, tables: _Claims) -> None:
    """What the forked copy writes: the page, then each table (or list of report.json, or
    part of the page) this process has not taken."""
    for page in _page() if "html" in job.formats else []:
        _write_page_or_table(job, page)
    while (table := tables.claim()) is not None:
        job.write(table)


class _Claims:
    """Files either process may write, each taken once, in order: whichever is done with its
    own first (report.json and clusters.jsonl here, the page in the copy) writes the rest, so
    the two finish together whether the page or the pairs take longer (docs/performance.md).
    The count is in memory the copy shares."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._next = 0
        try:
            self._taken: Synchronized[int] | None = multiprocessing.get_context().Value("i", 0)
        except OSError:  # no shared memory for a lock here: this process writes them all
            self._taken = None

    @property
    def shared(self) -> bool:
        return self._taken is not None

    def claim(self) -> str | None:
        """The next file not yet taken (now taken), or None."""
        if self._taken is None:
            number, self._next = self._next, self._next + 1
        else:
            with self._taken.get_lock():
                number = self._taken.value
                self._taken.value = number + 1
        return self.names[number] if number < len(self.names) else None


def _write_page_or_table(job: _Job, name: str) -> None:
    from dedup.report.html import INDEX_FILE, PARTS_FOLDER, write_html
    from dedup.report.tables import write_table

    if name == INDEX_FILE:
        write_html(job.report, job.directory, list(job.cluster_parts.values()) or None)
    elif name != PARTS_FOLDER:  # the page's parts are written with it
        write_table(job.report, job.directory, name, job.full_text)


def _page() -> list[str]:
    """The page's files, written together."""
    from dedup.report.html import INDEX_FILE, PARTS_FOLDER

    return [INDEX_FILE, PARTS_FOLDER]


def _tables(formats: tuple[str, ...]) -> list[str]:
    """The CSV tables of ``formats`` (clusters.jsonl is written with report.json)."""
    from dedup.report.tables import table_names

    return table_names(set(formats) - {"jsonl"})


def _pages_and_tables(formats: tuple[str, ...]) -> list[str]:
    """The names of the files besides report.json, run.json and clusters.jsonl, in order."""
    return (_page() if "html" in formats else []) + _tables(formats)


def formats_written(directory: Path) -> tuple[str, ...]:
    """The formats whose files the report folder ``directory`` holds, and ``text``: what
    ``dedup report`` writes again when not told."""
    from dedup.report.html import INDEX_FILE
    from dedup.report.tables import table_names

    found = ["html"] if (directory / INDEX_FILE).exists() else []
    for name in ("csv", "pairs", "jsonl"):
        if any((directory / table).exists() for table in table_names({name})):
            found.append(name)
    return (*found, "text")


class _ForkedWriter:
    """``write(*arguments)`` run by a forked copy of this process (the report is shared, not
    sent); not at all unless ``fork`` and the system can."""

    def __init__(self, write: Callable[..., object], *arguments: object, fork: bool) -> None:
        self.process: multiprocessing.process.BaseProcess | None = None
        if fork and can_fork():
            context = multiprocessing.get_context("fork")
            self.process = context.Process(target=_in_copy, args=(write, os.getpid(), *arguments))
            self.process.start()

    def succeeded(self) -> bool:
        """Whether the copy wrote its files (waiting for it to end)."""
        if self.process is None:
            return False
        self.process.join()
        return self.process.exitcode == 0

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join()


def _in_copy(write: Callable[..., object], parent: int, *arguments: object) -> None:
    die_with_parent(parent)
    gc.disable()  # the report's records stay shared with the parent, not walked and copied
    try:
        write(*arguments)
    except BaseException:  # whatever it was, the parent writes these files and reports it
        sys.exit(1)
