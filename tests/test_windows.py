"""One input's chapters normalized in batches and cut into passage windows (dedup.windows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dedup
from dedup import windows


@pytest.mark.parametrize("source_field", [False, True])
def test_records_are_normalized_in_batches_across_documents_as_one_at_a_time(
    mirror_dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source_field: bool
) -> None:
    """A JSON Lines file of a record a page (as aggregators and training sets keep text):
    its records' chapters are normalized together, in batches that reach across records of
    a source (the lines it repeats are dropped from each), and the scan is the same as with
    a record at a time. With a source a record (``--source-field``), the records of the
    sites come interleaved, so that a batch ends where the source's repeated lines change."""
    pages = sorted(mirror_dump.glob("*/*.txt"), key=lambda page: (page.stem, page.parent.name))
    records = [
        json.dumps({"site": page.parent.name, "title": page.stem, "text": page.read_text()})
        for page in pages
    ]
    for number, part in enumerate((records[: len(records) // 2], records[len(records) // 2 :])):
        (tmp_path / f"site-{number}").mkdir()
        (tmp_path / f"site-{number}" / "pages.jsonl").write_text("\n".join(part) + "\n")
    options: dict[str, Any] = {"jobs": 1}
    if source_field:
        options["source_fields"] = ("site",)
    calls = []
    normalize_many = windows.normalize_many

    def counted(texts: list[str], config: Any) -> Any:
        calls.append((len(texts), config.repeated_lines))
        return normalize_many(texts, config)

    monkeypatch.setattr(windows, "normalize_many", counted)
    batched = dedup.scan([tmp_path], **options)
    in_batches = list(calls)
    calls.clear()
    monkeypatch.setattr(windows, "BATCH_CHARS", 0)  # each chapter alone, as before batches
    alone = dedup.scan([tmp_path], **options)
    assert batched.to_json() == alone.to_json()
    assert len(records) > 200 and len(alone.matches) > 20
    assert sum(texts for texts, _lines in calls) == sum(texts for texts, _lines in in_batches)
    assert len(calls) >= len(records)
    if not source_field:
        assert len(in_batches) < len(records) / 4
    else:  # a batch ends at each record of another site's lines: fewer batches all the same
        assert sum(1 for _texts, lines in in_batches if lines) > 10  # the sites' lines learned
        assert len({lines for _texts, lines in in_batches}) >= 2
        assert len(in_batches) < 0.8 * len(calls)
