"""report.json, the complete and stable record of a scan (format described in
docs/report-format.md), and run.json, the facts of one run (timings, worker count) that differ
between identical runs. ``load_report`` reads report.json back, so outputs can be rebuilt."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, TextIO

from dedup.errors import DedupError
from dedup.models import Cluster, InputFile, Pair, Passage, Report, Skipped, Summary

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
    report: Report, directory: Path, formats: tuple[str, ...] = DEFAULT_FORMATS
) -> list[Path]:
    """Write report.json, run.json and the file outputs in ``formats`` into ``directory``."""
    from dedup.report.html import write_html
    from dedup.report.tables import CLUSTERS_JSONL, write_tables

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    with contextlib.ExitStack() as files:
        handle = files.enter_context(open(directory / REPORT_FILE, "w", encoding="utf-8"))
        lines = None
        if "jsonl" in formats:
            lines = files.enter_context(
                open(directory / CLUSTERS_JSONL, "w", encoding="utf-8", newline="")
            )
        write_report_json(report, handle, lines)
    (directory / RUN_FILE).write_text(run_to_json(report), encoding="utf-8")
    written += [directory / REPORT_FILE, directory / RUN_FILE]
    if "html" in formats:
        written.append(write_html(report, directory))
    written += write_tables(report, directory, set(formats) - {"jsonl"})
    if "jsonl" in formats:
        written.append(directory / CLUSTERS_JSONL)
    return written


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
