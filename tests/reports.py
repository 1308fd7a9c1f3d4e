"""report.json as a script reads it (members' texts cut from their documents'), and a report
folder's files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dedup.models import PAIR_VALUES
from dedup.report import load_report


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the page's parts too), by its path inside it."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in files}


def with_member_texts(report: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The report's clusters (report.json at ``path``, read as ``report``) as a script joins
    them: each member with where its document is (path, record, chapter, ...) and its
    ``text``, cut from its document's (which ``dedup.load_report`` reads back from the
    inputs); each pair as a dict of member ids."""
    texts = {document.id: document.text for document in load_report(path).documents}
    documents = {d["id"]: {**d, "text": texts[d["id"]]} for d in report["documents"]}
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
