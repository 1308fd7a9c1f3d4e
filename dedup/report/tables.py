"""Files for spreadsheets and streaming tools: matches.csv (one row per pair of documents that
share text), clusters.csv (one row per member) and, asked for, pairs.csv (one row per verified
pair: millions for a large dump, more than a spreadsheet opens; report.json has them all),
in UTF-8 with a BOM, so Excel opens Chinese correctly; clusters.jsonl (one cluster per
line, its members with their excerpts or texts; its pairs are report.json's)."""

from __future__ import annotations

import csv
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import TextIO

from dedup.models import EXCERPT_CHARS, MemberText, Report

MATCHES_CSV = "matches.csv"
CLUSTERS_CSV = "clusters.csv"
PAIRS_CSV = "pairs.csv"
CLUSTERS_JSONL = "clusters.jsonl"

CLUSTER_COLUMNS = [
    "cluster", "size", "representative", "member", "source", "path", "record", "record_id",
    "chapter", "title", "start", "end", "characters", "excerpt",
]  # fmt: skip
# With --full-text, each member's whole text too (the default report holds it once, in
# report.json's documents).
FULL_TEXT_COLUMN = "text"
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


# The columns whose cells can be text from the inputs (or None): the others are numbers and
# dedup's own ids, which never start as a formula does.
_SIDE_TEXT = ["source", "path", "record_id", "title"]
CLUSTER_TEXT_COLUMNS = ("member", *_SIDE_TEXT, "excerpt", FULL_TEXT_COLUMN)
MATCH_TEXT_COLUMNS = (
    *(f"{side}_{name}" for side in "ab" for name in _SIDE_TEXT),
    "first_span_a",
    "first_span_b",
)

# A cell a spreadsheet would read as a formula (=, +, -, @, or a tab or carriage return
# before one) is written behind an apostrophe, which spreadsheets show as text: a scraped title
# or record id is data, never a formula to run (OWASP's advice on CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def write_csv(
    out: TextIO, rows: Iterable[list[object]], header: list[str], text_columns: Collection[str]
) -> None:
    """A CSV table as dedup writes them: a BOM, so that spreadsheet programs read UTF-8;
    ``None`` as an empty cell; a cell of the ``text_columns`` (those whose cells can be text
    from the inputs: names, titles, excerpts) that would read as a formula behind an
    apostrophe. The other columns are dedup's own (numbers, ``c12``), never a formula."""
    out.write("\ufeff")
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    start = _FORMULA_START
    # the text columns alone, looked at inline: a table of a large dump has millions of rows
    looked_at = [header.index(name) for name in text_columns if name in header]

    def guarded(row: list[object]) -> list[object]:
        for column in looked_at:
            value = row[column]
            if isinstance(value, str) and value.startswith(start):
                row[column] = "'" + value
        return row

    writer.writerows(map(guarded, rows))


def _cluster_rows(report: Report, full_text: bool) -> Iterator[list[object]]:
    for cluster in report.clusters:
        for member in cluster.members:
            member_id = member.id  # made when asked for: once a row
            text = [member.text] if full_text else []
            yield [
                cluster.id,
                len(cluster.members),
                int(member_id == cluster.representative),
                member_id,
                member.source,
                member.path,
                member.record,
                member.record_id,
                member.chapter,
                member.title,
                member.start,
                member.end,
                member.end - member.start,  # its text's length, without cutting it
                member.excerpt,
                *text,
            ]


def _pair_rows(report: Report) -> Iterator[list[object]]:
    for cluster in report.clusters:
        for pair in cluster.pairs:
            values = pair.to_dict()
            yield [cluster.id, *(values[column] for column in PAIR_COLUMNS[1:])]


def _match_rows(report: Report) -> Iterator[list[object]]:
    group_of = {d: g.id for g in report.document_groups for d in g.documents}
    for number, match in enumerate(report.matches, start=1):
        a_start, a_end, b_start, b_end, _ = match.spans.numbers()[0].tolist()
        excerpts = [  # sliced to the excerpt at once: a first span can be a whole book
            document.text[start - document.start : min(end, start + EXCERPT_CHARS) - document.start]
            for document, start, end in ((match.a, a_start, a_end), (match.b, b_start, b_end))
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


def write_matches_csv(report: Report, out: TextIO, full_text: bool = False) -> None:
    """matches.csv: each match's first shared stretch is an excerpt on each side, whatever
    ``full_text`` says (report.json has every span of it)."""
    write_csv(out, _match_rows(report), MATCH_COLUMNS, MATCH_TEXT_COLUMNS)


def write_clusters_csv(report: Report, out: TextIO, full_text: bool = False) -> None:
    header = CLUSTER_COLUMNS + ([FULL_TEXT_COLUMN] if full_text else [])
    write_csv(out, _cluster_rows(report, full_text), header, CLUSTER_TEXT_COLUMNS)


def write_pairs_csv(report: Report, out: TextIO, full_text: bool = False) -> None:
    write_csv(out, _pair_rows(report), PAIR_COLUMNS, ("a", "b"))


def write_clusters_jsonl(report: Report, out: TextIO, full_text: bool = False) -> None:
    """clusters.jsonl on its own (a report's folder gets it as report.json is written)."""
    text: MemberText = "full" if full_text else "excerpt"
    for cluster in report.clusters:
        out.write(cluster.to_json(text, pairs=False) + "\n")


Writer = Callable[[Report, TextIO, bool], None]


def _writers(formats: set[str]) -> list[tuple[str, Writer]]:
    writers: list[tuple[str, Writer]] = []
    if "csv" in formats:
        writers += [(MATCHES_CSV, write_matches_csv), (CLUSTERS_CSV, write_clusters_csv)]
    if "pairs" in formats:
        writers.append((PAIRS_CSV, write_pairs_csv))
    if "jsonl" in formats:
        writers.append((CLUSTERS_JSONL, write_clusters_jsonl))
    return writers


def table_names(formats: set[str]) -> list[str]:
    """The files ``write_tables`` writes for ``formats``, in its order."""
    return [name for name, _write in _writers(formats)]


def write_table(report: Report, directory: Path, name: str, full_text: bool = False) -> Path:
    """One of the CSV and JSON Lines files, written row by row; members with an excerpt of
    their text, or, with ``full_text``, all of it."""
    (write,) = [write for known, write in _writers({"csv", "pairs", "jsonl"}) if known == name]
    path = directory / name
    with open(path, "w", encoding="utf-8", newline="") as handle:
        write(report, handle, full_text)
    return path


def write_tables(
    report: Report, directory: Path, formats: set[str], full_text: bool = False
) -> list[Path]:
    """The CSV and JSON Lines files in ``formats``."""
    return [write_table(report, directory, name, full_text) for name in table_names(formats)]
