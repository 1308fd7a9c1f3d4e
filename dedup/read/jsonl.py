"""Record dumps: JSON Lines (one object per line) and JSON arrays of objects.

Scrapers write one record per chapter, with the text under ``content``, ``text`` or ``body`` and
the chapter title under ``title`` or ``chapter``. A broken line costs that line only: it is
counted in the file's warnings with its line number, and the good records are kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from dedup.models import Document
from dedup.read.decode import Decoded

MAX_LISTED_WARNINGS = 20


def _first_string(record: dict[str, Any], fields: Sequence[str]) -> str | None:
    for name in fields:
        value = record.get(name)
        if isinstance(value, str):
            return value
    return None


def _documents_from_records(
    path: str,
    source: str,
    records: Iterable[tuple[int, str, Any]],
    text_fields: Sequence[str],
    title_fields: Sequence[str],
) -> tuple[list[Document], list[str]]:
    documents: list[Document] = []
    warnings: list[str] = []
    for index, where, record in records:
        if not isinstance(record, dict):
            warnings.append(f"{where}: not a JSON object, skipped")
            continue
        text = _first_string(record, text_fields)
        if text is None:
            fields = ", ".join(text_fields)
            warnings.append(f"{where}: no text field ({fields}); use --text-field to name it")
            continue
        title = _first_string(record, title_fields)
        documents.append(
            Document(path, source, index, text, " ".join(title.split()) or None if title else None)
        )
    return documents, _capped(warnings)


def _capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_LISTED_WARNINGS:
        return warnings
    hidden = len(warnings) - MAX_LISTED_WARNINGS
    return [*warnings[:MAX_LISTED_WARNINGS], f"... and {hidden} more like these"]


def documents_from_jsonl(
    path: str,
    source: str,
    decoded: Decoded,
    text_fields: Sequence[str],
    title_fields: Sequence[str],
) -> tuple[list[Document], list[str]]:
    broken: list[str] = []

    def parsed() -> Iterable[tuple[int, str, Any]]:
        for index, line in enumerate(decoded.text.split("\n")):
            if not line.strip():
                continue
            try:
                yield index, f"line {index + 1}", json.loads(line)
            except json.JSONDecodeError as error:
                broken.append(f"line {index + 1}: not valid JSON ({error.msg}), skipped")

    documents, warnings = _documents_from_records(path, source, parsed(), text_fields, title_fields)
    return documents, _capped(broken) + warnings


class NotRecords(ValueError):
    pass


def documents_from_json(
    path: str,
    source: str,
    decoded: Decoded,
    text_fields: Sequence[str],
    title_fields: Sequence[str],
) -> tuple[list[Document], list[str]]:
    try:
        data = json.loads(decoded.text)
    except json.JSONDecodeError as error:
        raise NotRecords(
            f"not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
            "fix the file, or save one record per line as .jsonl so one bad record costs only itself"
        ) from error
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise NotRecords("JSON file holds neither an object nor a list of objects")
    records = ((index, f"element {index}", record) for index, record in enumerate(data))
    return _documents_from_records(path, source, records, text_fields, title_fields)
