"""Read stage: files on disk -> decoded documents, or a reason the file was skipped."""

from __future__ import annotations

from dataclasses import dataclass

from dedup.config import ScanConfig
from dedup.models import Document, Skipped
from dedup.read.decode import DecodeFailure, decode_bytes
from dedup.read.discover import FoundFile, discover_inputs
from dedup.read.jsonl import NotRecords, documents_from_json, documents_from_jsonl
from dedup.read.txt import documents_from_text

__all__ = ["FoundFile", "ReadResult", "discover_inputs", "read_file"]


@dataclass(frozen=True, slots=True)
class ReadResult:
    file: FoundFile
    encoding: str
    documents: tuple[Document, ...]
    warnings: tuple[str, ...]
    skipped: Skipped | None = None


def _skip(file: FoundFile, reason: str) -> ReadResult:
    return ReadResult(file, "", (), (), Skipped(file.path, reason))


def read_file(file: FoundFile, config: ScanConfig) -> ReadResult:
    try:
        with open(file.fs_path, "rb") as handle:
            data = handle.read()
    except PermissionError:
        return _skip(file, "permission denied; make the file readable (chmod +r) and scan again")
    except OSError as error:
        return _skip(file, f"cannot read the file ({error.strerror})")
    try:
        decoded = decode_bytes(data, config.encoding, config.errors)
    except DecodeFailure as failure:
        return _skip(file, str(failure))

    try:
        if file.format == "jsonl":
            documents, warnings = documents_from_jsonl(
                file.path, file.source, decoded, config.text_fields, config.title_fields
            )
        elif file.format == "json":
            documents, warnings = documents_from_json(
                file.path, file.source, decoded, config.text_fields, config.title_fields
            )
        else:
            documents, warnings = documents_from_text(file.path, file.source, decoded)
    except NotRecords as error:
        return _skip(file, str(error))

    if not documents:
        reason = "no usable records" if file.format != "txt" else "no text"
        detail = f": {'; '.join(warnings[:3])}" if warnings else ""
        return _skip(file, reason + detail)
    if not any(document.text.strip() for document in documents):
        return _skip(file, "only whitespace: nothing to read")
    return ReadResult(file, decoded.encoding, tuple(documents), tuple(warnings))
