"""Signatures kept where a Dask cluster's workers made them, and the candidates stage's band
keys shuffled among the workers by partition, so that this process never holds a signature.

Each file's task leaves its passages' signatures on its worker (``DaskEngine.map_keeping``);
this process gets the rest of the file and numbers its passages. For the candidate pairs, a
task per batch of consecutive files turns their signatures into band keys of the passages
that take part (the first of each distinct text), split into partitions by
``hash(band, key) % P`` (``candidates.band_entries``); a task per partition gathers that
partition from every batch, in the scan's order, and makes its buckets' pairs
(``candidates.partition_pair_codes``); only the pairs come back, merged here. Every bucket
lies in one partition, so the pairs are those the local engine finds, whatever P, the batches
and the number of workers. The MinHash estimates of the pairs are made by tasks of
consecutive pairs, each given the signatures of the files its pairs name (Dask moves them to
its worker); only the estimates come back.

What it holds, where: a worker, its files' signatures (``num_perm`` × 4 bytes a passage) and,
during the shuffle, a batch's signatures and band keys (``bands`` × 18 bytes a passage taking
part) and a partition's; this process, a future and two numbers a file, then the pairs."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dedup.candidates import band_entries, merged_codes, partition_pair_codes
from dedup.engine.tasks import PreparedFile, passage_count, signatures_of, without_signatures
from dedup.progress import progress
from dedup.verify import estimates_in_runs

if TYPE_CHECKING:
    from distributed import Future

    from dedup.engine.dask_cluster import DaskEngine

# A run of consecutive passages' signatures a worker keeps (a file's, or a slice's): their
# future, and how many.
Run = tuple["Future[Any]", int]

# Partitions of the band keys per worker thread: a few, so that a slow one does not hold the
# others up, and few enough that each task has something to do.
PARTITIONS_PER_THREAD = 2
# Batches of files whose band keys one task makes, per worker thread.
BATCHES_PER_THREAD = 4
# Candidate pairs whose MinHash estimates one task makes.
_PAIRS_A_TASK = 500_000


@dataclass(frozen=True, slots=True)
class _Held:
    """Consecutive passages of the scan whose signatures a worker keeps: from ``first``,
    ``count`` of them."""

    first: int
    count: int
    signatures: Future[Any]


class SignaturesOnWorkers:
    """The scan's signatures, kept by the workers that made them (see the module's
    docstring); a ``fingerprint.HeldSignatures``."""

    def __init__(self, engine: DaskEngine, shown: bool) -> None:
        self._engine = engine
        self._shown = shown
        self._runs: list[_Held] = []
        # The signatures' futures, in a list the engine cancels on an error.
        self._futures: list[Future[Any] | None] = engine.holding([])

    def prepared(
        self, function: Any, *arguments: Iterable[Any]
    ) -> Iterator[tuple[PreparedFile, Run]]:
        """``function`` (the main pass's task) over the arguments on the workers: each
        prepared file without its signatures, in order, with a future of them and their
        number; :meth:`add` takes those of the files kept."""
        for result, kept in self._engine.map_keeping(
            function, signatures_of, without_signatures, *arguments
        ):
            yield result, (kept, passage_count(result))

    def add(self, runs: Sequence[Run]) -> None:
        """The signatures of the next passages of the scan, in runs (a file's, or its
        slices')."""
        for signatures, count in runs:
            if count:
                self._runs.append(_Held(len(self), count, signatures))
                self._futures.append(signatures)

    def __len__(self) -> int:
        return self._runs[-1].first + self._runs[-1].count if self._runs else 0

    def pair_codes(
        self, bands: int, rows: int, among: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        client = self._engine.client_for_tasks()
        count = len(self)
        partitions = max(1, PARTITIONS_PER_THREAD * self._engine.workers)
        bounds = np.searchsorted(among, [run.first for run in self._runs] + [count])
        taking_part = [
            among[bounds[number] : bounds[number + 1]] - run.first
            for number, run in enumerate(self._runs)
        ]
        # The files' band keys are made a batch of files at a time (Dask moves a batch's
        # signatures to its worker), so that the tasks that split them into partitions are
        # batches × partitions, not files × partitions, however many files a dump has.
        batches = max(1, BATCHES_PER_THREAD * self._engine.workers)
        size = -(-len(self._runs) // batches) or 1
        entries = [
            client.submit(
                band_entries,
                [run.signatures for run in self._runs[start : start + size]],
                taking_part[start : start + size],
                [run.first for run in self._runs[start : start + size]],
                bands,
                rows,
                partitions,
                pure=False,
            )
            for start in range(0, len(self._runs), size)
        ]
        parts: list[Future[Any] | None] = [
            client.submit(
                partition_pair_codes,
                [client.submit(operator.getitem, entry, part, pure=False) for entry in entries],
                count,
                pure=False,
            )
            for part in range(partitions)
        ]
        del entries  # each let go on its worker once its partitions are taken
        codes = np.empty(0, dtype=np.int64)
        done = self._engine.as_done(self._engine.holding(parts))
        for found in progress(done, "candidates", "partition", partitions, self._shown):
            codes = merged_codes(codes, found)
        return codes

    def estimates(self, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        client = self._engine.client_for_tasks()
        firsts = np.array([run.first for run in self._runs], dtype=np.int64)
        tasks: list[Future[Any] | None] = []
        for start in range(0, len(pairs), _PAIRS_A_TASK):
            chunk = pairs[start : start + _PAIRS_A_TASK]
            named = np.unique(np.searchsorted(firsts, chunk.ravel(), side="right") - 1).tolist()
            tasks.append(
                client.submit(
                    estimates_in_runs,
                    chunk,
                    [self._runs[run].first for run in named],
                    [self._runs[run].signatures for run in named],
                    pure=False,
                )
            )
        done = self._engine.in_order(self._engine.holding(tasks))
        estimated = list(progress(done, "estimates", "chunk", len(tasks), self._shown))
        return np.concatenate(estimated) if estimated else np.empty(0, dtype=np.float64)

    def let_go(self) -> None:
        self._runs = []
        self._futures.clear()
