"""Rows kept on disk a block at a time (``dedup.spool.RowSpool``), and the tables of a row a
file built on them: what they hold in memory, and that they read back what was appended."""

from __future__ import annotations

import os
import pickle
import random
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dedup.cli import cli
from dedup.errors import ScratchSpaceError
from dedup.models import InputFile, InputFiles
from dedup.read import discover_inputs
from dedup.read.discover import FoundFiles
from dedup.spool import ArraySpool, KeyParts, RowSpool
from tests.test_cli import _run_main


def _rows(count: int) -> list[bytes]:
    """Rows of every length from 0 to 40 bytes, as a file's row of a table is."""
    pick = random.Random(21)
    return [f"第{row}页".encode() + pick.randbytes(pick.randrange(30)) for row in range(count)]


def test_rows_read_back_as_appended_across_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows come back as they were appended, by number in any order, from blocks written and
    from the one being filled: an empty row, negative numbers, slices, an IndexError past
    the end, the rows pickled (another process cannot read this one's file)."""
    monkeypatch.setattr(RowSpool, "block_bytes", 200)
    rows = [b"", *_rows(3000)]
    spool = RowSpool()
    for number, row in enumerate(rows):
        assert spool.append(row) == number
    assert len(spool) == len(rows) and list(spool) == rows
    order = list(range(len(rows)))
    random.Random(5).shuffle(order)
    assert [spool[row] for row in order] == [rows[row] for row in order]
    assert spool[-1] == rows[-1] and spool[-len(rows)] == b""
    assert spool[10:2000:7] == tuple(rows[10:2000:7])
    with pytest.raises(IndexError):
        spool[len(rows)]
    assert list(pickle.loads(pickle.dumps(spool))) == rows
    assert spool._places[-1] > 100 * 200  # the rows were written to blocks
    # A row larger than a megabyte, a block of its own, is read each time, not kept.
    large = bytes(range(256)) * 5000
    spool.append(large)
    spool.append(b"after")
    assert spool[-2] == large and spool[-2] == large and spool[-1] == b"after"
    assert all(len(data) < 1 << 20 for _ends, data in spool._read.values())


def test_rows_are_held_on_disk_not_in_memory() -> None:
    """Half a million rows of a file's size (12 MB) leave a few blocks in memory."""
    rows = _rows(500_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        spool = RowSpool(rows)
        assert spool[123_456] == rows[123_456] and spool[-1] == rows[-1]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    size = sum(map(len, rows))
    assert size > 10_000_000
    assert held < 20 * RowSpool.block_bytes  # the one filled, the few read, the blocks' places
    assert list(spool) == rows


def test_a_forked_copy_that_appends_writes_a_file_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process forked while a spool is filled shares its file; rows it appends after go to
    a file of its own, so that neither writes over the other's blocks."""
    monkeypatch.setattr(RowSpool, "block_bytes", 100)
    rows = _rows(400)
    spool = RowSpool(rows[:200])
    child = os.fork()
    if child == 0:  # pragma: no cover  # the child reports by its exit status
        try:
            for row in reversed(rows[200:]):
                spool.append(row)
            good = list(spool) == rows[:200] + rows[200:][::-1]
        finally:
            os._exit(0 if good else 1)
    for row in rows[200:]:
        spool.append(row)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(spool) == rows


def test_a_folder_that_cannot_hold_the_rows_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """TMPDIR a folder that is not there: the error names it and says what to do."""
    monkeypatch.setattr(RowSpool, "block_bytes", 100)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    spool = RowSpool()
    with pytest.raises(ScratchSpaceError, match=r"gone.*set TMPDIR to a folder you can write"):
        for row in _rows(100):
            spool.append(row)


def test_tables_of_a_row_a_file_read_back_from_blocks(
    monkeypatch: pytest.MonkeyPatch, samples: Path
) -> None:
    """The found files and the report's entries, written a few rows a block, read back as
    the records they were made of."""
    monkeypatch.setattr(RowSpool, "block_bytes", 64)
    found = list(discover_inputs([str(samples)])[0]) * 40
    files = FoundFiles(found)
    assert list(files) == found and files[-3] == found[-3]
    assert files._rows._places[-1] > 0


def test_a_scan_with_its_tables_on_disk_writes_the_same_report(
    monkeypatch: pytest.MonkeyPatch, samples: Path, tmp_path: Path
) -> None:
    """A scan whose tables of a row a file or a run are written a row or two a block (as a crawl's
    millions are) writes report.json byte for byte as one that held them in memory; with
    TMPDIR where nothing can be written, it stops with a clear error and writes no report."""
    runner = CliRunner()
    args = ["scan", str(samples), "--quiet", "-j", "1"]
    held = runner.invoke(cli, [*args, "-o", str(tmp_path / "held")])
    assert held.exit_code == 0, held.output
    monkeypatch.setattr(RowSpool, "block_bytes", 16)
    monkeypatch.setattr(ArraySpool, "block_bytes", 16)  # the runs' bytes: two rows a block
    spooled = runner.invoke(cli, [*args, "-o", str(tmp_path / "spooled")])
    assert spooled.exit_code == 0, spooled.output
    assert (tmp_path / "spooled" / "report.json").read_bytes() == (
        tmp_path / "held" / "report.json"
    ).read_bytes()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    status, errors = _run_main([*args, "-o", str(tmp_path / "failed")], monkeypatch)
    assert status == 1
    assert errors.startswith("dedup: error: cannot write the scan's table of its files to ")
    assert "gone (No such file or directory); set TMPDIR to a folder you can write" in errors
    assert not (tmp_path / "failed").exists()


def test_input_files_read_back_from_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Report entries read back from written blocks equal those appended."""
    monkeypatch.setattr(RowSpool, "block_bytes", 64)
    entries = [
        InputFile(f"站{n % 3}/书/第{n}页.txt", f"站{n % 3}", "txt", "utf-8", 1, n % 4, n, ())
        for n in range(300)
    ]
    table = InputFiles(entries)
    assert list(table) == entries and table._rows._places[-1] > 0


def test_array_rows_taken_back_as_appended(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows appended in parts of any size (none, less than a block, many blocks) are taken
    back by their numbers, in any order and repeated, from blocks written and from those
    not written yet; a number past the end is an IndexError; pickled, the rows go."""
    monkeypatch.setattr(ArraySpool, "block_bytes", 80)  # ten rows of two int32
    pick = np.random.default_rng(8)
    parts = [pick.integers(-(2**31), 2**31, size=(size, 2)) for size in (0, 3, 25, 1, 0, 64, 7)]
    rows = np.concatenate(parts).astype(np.int32)
    spool = ArraySpool(np.int32, 2)
    for part in parts:
        spool.append(part)
    assert len(spool) == len(rows) == 100
    wanted = np.concatenate([pick.permutation(len(rows)), [99, 0, 99, 95, 95]])
    assert np.array_equal(spool.take(wanted), rows[wanted])
    assert spool.take(np.empty(0, dtype=np.int64)).shape == (0, 2)
    assert spool.take(np.array([98])).dtype == np.int32
    with pytest.raises(IndexError):
        spool.take(np.array([3, 100]))
    with pytest.raises(IndexError):
        spool.take(np.array([-1]))
    again = pickle.loads(pickle.dumps(spool))
    assert np.array_equal(again.take(np.arange(100)), rows)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 30), max_size=8),
    wanted=st.lists(st.integers(-5, 400), max_size=40),
    step=st.integers(0, 3),
)
def test_array_rows_searched_by_a_sorted_column_as_a_whole_column_is(
    sizes: list[int], wanted: list[int], step: int
) -> None:
    """``search`` finds, a block at a time, the last row whose number in a column that goes
    up (or stays) is at most each value, -1 before the first: as a search of the whole
    column does, from blocks written and from those not written yet."""
    pick = np.random.default_rng(sum(sizes) + step)
    column = np.cumsum(pick.integers(0, step + 1, size=sum(sizes)))
    rows = np.column_stack((pick.integers(0, 9, size=len(column)), column))
    spool = _ThreeRowsABlock(np.int64, 2)
    for low, size in zip(np.cumsum([0, *sizes]).tolist(), sizes, strict=False):
        spool.append(rows[low : low + size])
    values = np.array(wanted, dtype=np.int64)
    found = spool.search(1, values)
    assert np.array_equal(found, np.searchsorted(column, values, side="right") - 1)
    assert found.dtype == np.int64


class _ThreeRowsABlock(ArraySpool):
    """A spool of small blocks (a class of its own: hypothesis runs a test many times in one
    fixture's life)."""

    block_bytes = 16 * 3


def test_array_rows_are_held_on_disk_not_in_memory() -> None:
    """Two million rows of two int32 (16 MB) leave less than a block in memory."""
    rows = np.arange(4_000_000, dtype=np.int32).reshape(-1, 2)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        spool = ArraySpool(np.int32, 2)
        for low in range(0, len(rows), 30_000):
            spool.append(rows[low : low + 30_000])
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 * ArraySpool.block_bytes
    picked = np.array([0, 1_999_999, 123_457, 65_536])
    assert np.array_equal(spool.take(picked), rows[picked])


def test_a_scan_that_fills_its_scratch_space_stops_with_a_clear_error(tmp_path: Path) -> None:
    """A real write that fails part way (the file size limit, as a full disk fails it): the
    scan exits 1 naming TMPDIR and what to do, leaves no report, and no file behind."""
    dump = tmp_path / "dump" / "站"
    dump.mkdir(parents=True)
    for page in range(2000):  # enough found files' rows to fill a block
        (dump / f"第{page:05}页.txt").write_text("斗气大陆。" * 3, "utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def limited() -> None:  # a file grows to 4 KB at most; Python ignores SIGXFSZ
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    done = subprocess.run(
        [sys.executable, "-m", "dedup", "scan", str(dump.parent), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch)},
        preexec_fn=limited,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert f"dedup: error: cannot write the scan's table of its files to {scratch} " in (
        done.stderr
    )
    assert "File too large); free some space there, or set TMPDIR to a folder with room" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists() and not list(scratch.iterdir())


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=400), st.integers(1, 3))
def test_keys_another_equals_are_found_part_by_part(picks: list[int], block_keys: int) -> None:
    """Keys spread over the parts (hashes of paths, some equal) and over blocks written to
    disk: the numbers of those another equals, as sorting them all together finds them."""
    pool = [hash(f"/dump/站{number}/第{number}页.txt") for number in range(41)]
    keys = [pool[pick] for pick in picks]

    class Small(KeyParts):
        parts = 4

    Small.block_keys = block_keys
    held = Small()
    for key in keys:
        held.append(key)
    expected = [number for number, key in enumerate(keys) if keys.count(key) > 1]
    assert held.shared().tolist() == expected and len(held) == len(keys)
    if len(keys) > 4 * 2 * block_keys:
        assert held._scratch.size > 0  # blocks were written, and read back


def test_keys_are_held_on_disk_not_in_memory() -> None:
    """A million keys (8 MB) leave the parts' blocks being filled in memory."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = KeyParts()
        for number in range(1_000_000):
            held.append(hash(f"/dump/站/第{number}页.txt"))
        held.append(hash("/dump/站/第7页.txt"))
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < KeyParts.parts * 16 * KeyParts.block_keys + 200_000
    assert held.shared().tolist() == [7, 1_000_000]
