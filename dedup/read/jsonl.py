"""Record dumps: JSON Lines (one object per line), JSON arrays of objects, and the shared
handling of records that tables (CSV, TSV, Parquet) reuse.

Scrapers write one record per chapter, with the text under ``content``, ``text`` or ``body`` and
the chapter title under ``title`` or ``chapter``. A broken line costs that line only: it is
counted in the file's warnings with its line number, and the good records are kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from dedup.errors import NotRecords
from dedup.models import Document
from dedup.read.decode import Decoded, replacement_warning

MAX_LISTED_WARNINGS = 20
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class RecordFields:
    """Which fields of a record hold what; the first present one wins."""

    text: tuple[str, ...]
    title: tuple[str, ...]
    id: tuple[str, ...] = ()
    source: tuple[str, ...] = ()

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.text, *self.title, *self.id, *self.source)


def _first_value(record: dict[str, Any], names: Iterable[str]) -> str | None:
    for name in names:
        value = record.get(name)
        if isinstance(value, str):
            return _without_surrogates(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    return None


def _without_surrogates(text: str) -> str:
    """``text`` with any lone surrogate (JSON can spell one: "\\ud800") as U+FFFD: it is not
    a character, and a UTF-8 report cannot hold it. One code point for one, so offsets hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def documents_from_records(
    path: str, source: str, records: Iterable[tuple[int, str, Any]], fields: RecordFields
) -> tuple[list[Document], list[str]]:
    documents: list[Document] = []
    warnings: list[str] = []
    for index, where, record in records:
        if not isinstance(record, dict):
            warnings.append(f"{where}: not a JSON object, skipped")
            continue
        # The first text field that holds a string: a record may carry "content": null
        # beside the "text" that has it.
        text = next(
            (record[name] for name in fields.text if isinstance(record.get(name), str)), None
        )
        if text is None:
            names = ", ".join(fields.text)
            warnings.append(f"{where}: no text field ({names}); use --text-field to name it")
            continue
        clean = _without_surrogates(text)
        if clean is not text:
            warnings.append(
                f"{where}: lone surrogates (escapes such as \\ud800 that are no character) "
                "replaced with U+FFFD"
            )
            text = clean
        title = _first_value(record, fields.title)
        record_source = _first_value(record, fields.source) if fields.source else None
        documents.append(
            Document(
                path=path,
                source=record_source.strip() if record_source and record_source.strip() else source,
                record=index,
                text=text,
                title=" ".join(title.split()) or None if title else None,
                record_id=_first_value(record, fields.id),
            )
        )
    return documents, capped(warnings)


def capped(warnings: list[str]) -> list[str]:
    if len(warnings) <= MAX_LISTED_WARNINGS:
        return warnings
    hidden = len(warnings) - MAX_LISTED_WARNINGS
    return [*warnings[:MAX_LISTED_WARNINGS], f"... and {hidden} more like these"]


def documents_from_jsonl(
    path: str, source: str, decoded: Decoded, fields: RecordFields
) -> tuple[list[Document], list[str]]:
    broken: list[str] = []

    def parsed() -> Iterable[tuple[int, str, Any]]:
        for index, line in enumerate(decoded.text.split("\n")):
            if not line.strip():
                continue
            try:
                yield index, _line(index), json.loads(line)
            except json.JSONDecodeError as error:
                broken.append(f"{_line(index)}: not valid JSON ({error.msg}), skipped")

    documents, warnings = documents_from_records(path, source, parsed(), fields)
    return documents, capped(broken) + warnings


@dataclass
class StreamWarnings(Sequence[str]):
    """What was wrong with an input read as a stream, gathered as it is read: the damage its
    container reported, its records' problems (the first MAX_LISTED_WARNINGS listed, the rest
    counted) and the invalid bytes replaced in decoding. Read as the list of warnings once the
    stream is read through. Kept in these parts so that the slices of one file, read by
    several workers (dedup.read.slices), merge into what one read of the file says."""

    container: list[str] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    hidden: int = 0
    replaced: int = 0
    first_replaced: int = -1  # the byte offset of the first, in the whole file

    def add(self, problems: Sequence[str]) -> None:
        shown = problems[: max(0, MAX_LISTED_WARNINGS - len(self.listed))]
        self.listed += shown
        self.hidden += len(problems) - len(shown)

    def add_replaced(self, count: int, first: int) -> None:
        if count and not self.replaced:
            self.first_replaced = first
        self.replaced += count

    @classmethod
    def merged(cls, parts: Sequence[StreamWarnings]) -> StreamWarnings:
        """The warnings of consecutive parts of one input, as if read in one go."""
        merged = cls([line for part in parts for line in part.container])
        for part in parts:
            merged.add(part.listed)
            merged.hidden += part.hidden
            merged.add_replaced(part.replaced, part.first_replaced)
        return merged

    def lines(self) -> list[str]:
        more = [f"... and {self.hidden:,} more like these"] if self.hidden else []
        replaced = replacement_warning(self.replaced, self.first_replaced)
        return [*self.container, *self.listed, *more, *replaced]

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...

    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self.lines()[index]

    def __len__(self) -> int:
        return len(self.lines())


def documents_from_jsonl_stream(
    path: str,
    source: str,
    chunks: Iterator[str],
    fields: RecordFields,
    warnings: StreamWarnings,
    first_line: int = 0,
) -> Iterator[Document]:
    """A large JSON Lines file (or a slice of one, whose first line is record ``first_line``),
    a record at a time; problems are added to ``warnings``."""

    def lines() -> Iterator[tuple[int, str, Any]]:
        pending = ""
        index = first_line
        for chunk in chunks:
            *complete, pending = (pending + chunk).split("\n")
            for line in complete:
                yield from _parsed(index, line)
                index += 1
        yield from _parsed(index, pending)

    def _parsed(index: int, line: str) -> Iterator[tuple[int, str, Any]]:
        if not line.strip():
            return
        try:
            yield index, _line(index), json.loads(line)
        except json.JSONDecodeError as error:
            warnings.add([f"{_line(index)}: not valid JSON ({error.msg}), skipped"])

    for index, where, record in lines():
        documents, problems = documents_from_records(path, source, [(index, where, record)], fields)
        warnings.add(problems)
        yield from documents


def _line(index: int) -> str:
    """Where a JSON Lines record is, for people: the report's 0-based record number, and the
    1-based line an editor shows."""
    return f"record {index} (line {index + 1})"


def documents_from_json(
    path: str, source: str, decoded: Decoded, fields: RecordFields
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
    records = ((index, f"record {index}", record) for index, record in enumerate(data))
    return documents_from_records(path, source, records, fields)
