"""Read stage: files on disk -> decoded documents, or a reason an input was skipped.

One file can hold many inputs (a .zip), and one input many documents (the records of a JSONL
file, the chapters of an EPUB). Each input is either read or listed as skipped with a reason
the user can act on; nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from dedup.config import ScanConfig
from dedup.errors import DecodeFailure, NotAnEpub, NotRecords, TableError
from dedup.models import Document, Skipped
from dedup.read.containers import raw_inputs
from dedup.read.decode import (
    Replacements,
    decode_bytes,
    decode_stream,
    detect_encoding,
)
from dedup.read.discover import FoundFile, FoundFiles, discover_inputs, file_stamp
from dedup.read.epub import documents_from_epub
from dedup.read.html import visible_text
from dedup.read.jsonl import (
    RecordFields,
    StreamWarnings,
    documents_from_json,
    documents_from_jsonl,
    documents_from_jsonl_stream,
    documents_from_records,
)
from dedup.read.slices import FileSlice
from dedup.read.streams import Limits, RawInput
from dedup.read.table import csv_rows, parquet_rows
from dedup.read.txt import documents_from_text, documents_from_text_stream

__all__ = [
    "RECORD_FORMATS",
    "FoundFile",
    "FoundFiles",
    "ReadResult",
    "discover_inputs",
    "file_stamp",
    "read_bytes",
    "read_file",
]

RECORD_FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "epub")


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One input: its documents, or why it was skipped."""

    path: str
    source: str
    format: str
    encoding: str
    # A tuple, or for a large file read as a stream an iterator to be consumed once, before
    # the next input is asked for (it may raise DecodeFailure or InputTooLarge part way).
    documents: Iterable[Document]
    warnings: Sequence[str]  # for a stream, filled in as its documents are read
    skipped: Skipped | None = None


def read_file(
    file: FoundFile, config: ScanConfig, part: FileSlice | None = None
) -> Iterator[ReadResult]:
    """Every input inside ``file`` (one, unless it is an archive), read or skipped, one at a
    time: an archive's entries are never all in memory together. Given ``part``, only that
    slice of a large JSON Lines file, as a stream (dedup.read.slices)."""
    limits = Limits(config.max_file_mb * 1_000_000, config.max_whole_file_mb * 1_000_000)
    for raw in raw_inputs(file, limits, part):
        if isinstance(raw, Skipped):
            yield ReadResult(raw.path, file.source, file.format, "", (), (), raw)
        else:
            yield _read_input(raw, config)


def _read_stream(raw: RawInput, config: ScanConfig, fields: RecordFields) -> ReadResult:
    assert raw.rest is not None
    part = raw.part
    try:
        encoding = detect_encoding(raw.data, config.encoding) if part is None else part.encoding
    except DecodeFailure as failure:
        return ReadResult(
            raw.path, raw.source, raw.format, "", (), (), Skipped(raw.path, str(failure))
        )
    replaced: list[Replacements] = []
    # The container's warnings come in as it is read, and the reader's.
    warnings = StreamWarnings(raw.warnings)
    start = 0 if part is None else part.start
    chunks = _then_replacements(
        decode_stream(raw.data, raw.rest, encoding, config.errors, replaced=replaced, start=start),
        replaced,
        warnings,
    )
    documents: Iterator[Document]
    if raw.format == "jsonl":
        first_line = 0 if part is None else part.first_line
        documents = documents_from_jsonl_stream(
            raw.path, raw.source, chunks, fields, warnings, first_line
        )
    else:
        documents = documents_from_text_stream(raw.path, raw.source, chunks)
    return ReadResult(raw.path, raw.source, raw.format, encoding, documents, warnings)


def _then_replacements(
    chunks: Iterator[str], replaced: list[Replacements], warnings: StreamWarnings
) -> Iterator[str]:
    yield from chunks
    for tally in replaced:
        warnings.add_replaced(tally.count, tally.first)


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
    if raw.rest is not None:
        return _read_stream(raw, config, fields)
    if not raw.data and raw.warnings:  # nothing intact before the damage
        return skip(raw.warnings[0])
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
        if encoding != "binary":
            warnings = decoded.replacement_warnings() + list(warnings)
    except DecodeFailure as failure:
        return skip(str(failure))
    except (NotRecords, NotAnEpub, TableError) as error:
        return skip(str(error))
    warnings = raw.warnings + list(warnings)

    if not documents:
        reason = "no usable records" if raw.format in RECORD_FORMATS else "no text"
        detail = f": {'; '.join(warnings[:3])}" if warnings else ""
        return skip(reason + detail)
    if not any(document.text.strip() for document in documents):
        return skip("only whitespace: nothing to read")
    return ReadResult(raw.path, raw.source, raw.format, encoding, tuple(documents), tuple(warnings))
