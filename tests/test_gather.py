"""What the driver makes of the workers' results as they arrive (dedup.engine.gather)."""

from __future__ import annotations

import itertools
import pickle
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dedup.columns import (
    HeldColumns,
    HeldFirsts,
    HeldNumbers,
    ScanNames,
    SpanTable,
    SpooledColumns,
    SpooledFirsts,
    SpooledNumbers,
    SpooledStrings,
    Strings,
)
from dedup.config import ScanConfig
from dedup.documents import PassageAlignment, document_runs
from dedup.engine.gather import JoinedParts, StreamedSpans
from dedup.engine.tasks import passage_count, prepare_file
from dedup.read import discover_inputs
from dedup.spool import ArraySpool, RowSpool


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


def _named_tables(samples: Path, copies: int) -> list[tuple[SpanTable, int]]:
    """The samples' span tables, ``copies`` times over, each copy's files numbered apart and
    their documents named in one scan's names, as the driver gets them: (table, file)."""
    from dedup.columns import ScanNames

    config = ScanConfig()
    files, _skipped = discover_inputs([str(samples)])
    tables = [item.passages for file in files for item in prepare_file(file, config, {}).inputs]
    names = ScanNames()
    return [
        (replace(table, documents=table.documents.named_in(names, number)), number)
        for number, table in enumerate(tables * copies)
    ]


def _with_record_ids(table: SpanTable, prefix: str) -> SpanTable:
    """``table`` with an id for each document that is a record (a JSON Lines file's)."""
    from dedup.columns import Strings

    records = table.documents.record.tolist()
    ids = Strings.of([None if record < 0 else f"{prefix}{record}" for record in records])
    return replace(table, documents=replace(table.documents, record_ids=ids))


def _streamed(tables: list[tuple[SpanTable, int]], inputs: list[int] | None = None) -> SpanTable:
    return _streaming(tables, inputs).joined()


def _streaming(
    tables: list[tuple[SpanTable, int]], inputs: list[int] | None = None
) -> StreamedSpans:
    """The tables (each with its file's number) streamed, each an input of its own or the
    input ``inputs`` gives it."""
    streamed = StreamedSpans()
    for number, (table, file) in enumerate(tables):
        streamed.append(table, file, number if inputs is None else inputs[number])
    return streamed


def test_span_tables_streamed_as_they_come_are_the_table_of_all(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main pass's span tables, each run's numbers and each document's key written to
    disk as they come and read back at the end, are the table of them all: their documents
    named in the scan's names, a text file's documents holding no record number each, and
    JSON Lines records' ids and chapters' titles as they were."""
    monkeypatch.setattr(ArraySpool, "block_bytes", 256)  # many blocks, a row split by none
    monkeypatch.setattr(RowSpool, "block_bytes", 64)  # the titles' too
    tables = _named_tables(samples, 20)
    # every third JSON Lines file's records with ids of their own, between files with none
    tables = [
        (_with_record_ids(table, f"{file}-") if file % 3 == 0 else table, file)
        for table, file in tables
    ]
    joined = _streamed(tables)
    whole = SpanTable.concatenate([table for table, _file in tables])
    assert len(whole) > 2000
    assert list(joined) == list(whole)
    assert joined.documents.names is tables[0][0].documents.names
    assert np.array_equal(joined.run_first.column(), whole.run_first.column())
    for column in ("run_document", "run_chapter", "run_title", "start", "end"):
        if column != "run_title":  # numbered apart: below
            assert np.array_equal(getattr(joined, column), getattr(whole, column)), column
        assert getattr(joined, column).dtype == getattr(whole, column).dtype, column
    # The titles on disk, each table's written once: each run's title is the whole's.
    assert isinstance(joined.titles, SpooledStrings)
    run_titles = joined.titles.values(joined.run_title)
    assert run_titles == whole.titles.values(whole.run_title) and any(run_titles)
    sent = pickle.loads(pickle.dumps(joined.titles))
    assert isinstance(sent, Strings) and sent.values() == joined.titles.values()
    runs = np.arange(0, len(joined.run_title), 7)
    assert joined.titles.take(joined.run_title[runs]).values() == [run_titles[r] for r in runs]
    assert joined.run_first.column().dtype == np.int32  # the rows fit: four bytes a run
    ids = joined.documents.record_ids.values()
    assert ids == whole.documents.record_ids.values()
    assert None in ids and any(ids)
    # the ids on disk too, read by index; pickled, the strings themselves
    assert isinstance(joined.documents.record_ids, SpooledStrings)
    picked = np.arange(0, len(ids), 5)
    assert joined.documents.record_ids.take(picked).values() == [ids[i] for i in picked]
    sent = pickle.loads(pickle.dumps(joined.documents))
    assert isinstance(sent.record_ids, Strings) and sent.record_ids.values() == ids
    assert set(joined.titles.values()) == set(whole.titles.values())
    texts = [(table, file) for table, file in tables if (table.documents.record == -1).all()]
    assert 20 < len(texts) < len(tables)
    only_texts = _streamed(texts)
    assert only_texts.documents.record.strides == (0,)
    assert not any(only_texts.documents.record_ids.values())
    assert isinstance(only_texts.documents.record_ids, Strings)  # Nones, counted only
    assert list(_streamed([])) == []


class _Stories:
    """What ``document_runs`` asks of an alignment: each document's characters (none here)."""

    def story_chars(self, first: np.ndarray) -> np.ndarray:
        return np.zeros(len(first), dtype=np.int64)


def _assert_same_labels(
    table: SpanTable,
    labels: Sequence[npt.NDArray[Any]],
    whole: SpanTable,
    whole_labels: Sequence[npt.NDArray[Any]],
    dtype: type[np.integer[Any]],
) -> None:
    """The same documents and chapters, and the same titles (each table's numbered apart in
    the driver's table, where they are on disk)."""
    (document, chapter, title), (whole_document, whole_chapter, whole_title) = labels, whole_labels
    assert np.array_equal(document, whole_document) and np.array_equal(chapter, whole_chapter)
    assert table.titles.values(title) == whole.titles.values(whole_title)
    assert document.dtype == chapter.dtype == title.dtype == dtype


def test_the_runs_labels_and_the_documents_places_stay_on_disk_and_read_as_held(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver's table of the scan keeps each run's first row, document, chapter and
    title, and each document's source, path and record, on disk (``SpooledFirsts``,
    ``SpooledColumns``, ``SpooledNumbers``): the rows a stage names and their runs, the
    whole columns, a pickled copy and the documents swept a block at a time (``document_runs``, each block's first run
    compared with the block before's last: here a chapter that goes on from one table of a
    file into the next, where a block starts) are those of the table held whole."""
    monkeypatch.setattr(ArraySpool, "block_bytes", 8 * 5 * 8)  # eight runs (five numbers) a block
    tables = _named_tables(samples, 10)
    table, _file, run = next(
        (table, file, run)
        for table, file in tables
        for run, size in enumerate(table.run_sizes().tolist())
        if size > 1 and table.titles[int(table.run_title[run])] is not None
    )
    cut = int(table.run_first.column()[run]) + 1  # in a titled chapter
    names = tables[0][0].documents.names
    assert isinstance(names, ScanNames)
    halves = [
        (replace(half, documents=half.documents.named_in(names, len(tables))), len(tables))
        for half in (table.take(np.arange(cut)), table.take(np.arange(cut, len(table))))
    ]
    runs_before = np.cumsum([0] + [len(table.run_first) for table, _file in tables])
    before = next(k for k, runs in enumerate(runs_before) if (runs + run + 1) % 8 == 0)
    tables = tables[:before] + halves + tables[before:]
    # an input a table, but the two halves one input (a large file's pieces)
    inputs = [number - (number > before) for number in range(len(tables))]
    streaming = _streaming(tables, inputs)
    joined = streaming.joined()
    whole = SpanTable.concatenate([table for table, _file in tables])
    assert isinstance(joined.labels, SpooledColumns)
    assert isinstance(whole.labels, HeldColumns)
    runs = np.random.default_rng(0).integers(0, len(whole.run_first), 500)
    _assert_same_labels(joined, joined.labels.of(runs), whole, whole.labels.of(runs), np.int64)
    sent = pickle.loads(pickle.dumps(joined.labels))
    assert isinstance(sent, HeldColumns)
    _assert_same_labels(joined, sent.columns(), whole, whole.labels.columns(), np.int32)
    # so does each run's first row, searched a block at a time
    assert isinstance(joined.run_first, SpooledFirsts)
    firsts = whole.run_first.column()
    rows = np.concatenate((firsts, firsts[1:] - 1, [len(whole) - 1], np.arange(0, len(whole), 7)))
    assert np.array_equal(joined.run_of(rows), whole.run_of(rows))
    assert np.array_equal(joined.run_first.between(5, 30), firsts[5:30])
    assert isinstance(pickle.loads(pickle.dumps(joined.run_first)), HeldFirsts)
    assert np.array_equal(pickle.loads(pickle.dumps(joined.run_first)).column(), firsts)
    block_firsts = [first for first, _labels in joined.labels.blocks()]
    assert len(block_firsts) > 10
    assert runs_before[before] + run + 1 in block_firsts  # the second half starts a block
    # the documents' sources and paths stay on disk as well
    keys = joined.documents
    assert isinstance(keys.places, SpooledColumns)
    picked = np.random.default_rng(1).integers(0, len(whole.documents), 200)
    assert keys.columns(picked) == whole.documents.columns(picked)
    assert list(keys) == list(whole.documents) and keys[-1] == whole.documents[-1]
    assert list(keys.take(picked)) == list(whole.documents.take(picked))
    assert list(pickle.loads(pickle.dumps(keys))) == list(whole.documents)
    # and their records (the samples' JSON Lines files have some)
    assert isinstance(keys.records, SpooledNumbers) and (whole.documents.record >= 0).any()
    assert np.array_equal(keys.records.of(picked), whole.documents.record[picked])
    assert np.array_equal(keys.record, whole.documents.record)
    assert isinstance(pickle.loads(pickle.dumps(keys)).records, HeldNumbers)
    assert np.array_equal(keys.texts(), whole.documents.texts())
    run_keys = streaming.run_keys()
    assert isinstance(run_keys, SpooledColumns)
    held_inputs = np.repeat(inputs, [len(table.run_first) for table, _file in tables])
    spooled_keys = run_keys.columns()
    assert np.array_equal(spooled_keys[0], held_inputs)
    _assert_same_labels(joined, spooled_keys[1:], whole, whole.labels.columns(), np.int32)
    by_blocks = document_runs(joined, run_keys, _Stories())  # type: ignore[arg-type]
    at_once = document_runs(  # type: ignore[arg-type]
        whole, HeldColumns(held_inputs.astype(np.int32), *whole.labels.columns()), _Stories()
    )
    assert np.array_equal(by_blocks.bounds, at_once.bounds)
    assert by_blocks.bounds.dtype == by_blocks.story_chars.dtype == np.int32  # they fit
    # the one chapter in two tables is one document: its second table's first run, the
    # first of a block, joined to the run before
    assert len(by_blocks) == len(whole.run_first) - 1
    second_half = int(whole.run_first.column()[runs_before[before] + run + 1])
    assert second_half not in by_blocks.bounds.tolist()


def test_a_file_in_two_tables_is_one_document_streamed_as_joined(samples: Path) -> None:
    """A large file's pieces, a table each: a chapter that goes on from one into the next is
    one document with one title, as ``SpanTable.concatenate`` joins them; the same tables
    as two files are two. Tables held by the workers (their starts and ends counted) join
    only with their kind."""
    table, file, run = next(
        (table, file, run)
        for table, file in _named_tables(samples, 1)
        for run, size in enumerate(table.run_sizes().tolist())
        if size > 1 and table.titles[int(table.run_title[run])] is not None
    )
    cut = int(table.run_first.column()[run]) + 1  # in a titled chapter
    halves = [table.take(np.arange(cut)), table.take(np.arange(cut, len(table)))]
    halves = [
        replace(half, documents=half.documents.named_in(table.documents.names, file))
        for half in halves
    ]
    one_file = _streamed([(half, file) for half in halves])
    assert list(one_file) == list(table)
    assert len(one_file.documents) == len(table.documents)
    joined = SpanTable.concatenate(halves)
    assert np.array_equal(one_file.run_first.column(), joined.run_first.column())
    for column in ("run_document", "run_title"):
        assert np.array_equal(getattr(one_file, column), getattr(joined, column)), column
    assert one_file.run_document[run + 1] == one_file.run_document[run]  # one document
    two_files = _streamed([(halves[0], file), (halves[1], file + 1)])
    assert len(two_files.documents) == len(halves[0].documents) + len(halves[1].documents)
    counted = _streamed([(half.without_ends(), file) for half in halves])
    assert len(counted) == len(table) and len(counted.start) == 0
    with pytest.raises(ValueError, match="joined to tables without"):
        _streamed([(halves[0].without_ends(), file), (halves[1], file)])


def test_a_clusters_workers_keep_each_passages_length_and_lead_and_hand_back_none(
    samples: Path,
) -> None:
    """A cluster's worker keeps each passage's length with its offset steps, and its lead
    where --passage-overlap gives it one (none where all are 0, the default); a file comes
    back to the driver with none of them, its passages counted by their spans."""
    from dedup.engine.tasks import lengths_and_steps_of, without_kept

    files, _skipped = discover_inputs([str(samples)])
    for overlap in (0, 60):
        prepared = [prepare_file(file, ScanConfig(passage_overlap=overlap), {}) for file in files]
        made = [item.alignment for result in prepared for item in result.inputs]
        assert sum(map(len, made)) > 100
        assert all(len(part.leads) == len(part) for part in made)  # as the workers make them
        kept = [lengths_and_steps_of(result) for result in prepared]
        for part, result in zip(kept, prepared, strict=True):
            whole = PassageAlignment.concatenate([item.alignment for item in result.inputs])
            assert np.array_equal(part.lengths, whole.lengths)
            assert np.array_equal(part.steps, whole.steps) and not len(part.seeds)
            assert np.array_equal(part.dense_leads(), whole.leads)
            assert len(part.leads) == (len(part) if overlap and whole.leads.any() else 0)
        assert any(len(part.leads) for part in kept) == bool(overlap)
        for result in prepared:
            back = without_kept(result)
            assert all(not len(item.alignment.lengths) for item in back.inputs)
            assert all(not len(item.alignment.leads) for item in back.inputs)
            assert passage_count(back) == passage_count(result)


def test_the_records_of_each_file_hold_its_path_packed_and_its_names_once(
    mirror_dump: Path,
) -> None:
    """A dump of a page a file is tens of thousands of files, each with its found file, its
    entry in the report and its documents' keys: unpickled from a worker, each would hold
    strings of its own. Their paths are held packed (models.PackedPaths), the documents'
    names once for the whole scan (columns.ScanNames: a path, and each source), and a value
    named by many (a source, a format, a count's name) is one string (the entries are
    columns: models.InputFiles)."""
    import pickle

    from dedup.engine.gather import Prepared
    from dedup.fingerprint import SignatureTable

    config = ScanConfig()
    files, _skipped = discover_inputs([str(mirror_dump)])
    sources = {file.source: file.source for file in files}
    assert all(file.source is sources[file.source] for file in files)
    assert all(file.fs_path is file.path for file in files)
    prepared = Prepared(SignatureTable(config.num_perm), found=files)
    tables = []
    for number, file in enumerate(files[:40]):
        result = pickle.loads(pickle.dumps(prepare_file(file, config, {})))  # as from a worker
        (item,) = result.inputs
        tables.append(item.passages)
        prepared.add(number, result)
        assert prepared.inputs[-1] == item.entry  # the same values
    # Each input's file is the found file, by its number among them: not a row again.
    assert list(prepared.files) == list(files[:40]) and list(prepared.file_numbers) == [*range(40)]
    names = [name for entry in prepared.inputs for name in entry.normalization]
    names += [entry.source for entry in prepared.inputs]
    assert len(names) > 40 and len({id(name) for name in names}) == len(set(names))
    spans = prepared.spans.joined()
    assert list(spans.documents) == [key for table in tables for key in table.documents]
    # The joined documents' names are the scan's, each path and source once.
    assert spans.documents.names is prepared.names
    assert sorted(prepared.names) == sorted(
        {file.path for file in files[:40]} | {file.source for file in files[:40]}
    )


def _runs(held: Any) -> tuple[list[int], list[int], list[int], int]:
    return list(held._starts), list(held._firsts), list(held._steps), len(held)


@given(st.lists(st.integers(-3, 3), max_size=60), st.integers(0, 5))
def test_number_runs_read_back_as_appended(steps: list[int], start: int) -> None:
    """Each input's file number (the next file's, or an archive's again, or any) reads back
    as appended; numbers that only go up are found where they are; a dump of plain files,
    a number up by one an input, is held as one run."""
    from dedup.engine.gather import NumberRuns

    numbers = list(itertools.accumulate(steps, initial=start))
    held = NumberRuns.of(numbers)
    appended = NumberRuns()
    for number in numbers:
        appended.append(number)
    assert _runs(held) == _runs(appended)
    # Extended a run at a time after any first ones appended, and then appended to again
    # (it goes on from the last number held): the same runs as appended one by one.
    appended.append(start)
    for cut in range(len(numbers) + 1):
        extended = NumberRuns()
        for number in numbers[:cut]:
            extended.append(number)
        extended.extend(np.array(numbers[cut:], dtype=np.int64))
        extended.append(start)
        assert _runs(extended) == _runs(appended), cut
    assert list(held) == numbers and held[:] == numbers and len(held) == len(numbers)
    assert held.numbers().tolist() == numbers
    assert [held[row] for row in range(-len(numbers), 0)] == numbers
    with pytest.raises(IndexError):
        held[len(numbers)]
    rising = sorted(set(numbers))
    held_rising = NumberRuns.of(rising)
    for number in range(start - 30, start + 30):
        place = held_rising.place(number)
        assert place == (rising.index(number) if number in rising else None), number
    plain = NumberRuns.of(range(start, start + 10_000))
    assert list(plain) == list(range(start, start + 10_000))
    assert plain.numbers().tolist() == list(range(start, start + 10_000))
    assert len(plain._starts) == 1  # one run: nothing held a file


@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.sampled_from((0, 1))), max_size=12)
)
def test_number_runs_given_whole_runs_are_as_appended_one_by_one(
    runs: list[tuple[int, int, int]],
) -> None:
    """A run of numbers appended at once (a source's files, every task of them) makes the
    runs that appending each makes, after any numbers before it, and is read back."""
    from dedup.engine.gather import NumberRuns

    at_once, one_by_one, numbers = NumberRuns(), NumberRuns(), []
    for first, count, step in runs:
        at_once.append_run(first, count, step)
        for number in range(count):
            one_by_one.append(first + step * number)
            numbers.append(first + step * number)
        assert _runs(at_once) == _runs(one_by_one)
    at_once.append(3)
    one_by_one.append(3)
    assert _runs(at_once) == _runs(one_by_one)
    assert list(at_once) == [*numbers, 3]
    long = NumberRuns()
    long.append_run(7, 10_000_000, 0)
    assert len(long) == 10_000_000 and long[-1] == 7 and len(long._starts) == 1


@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcd"), st.sampled_from(("txt", "jsonl", "zip")), st.integers(0, 2)
        ),
        max_size=30,
    ),
    st.sets(st.sampled_from("abcd")),
    st.booleans(),
)
def test_files_alone_in_their_source_are_learned_from_as_they_are_prepared(
    files: list[tuple[str, str, int]], known: set[str], by_site: bool
) -> None:
    """A file is learned from in the read that prepares it where it is alone in its source,
    read whole, and no file can hold another source's documents (an archive, records naming
    their source); every other task of a source not learned before is learned from apart."""
    from dedup.engine.gather import PassTasks, _learned_when
    from dedup.read import FoundFile
    from dedup.read.slices import FileSlice

    found = [
        FoundFile(f"{source}/{number}.{kind}", source, kind, f"/dump/{source}/{number}.{kind}")
        for number, (source, kind, _slices) in enumerate(files)
    ]
    slices = [tuple(FileSlice(at, at + 1, "utf-8") for at in range(count)) for *_, count in files]
    tasks = PassTasks.of(slices)
    config = ScanConfig(source_fields=("site",) if by_site else ())
    at_once, apart = _learned_when(found, config, tasks, dict.fromkeys(known, frozenset()))

    per_source = {source: [file.source for file in found].count(source) for source in "abcd"}
    may_hold_others = any(
        file.format == "zip" or (by_site and file.format == "jsonl") for file in found
    )
    expected = [
        not may_hold_others
        and per_source[file.source] == 1
        and not parts
        and file.source not in known
        for file, parts in zip(found, slices, strict=True)
    ]
    assert list(at_once) == expected
    assert list(apart) == [
        task
        for task, number in enumerate(tasks.file)
        if not expected[number] and found[number].source not in known
    ]
    skipped = _learned_when(found, ScanConfig(skip_steps=("repeated-lines",)), tasks, {})
    assert list(skipped[0]) == [0] * len(found) and len(skipped[1]) == 0


class _KeptThere:
    """The workers' keeping of what they made, as the driver tells it the runs they hand
    over (only counted here)."""

    def __init__(self) -> None:
        self.runs: list[Any] = []

    def add(self, runs: Sequence[Any]) -> None:
        self.runs += runs


def _merged_state(prepared: Any) -> tuple[Any, ...]:
    """All the driver holds of the files merged so far, as plain values."""
    spans = prepared.spans.joined()
    runs = prepared.spans.run_keys()
    return (
        len(spans),
        [column.tolist() for column in runs.of(np.arange(len(runs)))],
        list(spans.documents),
        spans.titles.values(),
        spans.run_first.column().tolist(),
        [column.tolist() for column in spans.labels.columns()],
        list(prepared.file_numbers),
        list(prepared.inputs),
        prepared.skipped,
        prepared.too_short,
        prepared.byte_spans.columns(np.int32, np.int32)[1].tolist(),
        prepared.count,
    )


def test_files_handed_back_as_one_are_merged_as_each_file_alone(
    mirror_dump: Path, samples: Path, tmp_path: Path
) -> None:
    """A cluster's worker hands a piece of its batch's files back as one where there are
    several and each is of one input or none (tasks.handed_back): what the driver then holds
    is what it holds when they come a file at a time (Prepared.add_files, Prepared.add),
    whatever the pieces: page files, JSON Lines records with ids and without, a file
    skipped on the worker, and an archive's inputs, which still come a file at a time."""
    import json
    import zipfile

    from dedup.engine.gather import Prepared
    from dedup.engine.tasks import PreparedFiles, handed_back, without_kept
    from dedup.fingerprint import SignatureTable

    dump = tmp_path / "dump"
    pages = sorted(mirror_dump.glob("site-b/*.txt"))[:12]
    dump.mkdir()
    for page in pages:
        (dump / page.name).write_bytes(page.read_bytes())
    (dump / "zz-nul.txt").write_bytes(b"\x00" * 64 + pages[0].read_bytes())
    for book in ("sanguo", "xiyouji"):  # chapters: titles of one document
        (dump / f"p-{book}.txt").write_bytes((samples / f"site-classic/{book}.txt").read_bytes())
    with zipfile.ZipFile(dump / "m-archive.zip", "w") as archive:
        for page in pages[:2]:
            archive.write(page, page.name)
    text = (samples / "site-classic/xiyouji.txt").read_text("utf-8")
    records = [{"title": f"第{n}章", "content": text[n * 300 : n * 300 + 900]} for n in range(9)]
    with (dump / "n-ids.jsonl").open("w") as out:
        for number, record in enumerate(records[:6]):
            out.write(json.dumps({**record, "id": f"r{number}"}, ensure_ascii=False) + "\n")
    (dump / "o-plain.jsonl").write_text(
        "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records[6:]), "utf-8"
    )
    config = ScanConfig()
    files, _skipped = discover_inputs([str(dump)])
    prepared = [prepare_file(file, config, {}) for file in files]
    assert [len(result.inputs) for result in prepared].count(2) == 1  # the archive

    def fresh() -> Prepared:
        return Prepared(SignatureTable(config.num_perm), _KeptThere(), found=files)  # type: ignore[arg-type]

    alone = fresh()  # each file as a worker hands it back alone
    for number, result in enumerate(prepared):
        alone.add(number, pickle.loads(pickle.dumps(without_kept(result))))
    expected = _merged_state(alone)
    assert expected[8] and len(expected[7]) == len(prepared) + 1 - len(expected[8])  # skipped
    record_ids = [key[3] for key in expected[2]]
    assert "r5" in record_ids and None in record_ids
    assert [key[2] for key in expected[2] if key[3] is None and key[2] is not None] == [0, 1, 2]
    merged_files = []  # by the cuts: files handed back as one
    for cuts in ([], [3], [1, 2, 9], [1, 6, 11, 14], list(range(1, len(prepared)))):
        bounds = [0, *cuts, len(prepared)]
        merged, number, as_one, given = fresh(), 0, 0, []
        for low, high in itertools.pairwise(bounds):
            for back in pickle.loads(pickle.dumps(handed_back(prepared[low:high]))):
                if isinstance(back, PreparedFiles):
                    given.append(f"runs of {number}")  # what the workers keep of them
                    merged.add_files(number, back, given[-1:])
                    number, as_one = number + back.files, as_one + back.files
                else:
                    merged.add(number, back)
                    number += 1
        assert _merged_state(merged) == expected, cuts
        assert merged.kept.runs == given  # type: ignore[union-attr]
        # a piece of several files of an input or none each comes as one
        assert as_one == sum(
            high - low
            for low, high in itertools.pairwise(bounds)
            if high - low > 1 and all(len(result.inputs) <= 1 for result in prepared[low:high])
        )
        merged_files.append(as_one)
    assert merged_files[0] == merged_files[-1] == 0  # the archive in the piece; each alone
    assert merged_files[2] == len(prepared) - 2  # all but the archive and the next, alone
    assert len(expected[3]) > len(expected[2])  # more titles than documents
