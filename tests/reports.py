"""report.json as a script reads it (members' texts cut from their documents'), and a report
folder's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dedup.models import PAIR_VALUES


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the page's parts too), by its path inside it."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in files}


def member_text(report: dict[str, Any], member: dict[str, Any]) -> str:
    """A cluster member's text, as docs/report-format.md says to find it."""
    document = next(d for d in report["documents"] if d["id"] == member["document"])
    return str(
        document["text"][member["start"] - document["start"] : member["end"] - document["start"]]
    )


def with_member_texts(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's clusters as a script joins them: each member with where its document is
    (path, record, chapter, ...) and its ``text``; each pair as a dict of member ids."""
    documents = {d["id"]: d for d in report["documents"]}
    clusters = []
    for cluster in report["clusters"]:
        members = []
        for member in cluster["members"]:
            document = documents[member["document"]]
            offset = document["start"]
            text = document["text"][member["start"] - offset : member["end"] - offset]
            where = {k: document[k] for k in ("path", "record", "record_id", "chapter", "title")}
            members.append({**where, **member, "text": text})
        pairs = [
            {"a": members[a]["id"], "b": members[b]["id"]}
            | dict(zip(PAIR_VALUES, values, strict=True))
            for a, b, *values in cluster["pairs"]
        ]
        clusters.append({**cluster, "members": members, "pairs": pairs})
    return clusters
