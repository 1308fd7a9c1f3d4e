"""report.json read back (docs/report-format.md), so that outputs can be rebuilt from it
(``dedup report``); Report.write_json writes it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from dedup.errors import DedupError
from dedup.models import (
    REPORT_FORMAT,
    SPAN_FIELDS,
    Cluster,
    CutPassage,
    DocumentGroup,
    InputFile,
    Match,
    MatchedDocument,
    PairTable,
    Passage,
    Report,
    SharedSpans,
    Skipped,
    Summary,
    made_in_bulk,
)
from dedup.version import __version__


def _members(data: list[dict[str, Any]], documents: dict[str, MatchedDocument]) -> list[Passage]:
    """A cluster's members, each with its text cut from its document's, as a scan makes them:
    what a member does not say of itself (its path, record, chapter, ...) is its document's."""
    holders = [documents[member["document"]] for member in data]
    columns = {name: [member[name] for member in data] for name in ("id", "source", "start", "end")}
    columns |= {"document": [holder.id for holder in holders], "holder": holders}
    for name in set(CutPassage.SLOTS) - set(columns):
        columns[name] = [getattr(holder, name) for holder in holders]
    members: list[Passage] = made_in_bulk(CutPassage, *(columns[name] for name in CutPassage.SLOTS))
    return members


def _pairs(rows: list[list[Any]], members: tuple[Passage, ...]) -> PairTable:
    """A cluster's pair rows (``[a, b, jaccard, containment, minhash_jaccard,
    identical_chars]``) as its table."""
    a, b, jaccard, containment, estimated, identical = zip(*rows, strict=True) if rows else [()] * 6
    return PairTable(
        tuple(member.id for member in members),
        np.array(a, dtype=np.int32),
        np.array(b, dtype=np.int32),
        np.array(jaccard, dtype=np.float64),
        np.array(containment, dtype=np.float64),
        np.array(estimated, dtype=np.float64),
        np.array(identical, dtype=np.int64),
    )


def _cluster(data: dict[str, Any], documents: dict[str, MatchedDocument]) -> Cluster:
    members = tuple(_members(data["members"], documents))
    return Cluster(
        id=data["id"],
        representative=data["representative"],
        members=members,
        pairs=_pairs(data["pairs"], members),
        linked_through_others=tuple(data.get("linked_through_others", ())),
        giant=data.get("giant", False),
    )


def _match(data: dict[str, Any], documents: dict[str, MatchedDocument]) -> Match:
    return Match(
        a=documents[data["a"]],
        b=documents[data["b"]],
        shared_chars_a=data["shared_chars_a"],
        shared_chars_b=data["shared_chars_b"],
        coverage_a=data["coverage_a"],
        coverage_b=data["coverage_b"],
        spans=SharedSpans(
            np.array(
                [[span[name] for name in SPAN_FIELDS] for span in data["spans"]], np.int64
            ).reshape(-1, len(SPAN_FIELDS)),
            0,
            len(data["spans"]),
        ),
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
    cut from its document's. Read a line at a time, as it was written (a document, match,
    group or cluster a line), so that the whole file's JSON is never held at once: a 1 GB
    dump's report.json is about 2 GB, and its parsed tree several times that."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8") as handle:
            try:
                return _report(_by_lines(handle), path)
            except _NotByLines:  # laid out otherwise (re-indented by another tool, say)
                handle.seek(0)
                return _report(_by_keys(json.load(handle)), path)
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


# The lists of report.json, in the order Report.write_json writes them; the top level's other
# keys come before them.
_LISTS = ("documents", "matches", "document_groups", "clusters")


class _NotByLines(ValueError):
    """report.json is not laid out as Report.write_json lays it out."""


def _by_lines(handle: TextIO) -> Iterator[tuple[str, Any]]:
    """("top", the top level without its lists), then (list name, item) for each item, from
    a report.json laid out as Report.write_json writes it: each list's opening on a line of
    its own, then an item a line (JSON strings hold no raw line breaks)."""
    head: list[str] = []
    inside: str | None = None
    started = False
    for line in handle:
        text = line.strip()
        opening = _opening(text)
        if opening is not None:
            if not started:
                yield "top", _parsed("".join(head).rstrip().rstrip(",") + "\n}")
                started = True
            inside = None if text.rstrip(",").endswith("[]") else opening
        elif inside is not None:
            if text.rstrip(",") == "]":
                inside = None
            else:
                yield inside, _parsed(text.rstrip(","))
        elif not started:
            head.append(line)
        elif text != "}":
            raise _NotByLines(f"unexpected line: {text[:40]}")
    if not started:
        raise _NotByLines("no lists")


def _opening(text: str) -> str | None:
    for name in _LISTS:
        if text.startswith(f'"{name}": ['):
            return name
    return None


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _NotByLines(str(error)) from error


def _by_keys(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The same as _by_lines, from report.json parsed whole."""
    yield "top", {key: value for key, value in data.items() if key not in _LISTS}
    for name in _LISTS:
        for item in data.get(name, ()):
            yield name, item


def _report(parts: Iterator[tuple[str, Any]], path: Path) -> Report:
    """The report from its top level and its lists' items, in file order (documents before
    the matches and clusters that name them)."""
    kind, data = next(parts)
    if kind != "top" or data.get("report_format") != REPORT_FORMAT:
        raise DedupError(
            f"{path}: written by dedup {data.get('dedup_version', '(unknown)')} in report "
            f"format {data.get('report_format')}, which this version ({__version__}) does not "
            f"read (it reads format {REPORT_FORMAT}); scan again"
        )
    documents: dict[str, MatchedDocument] = {}
    matches: list[Match] = []
    groups: list[DocumentGroup] = []
    clusters: list[Cluster] = []
    for kind, item in parts:
        if kind == "documents":
            documents[item["id"]] = MatchedDocument(**item)
        elif kind == "matches":
            matches.append(_match(item, documents))
        elif kind == "document_groups":
            groups.append(_group(item))
        else:
            clusters.append(_cluster(item, documents))
    return Report(
        dedup_version=data["dedup_version"],
        options=data["options"],
        summary=Summary(**data["summary"]),
        inputs=tuple(
            InputFile(**{**entry, "warnings": tuple(entry["warnings"])}) for entry in data["inputs"]
        ),
        skipped=tuple(Skipped(**entry) for entry in data["skipped"]),
        clusters=tuple(clusters),
        documents=tuple(documents.values()),
        matches=tuple(matches),
        document_groups=tuple(groups),
    )
