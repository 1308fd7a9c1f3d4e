"""A file written again without some of its documents, in its own format and encoding.

A text file loses the chapters (heading and all) that hold the removed documents; a JSON Lines,
JSON, CSV, TSV or Parquet file loses the records all of whose text is removed, and a record
with only some chapters removed has its text field written again without them, every other
field and every other record as they were (byte for byte, but in JSON and Parquet, which are
written again whole). A compressed file is written back compressed the same way, a zip archive
as a zip. HTML and EPUB are not rewritten yet: the caller copies them unchanged and says so.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from dedup.config import ScanConfig
from dedup.display import shown
from dedup.models import Chapter, Document, MatchedDocument
from dedup.read import FoundFile
from dedup.read.decode import BOMS, Decoded, decode_bytes
from dedup.read.discover import COMPRESSIONS, FORMATS
from dedup.read.zip import entry_path
from dedup.segment import split_chapters

REWRITTEN_FORMATS = ("txt", "jsonl", "json", "csv", "tsv", "parquet")


class _Zstandard:
    """zstandard (the zstd extra) with the gzip module's two calls."""

    @staticmethod
    def decompress(data: bytes) -> bytes:
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as reader:
            return reader.read()

    @staticmethod
    def compress(data: bytes) -> bytes:
        import zstandard

        return zstandard.ZstdCompressor().compress(data)


# By FoundFile.compression, its dot apart.
_COMPRESSORS: dict[str, Any] = {"gz": gzip, "bz2": bz2, "xz": lzma, "zst": _Zstandard}


@dataclass(frozen=True, slots=True)
class Cut:
    """A stretch of a file's decoded text (of a record's text field, for a record) to leave
    out, ``text[start:end]``, which must still read ``expected`` (else the file changed since
    it was scanned); with ``chapter``, the whole chapter (section) holding it, heading and all."""

    path: str  # the document's: a file, or an archive's entry (``archive.zip!/inner``)
    record: int | None
    start: int
    end: int
    expected: str
    chapter: bool

    @classmethod
    def of_document(cls, document: MatchedDocument) -> Cut:
        return cls(
            document.path, document.record, document.start, document.end, document.text, True
        )


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The file's new bytes (None: nothing of it is left, so it is not written), and the
    characters taken out of its decoded text."""

    data: bytes | None
    removed_chars: int


class CannotRewrite(Exception):
    """This file cannot be written again without its duplicates; the message says why."""


def can_rewrite(file: FoundFile) -> bool:
    if file.format == "zip":
        return file.compression is None
    return file.format in REWRITTEN_FORMATS and (
        file.compression is None or _compressor(file) is not None
    )


def _compressor(file: FoundFile) -> Any:
    return _COMPRESSORS.get((file.compression or "").lstrip("."))


def rewrite(file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig) -> Rewritten:
    """``data`` (the file's bytes) without the stretches ``removed``."""
    if file.format == "zip":
        return _archive_without(file, data, removed, config)
    compressor = _compressor(file)
    if file.compression is not None:
        if compressor is None:
            raise CannotRewrite(f"{file.compression} files are not rewritten")
        data = compressor.decompress(data)
    if file.format == "txt":
        result = _text_without(file, data, removed, config)
    elif file.format == "jsonl":
        result = _records_without(file, data, removed, config)
    elif file.format == "parquet":
        result = _table_without(file, data, removed, config)
    elif file.format == "json":
        result = _array_without(file, data, removed, config)
    elif file.format in ("csv", "tsv"):
        result = _rows_without(file, data, removed, config, "\t" if file.format == "tsv" else ",")
    else:
        raise CannotRewrite(f"{file.format} files are not rewritten")
    if result.data is not None and compressor is not None:
        # mtime 0: the same input gives the same bytes, run after run
        packed = (
            gzip.compress(result.data, mtime=0)
            if compressor is gzip
            else compressor.compress(result.data)
        )
        return Rewritten(packed, result.removed_chars)
    return result


def _encoded(text: str, original: bytes, encoding: str) -> bytes:
    """``text`` in the file's own encoding, with the byte-order mark it began with."""
    for bom, bom_encoding in BOMS:
        if original.startswith(bom) and encoding in (bom_encoding, "utf-8-sig"):
            codec = "utf-8" if bom_encoding == "utf-8-sig" else bom_encoding
            return bom + text.encode(codec)
    return text.encode(encoding)


def _cut(text: str, path: str, source: str, record: int | None,
         removed: Sequence[Cut]) -> tuple[str, int]:  # fmt: skip
    """``text`` without the stretches ``removed`` (a chapter cut: the chapter holding it),
    and how many characters went."""
    for cut in removed:
        if text[cut.start : cut.end] != cut.expected:
            raise CannotRewrite(
                "its text is no longer what was scanned (it changed since); scan it again"
            )
    chapters = split_chapters(Document(path, source, record, text))
    spans = sorted(
        _holder(chapters, cut, len(text)) if cut.chapter else (cut.start, cut.end)
        for cut in removed
    )
    kept, at, gone = [], 0, 0
    for start, end in spans:
        start = max(start, at)  # overlapping stretches are cut once
        if start >= end:
            continue
        kept.append(text[at:start])
        gone += end - start
        at = end
    kept.append(text[at:])
    return "".join(kept), gone


def _holder(chapters: Sequence[Chapter], cut: Cut, length: int) -> tuple[int, int]:
    """The span of the chapter that holds ``cut`` (all of the text if none does)."""
    for chapter in chapters:
        if chapter.start <= cut.start and cut.end <= chapter.end:
            return chapter.start, chapter.end
    return 0, length


def _decoded(data: bytes, config: ScanConfig) -> Decoded:
    """The file's text, as the scan decoded it; one that took replacement characters would
    not be written back as it was."""
    decoded = decode_bytes(data, config.encoding, config.errors)
    if decoded.replaced:
        raise CannotRewrite("it decodes only with replacement characters (--errors replace)")
    return decoded


def _by_record(removed: Sequence[Cut]) -> dict[int, list[Cut]]:
    by_record: dict[int, list[Cut]] = {}
    for cut in removed:
        if cut.record is not None:
            by_record.setdefault(cut.record, []).append(cut)
    return by_record


def _record_cut(
    record: dict[str, Any], number: int, cuts: Sequence[Cut], file: FoundFile, config: ScanConfig
) -> tuple[dict[str, Any] | None, int]:
    """A record with its text field (the first of ``--text-field``'s that holds text, as the
    reader takes it) cut, or None when nothing of its text is left; and the characters cut."""
    field = next((name for name in config.text_fields if isinstance(record.get(name), str)), None)
    if field is None:
        raise CannotRewrite(f"record {number} has none of the text fields any more")
    text, cut_chars = _cut(record[field], file.path, file.source, number, cuts)
    return ({**record, field: text} if text.strip() else None), cut_chars


def _text_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig
) -> Rewritten:
    decoded = _decoded(data, config)
    text, gone = _cut(decoded.text, file.path, file.source, None, removed)
    if not text.strip():
        return Rewritten(None, gone)
    return Rewritten(_encoded(text, data, decoded.encoding), gone)


def _records_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig
) -> Rewritten:
    decoded = _decoded(data, config)
    # Lines as JSON Lines counts them: at "\n" only (a record may hold U+2028 and the like,
    # which str.splitlines would split at too).
    lines = [line + "\n" for line in decoded.text.split("\n")]
    lines[-1] = lines[-1][:-1]
    by_record = _by_record(removed)
    gone = 0
    for number, documents in sorted(by_record.items()):
        if number >= len(lines):
            raise CannotRewrite(f"record {number} is not on line {number + 1} any more")
        line = lines[number]
        ending = line[len(line.rstrip("\r\n")) :]
        record, cut_chars = _record_cut(json.loads(line), number, documents, file, config)
        gone += cut_chars
        lines[number] = "" if record is None else json.dumps(record, ensure_ascii=False) + ending
    out = "".join(lines)
    if not out.strip():
        return Rewritten(None, gone)
    return Rewritten(_encoded(out, data, decoded.encoding), gone)


def _rows_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig, delimiter: str
) -> Rewritten:
    """A CSV or TSV table without the rows whose text is all removed (the others' text
    field cut), every other row as its bytes were: each row is the physical lines the csv
    module read it from, and rows are counted as the reader counts records."""
    decoded = _decoded(data, config)
    lines = io.StringIO(decoded.text, newline="").readlines()
    previous = csv.field_size_limit(sys.maxsize)
    try:
        reader = csv.DictReader(iter(lines), delimiter=delimiter)
        fieldnames = list(reader.fieldnames or [])
        header_end = reader.line_num
        rows: list[tuple[int, int, dict[str, str]]] = []
        while True:
            before = reader.line_num
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as error:
                raise CannotRewrite(f"line {reader.line_num} is not valid CSV ({error})") from error
            rows.append((before, reader.line_num, row))
    finally:
        csv.field_size_limit(previous)
    by_record = _by_record(removed)
    pieces = ["".join(lines[:header_end])]
    gone = left = 0
    for number, (first, last, row) in enumerate(rows):
        raw = "".join(lines[first:last])
        cuts = by_record.get(number)
        if not cuts:
            pieces.append(raw)
            left += 1
            continue
        record, cut_chars = _record_cut(row, number, cuts, file, config)
        gone += cut_chars
        if record is None:
            continue
        ending = raw[len(raw.rstrip("\r\n")) :] or "\n"
        out = io.StringIO()
        csv.DictWriter(out, fieldnames, delimiter=delimiter, lineterminator=ending).writerow(record)
        pieces.append(out.getvalue())
        left += 1
    pieces.append("".join(lines[rows[-1][1] if rows else header_end :]))
    if not left:
        return Rewritten(None, gone)
    return Rewritten(_encoded("".join(pieces), data, decoded.encoding), gone)


def _archive_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig
) -> Rewritten:
    """A zip archive with its entries written again without their removed stretches (an entry
    left with nothing is left out); every other entry as it was, with its name, date and
    compression."""
    by_entry: dict[str, list[Cut]] = {}
    for cut in removed:
        by_entry.setdefault(cut.path, []).append(cut)
    out = io.BytesIO()
    gone = kept = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive, zipfile.ZipFile(out, "w") as copy:
            seen: set[str] = set()
            for info in archive.infolist():
                where = entry_path(file.path, info.filename)
                content = archive.read(info)
                cuts = by_entry.get(where) if info.filename not in seen else None
                seen.add(info.filename)
                if cuts:
                    inner = _entry_file(where, info.filename, file.source)
                    if inner is None or not can_rewrite(inner):
                        raise CannotRewrite(f"its entry {shown(info.filename)} is not rewritten")
                    result = rewrite(inner, content, cuts, config)
                    gone += result.removed_chars
                    if result.data is None:
                        continue
                    content = result.data
                copy.writestr(info, content)
                kept += 1
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise CannotRewrite(f"the archive cannot be read whole ({error})") from error
    return Rewritten(out.getvalue() if kept else None, gone)


def _entry_file(where: str, name: str, source: str) -> FoundFile | None:
    """An archive entry as the file it would be on disk (its format by its name)."""
    suffixes = [suffix.lower() for suffix in PurePosixPath(name).suffixes[-2:]]
    compression = suffixes[-1] if suffixes and suffixes[-1] in COMPRESSIONS else None
    base = suffixes[-2] if compression and len(suffixes) == 2 else (suffixes or [""])[-1]
    entry_format = FORMATS.get(base)
    if entry_format is None:
        return None
    return FoundFile(where, source, entry_format, "", compression)


def _table_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig
) -> Rewritten:
    """A Parquet table without the rows whose text is all removed (the others' text field
    cut), every other column and row as it was, written with the compression it had."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise CannotRewrite(
            "writing Parquet needs pyarrow: pip install 'dedup[parquet]'"
        ) from error
    try:
        source = pq.ParquetFile(io.BytesIO(data))
        table = source.read()
        compression = (
            source.metadata.row_group(0).column(0).compression.lower()
            if source.metadata.num_row_groups
            else "snappy"
        )
    except Exception as error:  # pyarrow's own error types
        raise CannotRewrite(f"the table cannot be read whole ({error})") from error
    by_record = _by_record(removed)
    fields = [name for name in config.text_fields if name in table.schema.names]
    columns = {name: table.column(name).to_pylist() for name in fields}
    keep = [True] * table.num_rows
    gone = 0
    for number, cuts in sorted(by_record.items()):
        if number >= table.num_rows:
            raise CannotRewrite(f"record {number} is not in the table any more")
        row = {name: columns[name][number] for name in fields}
        record, cut_chars = _record_cut(row, number, cuts, file, config)
        gone += cut_chars
        if record is None:
            keep[number] = False
            continue
        for name in fields:
            columns[name][number] = record[name]
    for name in fields:
        position = table.schema.get_field_index(name)
        values = pa.array(columns[name], type=table.schema.field(name).type)
        table = table.set_column(position, table.schema.field(name), values)
    table = table.filter(pa.array(keep))
    if table.num_rows == 0:
        return Rewritten(None, gone)
    out = io.BytesIO()
    pq.write_table(table, out, compression=compression if compression != "uncompressed" else "none")
    return Rewritten(out.getvalue(), gone)


def _array_without(
    file: FoundFile, data: bytes, removed: Sequence[Cut], config: ScanConfig
) -> Rewritten:
    """A JSON file (an array of records, or one record) without the records whose text is all
    removed (the others' text field cut), every other field kept; written again whole, as
    compact or as indented (2 spaces) as it was."""
    decoded = _decoded(data, config)
    try:
        parsed = json.loads(decoded.text)
    except json.JSONDecodeError as error:
        raise CannotRewrite(f"it is no longer valid JSON ({error.msg})") from error
    one = isinstance(parsed, dict)
    records = [parsed] if one else parsed
    if not isinstance(records, list):
        raise CannotRewrite("it holds neither an object nor a list of objects any more")
    by_record = _by_record(removed)
    kept: list[Any] = []
    gone = 0
    for number, record in enumerate(records):
        cuts = by_record.get(number)
        if not cuts:
            kept.append(record)
            continue
        cut_record, cut_chars = _record_cut(record, number, cuts, file, config)
        gone += cut_chars
        if cut_record is not None:
            kept.append(cut_record)
    if not kept:
        return Rewritten(None, gone)
    indent = 2 if "\n" in decoded.text.strip() else None
    out = json.dumps(kept[0] if one else kept, ensure_ascii=False, indent=indent)
    ending = "\n" if decoded.text.endswith("\n") else ""
    return Rewritten(_encoded(out + ending, data, decoded.encoding), gone)
