"""Every file prepared on the engine, in order: first the learn pass over the sources with
several files, then the main pass, each file's result merged as it arrives and let go."""

from __future__ import annotations

import array
import bisect
import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise, repeat
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import numpy as np
import numpy.typing as npt

from dedup.candidates import HeldHashes
from dedup.codepoints import TextRun
from dedup.columns import (
    CountedRows,
    DocumentKeys,
    HeldNumbers,
    IndexColumns,
    ScanNames,
    SpanTable,
    SpooledColumns,
    SpooledFirsts,
    SpooledNumbers,
    SpooledStrings,
    Strings,
    int32_column,
    none_records,
)
from dedup.config import ScanConfig
from dedup.documents import PassageAlignment, SeedKeys
from dedup.engine.base import Engine, HeldTexts
from dedup.engine.batches import EachMade, FileParts, TaskFiles
from dedup.engine.copies import CopyFilter, forget_scan, new_scan
from dedup.engine.memory import release_freed_memory
from dedup.engine.tasks import (
    PreparedFile,
    PreparedFiles,
    PreparedInput,
    count_line_keys,
    joined_slices,
    passage_count,
    second_pass,
)
from dedup.fingerprint import HeldSignatures, SignatureTable
from dedup.models import InputFiles, Skipped
from dedup.normalize.repeated_lines import (
    LearnPass,
    RepeatedLines,
    read_once,
    repeated_lines,
)
from dedup.offset_steps import StepPacker
from dedup.progress import progress, progress_by
from dedup.read import FoundFile
from dedup.read.slices import FileSlice, count_lines, counted, may_be_sliced, planned_slices
from dedup.spool import ArraySpool, RowSpool
from dedup.timing import StageTimer

if TYPE_CHECKING:
    from dedup.engine.shuffle import KeptOnWorkers, Run


T = TypeVar("T")
R = TypeVar("R", bound=np.generic)

_NO_STEPS = np.empty(0, dtype=np.uint8)
_NO_BIG_STEPS = np.empty((0, 2), dtype=np.int64)
_NO_SEEDS = np.empty(0, dtype=np.uint32)
_NO_PASSAGES = np.empty(0, dtype=np.int64)


class JoinedParts(Generic[T]):
    """The parts of something made a file at a time (a table, an array), joined by ``join``
    a few dozen at a time as they come, and those joins joined again as they pile up (as a
    binary counter carries: each part is copied a few times, not once per file after it).
    A file's part is many small objects (the arrays' headers and the tables' records):
    held until the last file, they would sit among what this process keeps for good, the
    allocator's memory left in pieces it cannot hand back (docs/performance.md)."""

    def __init__(self, join: Callable[[list[T]], T]) -> None:
        self._join = join
        self._pending: list[T] = []
        self._joins: list[tuple[int, T]] = []  # each with how many joins of parts it is

    def append(self, part: T) -> None:
        self._pending.append(part)
        if len(self._pending) < _PARTS_A_JOIN:
            return
        self._joins.append((1, self._join(self._pending)))
        self._pending = []
        while len(self._joins) > 1 and self._joins[-1][0] == self._joins[-2][0]:
            (size, earlier), (_size, later) = self._joins[-2], self._joins[-1]
            self._joins[-2:] = [(2 * size, self._join([earlier, later]))]

    def joined(self, empty: T) -> T:
        """All the parts, in order, as one (``empty`` when there are none)."""
        parts = [joined for _size, joined in self._joins] + self._pending
        if not parts:
            return empty
        return parts[0] if len(parts) == 1 else self._join(parts)

    def clear(self) -> None:
        self._pending, self._joins = [], []


# Parts joined at once: the tables a join makes hold a few objects however many rows.
_PARTS_A_JOIN = 32


class StreamedSpans:
    """The span tables of the files, joined as they come (a table an input, in the scan's
    order): each run's numbers and each new document's key written to disk
    (``ArraySpool``), where the joined table reads them, a block at a time: each run's first
    row (``SpooledFirsts``), input, document, chapter and title (``SpooledColumns``), and
    each document's source, path (``SpooledColumns``) and record (``SpooledNumbers``).
    Joined at the end instead (``SpanTable.concatenate``, a few dozen at a time and then
    all), the tables and their joins were held at once: what the driver's peak on a cluster
    grew most with the files (issue 21, docs/performance.md). The titles (each a table's
    once) and the documents' record ids go to disk too, a row each (``SpooledStrings``): a
    dump of a record a page has a title and an id a record."""

    def __init__(self) -> None:
        self._names: Sequence[str] = ()
        self._runs = ArraySpool(np.int64, 5)  # first row, input, document, chapter, title
        self._documents = ArraySpool(np.int64, 2)  # source, path
        self._records = ArraySpool(np.int64, 1)  # none read where no document is a record
        self._record_ids = _StringsWriter()
        self._any_record = False
        self._ends = ArraySpool(np.int64, 2)  # each row's start and end, where held here
        self._titles = RowSpool()
        # the last table's titles, of file _file: their numbers here (a chapter cut across
        # a large file's pieces keeps its title's number, as its document's)
        self._last_titles: dict[str | None, int] = {}
        self._rows = 0
        self._counted: bool | None = None  # whether the tables' starts and ends are counted
        self._file = -1
        # the last table's documents, of file _file: their keys and their numbers here
        self._last = np.empty((0, 3), dtype=np.int64), np.empty(0, dtype=np.int64)

    def append(
        self, table: SpanTable, file: int | None, number: int | npt.NDArray[np.int64]
    ) -> None:
        """``table``, of file number ``file`` and input ``number`` (an index into
        ``Prepared.files``), after the others: its documents named in the scan's names
        (``DocumentKeys.named_in``), as every table appended. Or the tables of several
        files, none appended before, one after another (``file`` None: no document or
        title goes on into them from the table before, or from one into the next), each
        run of input ``number`` (an array: a run each)."""
        if len(table):
            counted = table.held is not None
            if self._counted is not None and counted != self._counted:
                raise ValueError("tables with their starts and ends joined to tables without")
            self._counted = counted
        self._names = table.documents.names
        titles = self._titles_numbered(table.titles.values(), file)
        documents = self._numbered(table.documents, file)
        self._runs.append(
            np.column_stack(
                (
                    table.run_first.column().astype(np.int64) + self._rows,
                    np.broadcast_to(number, len(table.run_first)),
                    documents[table.run_document],
                    table.run_chapter,
                    int32_column(titles[table.run_title]),
                )
            )
        )
        if table.held is None:
            self._ends.append(np.column_stack((table.start, table.end)))
        self._rows += len(table)

    def _titles_numbered(self, titles: list[str | None], file: int | None) -> npt.NDArray[np.int64]:
        """The number here of each of ``titles``, those not among the last table's of the
        same file written (all, of several files' tables: ``file`` None)."""
        if file is None:
            self._last_titles = {}
            append, row_of = self._titles.append, SpooledStrings.row_of
            return np.array([append(row_of(title)) for title in titles], dtype=np.int64)
        last = self._last_titles if file == self._file else {}
        numbers = [
            last[title] if title in last else self._titles.append(SpooledStrings.row_of(title))
            for title in titles
        ]
        if titles:
            self._last_titles = dict(zip(titles, numbers, strict=True))
        return np.array(numbers, dtype=np.int64)

    def _numbered(self, documents: DocumentKeys, file: int | None) -> npt.NDArray[np.int64]:
        """The number here of each of ``documents``; those not seen before written. A
        document goes on from one table into the next only where both are of one file (a
        large file's pieces, joined as one), so it is looked for among the last table's
        (none of several files' tables: ``file`` None)."""
        keys = np.column_stack(
            (documents.source, documents.path, np.asarray(documents.record, dtype=np.int64))
        ).astype(np.int64, copy=False)
        number = np.full(len(keys), -1, dtype=np.int64)
        earlier, numbers = self._last
        if file == self._file and len(earlier) and len(keys):
            distinct, inverse = np.unique(
                np.concatenate((earlier, keys)), axis=0, return_inverse=True
            )
            known = np.full(len(distinct), -1, dtype=np.int64)
            known[inverse.reshape(-1)[: len(earlier)]] = numbers
            number = known[inverse.reshape(-1)[len(earlier) :]]
        new = np.flatnonzero(number < 0)
        number[new] = len(self._documents) + np.arange(len(new), dtype=np.int64)
        int32_column(number[new])  # an error past 2**31 documents, before any is written
        self._documents.append(keys[new, :2])
        self._records.append(keys[new, 2:])
        self._any_record = self._any_record or bool((documents.record != -1).any())
        self._record_ids.append(
            documents.record_ids if len(new) == len(keys) else documents.record_ids.take(new)
        )
        if len(keys):
            self._file, self._last = -1 if file is None else file, (keys, number)
        return number

    def run_keys(self) -> IndexColumns:
        """Each run's input (an index into ``Prepared.files``), document, chapter and title,
        on disk: the input tells two inputs' runs apart, where each file's first passage was
        held, four bytes a file (issue 21)."""
        return SpooledColumns(self._runs, 1, 4)

    def joined(self) -> SpanTable:
        """All the tables, in order, as one."""
        # the runs' and documents' numbers stay on disk, searched and read a block at a time
        places = SpooledColumns(self._documents, 0, 2)
        records = (
            SpooledNumbers(self._records, 0)
            if self._any_record
            else HeldNumbers(none_records(len(places)))
        )
        start, end = (
            (_NO_PASSAGES, _NO_PASSAGES)
            if self._counted
            else self._ends.columns(np.int64, np.int64)
        )
        return SpanTable(
            DocumentKeys(self._names, places, records, self._record_ids.joined()),
            SpooledStrings(self._titles),
            SpooledFirsts(self._runs, 0, self._rows),
            SpooledColumns(self._runs, 2, 3),
            start,
            end,
            CountedRows(self._rows) if self._counted else None,
        )


class _StringsWriter:
    """Strings (``Strings``, a part at a time) written to disk as they come, a string a row,
    and read by index at the end (``SpooledStrings``): the documents' record ids, of which a
    JSON Lines crawl has one a record (a URL, tens of bytes). Until a part holds a string,
    the parts' Nones are counted only: a dump of text files has no record ids."""

    def __init__(self) -> None:
        self._rows: RowSpool | None = None  # from the first part that holds a string
        self._nones = 0  # the Nones before it

    def append(self, strings: Strings | SpooledStrings) -> None:
        if self._rows is None:
            if isinstance(strings, Strings) and not strings.joined and strings.absent.all():
                self._nones += len(strings)
                return
            self._rows = RowSpool(repeat(b"", self._nones))
        for value in strings.values():
            self._rows.append(SpooledStrings.row_of(value))

    def joined(self) -> Strings | SpooledStrings:
        return Strings.none(self._nones) if self._rows is None else SpooledStrings(self._rows)


def _joined_rows(parts: list[npt.NDArray[R]]) -> npt.NDArray[R]:
    return np.concatenate(parts)


class NumberRuns(Sequence[int]):
    """Numbers in order, held as runs that go up by one or stay: where each run starts, its
    first number and its step; any number may follow any other. Each input's file number (a
    file an input, an archive's inputs one file), each task's (a file a task, a large file's
    slices one), the tasks learned from apart (all of them, often): a dump of plain files is
    one run, where a number each held four or eight bytes a file (issue 21)."""

    def __init__(self) -> None:
        self._count = 0
        self._starts = array.array("q")
        self._firsts = array.array("q")
        self._steps = array.array("b")
        self._last = 0

    @classmethod
    def of(cls, numbers: Iterable[int] | npt.NDArray[np.integer[Any]]) -> NumberRuns:
        """``numbers``, appended in order."""
        held = cls()
        held.extend(numbers if isinstance(numbers, np.ndarray) else np.fromiter(numbers, np.int64))
        return held

    def extend(self, numbers: npt.NDArray[np.integer[Any]]) -> None:
        """Each of ``numbers`` appended in order, the same runs as :meth:`append` makes, a run
        at a time, not a Python int made of each number (a crawl's files are millions)."""
        values = np.asarray(numbers, dtype=np.int64)
        steps = np.diff(values)
        # where a step differs from the one before: a run of equal steps ends before each
        changes = np.flatnonzero(steps[1:] != steps[:-1]) + 1
        at = 0
        while at < len(values):
            self.append(int(values[at]))
            if at + 1 == len(values):
                break
            step = int(steps[at])
            alone = self._count - self._starts[-1] == 1
            if step not in (0, 1) or not (alone or step == self._steps[-1]):
                at += 1
                continue
            # the run goes on through the steps equal to this one
            change = int(np.searchsorted(changes, at, side="right"))
            end = int(changes[change]) if change < len(changes) else len(steps)
            self._steps[-1] = step
            self._count += end - at
            self._last = int(values[end])
            at = end + 1

    def append_run(self, first: int, count: int, step: int) -> None:
        """``count`` numbers from ``first`` on, going up by ``step`` (0 or 1): as appending
        each makes them, at once."""
        if count > 0:
            self.append(first)
        if count > 1:
            self.append(first + step)
        if count > 2:
            # the last run is now of the two, or the second alone: it goes on by ``step``
            self._steps[-1] = step
            self._count += count - 2
            self._last = first + step * (count - 1)

    def append(self, number: int) -> None:
        last, self._last = self._last, number
        if self._count:
            step = number - last
            alone = self._count - self._starts[-1] == 1  # a run of one takes either step
            if step in (0, 1) and (alone or step == self._steps[-1]):
                self._steps[-1] = step
                self._count += 1
                return
        self._starts.append(self._count)
        self._firsts.append(number)
        self._steps.append(1)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> list[int]: ...

    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self[row] for row in range(self._count)[index]]
        row = range(self._count)[index]  # an IndexError past the end
        run = bisect.bisect_right(self._starts, row) - 1
        return self._firsts[run] + self._steps[run] * (row - self._starts[run])

    def place(self, number: int) -> int | None:
        """Where ``number`` is, of numbers that only go up, or None if it is not there."""
        run = bisect.bisect_right(self._firsts, number) - 1
        if run < 0:
            return None
        end = self._starts[run + 1] if run + 1 < len(self._starts) else self._count
        offset = number - self._firsts[run]
        if offset < end - self._starts[run] and (offset == 0 or self._steps[run] == 1):
            return self._starts[run] + offset
        return None

    def numbers(self) -> npt.NDArray[np.int64]:
        """All the numbers, in order, as one array."""
        starts = np.array(self._starts, dtype=np.int64)
        lengths = np.diff(starts, append=self._count)
        offsets = np.arange(self._count, dtype=np.int64) - np.repeat(starts, lengths)
        steps = np.repeat(np.array(self._steps, dtype=np.int64), lengths)
        numbers: npt.NDArray[np.int64] = (
            np.repeat(np.array(self._firsts, dtype=np.int64), lengths) + steps * offsets
        )
        return numbers


@dataclass
class Prepared:
    """All the workers handed back, merged: one entry per passage of the dump, in file order.
    Each file's result is merged as it arrives and then let go, so that the passages' texts and
    signatures are held once, not twice."""

    signatures: SignatureTable
    # Where the workers keep the signatures, texts, steps and seeds instead (a cluster's),
    # or None.
    kept: KeptOnWorkers | None = None
    spans: StreamedSpans = field(default_factory=StreamedSpans)
    found: Sequence[FoundFile] = ()  # the scan's files
    names: ScanNames = field(default_factory=ScanNames)  # of the documents of all the files
    # Of each input (an archive's: many), its file's number in ``found``: as a table of
    # its own, a file's row again (some 40 B a file of a crawl of a page a file).
    file_numbers: NumberRuns = field(default_factory=NumberRuns)
    normalized: list[TextRun] = field(default_factory=list)
    hashes: JoinedParts[npt.NDArray[np.int64]] = field(
        default_factory=lambda: JoinedParts(_joined_rows)
    )
    # where each run of spans is in its file's bytes, on disk (read back for the few the
    # report names)
    byte_spans: ArraySpool = field(default_factory=lambda: ArraySpool(np.int32, 2))
    inputs: InputFiles = field(default_factory=InputFiles)
    skipped: list[Skipped] = field(default_factory=list)
    too_short: int = 0
    # steps packed apart, and seeds held as keys
    alignment: JoinedParts[PassageAlignment] = field(
        default_factory=lambda: JoinedParts(PassageAlignment.concatenate)
    )
    steps: StepPacker = field(default_factory=StepPacker)
    seeds: SeedKeys = field(default_factory=SeedKeys)
    count: int = 0  # passages so far

    @property
    def files(self) -> Sequence[FoundFile]:
        """Each input's file, in order (an archive's inputs: its file each)."""
        found, numbers = self.found, self.file_numbers
        return EachMade(len(numbers), lambda row: found[numbers[row]])

    def add(self, number: int, result: PreparedFile, runs: Sequence[Run] = ()) -> None:
        """File ``number``'s passages, after those of the files before it; ``runs``: what
        the workers keep of it."""
        if self.kept is not None:
            self.kept.add(runs)
        for item in result.inputs:
            # else the workers keep texts, signatures, lengths, steps and seeds
            if self.kept is None:
                alignment = item.alignment
                self.normalized.append(item.normalized)
                self.signatures.append(item.signatures, _handed_back(item))
                self.steps.append(alignment.steps, alignment.big_steps)
                self.seeds.append(alignment.seeds, alignment.seed_passage, self.count)
                self.alignment.append(
                    replace(
                        alignment,
                        steps=_NO_STEPS,
                        big_steps=_NO_BIG_STEPS,
                        seeds=_NO_SEEDS,
                        seed_passage=_NO_PASSAGES,
                    )
                )
            self.count += len(item.passages)
            spans = item.passages
            self.spans.append(
                replace(spans, documents=spans.documents.named_in(self.names, number)),
                number,
                len(self.file_numbers),
            )
            self.file_numbers.append(number)
            self.hashes.append(item.hashes)
            self.byte_spans.append(item.byte_spans)
            if item.entry is not None:
                self.inputs.append(item.entry)
            if item.skipped is not None:
                self.skipped.append(item.skipped)
            self.too_short += item.too_short

    def add_files(self, first: int, files: PreparedFiles, runs: Sequence[Run] = ()) -> None:
        """Files ``first`` on (as many as ``files`` holds), after those before them, as
        :meth:`add` adds each; ``runs``: what the workers keep of them (only they hand files
        back so, keeping the rest)."""
        if self.kept is None:
            raise ValueError("files handed back as one where the workers keep nothing")
        self.kept.add(runs)
        file = first + np.flatnonzero(files.has_input).astype(np.int64)
        spans = files.passages
        self.count += len(spans)
        named = spans.documents.named_in(self.names, file[files.name_input])
        inputs = len(self.file_numbers) + files.run_input.astype(np.int64)
        self.spans.append(replace(spans, documents=named), None, inputs)
        self.file_numbers.extend(file)
        self.byte_spans.append(files.byte_spans)
        for entry in files.entries:
            if entry is not None:
                self.inputs.append(entry)
        self.skipped += [skipped for skipped in files.skipped if skipped is not None]
        self.too_short += files.too_short

    def passages(self) -> Passages:
        """Every passage of the dump, merged (the parts they were made of let go)."""
        alignment = self.alignment.joined(PassageAlignment.empty())
        kept = self.kept
        spans = self.spans.joined()
        passages = Passages(
            spans=spans if kept is None else spans.ends_held_by(kept.span_ends()),
            runs=self.spans.run_keys(),
            byte_spans=self.byte_spans,
            texts=TextRun.joined(self.normalized) if kept is None else kept.texts(),
            hashes=self.hashes.joined(np.empty((0, 2), dtype=np.int64))
            if kept is None
            else kept.hashes(),
            signatures=self.signatures if kept is None else kept.signatures(),
            alignment=replace(
                alignment,
                held_steps=self.steps.packed(alignment.lengths),
                held_seeds=self.seeds.settled(),
            )
            if kept is None
            else replace(
                alignment,  # none joined: the workers keep each passage's length and lead
                held_seeds=kept.seeds(),
                held_steps=kept.steps(),
                held_lengths=kept.lengths(),
            ),
        )
        self.steps, self.seeds, self.count = StepPacker(), SeedKeys(), 0
        for parts in (self.alignment, self.hashes):
            parts.clear()
        self.spans = StreamedSpans()
        self.byte_spans = ArraySpool(np.int32, 2)
        self.normalized = []
        self.signatures = SignatureTable(self.signatures.num_perm)
        self.kept = None
        # The workers' results were unpickled on the pool's result thread (or the Dask
        # client's), whose malloc arena keeps what the merge just freed: hand it back.
        release_freed_memory()
        return passages


@dataclass
class Passages:
    """Every passage of a dump, in file order, as the stages after the workers use them."""

    spans: SpanTable  # where each passage is (on a cluster, its start and end on the workers)
    # Each run of spans' input (an index into Prepared.files), document, chapter and title,
    # on disk (its labels, spans.labels, and the input that tells two inputs' runs apart).
    runs: IndexColumns
    # Where each run of spans is in its file's bytes (PreparedInput.byte_spans), on disk.
    byte_spans: ArraySpool
    # Normalized texts (empty for a later copy of a text: see dedup.engine.copies), their two
    # hashes, and their MinHash signatures (none for those copies); on a cluster, texts,
    # hashes and signatures are kept by the workers (dedup.engine.shuffle).
    texts: TextRun | HeldTexts
    hashes: npt.NDArray[np.int64] | HeldHashes
    signatures: SignatureTable | HeldSignatures
    # Of the whole dump: its indexes are of all passages (its offset steps packed,
    # alignment.held_steps; on a cluster, its seeds and offset steps are kept by the workers:
    # alignment.held_seeds, .held_steps).
    alignment: PassageAlignment

    def file_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The index in Prepared.files of the file of each of ``rows``."""
        return self.runs.of(self.spans.run_of(rows))[0]

    def let_go_of_signatures(self) -> None:
        """Signatures are done with once the candidate pairs' MinHash estimates are made, and
        the texts' hashes once the candidates are found: free them before verification makes
        its shingle sets."""
        if isinstance(self.hashes, HeldHashes):
            self.hashes.let_go()
        self.hashes = np.empty((0, 2), dtype=np.int64)
        if isinstance(self.signatures, HeldSignatures):
            self.signatures.let_go()
        else:
            self.signatures = SignatureTable(self.signatures.num_perm)
        release_freed_memory()

    def let_go_of_texts(self) -> None:
        """The normalized texts, once verification is done and the alignment holds them (it
        lets them go when done, before member texts are read back). Texts the workers keep
        are let go of with the alignment's (the alignment runs where they are)."""
        if not isinstance(self.texts, HeldTexts):  # else the alignment needs them still
            self.texts = TextRun.of(())
        release_freed_memory()

    def let_go_of_seeds(self) -> None:
        """The winnowed seeds are done with once pairs of documents are chosen (about a
        third of what the alignment holds per passage)."""
        if self.alignment.held_seeds is not None:
            self.alignment.held_seeds.let_go()
        self.alignment = replace(
            self.alignment.seeded_by(np.zeros(len(self.alignment), np.bool_)), held_seeds=None
        )

    def let_go_of_spans(self) -> None:
        """Where each passage is, once the members' spans are made (the workers keep the
        starts and ends on a cluster: let go of there)."""
        if self.spans.held is not None:
            self.spans.held.let_go()

    def let_go_of_alignment(self) -> None:
        """What the align stage needs of each passage (its offset steps above all) is done
        with once the spans are mapped back: free it before the documents' texts are read
        back and the report made."""
        if self.alignment.held_steps is not None:
            self.alignment.held_steps.let_go()
        self.alignment = PassageAlignment.empty()
        if isinstance(self.texts, HeldTexts):
            self.texts.let_go()
            self.texts = TextRun.of(())
        release_freed_memory()


def prepare_all(
    files: Sequence[FoundFile],
    config: ScanConfig,
    timer: StageTimer,
    engine: Engine,
    known: RepeatedLines | None = None,
    each: Callable[[FoundFile, PreparedFile], None] | None = None,
    slices: Sequence[tuple[FileSlice, ...]] | None = None,
) -> Prepared:
    """Every file read, segmented, normalized and fingerprinted. First the lines each source
    repeats are learned from the files of sources with several (a file alone in its source is
    learned from as it is prepared), then every file is prepared, in order; a large JSON Lines
    file in slices, a task each (dedup.read.slices), joined again as one. The sources in
    ``known`` have their repeated lines learned already (an index's): their files are not
    learned from. Given ``each``, each file's result goes to it as it arrives instead of
    being merged (an index stores it and lets it go). ``slices``: file_slices(files), if
    made already."""
    known = known or {}
    if slices is None:
        with timer("read"):
            slices = file_slices(files, config, engine)
    tasks = PassTasks.of(slices)
    at_once, apart = _learned_when(files, config, tasks, known)
    shown = config.show_progress
    # On a cluster, the workers keep the line keys of the learn pass, and then the
    # signatures (not for an index, which stores them).
    on_workers = engine.kept_on_workers(shown)
    learn_pass = learned_lines(
        engine,
        on_workers,
        TaskFiles(files, EachMade(len(apart), lambda task: tasks.file[apart[task]])),
        config,
        tasks.parts_of(apart),
    )
    learned = learn_pass.chapters

    @functools.lru_cache(maxsize=1)  # a call's two arguments of them are made in a row
    def given(task: int) -> tuple[Any, slice | None]:
        """A task's chapters, if the learn pass found them, and which of them are its file's."""
        found = apart.place(task)
        return ((), None) if found is None else learned[found]

    timer.add("learn-lines", learn_pass.seconds)
    repeated = {**learn_pass.repeated, **known}
    del learn_pass
    # A copy of a text a worker already handed back comes back empty (see dedup.engine.copies).
    scan = new_scan()
    kept = on_workers if each is None else None
    # Each task's arguments made as the engine hands it over, not held while the pass runs.
    count = len(tasks.file)
    arguments = (
        TaskFiles(files, tasks.file),
        repeat(config),
        EachMade(count, lambda task: bool(at_once[tasks.file[task]])),
        repeat(repeated),
        EachMade(count, lambda task: given(task)[0]),
        EachMade(
            count,
            lambda task: CopyFilter(scan, task) if engine.hands_back_texts_once else None,
        ),
        tasks.part,
        EachMade(count, lambda task: given(task)[1]),
    )
    results = (
        kept.prepared(second_pass, *arguments)
        if kept is not None
        else ((result, None) for result in engine.map(second_pass, *arguments))
    )
    prepared = Prepared(SignatureTable(config.num_perm), kept, found=files)
    # A worker hands a text back once (or, on a cluster, every time): the copies' texts other
    # workers handed back too are let go of here, with their seeds, as each file arrives (in
    # file order), so that this process holds each text once, whatever the workers did.
    # (Where the workers keep the texts, none comes back: nothing to let go of.)
    here = new_scan()
    unit = "part" if count > len(files) else "file"
    taken = progress_by(results, _tasks_in, "read+fingerprint", unit, count, shown)
    number = 0  # the next file's
    try:
        for result, runs in _by_file(taken, slices, config):
            if isinstance(result, PreparedFiles):  # several files', their texts kept there
                prepared.add_files(number, result, runs)
                number += result.files
            else:
                if kept is None:  # else no text came back
                    result = _without_copies(result, CopyFilter(here, number))
                if each is None:
                    prepared.add(number, result, runs)
                else:
                    each(files[number], result)
                number += 1
            for stage, seconds in result.seconds.items():
                timer.add(stage, seconds)
    finally:
        forget_scan(scan)  # this process's table, when the files were prepared here
        forget_scan(here)
    if number != len(files):
        raise ValueError(f"{number} files prepared of {len(files)}")
    if on_workers is not None:
        on_workers.let_go_of_chapters()
    return prepared


def _tasks_in(result: tuple[PreparedFile | PreparedFiles, Any]) -> int:
    """The tasks a result of the main pass is of (files handed back as one: theirs)."""
    return result[0].files if isinstance(result[0], PreparedFiles) else 1


def learned_lines(
    engine: Engine,
    on_workers: KeptOnWorkers | None,
    files: Sequence[FoundFile],
    config: ScanConfig,
    parts: Sequence[FileSlice | None],
) -> LearnPass:
    """The learn pass over ``files`` (``parts`` of them): each file's chapters, for the main
    pass, and the lines each source repeats. Where the workers keep what they make
    (``on_workers``), they keep the files' line keys and count them there, and keep their
    chapters for the main pass; else the keys come here, and are let go of once counted."""
    if on_workers is not None:
        return on_workers.learned(files, config, parts)
    found = engine.map(count_line_keys, files, repeat(config), parts)
    learned = list(progress(found, "learn site lines", "file", len(files), config.show_progress))
    return LearnPass(
        sum(file.seconds for file in learned),
        [(file.chapters, None) for file in learned],
        repeated_lines(learned),
    )


@dataclass(frozen=True)
class PassTasks:
    """A pass's tasks: a file each (``file``, its number), or a slice of one (its file's
    number, and the slice, in ``slices`` by the task's number: only the large JSON Lines
    files' tasks have one). Held while the pass runs: a tuple a task cost some 80 B a file,
    and a slice or None a task 8 B, of a crawl of a page a file."""

    file: NumberRuns
    slices: dict[int, FileSlice]
    # the files in slices, in order, and the tasks more than files up to each's end
    sliced: tuple[int, ...] = ()
    more: tuple[int, ...] = ()

    @classmethod
    def of(cls, slices: Sequence[tuple[FileSlice, ...]]) -> PassTasks:
        """The tasks, given each file's slices."""
        file, sliced, files_sliced, more = NumberRuns(), {}, [], [0]
        for number, parts in enumerate(slices):
            for part in parts:
                sliced[len(file)] = part
                file.append(number)
            if not parts:
                file.append(number)
            else:
                files_sliced.append(number)
                more.append(more[-1] + len(parts) - 1)
        return cls(file, sliced, tuple(files_sliced), tuple(more[1:]))

    def first_of(self, number: int) -> int:
        """The first task of file ``number``; past the last file, the tasks' count."""
        before = bisect.bisect_left(self.sliced, number)
        return number + (self.more[before - 1] if before else 0)

    @property
    def part(self) -> FileParts:
        """Each task's slice of its file, or None where it is the whole file."""
        return FileParts(len(self.file), self.slices.get, self.slices.__contains__)

    def parts_of(self, tasks: Sequence[int]) -> FileParts:
        """:attr:`part` of each of ``tasks``."""
        return FileParts(
            len(tasks),
            lambda task: self.slices.get(tasks[task]),
            lambda task: tasks[task] in self.slices,
        )


def _learned_when(
    files: Sequence[FoundFile], config: ScanConfig, tasks: PassTasks, known: RepeatedLines
) -> tuple[NumberRuns, NumberRuns]:
    """Whether each file is learned from as it is prepared, in one read of it (1), and the
    tasks learned from apart, before it: neither for a file of a source ``known`` already.
    Both as runs, decided a run of files of one source at a time (a dump of a page a file is
    one run of each, where arrays of a file's source, and of whether it was read once, held
    some 25 B a file at once). A crawl's files are read back from disk (``FoundFiles``: each
    look makes a file's record again), so each is looked at once, not once a question."""
    at_once, apart = NumberRuns(), NumberRuns()
    if "repeated-lines" in config.skip_steps:
        at_once.append_run(0, len(files), 0)
        return at_once, apart
    sources, once = read_once(files, config)
    for (start, end), source, alone in zip(
        pairwise(sources.starts.tolist()), sources.source.tolist(), once.tolist(), strict=True
    ):
        first, past = tasks.first_of(start), tasks.first_of(end)
        learned_before = sources.names[source] in known
        # a run read once is a file alone in its source, read whole (not in slices)
        if alone and not learned_before and first not in tasks.slices:
            at_once.append(1)
            continue
        at_once.append_run(0, end - start, 0)
        if not learned_before:
            apart.append_run(first, past - first, 1)
    return at_once, apart


def file_slices(
    files: Sequence[FoundFile], config: ScanConfig, engine: Engine
) -> Sequence[tuple[FileSlice, ...]]:
    """Per file, the slices it is prepared in, their lines counted on the engine; none for a
    file read whole (held only for the files in slices: a list of a file held a pointer a
    file while the pass ran)."""
    if not may_be_sliced(files):
        return EachMade(len(files), lambda _number: ())
    planned = {
        number: parts
        for number, file in enumerate(files)
        if (parts := planned_slices(file, config))
    }
    tasks = [(number, part) for number, parts in planned.items() for part in parts]
    counts: dict[int, list[int | None]] = {}
    if tasks:
        lines = engine.map(
            count_lines,
            [files[number] for number, _part in tasks],
            [part for _n, part in tasks],
            repeat(config),
        )
        shown = config.show_progress
        for (number, _part), count in zip(
            tasks, progress(lines, "count lines", "slice", len(tasks), shown), strict=True
        ):
            counts.setdefault(number, []).append(count)
    counted_slices = {number: counted(parts, counts[number]) for number, parts in planned.items()}
    return EachMade(len(files), lambda number: counted_slices.get(number, ()))


def _by_file(
    results: Iterator[tuple[PreparedFile | PreparedFiles, Run | None]],
    slices: Sequence[tuple[FileSlice, ...]],
    config: ScanConfig,
) -> Iterator[tuple[PreparedFile | PreparedFiles, list[Run]]]:
    """The tasks' results, in order, as one a file: a file's slices joined (or files handed
    back as one, none in slices, as they come); with what the workers kept of it, in runs
    (none of a file whose slices are not joined: see joined_slices)."""
    number = 0
    while number < len(slices):
        parts = slices[number]
        first, first_run = next(results)
        if isinstance(first, PreparedFiles):
            yield first, [] if first_run is None else [first_run]
            number += first.files
            continue
        number += 1
        taken = [(first, first_run)] + [next(results) for _part in parts[1:]]
        runs = [run for _result, run in taken if run is not None]
        if not parts:
            yield first, runs
            continue
        # a slice is a piece alone, never handed back with others
        joined = joined_slices([_one_file(result) for result, _run in taken], config)
        yield joined, runs if passage_count(joined) == sum(run[0] for run in runs) else []


def _one_file(result: PreparedFile | PreparedFiles) -> PreparedFile:
    if isinstance(result, PreparedFiles):
        raise ValueError("a slice of a file handed back with other files")
    return result


def _without_copies(result: PreparedFile, copies: CopyFilter) -> PreparedFile:
    """``result`` as a worker that hands back each text once would have handed it back: the
    texts ``copies`` has seen in this or an earlier file empty, without their seeds."""
    inputs = []
    for item in result.inputs:
        keep = copies.keep(item.hashes)
        texts = item.normalized.emptied(keep)
        signed = _handed_back(item)
        signatures = item.signatures if keep[signed].all() else item.signatures[keep[signed]]
        inputs.append(
            replace(
                item,
                normalized=texts,
                signatures=signatures,
                alignment=item.alignment.seeded_by(keep),
            )
        )
    return replace(result, inputs=tuple(inputs))


def _handed_back(item: PreparedInput) -> npt.NDArray[np.bool_]:
    """Which passages of ``item`` were handed back with their text (and signature)."""
    return item.normalized.held()
