"""A pass's calls over files cut into batches of consecutive calls, a task each, by both
engines (dedup.engine.batches): a dump of a page a file is tens of thousands of files."""

from __future__ import annotations

import os
from dataclasses import replace
from itertools import repeat
from pathlib import Path

import pytest

import dedup
from dedup.config import ScanConfig
from dedup.engine import dask_cluster, local
from dedup.engine.batches import (
    EachMade,
    FileParts,
    PassCalls,
    TaskFiles,
    batches_in_pieces,
    call_bytes,
    file_batches,
)
from dedup.engine.local import LocalEngine
from dedup.read import FoundFile, FoundFiles, discover_inputs
from dedup.read.slices import FileSlice

ENGINES = {
    "local": (local._BATCH_BYTES, local._BATCHES_PER_WORKER),
    "dask": (dask_cluster._BATCH_BYTES, dask_cluster._BATCHES_PER_THREAD),
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_small_files_go_in_batches_and_slices_alone(mirror_dump: Path, engine: str) -> None:
    """Small files together up to the batch's bytes, enough batches for every worker, and a
    call of a slice of a file (whose kept passages must be its own) or of a file of unknown
    size alone."""
    most_bytes, per_thread = ENGINES[engine]
    files, _skipped = discover_inputs([str(mirror_dump)], False)
    config = ScanConfig()
    calls = [(file, config, None) for file in files]
    sizes = [file.stamp[0] for file in files if file.stamp is not None]
    assert len(sizes) == len(files) > 200
    for threads in (1, 2, 8):
        batches = file_batches(_sizes(calls), threads, most_bytes, per_thread)
        assert [n for batch in batches for n in batch] == list(range(len(calls)))
        assert len(batches) >= per_thread * threads  # the last ones end together
        assert len(batches) < len(calls) / 2  # but many files a task
        limit = min(most_bytes, sum(sizes) // (per_thread * threads))
        assert all(sum(sizes[n] for n in batch) <= limit for batch in batches if len(batch) > 1)
    whole = (files[3], config, None)
    sliced = (files[4], config, FileSlice(0, 100, "utf-8"))
    unknown = (replace(files[5], stamp=None), config, None)
    mixed = [*calls[:3], sliced, sliced, whole, unknown, *calls[6:9]]
    batches = file_batches(_sizes(mixed), 1, most_bytes, per_thread)
    for alone in (3, 4, 6):
        assert range(alone, alone + 1) in batches
    assert [n for batch in batches for n in batch] == list(range(len(mixed)))


def test_a_batch_is_cut_into_pieces_of_files_its_results_are_taken_by(mirror_dump: Path) -> None:
    """A pass whose workers keep what they make has larger batches (the client holds futures
    a batch); what comes back of one is taken a piece at a time, each piece consecutive files
    of the batch up to the smaller bytes, slices alone."""
    files, _skipped = discover_inputs([str(mirror_dump)], False)
    config = ScanConfig()
    calls = [(file, config, None) for file in files]
    sizes = [file.stamp[0] for file in files if file.stamp is not None]
    piece_bytes = max(sizes) * 3
    sliced = (files[4], config, FileSlice(0, 100, "utf-8"))
    calls[40] = sliced
    batches, pieces = batches_in_pieces(_sizes(calls), 1, piece_bytes * 4, 1, piece_bytes)
    assert batches == file_batches(_sizes(calls), 1, piece_bytes * 4, 1)
    assert len(batches) == len(pieces) > 3
    for batch, cut in zip(batches, pieces, strict=True):
        assert [n for piece in cut for n in piece] == list(batch)
        for piece in cut:
            assert piece == range(40, 41) or 40 not in piece
            if piece != range(40, 41):
                assert sum(sizes[n] for n in piece) <= piece_bytes
    assert max(len(cut) for cut in pieces) >= 3  # cut, not whole
    # Where the batches are no larger than a piece, a batch is its one piece.
    batches, pieces = batches_in_pieces(_sizes(calls), 1, piece_bytes, 1, piece_bytes)
    assert pieces == [[batch] for batch in batches]


def test_sizes_are_looked_at_once_each_as_batches_and_pieces_are_cut() -> None:
    """A pass's sizes are made as they are looked at (each a file's record read back from
    disk): one sweep cuts batches and pieces, and only the first batches' files are looked at
    again, for how large a batch is; every file is in one piece of one batch."""
    sizes = [1 << 20 if number % 70 else -1 for number in range(20_000)]
    looked: list[int] = []
    made = EachMade(len(sizes), lambda number: looked.append(number) or sizes[number])
    batches, pieces = batches_in_pieces(made, 2, 32 << 20, 4, 8 << 20)
    assert len(looked) < len(sizes) + 8 * 32 + 64
    assert [n for batch in batches for n in batch] == list(range(len(sizes)))
    for batch, cut in zip(batches, pieces, strict=True):
        assert [n for piece in cut for n in piece] == list(batch)
        assert all(
            len(piece) <= 8 and (len(piece) == 1 or -1 not in [sizes[n] for n in piece])
            for piece in cut
        )
    assert max(len(batch) for batch in batches) > 8  # batches of 32 MB, pieces of 8


def _sizes(calls: list[tuple[object, ...]]) -> list[int]:
    return [call_bytes(call) for call in calls]


def test_calls_given_their_parts_are_sized_by_their_files_alone(mirror_dump: Path) -> None:
    """A pass given its calls' parts as FileParts is sized from its files and which calls
    take a slice, without making the other arguments: the same sizes as each call made
    whole gives, slices and files of unknown size -1."""
    files, _skipped = discover_inputs([str(mirror_dump)], False)
    files = [*files[:30], replace(files[30], stamp=None), *files[31:60]]
    slices = {4: FileSlice(0, 100, "utf-8"), 5: FileSlice(100, 200, "utf-8"), 40: None}
    config = ScanConfig()
    made: list[int] = []

    def chapters(number: int) -> int:
        made.append(number)
        return number

    def parts() -> FileParts:
        return FileParts(len(files), slices.get, lambda n: slices.get(n) is not None)

    given = PassCalls([files, repeat(config), EachMade(len(files), chapters), parts()])
    sizes = given.file_bytes()
    assert made == [0]  # the first call, made to find its file
    whole = [call_bytes(call) for call in given]
    assert list(sizes) == whole
    assert whole[4] == whole[5] == whole[30] == -1 and whole[40] == files[40].stamp[0] > 0
    assert sum(size > 0 for size in whole) == len(files) - 3
    # Parts not given as FileParts: each call is made whole for its size.
    plain = PassCalls([files, repeat(config), [slices.get(n) for n in range(len(files))]])
    assert list(plain.file_bytes()) == whole


def test_a_tasks_found_files_are_sized_without_making_their_records(
    mirror_dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass's files given as TaskFiles over found files' rows (FoundFiles, as discovery
    keeps them) are sized from their rows: the sizes each file made gives, a file found
    without a stamp -1, and no record made for it."""
    found, _skipped = discover_inputs([str(mirror_dump)], False)
    listed = [*found[:20], replace(found[20], stamp=None), *found[21:40]]
    rows = FoundFiles(listed)
    tasks = [3, 3, 20, *range(40), 39]  # a file's slices are tasks of one file each
    parts = FileParts(len(tasks), lambda task: None, lambda task: task < 2)
    expected = [-1, -1, -1, *(call_bytes((file,)) for file in listed), listed[39].stamp[0]]
    made: list[int] = []
    making = FoundFiles._row

    def counted(self: FoundFiles, row: int) -> FoundFile:
        made.append(row)
        return making(self, row)

    monkeypatch.setattr(FoundFiles, "_row", counted)
    for files in (rows, listed):
        made.clear()
        calls = PassCalls([TaskFiles(files, tasks), repeat(ScanConfig()), parts])
        sizes = list(calls.file_bytes())
        assert sizes == expected and sizes[3 + 20] == -1  # file 20, found without one
        assert made == ([3] if files is rows else [])  # the first call only, to find its file
        assert calls[5][0] == listed[2].to_send()  # the calls still carry their files


def _pid_and_name(file: object, number: int) -> tuple[int, str, int]:
    return os.getpid(), Path(file.path).name, number  # type: ignore[attr-defined]


def test_the_local_engine_hands_its_workers_small_files_in_batches(mirror_dump: Path) -> None:
    """The workers get tasks of many files each (a task is messages and its arguments
    pickled again), and the results come back in the calls' order, one a call. Which of the
    two workers runs which task is the operating system's choice (one may well run them all
    while the other starts), so only that they ran in the pool's processes is asserted."""
    files, _skipped = discover_inputs([str(mirror_dump)], False)
    submitted = []
    with LocalEngine(ScanConfig(jobs=2), len(files)) as engine:
        assert engine.pool is not None
        submit = engine.pool.submit

        def counted(*task: object) -> object:
            submitted.append(task)
            return submit(*task)  # type: ignore[arg-type]

        engine.pool.submit = counted  # type: ignore[method-assign]
        results = list(engine.map(_pid_and_name, files, range(len(files))))
        workers = {process.pid for process in engine.pool._processes.values()}
    assert [(name, number) for _pid, name, number in results] == [
        (Path(file.path).name, number) for number, file in enumerate(files)
    ]
    assert len(workers) == 2 and os.getpid() not in workers
    assert {pid for pid, _name, _number in results} <= workers
    assert 2 * local._BATCHES_PER_WORKER <= len(submitted) < len(files) / 4


def test_a_dump_of_a_page_a_file_gives_the_same_report_in_batches_or_alone(
    mirror_dump: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batched = dedup.scan([mirror_dump], jobs=2).to_json()
    monkeypatch.setattr(local, "_BATCH_BYTES", 0)  # a file a task, as before batches
    assert dedup.scan([mirror_dump], jobs=2).to_json() == batched
