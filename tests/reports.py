"""report.json as a script reads it (members' texts cut from their documents'), and a report
folder's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dedup.models import PAIR_VALUES, passage_id
from dedup.report import load_report


def by_ids(report: dict[str, Any]) -> dict[str, Any]:
    """report.json's data (format 5) with every document named by its id and every member by
    its id and source, as format 4 named them (docs/report-format.md): what a test compares
    with the ids it knows. Checks, besides, that each number names one."""
    documents = report["documents"]

    def document(number: int) -> dict[str, Any]:
        assert isinstance(number, int) and 0 <= number < len(documents), number
        return documents[number]  # type: ignore[no-any-return]

    def member(data: dict[str, Any]) -> dict[str, Any]:
        holder = document(data["document"])
        assert set(data) == {"document", "start", "end"}, data
        assert holder["start"] <= data["start"] < data["end"] <= holder["end"], (holder, data)
        where = passage_id(holder["path"], holder["record"], data["start"], data["end"])
        return {"id": where, "source": holder["source"], **data, "document": holder["id"]}

    clusters = []
    for cluster in report["clusters"]:
        members = [member(data) for data in cluster["members"]]
        clusters.append(
            {
                **cluster,
                "representative": members[cluster["representative"]]["id"],
                "linked_through_others": [
                    members[number]["id"] for number in cluster["linked_through_others"]
                ],
                "members": members,
            }
        )
    matches = [
        {**match, "a": document(match["a"])["id"], "b": document(match["b"])["id"]}
        for match in report["matches"]
    ]
    groups = [
        {
            **group,
            "representative": document(group["representative"])["id"],
            "documents": [document(number)["id"] for number in group["documents"]],
        }
        for group in report["document_groups"]
    ]
    return {**report, "matches": matches, "document_groups": groups, "clusters": clusters}


def report_json(path: Path) -> dict[str, Any]:
    """The report.json at ``path`` (or in the folder ``path``), named by ids (:func:`by_ids`)."""
    path = path / "report.json" if path.is_dir() else path
    return by_ids(json.loads(path.read_text("utf-8")))


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the page's parts too), by its path inside it."""
    files = sorted(path for path in folder.rglob("*") if path.is_file())
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in files}


def with_member_texts(report: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The report's clusters (report.json at ``path``, read as ``report`` by
    :func:`report_json`) as a script joins
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
