"""Files for spreadsheets and streaming tools: matches.csv (one row per pair of documents that
share text), clusters.csv and pairs.csv (UTF-8 with a BOM, so Excel opens Chinese correctly) and
clusters.jsonl (one cluster per line)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from dedup.models import Report

MATCHES_CSV = "matches.csv"
CLUSTERS_CSV = "clusters.csv"
PAIRS_CSV = "pairs.csv"
CLUSTERS_JSONL = "clusters.jsonl"

CLUSTER_COLUMNS = [
    "cluster", "size", "representative", "member", "source", "path", "record", "record_id",
    "chapter", "title", "start", "end", "characters", "text",
]  # fmt: skip
_SIDE = ["source", "path", "record", "record_id", "chapter", "title", "start", "end", "story_chars"]
MATCH_COLUMNS = [
    "match", "group_a", "group_b",
    *(f"a_{name}" for name in _SIDE), *(f"b_{name}" for name in _SIDE),
    "shared_chars_a", "shared_chars_b", "coverage_a", "coverage_b", "identical_chars", "spans",
    "first_span_a", "first_span_b",
]  # fmt: skip
PAIR_COLUMNS = [
    "cluster", "a", "b", "jaccard", "containment", "minhash_jaccard", "identical_chars",
]  # fmt: skip


# A cell a spreadsheet would read as a formula (=, +, -, @, or a tab or carriage return
# before one) is written behind an apostrophe, which spreadsheets show as text: a scraped title
# or record id is data, never a formula to run (OWASP's advice on CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _write_csv(out: TextIO, rows: Iterable[list[object]], header: list[str]) -> None:
    out.write("\ufeff")  # so that spreadsheet programs read UTF-8
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows([_cell(value) for value in row] for row in rows)


def _cluster_rows(report: Report) -> Iterator[list[object]]:
    for cluster in report.clusters:
        for member in cluster.members:
            yield [
                cluster.id,
                len(cluster.members),
                int(member.id == cluster.representative),
                member.id,
                member.source,
                member.path,
                member.record,
                member.record_id,
                member.chapter,
                member.title,
                member.start,
                member.end,
                len(member.text),
                member.text,
            ]


def _pair_rows(report: Report) -> Iterator[list[object]]:
    for cluster in report.clusters:
        for pair in cluster.pairs:
            values = pair.to_dict()
            yield [cluster.id, *(values[column] for column in PAIR_COLUMNS[1:])]


# A match's first shared stretch, on each side, is shown up to this many characters.
EXCERPT_CHARS = 80


def _match_rows(report: Report) -> Iterator[list[object]]:
    group_of = {d: g.id for g in report.document_groups for d in g.documents}
    for number, match in enumerate(report.matches, start=1):
        first = match.spans[0]
        excerpts = [
            document.text[start - document.start : end - document.start][:EXCERPT_CHARS]
            for document, start, end in (
                (match.a, first.a_start, first.a_end),
                (match.b, first.b_start, first.b_end),
            )
        ]
        yield [
            f"m{number}",
            group_of.get(match.a.id, ""),
            group_of.get(match.b.id, ""),
            *(getattr(match.a, name) for name in _SIDE),
            *(getattr(match.b, name) for name in _SIDE),
            match.shared_chars_a,
            match.shared_chars_b,
            round(match.coverage_a, 4),
            round(match.coverage_b, 4),
            match.identical_chars,
            len(match.spans),
            *excerpts,
        ]


def write_matches_csv(report: Report, out: TextIO) -> None:
    _write_csv(out, _match_rows(report), MATCH_COLUMNS)


def write_clusters_csv(report: Report, out: TextIO) -> None:
    _write_csv(out, _cluster_rows(report), CLUSTER_COLUMNS)


def write_pairs_csv(report: Report, out: TextIO) -> None:
    _write_csv(out, _pair_rows(report), PAIR_COLUMNS)


def write_clusters_jsonl(report: Report, out: TextIO) -> None:
    for cluster in report.clusters:
        out.write(json.dumps(cluster.to_dict(), ensure_ascii=False) + "\n")


def _writers(formats: set[str]) -> list[tuple[str, Callable[[Report, TextIO], None]]]:
    writers: list[tuple[str, Callable[[Report, TextIO], None]]] = []
    if "csv" in formats:
        writers += [
            (MATCHES_CSV, write_matches_csv),
            (CLUSTERS_CSV, write_clusters_csv),
            (PAIRS_CSV, write_pairs_csv),
        ]
    if "jsonl" in formats:
        writers.append((CLUSTERS_JSONL, write_clusters_jsonl))
    return writers


def table_names(formats: set[str]) -> list[str]:
    """The files ``write_tables`` writes for ``formats``, in its order."""
    return [name for name, _write in _writers(formats)]


def write_table(report: Report, directory: Path, name: str) -> Path:
    """One of the CSV and JSON Lines files, written row by row."""
    (write,) = [write for known, write in _writers({"csv", "jsonl"}) if known == name]
    path = directory / name
    with open(path, "w", encoding="utf-8", newline="") as handle:
        write(report, handle)
    return path


def write_tables(report: Report, directory: Path, formats: set[str]) -> list[Path]:
    """The CSV and JSON Lines files in ``formats``."""
    return [write_table(report, directory, name) for name in table_names(formats)]
