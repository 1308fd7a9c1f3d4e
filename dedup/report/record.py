"""report.json read back (docs/report-format.md), so that outputs can be rebuilt from it
(``dedup report``); Report.write_json writes it."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TextIO, TypeVar

import numpy as np

from dedup.config import ScanConfig
from dedup.display import unshown
from dedup.engine.member_texts import passage_texts
from dedup.errors import DedupError
from dedup.models import (
    READS_FORMATS,
    SPAN_FIELDS,
    Cluster,
    CutPassage,
    DocumentGroup,
    InputFile,
    InputFiles,
    Match,
    MatchedDocument,
    MemberIds,
    PairTable,
    Passage,
    PassageSpan,
    Report,
    SharedSpans,
    Skipped,
    Summary,
    made_in_bulk,
    text_sha256,
)
from dedup.read import FoundFile, discover_inputs
from dedup.read.location import is_url
from dedup.read.zip import outer_path
from dedup.report.writer import RUN_FILE
from dedup.version import __version__

# A report's documents as its members, matches and groups name them: by id (formats 3 and 4),
# or by their number in its documents (format 5).
DocumentOf = Callable[[Any], MatchedDocument]


def _members(data: list[dict[str, Any]], document_of: DocumentOf) -> list[Passage]:
    """A cluster's members, each with its text cut from its document's, as a scan makes them:
    what a member does not say of itself (its path, record, chapter, and from format 5 its
    source) is its document's."""
    holders = [document_of(member["document"]) for member in data]
    columns: dict[str, list[Any]] = {
        name: [member[name] for member in data] for name in ("start", "end")
    }
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
        MemberIds(members),
        np.array(a, dtype=np.int32),
        np.array(b, dtype=np.int32),
        np.array(jaccard, dtype=np.float64),
        np.array(containment, dtype=np.float64),
        np.array(estimated, dtype=np.float64),
        np.array(identical, dtype=np.int64),
    )


def _cluster(data: dict[str, Any], document_of: DocumentOf, numbered: bool) -> Cluster:
    members = tuple(_members(data["members"], document_of))
    representative = data["representative"]
    linked = data.get("linked_through_others", ())
    if numbered:
        representative = members[representative].id
        linked = [members[number].id for number in linked]
    return Cluster(
        id=data["id"],
        representative=representative,
        members=members,
        pairs=_pairs(data["pairs"], members),
        linked_through_others=tuple(linked),
        giant=data.get("giant", False),
    )


def _match(data: dict[str, Any], document_of: DocumentOf) -> Match:
    return Match(
        a=document_of(data["a"]),
        b=document_of(data["b"]),
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


def _group(data: dict[str, Any], document_of: DocumentOf) -> DocumentGroup:
    return DocumentGroup(
        id=data["id"],
        representative=document_of(data["representative"]).id,
        documents=tuple(document_of(document).id for document in data["documents"]),
        sources=tuple(data["sources"]),
    )


def load_report(
    path: str | os.PathLike[str], changed: Literal["error", "empty"] = "error"
) -> Report:
    """Read a report.json written by ``write_report``: each document with its text (its
    own, or read back from its input where report.json holds only its SHA-256: a scan
    without --full-text), each cluster member with its text cut from its document's. An
    input that is gone or changed since it was scanned is a DedupError naming it, or, with
    ``changed="empty"``, gives its documents an empty text (``dedup clean --from-report``
    copies such a file as it is). Read a line at a time, as it was written (a document,
    match, group or cluster a line), so that the whole file's JSON is never held at once."""
    strict = changed == "error"
    return _read(Path(path), lambda parts, where: _report(parts, where, strict))


def report_options(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The options a report.json records, from its top level alone: what a caller checks
    before the report is read (its texts read back, say)."""
    return _read(Path(path), lambda parts, where: dict(_top(parts, where)["options"]))


T = TypeVar("T")


def _read(path: Path, read: Callable[[Iterator[tuple[str, Any]], Path], T]) -> T:
    """``read`` of the report.json at ``path``, as its parts (see _by_lines), with a
    DedupError saying what to do for a file that is not there or not a report."""
    try:
        with open(path, encoding="utf-8") as handle:
            try:
                return read(_by_lines(handle), path)
            except _NotByLines:  # laid out otherwise (re-indented by another tool, say)
                handle.seek(0)
                return read(_by_keys(json.load(handle)), path)
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


def _report(parts: Iterator[tuple[str, Any]], path: Path, strict: bool) -> Report:
    """The report from its top level and its lists' items, in file order (documents before
    the matches and clusters that name them); ``strict``: see _texts_from_inputs."""
    data = _top(parts, path)
    numbered = data["report_format"] >= 5
    entries: list[dict[str, Any]] = []
    held = True  # every document's text in report.json
    documents: dict[str, MatchedDocument] = {}
    document_of: DocumentOf = documents.__getitem__
    matches: list[Match] = []
    groups: list[DocumentGroup] = []
    clusters: list[Cluster] = []
    for kind, item in parts:
        if kind == "documents":
            entries.append(item)
            held = held and "text" in item
            continue
        if entries:  # the documents come first: all of them are read now
            documents = _documents(entries, data, path, strict)
            document_of = _named(documents, numbered)
            entries = []
        if kind == "matches":
            matches.append(_match(item, document_of))
        elif kind == "document_groups":
            groups.append(_group(item, document_of))
        else:
            clusters.append(_cluster(item, document_of, numbered))
    if entries:
        documents = _documents(entries, data, path, strict)
    return Report(
        dedup_version=data["dedup_version"],
        options=data["options"],
        summary=Summary(**data["summary"]),
        inputs=InputFiles(
            InputFile(**{**entry, "warnings": tuple(entry["warnings"])}) for entry in data["inputs"]
        ),
        skipped=tuple(Skipped(**entry) for entry in data["skipped"]),
        clusters=tuple(clusters),
        documents=tuple(documents.values()),
        matches=tuple(matches),
        document_groups=tuple(groups),
        directory=_scan_directory(path) or "",
        texts_held=held,
    )


def _named(documents: dict[str, MatchedDocument], numbered: bool) -> DocumentOf:
    """How the report's items name its documents: by number (format 5) or by id."""
    return list(documents.values()).__getitem__ if numbered else documents.__getitem__


def _top(parts: Iterator[tuple[str, Any]], path: Path) -> dict[str, Any]:
    """The top level of a report.json (its lists apart) in a format this version reads."""
    kind, data = next(parts)
    if kind != "top" or data.get("report_format") not in READS_FORMATS:
        raise DedupError(
            f"{path}: written by dedup {data.get('dedup_version', '(unknown)')} in report "
            f"format {data.get('report_format')}, which this version ({__version__}) does not "
            f"read (it reads formats {', '.join(map(str, READS_FORMATS))}); scan again"
        )
    return dict(data)


def _documents(
    entries: list[dict[str, Any]], top: dict[str, Any], path: Path, strict: bool
) -> dict[str, MatchedDocument]:
    """The report's documents by id, in its order, each with its text: its own, or, where
    report.json holds only its SHA-256 (a scan without --full-text), read back from its
    input."""
    missing = [entry for entry in entries if "text" not in entry]
    read = _texts_from_inputs(missing, top, path, strict) if missing else {}
    names = set(MatchedDocument.__dataclass_fields__)
    documents: dict[str, MatchedDocument] = {}
    for entry in entries:
        fields = {name: value for name, value in entry.items() if name in names}
        fields.setdefault("text", read.get(entry["id"]))
        documents[entry["id"]] = MatchedDocument(**fields)
    return documents


def _texts_from_inputs(
    entries: list[dict[str, Any]], top: dict[str, Any], path: Path, strict: bool
) -> dict[str, str]:
    """The texts of the documents ``entries`` by id, read again from the report's inputs as
    the scan read them (with its options), each checked against its ``text_sha256``. Relative
    paths are taken from this directory, else from the one the scan ran in (run.json's
    ``directory``). A file not there or changed since is a DedupError naming it if
    ``strict``, else its documents' texts are empty."""
    config = ScanConfig.of_report(top["options"])
    sources = {outer_path(entry["path"]): entry["source"] for entry in top["inputs"]}
    by_file: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_file.setdefault(outer_path(entry["path"]), []).append(entry)
    scanned_in = _scan_directory(path)
    texts: dict[str, str] = {}
    for name, documents in by_file.items():
        file = _input_file(name, sources.get(name, ""), scanned_in, config)
        if file is None:
            if strict:
                raise _not_found(name, scanned_in, path)
            texts.update((document["id"], "") for document in documents)
            continue
        spans = [
            PassageSpan(
                d["source"], d["path"], d["record"], d["chapter"], d["title"], d["start"],
                d["end"], d["record_id"],
            )
            for d in documents
        ]  # fmt: skip
        for document, text in zip(documents, passage_texts(file, config, spans), strict=True):
            if text is None or text_sha256(text) != document["text_sha256"]:
                if not strict:
                    texts[document["id"]] = ""
                    continue
                raise DedupError(
                    f"{name}: changed since it was scanned (its text at {document['id']} is "
                    f"not what {path} found there); the report holds where its documents are, "
                    "not their texts: scan again (with --full-text to keep the texts in the "
                    "report)"
                )
            texts[document["id"]] = text
    return texts


def _scan_directory(path: Path) -> str | None:
    """The directory the scan that wrote ``path`` ran in, as run.json beside it says."""
    try:
        run = json.loads((path.parent / RUN_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    directory = run.get("directory") if isinstance(run, dict) else None
    return directory if isinstance(directory, str) else None


def _input_file(
    name: str, source: str, scanned_in: str | None, config: ScanConfig
) -> FoundFile | None:
    """The input the report names ``name``, found here or where the scan ran, as the scan
    found it; None if it is in neither."""
    places = [name] if unshown(name) == name else [name, unshown(name)]
    if scanned_in is not None and not is_url(name) and not os.path.isabs(name):
        places += [os.path.join(scanned_in, place) for place in places]
    for place in places:
        if is_url(place) or os.path.lexists(place):
            try:
                found, _skipped = discover_inputs([place], config.follow_links)
            except DedupError:  # a URL not there
                continue
            if len(found) == 1:
                return dataclasses.replace(found[0], path=name, source=source)
    return None


def _not_found(name: str, scanned_in: str | None, path: Path) -> DedupError:
    relative = scanned_in and not is_url(name) and not os.path.isabs(name)
    where = f" or in {scanned_in}, where the scan ran" if relative else ""
    return DedupError(
        f"{name}: not found here{where}; {path} holds where its documents are, not their "
        "texts (it was written without --full-text), so it needs its inputs where the scan "
        "read them: run from the folder the scan ran in, put the file back, or scan again "
        "(with --full-text to keep the texts in the report)"
    )
