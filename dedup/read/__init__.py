"""Read stage: files on disk -> decoded documents, or a reason an input was skipped.

One file can hold many inputs (a .zip), and one input many documents (the records of a JSONL
file, the chapters of an EPUB). Each input is either read or listed as skipped with a reason
the user can act on; nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dedup.config import ScanConfig
from dedup.models import Document, Skipped
from dedup.read.containers import RawInput, raw_inputs
from dedup.read.decode import DecodeFailure, decode_bytes
from dedup.read.discover import FoundFile, discover_inputs
from dedup.read.epub import NotAnEpub, documents_from_epub
from dedup.read.html import visible_text
from dedup.read.jsonl import (
    NotRecords,
    RecordFields,
    documents_from_json,
    documents_from_jsonl,
    documents_from_records,
)
from dedup.read.table import TableError, csv_rows, parquet_rows
from dedup.read.txt import documents_from_text

__all__ = ["FoundFile", "ReadResult", "discover_inputs", "read_bytes", "read_file"]

RECORD_FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "epub")


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One input: its documents, or why it was skipped."""

    path: str
    source: str
    format: str
    encoding: str
    documents: tuple[Document, ...]
    warnings: tuple[str, ...]
    skipped: Skipped | None = None

    @property
    def records(self) -> int:
        return len(self.documents) if self.format in RECORD_FORMATS else 0


def read_file(file: FoundFile, config: ScanConfig) -> Iterator[ReadResult]:
    """Every input inside ``file`` (one, unless it is an archive), read or skipped, one at a
    time: an archive's entries are never all in memory together."""
    for raw in raw_inputs(file, config.max_file_mb * 1_000_000):
        if isinstance(raw, Skipped):
            yield ReadResult(raw.path, file.source, file.format, "", (), (), raw)
        else:
            yield _read_input(raw, config)


def read_bytes(
    path: str, source: str, file_format: str, data: bytes, config: ScanConfig
) -> ReadResult:
    """Read data that is not a file (standard input) as if it were one."""
    return _read_input(RawInput(path, source, file_format, data), config)


def _read_input(raw: RawInput, config: ScanConfig) -> ReadResult:
    def skip(reason: str) -> ReadResult:
        return ReadResult(raw.path, raw.source, raw.format, "", (), (), Skipped(raw.path, reason))

    fields = RecordFields(
        config.text_fields, config.title_fields, config.id_fields, config.source_fields
    )
    encoding = "binary"
    try:
        if raw.format == "epub":
            documents, warnings = documents_from_epub(raw.path, raw.source, raw.data)
        elif raw.format == "parquet":
            rows = parquet_rows(raw.data, fields.all)
            documents, warnings = documents_from_records(raw.path, raw.source, rows, fields)
        else:
            decoded = decode_bytes(raw.data, config.encoding, config.errors)
            encoding = decoded.encoding
            if raw.format == "jsonl":
                documents, warnings = documents_from_jsonl(raw.path, raw.source, decoded, fields)
            elif raw.format == "json":
                documents, warnings = documents_from_json(raw.path, raw.source, decoded, fields)
            elif raw.format in ("csv", "tsv"):
                broken: list[str] = []
                rows = csv_rows(decoded, "\t" if raw.format == "tsv" else ",", broken)
                documents, warnings = documents_from_records(raw.path, raw.source, rows, fields)
                warnings = broken + warnings
            elif raw.format == "html":
                text, title = visible_text(decoded.text)
                documents = [Document(raw.path, raw.source, None, text, title)]
                warnings = []
            else:
                documents, warnings = documents_from_text(raw.path, raw.source, decoded)
    except DecodeFailure as failure:
        return skip(str(failure))
    except (NotRecords, NotAnEpub, TableError) as error:
        return skip(str(error))

    if not documents:
        reason = "no usable records" if raw.format in RECORD_FORMATS else "no text"
        detail = f": {'; '.join(warnings[:3])}" if warnings else ""
        return skip(reason + detail)
    if not any(document.text.strip() for document in documents):
        return skip("only whitespace: nothing to read")
    return ReadResult(raw.path, raw.source, raw.format, encoding, tuple(documents), tuple(warnings))
