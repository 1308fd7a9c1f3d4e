"""report.json, the complete and stable record of a scan (format described in
docs/report-format.md), and run.json, the facts of one run (timings, worker count) that differ
between identical runs. ``load_report`` reads report.json back, so outputs can be rebuilt."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import multiprocessing
import multiprocessing.process
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from dedup.errors import DedupError
from dedup.lifetime import die_with_parent
from dedup.models import Cluster, InputFile, Pair, Passage, Report, Skipped, Summary
from dedup.report.folder import ReportFolder

REPORT_FILE = "report.json"
RUN_FILE = "run.json"
# What --format can ask for; report.json and run.json are always written.
FORMATS = ("html", "csv", "jsonl", "text", "json")
DEFAULT_FORMATS = ("html", "csv", "jsonl", "text")


def report_to_json(report: Report) -> str:
    buffer = io.StringIO()
    write_report_json(report, buffer)
    return buffer.getvalue()


def write_report_json(report: Report, out: TextIO, lines: TextIO | None = None) -> None:
    """report.json, written as it is built: the top level indented, then one cluster per line
    (a report of a large dump holds gigabytes of text; each cluster is encoded on its own, by
    json's C encoder, and written before the next is). The same lines, one per cluster, are
    clusters.jsonl: given ``lines``, they go there too, encoded once for both."""
    top = report.to_dict(clusters=False)
    head = json.dumps(top, ensure_ascii=False, indent=2)
    out.write(head[: -len("\n}")] + ',\n  "clusters": [')
    for number, cluster in enumerate(report.clusters):
        line = json.dumps(cluster.to_dict(), ensure_ascii=False)
        out.write(",\n" if number else "\n")
        out.write(line)
        if lines is not None:
            lines.write(line + "\n")
    out.write("\n  ]\n}\n" if report.clusters else "]\n}\n")


def run_to_json(report: Report) -> str:
    run = {
        "dedup_version": report.dedup_version,
        "jobs": report.jobs,
        "seconds": {stage: round(seconds, 3) for stage, seconds in report.timings.items()},
    }
    return json.dumps(run, ensure_ascii=False, indent=2) + "\n"


def write_report(
    report: Report,
    directory: Path | ReportFolder,
    formats: tuple[str, ...] = DEFAULT_FORMATS,
    two_processes: bool | None = None,
) -> list[Path]:
    """Write report.json, run.json and the file outputs in ``formats`` into ``directory``,
    which holds the whole report or, after an error or an interrupt, what it held before
    (see dedup.report.folder); returns the files written, where they are in the end.

    With ``two_processes`` (by default, when the scan ran more than one worker), the page and
    the CSV tables are written by a forked copy of this process while this one writes
    report.json and clusters.jsonl, where the system can fork (docs/performance.md: a report
    of a 1 GB dump is about 4 GB of files, and the two halves take about as long). The copy
    shares this process's memory until it touches it, and touching the records copies most
    of it, which a ``--jobs 1`` run does without. Should the copy fail, its files are written
    here, so any error is this process's own.
    """
    if isinstance(directory, ReportFolder):
        return _write_into(report, directory, formats, two_processes)
    with ReportFolder(directory) as folder:
        return _write_into(report, folder, formats, two_processes)


def _write_into(
    report: Report, folder: ReportFolder, formats: tuple[str, ...], two_processes: bool | None
) -> list[Path]:
    from dedup.report.tables import CLUSTERS_JSONL

    directory = folder.path
    if two_processes is None:
        two_processes = report.jobs > 1
    writing = REPORT_FILE
    try:
        copy = _ForkedWriter(
            _write_pages_and_tables, report, directory, formats, fork=two_processes
        )
        try:
            with contextlib.ExitStack() as files:
                handle = files.enter_context(open(directory / REPORT_FILE, "w", encoding="utf-8"))
                lines = None
                if "jsonl" in formats:
                    lines = files.enter_context(
                        open(directory / CLUSTERS_JSONL, "w", encoding="utf-8", newline="")
                    )
                write_report_json(report, handle, lines)
            writing = RUN_FILE
            (directory / RUN_FILE).write_text(run_to_json(report), encoding="utf-8")
            written = [REPORT_FILE, RUN_FILE]
            if copy.succeeded():
                written += _pages_and_tables(formats)
            else:  # the copy failed, or there is none: its files once more, here
                for name in _pages_and_tables(formats):
                    writing = name
                    _write_page_or_table(report, directory, formats, name)
                    written.append(name)
            if "jsonl" in formats:
                written.append(CLUSTERS_JSONL)
        finally:
            copy.stop()
    except OSError as error:
        raise folder.cannot_write(folder.out / writing, error) from error
    folder.commit()
    return [folder.out / name for name in written]


def _write_pages_and_tables(report: Report, directory: Path, formats: tuple[str, ...]) -> None:
    for name in _pages_and_tables(formats):
        _write_page_or_table(report, directory, formats, name)


def _write_page_or_table(
    report: Report, directory: Path, formats: tuple[str, ...], name: str
) -> None:
    from dedup.report.html import INDEX_FILE, write_html
    from dedup.report.tables import write_table

    if name == INDEX_FILE:
        write_html(report, directory)
    else:
        write_table(report, directory, name)


def _pages_and_tables(formats: tuple[str, ...]) -> list[str]:
    """The names of the files _write_pages_and_tables writes, in order."""
    from dedup.report.html import INDEX_FILE
    from dedup.report.tables import table_names

    page = [INDEX_FILE] if "html" in formats else []
    return page + table_names(set(formats) - {"jsonl"})


class _ForkedWriter:
    """``write(*arguments)`` run by a forked copy of this process (the report is shared, not
    sent); not at all unless ``fork`` and the system can."""

    def __init__(self, write: Callable[..., object], *arguments: object, fork: bool) -> None:
        self.process: multiprocessing.process.BaseProcess | None = None
        if fork and sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods():
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


def _passage(data: dict[str, Any]) -> Passage:
    return Passage(
        id=data["id"],
        source=data["source"],
        path=data["path"],
        record=data["record"],
        chapter=data["chapter"],
        title=data["title"],
        start=data["start"],
        end=data["end"],
        text=data["text"],
        record_id=data.get("record_id"),
    )


def load_report(path: Path) -> Report:
    """Read a report.json written by ``write_report``."""
    try:
        data = json.loads(path.read_text("utf-8"))
        clusters = tuple(
            Cluster(
                id=cluster["id"],
                representative=cluster["representative"],
                members=tuple(_passage(member) for member in cluster["members"]),
                pairs=tuple(Pair(**pair) for pair in cluster["pairs"]),
                linked_through_others=tuple(cluster.get("linked_through_others", ())),
                giant=cluster.get("giant", False),
            )
            for cluster in data["clusters"]
        )
        return Report(
            dedup_version=data["dedup_version"],
            options=data["options"],
            summary=Summary(**data["summary"]),
            inputs=tuple(
                InputFile(**{**entry, "warnings": tuple(entry["warnings"])})
                for entry in data["inputs"]
            ),
            skipped=tuple(Skipped(**entry) for entry in data["skipped"]),
            clusters=clusters,
        )
    except FileNotFoundError as error:
        raise DedupError(
            f"{path}: no report here; run dedup scan first, or give its --out folder"
        ) from error
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise DedupError(
            f"{path}: not a dedup report.json this version can read ({error}); scan again"
        ) from error
