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


def _per_document(results: list[Any]) -> dict[str, Any]:
    """The learn pass's line counts as it made them before batches: each document's chapters
    keyed alone, merged by source in order."""
    from dedup.codepoints import code_points
    from dedup.normalize.repeated_lines import chapter_lines, merged_line_counts
    from dedup.segment import split_chapters

    found = []
    for result in results:
        for document in result.documents:
            codes = code_points(document.text)
            chapters = split_chapters(document, codes=codes)
            found.append({document.source: chapter_lines(codes, chapters)})
    return merged_line_counts(found)


@pytest.mark.parametrize("batch_chars", [65536, 5000])
@pytest.mark.parametrize("source_field", [False, True])
def test_the_learn_pass_keys_records_in_batches_as_one_at_a_time(
    mirror_dump: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    batch_chars: int,
    source_field: bool,
) -> None:
    """The learn pass keys the lines of consecutive documents of a source together (their
    texts joined by a line end): the distinct chapters and their lines are those of each
    document keyed alone and merged in order, batches of many records or of a few, and
    with a source a record, interleaved."""
    import numpy as np

    from dedup.config import ScanConfig
    from dedup.normalize import repeated_lines
    from dedup.read import discover_inputs, read_file

    pages = sorted(mirror_dump.glob("*/*.txt"), key=lambda page: (page.stem, page.parent.name))
    # Trailing line ends or none, and a record of blank lines: documents end either way.
    texts = [page.read_text().rstrip("\n") + "\n" * (n % 3) for n, page in enumerate(pages)]
    texts[5] = "\n\n"
    records = [
        json.dumps({"site": page.parent.name, "title": page.stem, "text": text})
        for page, text in zip(pages, texts, strict=True)
    ]
    (tmp_path / "pages.jsonl").write_text("\n".join(records) + "\n")
    config = ScanConfig(source_fields=("site",) if source_field else ())
    monkeypatch.setattr(repeated_lines, "BATCH_CHARS", batch_chars)
    ((found,), _skipped) = discover_inputs([str(tmp_path)])
    expected = _per_document(list(read_file(found, config)))
    keyed = []
    chapter_lines = repeated_lines.chapter_lines

    def counted(codes: Any, chapters: Any) -> Any:
        keyed.append(len(chapters))
        return chapter_lines(codes, chapters)

    monkeypatch.setattr(repeated_lines, "chapter_lines", counted)
    learned = repeated_lines.learn_lines(read_file(found, config))
    assert sum(keyed) >= len(records) - 1  # every chapter keyed (the blank record has none)
    if not source_field and batch_chars > 5000:
        assert len(keyed) < len(records) / 10
    assert list(learned.line_counts) == list(expected)
    assert len(expected) == (4 if source_field else 1)
    for source, lines in expected.items():
        got = learned.line_counts[source]
        assert len(lines.chapters) > 10
        for field in ("chapters", "pair_chapters", "pair_keys"):
            assert np.array_equal(getattr(got, field), getattr(lines, field)), (source, field)
