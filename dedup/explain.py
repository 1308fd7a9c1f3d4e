"""``dedup explain A B``: compare two texts the way a scan does, and show what they share.

A and B are files, records of a file (``dump.jsonl#12``: the record's 0-based index, as in the
report) or passages (a member id from a report: ``path:start-end`` or ``path#12:start-end``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.align import align
from dedup.codepoints import code_points
from dedup.config import ScanConfig
from dedup.errors import DedupError, InputPathError
from dedup.fingerprint import shingles
from dedup.normalize import NormalizedText, normalize
from dedup.read import discover_inputs, read_file
from dedup.read.zip import ENTRY_MARK
from dedup.report.palette import Span, spans_in_original
from dedup.verify import identical_chars

REFERENCE = re.compile(r"^(?P<path>.+?)(?:#(?P<record>\d+))?(?::(?P<start>\d+)-(?P<end>\d+))?$")


@dataclass(frozen=True, slots=True)
class Side:
    label: str
    text: str
    normalized: NormalizedText


@dataclass(frozen=True, slots=True)
class Explanation:
    a: Side
    b: Side
    jaccard: float
    containment: float
    identical_chars: int
    spans_a: list[Span]  # shared stretches in A's original text; colour n matches colour n in B
    spans_b: list[Span]
    # The aligned spans (as a scan's matches have them: dedup.align), by their colour: span n
    # is spans_a[n] in A and spans_b[n] in B; and the share of each side's story characters
    # they cover.
    aligned_identical: list[int]
    coverage_a: float
    coverage_b: float


def _document_text(path: str, record: int | None, config: ScanConfig, entry: str | None) -> str:
    """The text of ``path`` (of its archive ``entry``, if one is named), or of its record."""
    if os.path.isdir(path):
        raise InputPathError(
            f"{path} is a folder; name one file in it (or a record, FILE#N, or a passage id "
            "from a report)"
        )
    files, skipped = discover_inputs([path], follow_links=True)
    if skipped or not files:
        raise InputPathError(f"{path}: {skipped[0].reason if skipped else 'nothing to read'}")
    (file,) = files
    results = list(read_file(file, config))
    if file.format == "zip":
        inner = {result.path.split(ENTRY_MARK, 1)[1]: result for result in results}
        if entry is None:
            names = ", ".join(sorted(inner)[:5]) + (", ..." if len(inner) > 5 else "")
            raise DedupError(
                f"{path} is an archive of {len(inner)} entries; name one as "
                f"{path}!/ENTRY (entries: {names})"
            )
        if entry not in inner:
            raise DedupError(f"{path} has no entry {entry}; its entries are named as in the report")
        results = [inner[entry]]
    elif entry is not None:
        raise DedupError(f"{path} is not a .zip archive: it has no entry {entry}")
    for result in results:
        if result.skipped is not None:
            raise DedupError(f"{result.path}: {result.skipped.reason}")
    documents = [document for result in results for document in result.documents]
    label = path if entry is None else f"{path}!/{entry}"
    if record is None:
        if len(documents) != 1:
            raise DedupError(
                f"{label} holds {len(documents)} records; name one as {label}#N (N as in the "
                "report)"
            )
        return documents[0].text
    for document in documents:
        if document.record == record:
            return document.text
    raise DedupError(f"{label} has no record {record}; records are numbered as in the report")


def resolve(reference: str, config: ScanConfig) -> tuple[str, str]:
    """(label, original text) for a file, record or passage reference; a file may be an entry
    of a zip archive (``dump.zip!/site/ch1.txt``), as the report names it."""
    if os.path.exists(reference):
        return reference, _document_text(reference, None, config, None)
    match = REFERENCE.match(reference)
    path = match["path"] if match is not None else reference
    entry = None
    if ENTRY_MARK in path and not os.path.exists(path):
        path, entry = path.split(ENTRY_MARK, 1)
    if match is None or not os.path.exists(path):
        raise InputPathError(f"{reference}: no such file, record or passage; check the path")
    record = int(match["record"]) if match["record"] is not None else None
    text = _document_text(path, record, config, entry)
    if match["start"] is not None:
        start, end = int(match["start"]), int(match["end"])
        if not 0 <= start < end <= len(text):
            raise DedupError(
                f"{reference}: characters {start}-{end} are outside the text ({len(text)})"
            )
        text = text[start:end]
    return reference, text


def explain(a: str, b: str, config: ScanConfig | None = None) -> Explanation:
    config = config or ScanConfig()
    normalize_config = config.normalize
    sides = []
    for reference in (a, b):
        label, text = resolve(reference, config)
        sides.append(Side(label, text, normalize(text, normalize_config)))
    first, second = sides
    set_a = set(shingles(first.normalized.text, config.ngram))
    set_b = set(shingles(second.normalized.text, config.ngram))
    shared = len(set_a & set_b)
    union = len(set_a | set_b)
    aligned = align(_codes(first.normalized), _codes(second.normalized), config.align).tolist()
    a_story, b_story = len(first.normalized.text), len(second.normalized.text)
    return Explanation(
        a=first,
        b=second,
        jaccard=shared / union if union else 0.0,
        containment=shared / min(len(set_a), len(set_b)) if set_a and set_b else 0.0,
        identical_chars=identical_chars(
            first.normalized.text, second.normalized.text, config.ngram
        ),
        spans_a=spans_in_original(
            first.normalized, [(row[0], row[1] - row[0], n) for n, row in enumerate(aligned)]
        ),
        spans_b=spans_in_original(
            second.normalized, [(row[2], row[3] - row[2], n) for n, row in enumerate(aligned)]
        ),
        aligned_identical=[row[4] for row in aligned],
        coverage_a=sum(row[1] - row[0] for row in aligned) / max(1, a_story),
        coverage_b=sum(row[3] - row[2] for row in aligned) / max(1, b_story),
    )


def _codes(normalized: NormalizedText) -> npt.NDArray[np.uint32]:
    return normalized.codes if normalized.codes is not None else code_points(normalized.text)
