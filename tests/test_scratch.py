"""The scratch folder where a Dask cluster's workers keep what they make (dedup.engine.scratch):
parts written whole and read back mapped, the scan's folder made, checked and removed, and
those of killed scans removed by the next one."""

from __future__ import annotations

import mmap
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dedup.codepoints import TextRun
from dedup.engine.scratch import (
    Scratch,
    StoredPart,
    StoredParts,
    holds_parts,
    opened,
    sees_folder,
    store,
    with_parts_opened,
)
from dedup.errors import EngineError, ScratchSpaceError


def _base_of(array: np.ndarray) -> object:
    """What an array's memory finally belongs to (through its views)."""
    base: object = array
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    while isinstance(base, memoryview):
        base = base.obj
    return base


def test_a_part_comes_back_equal_its_arrays_mapped_read_only(
    hongloumeng_simplified: str, seed_traditional: str, tmp_path: Path
) -> None:
    """A worker's part (texts, with an array of a row a passage) as a task opens it: equal,
    its arrays views of the file's map, copy-on-write (the compiled loops take arrays that
    can be written: a read-only one compiles them again; a task that writes changes its own
    copy, not the file another task reads); a small part's file is read instead."""
    paragraphs = [line for line in hongloumeng_simplified.splitlines() if line.strip()]
    texts = TextRun.of([*paragraphs, seed_traditional, None])
    signatures = np.arange(len(paragraphs) * 4096, dtype=np.uint32).reshape(-1, 4096)
    small = np.array([[3, 5], [8, 13]], dtype=np.int64)
    part = StoredPart(str(tmp_path), "texts_of", 7)
    written = store((texts, signatures, small), part.path)
    assert written == os.path.getsize(part.path) > signatures.nbytes
    assert [p.name for p in tmp_path.iterdir()] == ["texts_of-7.part"]  # no temporary left
    back_texts, back_signatures, back_small = opened(part)
    assert back_texts == texts and back_texts[len(paragraphs)] == seed_traditional
    assert np.array_equal(back_signatures, signatures) and np.array_equal(back_small, small)
    assert isinstance(_base_of(back_signatures), mmap.mmap)
    assert _base_of(back_small) is _base_of(back_signatures)
    back_signatures[0, :3] = 0
    assert np.array_equal(opened(part)[1], signatures)
    alone = StoredPart(str(tmp_path), "hashes_of", 7)
    store(small, alone.path)
    small_back = opened(alone)
    assert np.array_equal(small_back, small) and isinstance(_base_of(small_back), bytearray)
    # the code points of some passages, as a verify task takes them
    rows = np.array([2, 0, len(paragraphs)], dtype=np.int64)
    assert np.array_equal(back_texts.code_points(rows), texts.code_points(rows))


def test_a_task_given_parts_gets_what_they_hold_each_opened_once(tmp_path: Path) -> None:
    first, second = StoredPart(str(tmp_path), "hashes_of", 0), StoredPart(str(tmp_path), "x", 1)
    store(np.arange(6), first.path)
    store({"kept": np.ones(3)}, second.path)
    arguments = ([first, second, first], first, 5)
    assert holds_parts(arguments) and holds_parts([(1, second)])
    assert not holds_parts(([1, "a"], 2.0))

    def given(runs: list[object], one: np.ndarray, plain: int) -> tuple[object, ...]:
        return runs, one, plain

    runs, one, plain = with_parts_opened(given, *arguments)
    assert isinstance(runs, list) and runs[0] is runs[2] is one  # opened once
    assert np.array_equal(one, np.arange(6)) and plain == 5
    assert np.array_equal(runs[1]["kept"], np.ones(3))


def test_a_part_that_cannot_be_written_is_an_error_naming_it_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    gone = tmp_path / "gone"
    part = StoredPart(str(gone), "signatures_of", 3)
    with pytest.raises(ScratchSpaceError, match="cannot write a part of the scan") as raised:
        store(np.arange(10), part.path)
    assert part.path in str(raised.value) and "give --scratch a folder with room" in str(
        raised.value
    )
    assert list(tmp_path.iterdir()) == []


def test_a_part_gone_from_the_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    part = StoredPart(str(tmp_path), "seeds_of", 2)
    with pytest.raises(EngineError, match="a part of the scan is gone from the scratch folder"):
        opened(part)
    Path(part.path).write_bytes(b"not a part at all, just some bytes")
    with pytest.raises(EngineError, match="not a part dedup wrote"):
        opened(part)


def test_parts_are_named_by_a_number_a_run_and_let_go_of_with_their_files(
    tmp_path: Path,
) -> None:
    parts = StoredParts(str(tmp_path), "span_ends_of")
    for number in (0, 2, 5):
        part = StoredPart(str(tmp_path), "span_ends_of", number)
        store(np.full(3, number), part.path)
        parts.append(part)
    assert len(parts) == 3 and parts[1] == StoredPart(str(tmp_path), "span_ends_of", 2)
    assert [part.number for part in parts[1:]] == [2, 5]
    assert [int(opened(part)[0]) for part in parts] == [0, 2, 5]
    parts.clear()
    assert len(parts) == 0 and list(tmp_path.iterdir()) == []


def test_the_scans_folder_is_made_seen_by_its_workers_and_removed(tmp_path: Path) -> None:
    """Every worker must find the file this process writes in it: a worker on another
    machine with a folder at the same path of its own does not."""
    scratch = Scratch(str(tmp_path))
    assert Path(scratch.folder).parent == tmp_path
    assert sees_folder(scratch.folder)
    own = tmp_path / "same path, another machine"
    own.mkdir()
    assert not sees_folder(str(own))
    scratch.check_seen_by({"tcp://10.0.0.1:3000": True})
    with pytest.raises(EngineError) as raised:
        scratch.check_seen_by({"tcp://10.0.0.1:3000": True, "tcp://10.0.0.2:3000": False})
    message = str(raised.value)
    assert "the Dask worker tcp://10.0.0.2:3000 cannot see the scratch folder" in message
    assert "every worker mounts at the same path" in message
    scratch.remove()
    assert list(tmp_path.iterdir()) == [own]


def test_a_scratch_folder_that_does_not_exist_is_an_error_saying_what_to_do(
    tmp_path: Path,
) -> None:
    with pytest.raises(EngineError, match="the scratch folder does not exist: make it"):
        Scratch(str(tmp_path / "missing"))


def test_a_killed_scans_folder_is_removed_by_the_next_scan_on_its_machine(
    tmp_path: Path,
) -> None:
    """A driver killed could not remove its folder: the next scan started on the same
    machine does. A running scan's stays, and so does another machine's (whose process ids
    mean nothing here)."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    host = socket.gethostname()
    stale = tmp_path / f"dedup-scratch-{ended.pid}@{host}-0123abcd"
    running = tmp_path / f"dedup-scratch-{os.getpid()}@{host}-0123abcd"
    elsewhere = tmp_path / f"dedup-scratch-{ended.pid}@{host}-2-0123abcd"
    for folder in (stale, running, elsewhere):
        folder.mkdir()
        (folder / "texts_of-0.part").write_bytes(b"x")
    scratch = Scratch(str(tmp_path))
    assert not stale.exists() and running.exists() and elsewhere.exists()
    scratch.remove()
    assert sorted(tmp_path.iterdir()) == sorted([running, elsewhere])
