"""What the driver makes of the workers' results as they arrive (dedup.engine.gather)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dedup.columns import SpanTable
from dedup.config import ScanConfig
from dedup.engine.gather import JoinedParts
from dedup.engine.tasks import prepare_file
from dedup.read import discover_inputs


def test_parts_joined_as_they_come_are_all_the_parts_in_order_each_copied_a_few_times() -> None:
    copied = []

    def join(parts: list[np.ndarray]) -> np.ndarray:
        copied.append(sum(len(part) for part in parts))
        return np.concatenate(parts)

    parts = [np.arange(number, number + 3) for number in range(0, 3 * 1000, 3)]
    joined = JoinedParts(join)
    for part in parts:
        joined.append(part)
    assert np.array_equal(joined.joined(np.empty(0, np.int64)), np.arange(3000))
    # A binary counter's carries: each row copied once a level (1,000 parts, 32 a join: 31
    # joins of parts, then 5 levels of joins of joins, then the last), not once a part after it.
    assert sum(copied) <= 3000 * 7
    assert len(JoinedParts(join).joined(np.empty(0, np.int64))) == 0


def test_span_tables_joined_as_they_come_are_the_table_of_all(samples: Path) -> None:
    config = ScanConfig()
    files, _skipped = discover_inputs([str(samples)])
    tables = [
        item.passages for file in files for item in prepare_file(file, config, {}).inputs
    ] * 20  # as many parts as a dump of some hundreds of files
    joined = JoinedParts(SpanTable.concatenate)
    for table in tables:
        joined.append(table)
    whole = SpanTable.concatenate(tables)
    assert len(whole) > 2000 and len(tables) > 2 * 32
    assert list(joined.joined(SpanTable.concatenate([]))) == list(whole)
