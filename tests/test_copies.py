"""Copies a worker leaves out of what it hands back, and the scan's results either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dedup
from dedup import candidates
from dedup.config import ScanConfig
from dedup.engine import copies, tasks
from dedup.engine.copies import CopyFilter, forget_scan, new_scan
from dedup.normalize.opencc import convert
from dedup.read import discover_inputs
from dedup.segment import text_hashes


def _keep(scan: str, file_number: int, texts: list[str]) -> list[bool]:
    kept: list[bool] = CopyFilter(scan, file_number).keep(text_hashes(texts)).tolist()
    return kept


def test_a_text_is_handed_back_once_unless_seen_in_an_earlier_file_later() -> None:
    scan = new_scan()
    try:
        assert _keep(scan, 3, ["天地玄黄", "宇宙洪荒", "天地玄黄"]) == [True, True, False]
        assert _keep(scan, 5, ["宇宙洪荒", "日月盈昃"]) == [False, True]
        # File 1 reached this worker after file 3: its copy is the first one, so it goes back.
        assert _keep(scan, 1, ["天地玄黄", "辰宿列张"]) == [True, True]
        assert _keep(scan, 2, ["天地玄黄"]) == [False]
        assert _keep(new_scan(), 9, ["天地玄黄"]) == [True]  # another scan knows nothing
    finally:
        forget_scan(scan)


def test_the_table_grows_and_a_full_one_hands_everything_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(copies, "_FIRST_SLOTS", 4)
    monkeypatch.setattr(copies, "_MOST_SLOTS", 16)
    scan = new_scan()
    try:
        texts = [f"第{number}回" for number in range(20)]
        assert _keep(scan, 0, texts) == [True] * 20
        # Eight fit (half the slots): those are known, the rest keep being handed back.
        assert _keep(scan, 1, texts) == [False] * 8 + [True] * 12
    finally:
        forget_scan(scan)


def _dump(tmp_path: Path, seed_simplified: str, hongloumeng_simplified: str) -> Path:
    """Sites copying the same chapters whole (exact copies after normalization, one site in
    Traditional), and one with a scene of its own."""
    book = hongloumeng_simplified[:20000]
    traditional = convert(book, ("s2t",))
    for site, text in (
        ("a", book),
        ("b", book),
        ("c", traditional),
        ("d", seed_simplified + book[5000:9000]),
        ("e", book[:12000]),
    ):
        (tmp_path / site).mkdir()
        (tmp_path / site / "book.txt").write_text(text, "utf-8")
    return tmp_path


def test_a_scan_gives_the_same_report_with_copies_left_out(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    seed_simplified: str,
    hongloumeng_simplified: str,
) -> None:
    dump = _dump(tmp_path, seed_simplified, hongloumeng_simplified)
    # Copies really are left out: the second site's passages come back without their texts.
    files = discover_inputs([str(dump)])[0]
    scan = new_scan()
    try:
        handed = [
            tasks.prepare_file(file, ScanConfig(), copies=CopyFilter(scan, number))
            for number, file in enumerate(files)
        ]
    finally:
        forget_scan(scan)
    normalized = [item.normalized.texts() for result in handed for item in result.inputs]
    assert None not in normalized[0]
    assert set(normalized[1]) == {None}
    left_out = dedup.scan([str(dump)], jobs=2)
    assert left_out.clusters

    def every_text(self: CopyFilter, hashes: Any) -> Any:
        return np.ones(len(hashes), dtype=np.bool_)

    monkeypatch.setattr(CopyFilter, "keep", every_text)
    for jobs in (1, 2):
        assert dedup.scan([str(dump)], jobs=jobs).to_json() == left_out.to_json()


def test_the_first_copy_comes_with_its_text_whatever_order_files_are_prepared_in(
    tmp_path: Path, seed_simplified: str, hongloumeng_simplified: str
) -> None:
    dump = _dump(tmp_path, seed_simplified, hongloumeng_simplified)
    files = discover_inputs([str(dump)])[0]
    scan = new_scan()
    try:
        # One worker given the files last to first.
        backwards = {
            number: tasks.prepare_file(files[number], ScanConfig(), copies=CopyFilter(scan, number))
            for number in reversed(range(len(files)))
        }
    finally:
        forget_scan(scan)
    items = [item for number in range(len(files)) for item in backwards[number].inputs]
    texts = [text for item in items for text in item.normalized.texts()]
    hashes = np.concatenate([item.hashes for item in items])
    distinct, links = candidates.exact_copies(texts, hashes)
    assert len(links) > len(distinct) / 2
    assert all(texts[index] is not None for index in distinct.tolist())
