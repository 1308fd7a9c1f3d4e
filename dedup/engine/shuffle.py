"""What a Dask cluster's workers keep of the files they prepare (each passage's signature,
normalized text, its two hashes, start and end, offset steps and winnowed seeds), and the
stages that run there on it, so that this process holds none of them.

Each file's task leaves them on its worker (``DaskEngine.map_keeping``), with each
passage's length and lead; this process gets the rest of the file (each run of passages'
document, chapter and title) and numbers its passages. A stage that needs some passages'
starts and ends looks them up there (``SpanEndsOnWorkers.ends_of``, a task per batch of
runs: the candidates' overlap test for the pairs within one text, each document's first and
last passage, the spans mapped back, the members), and so their lengths and leads
(``LengthsOnWorkers.of``: the exact copies' lengths, the verify blocks' planning, the align
chunks', the spans' ends found in their documents; ``LengthsOnWorkers.stories``, each
document's length). Before them, the learn pass leaves each batch of
files' line keys and chapters on its worker (:meth:`KeptOnWorkers.learned`): a shuffle of
the chapters by hash counts each source's distinct chapters
(``repeated_lines.chapter_entries``, ``repeated_lines.distinct_chapter_counts``), and one of
the (chapter, line key) pairs by key counts each line's distinct chapters
(``repeated_lines.line_entries``, ``repeated_lines.partition_repeated``); only the repeated
keys come back. Then:

- exact copies: a shuffle of the hashes by ``hash % P`` (``candidates.hash_entries``), each
  partition's copies found on a worker (``candidates.partition_copies``); only the copies
  and the first passage of each come back.
- candidates: a shuffle (:func:`shuffled`, its results taken by
  :meth:`KeptOnWorkers.results`): a task per batch of runs one worker keeps turns each
  run's signatures into band keys of the passages that take part (the first of each
  distinct text), split into partitions by ``hash(band, key) % P``
  (``candidates.band_entries``); a task per partition gathers that partition from every
  run, in the scan's order, and makes its buckets' pairs
  (``candidates.partition_pair_codes``); only the pairs come back, merged here. Every bucket
  lies in one partition, so the pairs are those the local engine finds, whatever P, the
  batches and the number of workers.
- MinHash estimates: tasks of consecutive pairs, each given the signatures of the files its
  pairs name (Dask moves them to its worker).
- verification and the alignment hand their chunks (a block of candidate groups, a chunk of
  document pairs) to :meth:`TextsOnWorkers.map`: a task per chunk, given the texts of its
  passages alone, each taken out of its run by a task on the worker that keeps the run;
  only scores and spans come back.
- document pairs: the same shuffle over the seeds, by ``hash(seed) % P``
  (``documents.seed_entries``, ``documents.partition_document_pairs``: the pairs of
  documents holding the texts that share a partition's seeds, with how many), then a second
  one of those by ``pair % P`` (``documents.summed_document_pairs``, summed there); only the
  pairs of documents sharing enough seeds come back.
- spans mapped back to the original text: a task per batch of files, given their offset
  steps (``offset_steps.offsets_in_runs``).

What the workers keep is either under Dask's keys, a future of each part of each batch held
here, or, given a scratch folder every worker sees (dedup.engine.scratch), in a file a part
there, which a task opens as memory-mapped arrays (a verify or align task its runs' texts
whole: it reads its passages' pages alone), this process holding a batch's number a part.

What it holds, where: a worker, what it keeps of its files until the stage that last uses
each is done (in the scratch folder, nothing between tasks); during a shuffle, a batch's
entries and a partition's; in a task, what the files its chunk names keep (of the texts,
its passages' alone). This process: futures (or a number a part of a batch) and a few
numbers a file, then pairs, scores and spans."""

from __future__ import annotations

import array
import bisect
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated, runs_of, sorted_unique
from dedup.candidates import (
    band_entries,
    hash_entries,
    merged_codes,
    partition_copies,
    partition_pair_codes,
)
from dedup.codepoints import TextRun
from dedup.config import ScanConfig
from dedup.documents import (
    MIN_SHARED_SEEDS,
    PassageAlignment,
    TextHolders,
    key_set,
    partition_document_pairs,
    seed_entries,
    summed_document_pairs,
)
from dedup.engine.batches import EachMade
from dedup.engine.dask_cluster import named
from dedup.engine.gather import NumberRuns
from dedup.engine.scratch import StoredPart, StoredParts
from dedup.engine.tasks import (
    PreparedFile,
    PreparedFiles,
    count_line_keys,
    ends_in_runs,
    handed_back,
    hashes_of,
    lengths_and_steps_of,
    merged_files,
    passage_count,
    seeds_of,
    signatures_of,
    span_ends_of,
    texts_of,
)
from dedup.normalize.repeated_lines import (
    LearnedFiles,
    LearnPass,
    chapter_entries,
    chapters_of,
    distinct_chapter_counts,
    learned_back,
    line_counts_of,
    line_entries,
    merged_learned,
    partition_repeated,
    repeated_by_source,
)
from dedup.offset_steps import offsets_in_runs
from dedup.progress import progress, progress_by
from dedup.read import FoundFile
from dedup.read.slices import FileSlice
from dedup.verify import estimates_in_runs

if TYPE_CHECKING:
    from distributed import Client, Future

    from dedup.engine.base import TextForm, Threads
    from dedup.engine.dask_cluster import DaskEngine

# What the workers keep of a file (or a slice of one): how many passages, and what names
# their signatures, texts, offset steps, seeds, hashes and spans' starts and ends (futures,
# or parts in the scratch folder: StoredPart).
Run = tuple[int, Any, Any, Any, Any, Any, Any]

T = TypeVar("T")
# What names a part the workers keep of each run: a future, or a file in the scratch folder.
Parts = Sequence["Future[Any] | StoredPart | None"]

# Partitions of the band keys per worker thread: a few, so that a slow one does not hold the
# others up, and few enough that each task has something to do.
PARTITIONS_PER_THREAD = 2
# Batches of files whose band keys one task makes, per worker thread.
BATCHES_PER_THREAD = 4
# Files whose steps one task maps positions back through, at most.
_RUNS_A_BATCH = 64
# Candidate pairs whose MinHash estimates one task makes, at most.
_PAIRS_A_TASK = 500_000


class KeptOnWorkers:
    """What the workers keep of the files they prepare (see the module's docstring): read by
    the stages as :meth:`signatures`, :meth:`texts`, :meth:`seeds` and :meth:`steps`."""

    def __init__(self, engine: DaskEngine, shown: bool) -> None:
        self.engine = engine
        self.shown = shown
        # Each run's first passage (a batch's files', or a slice's: the futures' lists hold
        # its parts at the run's number), in an array rather than an object a run.
        self.run_starts = array.array("q")
        self.count = 0  # passages in the runs
        # What names each run's parts: in the scratch folder, or futures in lists the engine
        # cancels on an error (each let go when done with).
        self.signature_parts = engine.kept_parts(signatures_of)
        self.text_parts = engine.kept_parts(texts_of)
        self.step_parts = engine.kept_parts(lengths_and_steps_of)
        self.seed_parts = engine.kept_parts(seeds_of)
        self.hash_parts = engine.kept_parts(hashes_of)
        self.span_parts = engine.kept_parts(span_ends_of)
        # The learn pass's chapters, which the main pass's tasks read last.
        self.chapter_parts: list[Future[Any] | None] | StoredParts = []

    def prepared(
        self, function: Any, *arguments: Iterable[Any]
    ) -> Iterator[tuple[PreparedFile | PreparedFiles, Run | None]]:
        """``function`` (the main pass's task) over the arguments on the workers: each
        prepared file without what the worker keeps of it, in order (a piece's files of an
        input each, as one: :func:`~dedup.engine.tasks.handed_back`), and what names
        that (futures, or stored parts) with the last of each batch the engine ran as one task (None with the others:
        the run holds the passages of its batch's files); :meth:`add` takes those of the
        files the scan keeps."""
        parts = (signatures_of, texts_of, lengths_and_steps_of, seeds_of, hashes_of, span_ends_of)
        batched = 0  # the passages of the batch's files before
        for result, kept in self.engine.map_keeping(
            function, parts, handed_back, merged_files, *arguments
        ):
            batched += passage_count(result)
            if not kept:
                yield result, None
                continue
            signatures, texts, steps, seeds, hashes, spans = kept
            yield result, (batched, signatures, texts, steps, seeds, hashes, spans)
            batched = 0

    def learned(
        self, files: Sequence[FoundFile], config: ScanConfig, parts: Sequence[FileSlice | None]
    ) -> LearnPass:
        """The learn pass over ``files`` (``parts`` of them) on the workers: where each
        file's chapters are for the main pass (its batch's, and its slice of them),
        and the lines each source repeats, as :func:`repeated_lines` finds them, counted
        where the workers keep the files' chapters and line keys (two shuffles:
        dedup.normalize.repeated_lines). Only the sources of the chapters and each file's
        count of inputs come here: the chapters themselves, held here, every document's
        title among them, grew with the dump and left the allocator's pools in pieces once
        let go of, and their hashes, held to the end of the pass, some 12 B a chapter
        (docs/performance.md)."""
        if not files:
            return LearnPass(0.0, [], {})
        engine = self.engine
        seconds = 0.0
        # Each file's chapters: its batch's future and its slice of them, which ends where
        # the file's chapters end among its batch's (as runs: the main pass runs with these
        # held, and a batch of files of an input each is one run).
        chapters_kept = self.chapter_parts = engine.kept_parts(chapters_of)
        batch_first = array.array("q")  # each batch's first file
        ends = NumberRuns()
        # The sources, numbered as first met; their chapters' hashes stay on the workers
        sources: dict[str, int] = {}
        kept = engine.kept_parts(line_counts_of)
        results = self.learn_tasks(files, config, parts)
        first_file = inputs = 0  # the batch's: its first file, its files' inputs so far
        taken = progress_by(
            results, lambda item: item[0].files, "learn site lines", "file", len(files), self.shown
        )
        for result, keep in taken:
            for source in result.sources:
                sources.setdefault(source, len(sources))
            seconds += result.seconds
            ends.extend(inputs + np.cumsum(result.inputs))
            inputs += int(result.inputs.sum())
            if keep:
                line_counts, batch_chapters = keep
                batch_first.append(first_file)
                chapters_kept.append(batch_chapters)
                kept.append(line_counts)
                first_file, inputs = len(ends), 0
        chapter_counts = shuffled(
            engine,
            kept,
            chapter_entries,
            [],
            (sources,),
            distinct_chapter_counts,
            (len(sources),),
            self.partitions,
        )
        tasks = shuffled(
            engine,
            kept,
            line_entries,
            [],
            (sources,),
            partition_repeated,
            (chapter_counts,),
            self.partitions,
        )
        found = concatenated(list(self.results(tasks, "site lines")), np.int64)
        kept.clear()

        def chapters_of_file(file: int) -> tuple[Any, slice]:
            batch = bisect.bisect_right(batch_first, file) - 1
            start = 0 if file == batch_first[batch] else ends[file - 1]
            return chapters_kept[batch], slice(start, ends[file])

        chapters = EachMade(len(ends), chapters_of_file)
        return LearnPass(seconds, chapters, repeated_by_source(tuple(sources), found))

    def learn_tasks(
        self, files: Sequence[FoundFile], config: ScanConfig, parts: Sequence[FileSlice | None]
    ) -> Iterator[tuple[LearnedFiles, tuple[Any, ...]]]:
        """The learn pass's tasks over ``files``: each piece of files as handed back (each
        source's chapters, without their line keys, and each file's inputs counted: the
        chapters found are kept there), in order, and with the last of each batch what
        names its line keys and chapters, which the workers keep."""
        return self.engine.map_keeping(
            count_line_keys,
            (line_counts_of, chapters_of),
            learned_back,
            merged_learned,
            files,
            itertools.repeat(config),
            parts,
        )

    def let_go_of_chapters(self) -> None:
        """The main pass is done: the learn pass's chapters are not read again (in a
        scratch folder, their files would stay to the scan's end)."""
        self.chapter_parts.clear()

    def add(self, runs: Sequence[Run]) -> None:
        """The next passages of the scan, in runs (a file's, or its slices')."""
        for count, signatures, texts, steps, seeds, hashes, spans in runs:
            if count:
                self.run_starts.append(self.count)
                self.count += count
                self.signature_parts.append(signatures)
                self.text_parts.append(texts)
                self.step_parts.append(steps)
                self.seed_parts.append(seeds)
                self.hash_parts.append(hashes)
                self.span_parts.append(spans)

    @property
    def run_count(self) -> int:
        return len(self.run_starts)

    def firsts(self) -> npt.NDArray[np.int64]:
        """Each run's first passage."""
        return np.array(self.run_starts, dtype=np.int64)

    def runs_of(self, passages: npt.NDArray[np.int64]) -> list[int]:
        """The runs that hold ``passages``, in order."""
        return sorted_unique(runs_of(self.firsts(), passages)).tolist()  # type: ignore[no-any-return]

    def split(self, passages: npt.NDArray[np.int64]) -> list[npt.NDArray[np.int64]]:
        """Sorted ``passages`` (numbers in the scan) by run, numbered in their run."""
        firsts = self.firsts()
        bounds = np.searchsorted(passages, np.append(firsts, self.count)).tolist()
        return [
            passages[bounds[number] : bounds[number + 1]] - first
            for number, first in enumerate(firsts.tolist())
        ]

    @property
    def partitions(self) -> int:
        """P, the partitions of a shuffle: a few a worker thread."""
        return max(1, PARTITIONS_PER_THREAD * self.engine.workers)

    def results(self, tasks: list[Future[Any] | None], stage: str) -> Iterator[Any]:
        """The results of a shuffle's partition ``tasks``, as they come, on a progress bar."""
        done = self.engine.as_done(self.engine.holding(tasks))
        return progress(done, stage, "partition", len(tasks), self.shown)

    def signatures(self) -> SignaturesOnWorkers:
        return SignaturesOnWorkers(self)

    def hashes(self) -> HashesOnWorkers:
        return HashesOnWorkers(self)

    def span_ends(self) -> SpanEndsOnWorkers:
        return SpanEndsOnWorkers(self)

    def texts(self) -> TextsOnWorkers:
        return TextsOnWorkers(self)

    def lengths(self) -> LengthsOnWorkers:
        return LengthsOnWorkers(self)

    def seeds(self) -> SeedsOnWorkers:
        return SeedsOnWorkers(self)

    def steps(self) -> StepsOnWorkers:
        return StepsOnWorkers(self)

    def looked_up(
        self,
        function: Callable[..., T],
        parts: Parts,
        rows: npt.NDArray[np.int64],
        *per_row: npt.NDArray[np.int64],
    ) -> tuple[list[npt.NDArray[np.int64]], Iterator[T]]:
        """``function(runs, numbers, *per_row)`` on the workers for each batch of runs that
        holds some of ``rows`` (passages, in any order): ``runs`` the batch's ``parts``,
        ``numbers`` its rows numbered from its first passage, ``per_row`` cut to them. Each
        batch's positions in ``rows``, and its results, in the same order."""
        firsts = self.firsts()
        holding = self.batches_holding(rows)
        tasks: list[Future[Any] | None] = [
            self.engine.submit(
                function,
                parts[batch.start : batch.stop],
                rows[picked] - firsts[batch.start],
                *(column[picked] for column in per_row),
            )
            for batch, picked in holding
        ]
        return [picked for _batch, picked in holding], self.engine.in_order(
            self.engine.holding(tasks)
        )

    def pair_of_each(
        self,
        function: Callable[..., npt.NDArray[np.int64]],
        parts: Parts,
        rows: npt.NDArray[np.int64],
        what: str,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Two numbers of each of ``rows`` looked up on the workers by ``function`` (a row of
        two a passage, :meth:`looked_up`) in ``parts``, ``what`` the workers keep there."""
        if not parts and len(rows):
            raise LookupError(f"the workers let {what} go")
        holding, found = self.looked_up(function, parts, rows)
        pairs = np.empty((len(rows), 2), dtype=np.int64)
        for picked, part in zip(holding, found, strict=True):
            pairs[picked] = part
        return pairs[:, 0], pairs[:, 1]

    def batches_holding(
        self, passages: npt.NDArray[np.int64]
    ) -> list[tuple[range, npt.NDArray[np.int64]]]:
        """The batches of runs (:meth:`batches`, a look-up's) that hold some of ``passages``,
        each with the positions in ``passages`` of those it holds."""
        run_of = runs_of(self.firsts(), passages)
        holding = []
        for batch in self.batches(_RUNS_A_BATCH):
            picked = np.flatnonzero((run_of >= batch.start) & (run_of < batch.stop))
            if len(picked):
                holding.append((batch, picked))
        return holding

    def batches(self, rows: int) -> list[range]:
        """The runs in batches of consecutive ones, ``rows`` of each at most, and as many
        as there are worker threads at least (so each has work)."""
        runs = self.run_count
        size = min(rows, -(-runs // max(1, self.engine.workers))) or 1
        return [range(start, min(start + size, runs)) for start in range(0, runs, size)]


def shuffled(
    engine: DaskEngine,
    kept: Parts,
    entries: Callable[..., list[Any]],
    per_run: Sequence[Sequence[Any]],
    given: tuple[Any, ...],
    grouped: Callable[..., Any],
    grouped_given: tuple[Any, ...],
    partitions: int,
) -> list[Future[Any] | None]:
    """A shuffle of what the workers keep (``kept``: a future a run, in the scan's order): a
    task per batch of runs kept on one worker makes ``entries(a run's kept, *its per_run
    values, *given, partitions)`` for each of its runs, a list of the partitions' entries;
    a task per partition makes ``grouped(that partition's entries of every run, in the
    scan's order, *grouped_given)``. The partitions' tasks, their results left on the
    workers (taken by :meth:`KeptOnWorkers.results`, or shuffled again by
    :func:`regrouped`). For the passages' runs, ``per_run`` ends with each run's first
    passage (:meth:`KeptOnWorkers.firsts`)."""
    # A batch of runs at a time, so that the tasks that split them into partitions are
    # batches × P, not runs × P, however many files a dump has; each batch's runs on one
    # worker, where its task runs, so that none moves there (a batch of consecutive runs
    # moved about half of them: docs/performance.md, the fifty-eighth session). A run's
    # entries are its own, put back in the scan's order for the partition's task, which so
    # gets what it would from runs taken in order, whichever worker kept each.
    made = [
        engine.submit(
            _entries_of_each,
            entries,
            runs,
            [kept[run] for run in runs],
            [[values[run] for run in runs] for values in per_run],
            given,
            partitions,
            named_after=entries,
        )
        for runs in _batches_by_worker(engine, kept, BATCHES_PER_THREAD * engine.workers)
    ]
    return regrouped(
        engine.client_for_tasks(),
        made,
        _in_scan_order,
        (grouped, *grouped_given),
        partitions,
        named_after=grouped,
    )


def _batches_by_worker(engine: DaskEngine, kept: Parts, count: int) -> list[list[int]]:
    """The runs of ``kept`` in about ``count`` batches, each of runs one worker keeps (or
    not yet kept, or kept by none), in the scan's order within each."""
    size = -(-len(kept) // max(1, count)) or 1
    if isinstance(kept, StoredParts):  # every worker reads them alike
        return [list(range(at, min(at + size, len(kept)))) for at in range(0, len(kept), size)]
    client = engine.client_for_tasks()
    holders = client.who_has([f for f in kept if f is not None])  # type: ignore[no-untyped-call]
    by_worker: dict[str, list[int]] = {}
    for run, future in enumerate(kept):
        where = (
            None if future is None or isinstance(future, StoredPart) else holders.get(future.key)
        )
        by_worker.setdefault(min(where) if where else "", []).append(run)
    return [runs[at : at + size] for runs in by_worker.values() for at in range(0, len(runs), size)]


def _entries_of_each(
    entries: Callable[..., list[Any]],
    runs: list[int],
    kept: list[Any],
    per_run: list[list[Any]],
    given: tuple[Any, ...],
    partitions: int,
) -> list[list[tuple[int, Any]]]:
    """On a worker: ``entries`` of each of a batch's ``runs`` (numbered in the scan) alone,
    by partition, each with its run's number."""
    parts: list[list[tuple[int, Any]]] = [[] for _partition in range(partitions)]
    for at, run in enumerate(runs):
        made = entries([kept[at]], *([values[at]] for values in per_run), *given, partitions)
        for partition, part in enumerate(made):
            parts[partition].append((run, part))
    return parts


def _in_scan_order(
    batches: list[list[tuple[int, Any]]], grouped: Callable[..., T], *grouped_given: Any
) -> T:
    """On a worker: ``grouped`` of a partition's entries of every run, in the runs' order."""
    return grouped(
        [part for _run, part in sorted(itertools.chain.from_iterable(batches), key=_RUN)],
        *grouped_given,
    )


_RUN = operator.itemgetter(0)  # of a run's (number, part)


def regrouped(
    client: Client,
    made: list[Future[Any]] | list[Future[Any] | None],
    grouped: Callable[..., Any],
    grouped_given: tuple[Any, ...],
    partitions: int,
    named_after: Callable[..., Any] | None = None,
) -> list[Future[Any] | None]:
    """A task per partition: ``grouped(part p of every task of made, *grouped_given)``,
    where each task of ``made`` gives a list of ``partitions`` parts; its key named after
    ``named_after`` if given (what ``grouped`` runs). Once the caller lets go of ``made``,
    each of its tasks' results is let go on its worker as soon as its parts are taken."""
    return [
        client.submit(
            grouped,
            [client.submit(operator.getitem, task, part, pure=False) for task in made],
            *grouped_given,
            key=named(named_after or grouped),
        )
        for part in range(partitions)
    ]


class _OnWorkers:
    """Something the workers keep of every passage of the scan (a part of ``kept``)."""

    def __init__(self, kept: KeptOnWorkers) -> None:
        self._kept = kept

    def __len__(self) -> int:
        return self._kept.count


class SignaturesOnWorkers(_OnWorkers):
    """The scan's signatures, kept by the workers that made them; a
    ``fingerprint.HeldSignatures``."""

    def pair_codes(
        self, bands: int, rows: int, among: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        count = len(self)
        codes = np.empty(0, dtype=np.int64)
        kept = self._kept
        tasks = shuffled(
            kept.engine,
            kept.signature_parts,
            band_entries,
            [kept.split(among), kept.firsts().tolist()],
            (bands, rows),
            partition_pair_codes,
            (count,),
            kept.partitions,
        )
        for found in kept.results(tasks, "candidates"):
            codes = merged_codes(codes, found)
        return codes

    def estimates(self, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        kept = self._kept
        tasks: list[Future[Any] | None] = []
        # A task a worker thread at least: as one task, the other workers waited on it.
        size = max(1, min(_PAIRS_A_TASK, -(-len(pairs) // max(1, kept.engine.workers))))
        for start in range(0, len(pairs), size):
            chunk = pairs[start : start + size]
            named = self._kept.runs_of(chunk.ravel())
            tasks.append(
                kept.engine.submit(
                    estimates_in_runs,
                    chunk,
                    [kept.run_starts[run] for run in named],
                    [self._kept.signature_parts[run] for run in named],
                )
            )
        done = kept.engine.in_order(kept.engine.holding(tasks))
        estimated = list(progress(done, "estimates", "chunk", len(tasks), kept.shown))
        return np.concatenate(estimated) if estimated else np.empty(0, dtype=np.float64)

    def let_go(self) -> None:
        self._kept.signature_parts.clear()


class HashesOnWorkers(_OnWorkers):
    """The hashes of the scan's normalized texts, kept by the workers that made them; a
    ``candidates.HeldHashes``."""

    def copies(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        kept = self._kept
        tasks = shuffled(
            kept.engine,
            kept.hash_parts,
            hash_entries,
            [kept.firsts().tolist()],
            (),
            partition_copies,
            (),
            kept.partitions,
        )
        found = list(kept.results(tasks, "exact copies"))
        copies = np.concatenate([copies for copies, _originals in found] or [_NONE])
        originals = np.concatenate([originals for _copies, originals in found] or [_NONE])
        # Each partition's copies ascend; all of them, in the scan's order of passages.
        order = np.argsort(copies, kind="stable")
        return copies[order], originals[order]

    def let_go(self) -> None:
        self._kept.hash_parts.clear()


_NONE = np.empty(0, dtype=np.int64)


class SpanEndsOnWorkers(_OnWorkers):
    """The start and end of each passage of the scan, kept by the workers that made them; a
    ``columns.HeldSpanEnds``."""

    def ends_of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        kept = self._kept
        return kept.pair_of_each(ends_in_runs, kept.span_parts, rows, "the spans")

    def let_go(self) -> None:
        self._kept.span_parts.clear()


class TextsOnWorkers:
    """The scan's normalized texts, kept by the workers that made them; an
    ``engine.base.HeldTexts``."""

    def __init__(self, kept: KeptOnWorkers) -> None:
        self._kept = kept
        self.threads = kept.engine.workers

    def __len__(self) -> int:
        return self._kept.count

    def lengths_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return self._kept.lengths().of(rows)[0]

    def map(
        self,
        function: Callable[..., T],
        passages: Sequence[npt.NDArray[np.int64]],
        *arguments: Iterable[Any],
        stage: str = "texts",
        form: TextForm = "code points",
    ) -> Iterator[T]:
        kept, engine = self._kept, self._kept.engine
        tasks: list[Future[Any] | None] = []
        for wanted, *rest in zip(passages, *arguments, strict=False):  # repeat() allowed
            taken, starts, numbered = self._taken(wanted)
            tasks.append(
                engine.submit(
                    _GIVING[form], function, taken, starts, numbered, *rest, named_after=function
                )
            )
        done = engine.in_order(engine.holding(tasks))
        return progress(done, stage, "task", len(tasks), kept.shown)

    def _taken(
        self, wanted: npt.NDArray[np.int64]
    ) -> tuple[list[Any], list[int], npt.NDArray[np.int64]]:
        """The texts of ``wanted`` (passages of the scan) as a task is given them: a task on
        the worker that keeps each run of them takes that run's texts of them
        (:func:`_texts_of_rows`), each distinct one once, so that only they move to the
        task, not the whole run's (which moved some times the texts a dump holds, and more
        as it grew: docs/performance.md, the fifty-eighth session); where each run's taken
        texts start, numbered one after another; and ``wanted`` so numbered."""
        kept, engine = self._kept, self._kept.engine
        if isinstance(kept.text_parts, StoredParts):
            # The task maps the files of the runs; it reads its passages' pages alone.
            named = kept.runs_of(wanted)
            taken_whole: list[Any] = [kept.text_parts[run] for run in named]
            return taken_whole, [kept.run_starts[run] for run in named], wanted
        distinct = sorted_unique(wanted)
        firsts = kept.firsts()
        run_of = runs_of(firsts, distinct)
        starts = [0, *(np.flatnonzero(np.diff(run_of)) + 1).tolist()] if len(distinct) else []
        taken = []
        for low, high in zip(starts, [*starts[1:], len(distinct)], strict=True):
            run = int(run_of[low])
            rows = distinct[low:high] - firsts[run]
            taken.append(engine.submit(_texts_of_rows, kept.text_parts[run], rows, first=True))
        return taken, starts, np.searchsorted(distinct, wanted).astype(np.int64)

    def let_go(self) -> None:
        self._kept.text_parts.clear()


class SeedsOnWorkers:
    """The scan's winnowed seeds, kept by the workers that made them; an
    ``engine.base.HeldSeeds``."""

    def __init__(self, kept: KeptOnWorkers) -> None:
        self._kept = kept

    def document_pairs(
        self,
        distinct: npt.NDArray[np.int64],
        holding: TextHolders,
        most: int,
        known: npt.NDArray[np.int64],
        threads: Threads,  # this process's: the counting is the workers'
    ) -> npt.NDArray[np.int64]:
        kept, engine = self._kept, self._kept.engine
        taking_part = kept.split(distinct)
        holders = holding.counts(distinct)
        bounds = np.cumsum([0, *(len(rows) for rows in taking_part)]).tolist()
        held = [holders[low:high] for low, high in itertools.pairwise(bounds)]
        # once, for all the partitions: the verified pairs of texts, and which documents
        # hold each text
        known_set, holding_sent = engine.everywhere(key_set(known)), engine.everywhere(holding)
        partitions = kept.partitions
        # Two shuffles: the seeds by hash(seed) % P, each partition's pairs of documents
        # (with the seeds they share there) by pair % P, summed where a pair's counts meet;
        # only the pairs of documents to align come back.
        counted = shuffled(
            engine,
            kept.seed_parts,
            seed_entries,
            [taking_part, held, kept.firsts().tolist()],
            (),
            partition_document_pairs,
            (most, known_set, holding_sent, partitions),
            partitions,
        )
        summed = regrouped(
            engine.client_for_tasks(), counted, summed_document_pairs, (MIN_SHARED_SEEDS,),
            partitions,
        )  # fmt: skip
        del counted, known_set, holding_sent  # the workers let them go
        found = list(kept.results(summed, "document pairs"))
        # The verified pairs of texts propose their documents whatever seeds they share, as
        # the local engine's with_known makes them.
        least = np.full(len(known), MIN_SHARED_SEEDS, dtype=np.int64)
        found.append(holding.document_pairs(sorted_unique(known), least, MIN_SHARED_SEEDS)[0])
        return sorted_unique(np.concatenate(found))

    def let_go(self) -> None:
        self._kept.seed_parts.clear()


class LengthsOnWorkers(_OnWorkers):
    """Each passage's normalized length and lead, kept by the workers that made them with
    the passages' offset steps; an ``engine.base.HeldLengths``."""

    def of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        kept = self._kept
        return kept.pair_of_each(_lengths_in_runs, kept.step_parts, rows, "the lengths")

    def stories(self, first: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        kept, engine = self._kept, self._kept.engine
        if not kept.step_parts and len(first):
            raise LookupError("the workers let the lengths go")
        bounds = [*kept.firsts().tolist(), kept.count]
        # Each batch sums its passages between the runs' firsts in it and its own first (a
        # document may go on from the batch before); a part's sum counts for the document
        # its first passage is in.
        tasks: list[Future[Any] | None] = []
        starts = []
        for batch in kept.batches(_RUNS_A_BATCH):
            low, high = bounds[batch.start], bounds[batch.stop]
            inside = first[(first > low) & (first < high)]
            cuts = np.concatenate(([low], inside)).astype(np.int64)
            starts.append(cuts)
            tasks.append(
                engine.submit(
                    _stories_in_runs, kept.step_parts[batch.start : batch.stop], cuts - low
                )
            )
        sums = list(engine.in_order(engine.holding(tasks)))
        return _summed_by_run(first, concatenated(starts, np.int64), concatenated(sums, np.int64))


def _summed_by_run(
    first: npt.NDArray[np.int64], part_start: npt.NDArray[np.int64], sums: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The sum of each run of passages from each of ``first`` to the next, given the sums of
    parts from each of ``part_start`` to the next (every run's first among them)."""
    summed = np.zeros(len(first), dtype=np.int64)
    np.add.at(summed, runs_of(first, part_start), sums)
    return summed


def _lengths_in_runs(
    runs: Sequence[PassageAlignment], rows: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The length and lead of each of ``rows`` (numbered from the first run's first passage)
    in consecutive runs' alignments, a row each: a worker's look-up of those it keeps."""
    lengths = np.concatenate([run.lengths for run in runs])
    leads = np.concatenate([run.dense_leads() for run in runs])
    return np.column_stack((lengths[rows], leads[rows]))


def _stories_in_runs(
    runs: Sequence[PassageAlignment], cuts: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """The characters but the leads of consecutive runs' passages from each of ``cuts``
    (ascending from 0, numbered from the first run's first passage) to the next."""
    own = np.concatenate([run.own_lengths() for run in runs])
    return np.add.reduceat(own, cuts) if len(own) else np.zeros(len(cuts), dtype=np.int64)


class StepsOnWorkers(_OnWorkers):
    """The scan's offset steps, kept by the workers that made them; an
    ``engine.base.HeldSteps``."""

    def original_offsets(
        self,
        passage: npt.NDArray[np.int64],
        index: npt.NDArray[np.int64],
        span_start: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        kept = self._kept
        holding, found = kept.looked_up(
            _offsets_in_runs, kept.step_parts, passage, span_start, index
        )
        shown = progress(found, "spans mapped", "task", len(holding), kept.shown)
        offsets = np.empty(len(passage), dtype=np.int64)
        for picked, part in zip(holding, shown, strict=True):
            offsets[picked] = part
        return offsets

    def let_go(self) -> None:
        self._kept.step_parts.clear()


def _offsets_in_runs(
    runs: Sequence[PassageAlignment],
    rows: npt.NDArray[np.int64],
    span_start: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """``offset_steps.offsets_in_runs`` on a worker for ``rows`` (numbered from the first
    run's first passage) of consecutive runs' alignments: each passage's first step found
    from the lengths the runs keep."""
    lengths = np.concatenate([run.lengths for run in runs])
    first_step = (np.cumsum(lengths) - lengths)[rows]
    return offsets_in_runs(
        [(run.steps, run.big_steps) for run in runs], first_step, span_start, index
    )


def _with_codes(
    function: Callable[..., T],
    runs: Sequence[TextRun],
    firsts: Sequence[int],
    passages: npt.NDArray[np.int64],
    *arguments: Any,
) -> T:
    """``function(codes, *arguments)`` on a worker, ``codes`` the code points of the texts of
    ``passages`` (numbers in the scan) one text after another (as their join encoded in
    UTF-32), taken from the runs that hold them (``runs[i]`` from passage ``firsts[i]`` on),
    from each run's bytes by a compiled loop, once per stretch of ``passages`` in one run (so fastest for passages in
    the scan's order), no string made (decoding each text and encoding their join again cost
    about three times as much: docs/performance.md)."""
    parts = [run.code_points(rows) for run, rows in _stretches(runs, firsts, passages)]
    codes = np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)
    return function(codes, *arguments)


def _with_units(
    function: Callable[..., T],
    runs: Sequence[TextRun],
    firsts: Sequence[int],
    passages: npt.NDArray[np.int64],
    *arguments: Any,
) -> T:
    """:func:`_with_codes`, ``function`` given the texts' UTF-16 code units one text after
    another, and where each starts there: copied from each run's bytes as they are (a
    stretch of ``passages`` in one run at a time), no string made, nothing converted."""
    parts = [run.units(rows) for run, rows in _stretches(runs, firsts, passages)]
    units = np.concatenate([part for part, _counts in parts]) if parts else np.empty(0, np.uint16)
    counts = np.concatenate([c for _part, c in parts]) if parts else np.empty(0, np.int64)
    return function((units, np.cumsum(counts) - counts), *arguments)


def _stretches(
    runs: Sequence[TextRun], firsts: Sequence[int], passages: npt.NDArray[np.int64]
) -> Iterator[tuple[TextRun, npt.NDArray[np.int64]]]:
    """``passages`` as stretches of rows in one run each, in order: their run, their rows."""
    run_of, rows = _located(firsts, passages)
    cuts = np.flatnonzero(np.diff(run_of)) + 1
    for begin, end in zip([0, *cuts.tolist()], [*cuts.tolist(), len(passages)], strict=True):
        if end > begin:
            yield runs[int(run_of[begin])], rows[begin:end]


_GIVING: dict[TextForm, Callable[..., Any]] = {
    "code points": _with_codes,
    "utf-16": _with_units,
}


def _located(
    firsts: Sequence[int], passages: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Which run holds each of ``passages`` (run ``i`` from passage ``firsts[i]`` on), and
    its row there."""
    starts = np.asarray(firsts, dtype=np.int64)
    run_of = runs_of(starts, passages)
    return run_of, passages - starts[run_of]


def _texts_of_rows(run: TextRun, rows: npt.NDArray[np.int64]) -> TextRun:
    """The texts of ``rows`` (ascending) of a kept run, as a run of their own: a worker's
    share of a task's texts (:meth:`TextsOnWorkers._taken`)."""
    units, counts = run.units(rows)
    return TextRun(units, np.cumsum(counts))
