"""Files for spreadsheets and streaming tools: clusters.csv and pairs.csv (UTF-8 with a BOM, so
Excel opens Chinese correctly) and clusters.jsonl (one cluster per line)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from dedup.models import Report

CLUSTERS_CSV = "clusters.csv"
PAIRS_CSV = "pairs.csv"
CLUSTERS_JSONL = "clusters.jsonl"

CLUSTER_COLUMNS = [
    "cluster", "size", "representative", "member", "source", "path", "record", "record_id",
    "chapter", "title", "start", "end", "characters", "text",
]  # fmt: skip
PAIR_COLUMNS = [
    "cluster", "a", "b", "jaccard", "containment", "minhash_jaccard", "identical_chars",
]  # fmt: skip


def _csv(rows: list[list[object]], header: list[str]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(header)
    writer.writerows(["" if value is None else value for value in row] for row in rows)
    return "\ufeff" + buffer.getvalue()


def clusters_csv(report: Report) -> str:
    rows: list[list[object]] = []
    for cluster in report.clusters:
        for member in cluster.members:
            rows.append(
                [
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
            )
    return _csv(rows, CLUSTER_COLUMNS)


def pairs_csv(report: Report) -> str:
    rows: list[list[object]] = []
    for cluster in report.clusters:
        for pair in cluster.pairs:
            values = pair.to_dict()
            rows.append([cluster.id, *(values[column] for column in PAIR_COLUMNS[1:])])
    return _csv(rows, PAIR_COLUMNS)


def clusters_jsonl(report: Report) -> str:
    return "".join(
        json.dumps(cluster.to_dict(), ensure_ascii=False) + "\n" for cluster in report.clusters
    )


def write_tables(report: Report, directory: Path, formats: set[str]) -> list[Path]:
    written = []
    outputs = []
    if "csv" in formats:
        outputs += [(CLUSTERS_CSV, clusters_csv(report)), (PAIRS_CSV, pairs_csv(report))]
    if "jsonl" in formats:
        outputs.append((CLUSTERS_JSONL, clusters_jsonl(report)))
    for name, content in outputs:
        path = directory / name
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        written.append(path)
    return written
