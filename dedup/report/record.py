"""report.json read back (docs/report-format.md), so that outputs can be rebuilt from it
(``dedup report``); Report.write_json writes it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dedup.errors import DedupError
from dedup.models import (
    REPORT_FORMAT,
    Cluster,
    CutPassage,
    DocumentGroup,
    InputFile,
    Match,
    MatchedDocument,
    Pair,
    Passage,
    Report,
    SharedSpan,
    Skipped,
    Summary,
    made_in_bulk,
)
from dedup.version import __version__


def _members(data: list[dict[str, Any]], documents: dict[str, MatchedDocument]) -> list[Passage]:
    """A cluster's members, each with its text cut from its document's, as a scan makes them."""
    holders = [documents[member["document"]] for member in data]
    columns: dict[str, list[Any]] = {
        "id": [member["id"] for member in data],
        "source": [member["source"] for member in data],
        "start": [member["start"] for member in data],
        "end": [member["end"] for member in data],
        "document": [holder.id for holder in holders],
        "holder": holders,
    }
    for name in ("path", "record", "chapter", "title", "record_id"):
        columns[name] = [getattr(holder, name) for holder in holders]
    members: list[Passage] = made_in_bulk(CutPassage, *(columns[name] for name in CutPassage.SLOTS))
    return members


def _pair(row: list[Any], members: tuple[Passage, ...]) -> Pair:
    a, b, *values = row
    return Pair(members[a].id, members[b].id, *values)


def _cluster(data: dict[str, Any], documents: dict[str, MatchedDocument]) -> Cluster:
    members = tuple(_members(data["members"], documents))
    return Cluster(
        id=data["id"],
        representative=data["representative"],
        members=members,
        pairs=tuple(_pair(row, members) for row in data["pairs"]),
        linked_through_others=tuple(data.get("linked_through_others", ())),
        giant=data.get("giant", False),
    )


def _documents(data: dict[str, Any]) -> dict[str, MatchedDocument]:
    return {entry["id"]: MatchedDocument(**entry) for entry in data.get("documents", ())}


def _match(data: dict[str, Any], documents: dict[str, MatchedDocument]) -> Match:
    return Match(
        a=documents[data["a"]],
        b=documents[data["b"]],
        shared_chars_a=data["shared_chars_a"],
        shared_chars_b=data["shared_chars_b"],
        coverage_a=data["coverage_a"],
        coverage_b=data["coverage_b"],
        spans=tuple(SharedSpan(**span) for span in data["spans"]),
    )


def _group(data: dict[str, Any]) -> DocumentGroup:
    return DocumentGroup(
        id=data["id"],
        representative=data["representative"],
        documents=tuple(data["documents"]),
        sources=tuple(data["sources"]),
    )


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read a report.json written by ``write_report``: each cluster member with its text,
    cut from its document's."""
    path = Path(path)
    try:
        data = json.loads(path.read_text("utf-8"))
        if data.get("report_format") != REPORT_FORMAT:
            raise DedupError(
                f"{path}: written by dedup {data.get('dedup_version', '(unknown)')} in report "
                f"format {data.get('report_format')}, which this version ({__version__}) does not "
                f"read (it reads format {REPORT_FORMAT}); scan again"
            )
        documents = _documents(data)
        clusters = tuple(_cluster(cluster, documents) for cluster in data["clusters"])
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
            documents=tuple(documents.values()),
            matches=tuple(_match(match, documents) for match in data.get("matches", ())),
            document_groups=tuple(_group(group) for group in data.get("document_groups", ())),
        )
    except FileNotFoundError as error:
        raise DedupError(
            f"{path}: no report here; run dedup scan first, or give its --out folder"
        ) from error
    except (
        json.JSONDecodeError,
        KeyError,
        IndexError,
        TypeError,
        AttributeError,
        ValueError,
    ) as error:
        raise DedupError(
            f"{path}: not a dedup report.json this version can read ({error}); scan again"
        ) from error
