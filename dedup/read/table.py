"""Tables data people keep corpora in: CSV, TSV and Parquet, one record per row."""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from dedup.errors import TableError
from dedup.read.decode import Decoded


def csv_rows(
    decoded: Decoded, delimiter: str, warnings: list[str]
) -> Iterator[tuple[int, str, Any]]:
    """(row index, where, row as a dict); a malformed row is a warning, the rest is read."""
    # A whole chapter in one cell is the normal case; the limit is the csv module's, for the
    # whole process, so it is put back as it was once the rows are read.
    previous = csv.field_size_limit(sys.maxsize)
    try:
        reader = csv.DictReader(io.StringIO(decoded.text, newline=""), delimiter=delimiter)
        index = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                warnings.append(f"line {reader.line_num}: not valid CSV ({error}), skipped")
                continue
            yield index, f"record {index} (line {reader.line_num})", row
            index += 1
    finally:
        csv.field_size_limit(previous)


def parquet_rows(data: bytes, wanted: Sequence[str]) -> Iterator[tuple[int, str, Any]]:
    try:
        import pyarrow.parquet
    except ImportError as error:
        raise TableError("reading Parquet needs pyarrow: pip install 'dedup[parquet]'") from error
    try:
        table = pyarrow.parquet.ParquetFile(io.BytesIO(data))
    except Exception as error:  # pyarrow raises its own ArrowInvalid and OSError types
        raise TableError(f"not a readable Parquet file ({error})") from error
    columns = [name for name in table.schema_arrow.names if name in wanted]
    index = 0
    for batch in table.iter_batches(columns=columns, batch_size=1024):
        for row in batch.to_pylist():
            yield index, f"record {index}", row
            index += 1
