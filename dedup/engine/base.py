"""What every engine offers the stages, and the choice of one for a scan.

A stage hands the engine plain functions of picklable arguments (the per-file task, the
member-text task) and gets their results back; the engine decides where they run: a pool of
processes on this machine (dedup.engine.local) or the workers of a Dask cluster
(dedup.engine.dask_cluster)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from dedup.config import ScanConfig

if TYPE_CHECKING:
    from dedup.documents import TextHolders
    from dedup.engine.shuffle import KeptOnWorkers

T = TypeVar("T")
# How HeldTexts.map hands a function its texts.
TextForm = Literal["code points", "utf-16"]


class Threads(Protocol):
    """Where a stage's compiled loops run over data this process holds, a chunk at a time: an
    engine's threads (the chunks of document pairs aligned, of candidate pairs verified)."""

    @property
    def thread_count(self) -> int:
        """How many chunks run at once (a stage that splits its work evenly makes as many)."""
        ...

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]: ...


@runtime_checkable
class HeldTexts(Protocol):
    """The normalized texts of a scan's passages where the workers that made them keep them
    (a cluster's: dedup.engine.shuffle), not in this process: a stage hands its work on them
    there, a task per chunk, and gets back what the work makes."""

    threads: int  # how many tasks run at once where they are

    def __len__(self) -> int: ...

    def lengths_of(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The length of the text of each of ``rows`` (passages), in characters."""
        ...

    def map(
        self,
        function: Callable[..., T],
        passages: Sequence[npt.NDArray[np.int64]],
        *arguments: Iterable[Any],
        stage: str = "texts",
        form: TextForm = "code points",
    ) -> Iterator[T]:
        """``function(texts, *arguments)`` for each call, ``texts`` the normalized texts of
        its ``passages`` (numbers in the scan), in that order, on the workers, in the
        ``form`` asked for: "code points", one array of them, one text after another;
        "utf-16", a pair: one array of their UTF-16 code units, one text after another, and
        where each text starts in it (no string is made: the workers keep the texts as
        UTF-16). Results in order, counted on a progress bar named ``stage``. ``function``
        and the arguments go to the workers: plain functions of picklable values."""
        ...

    def let_go(self) -> None:
        """The workers let the texts go."""
        ...


class HeldSeeds(Protocol):
    """The winnowed seeds of a scan's passages (dedup.align) as the main process holds them
    (``documents.SeedKeys``: the pairs of documents that share them counted on this process's
    ``threads``), or where the workers that made them keep them (a cluster's: counted
    there)."""

    def document_pairs(
        self,
        distinct: npt.NDArray[np.int64],
        holding: TextHolders,
        most: int,
        known: npt.NDArray[np.int64],
        threads: Threads,
    ) -> npt.NDArray[np.int64]:
        """The pairs of documents (``a * documents + b``, a < b, sorted; ``holding`` says
        which documents hold each text) that share ``documents.MIN_SHARED_SEEDS`` seeds at
        least through the texts of the passages ``distinct`` (the first of each text), a
        seed of more than ``most`` documents counting for none; and those holding the
        ``known`` pairs of texts (``low * texts + high``: verified), whatever they share."""
        ...

    def let_go(self) -> None:
        """The workers let the seeds go."""
        ...


@runtime_checkable
class HeldLengths(Protocol):
    """Each passage's normalized length and lead (the characters it shares with the one
    before, --passage-overlap) where the workers that made them keep them (a cluster's, with
    the passages' offset steps), not in this process: looked up for the passages a stage
    names, and summed a document at a time."""

    def __len__(self) -> int: ...

    def of(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The length and the lead of each of ``rows`` (passages, in any order)."""
        ...

    def stories(self, first: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The characters of each run of passages from ``first[i]`` to the next run's first
        (the last run's to the last passage), all but their leads: the runs (documents)
        cover every passage, ``first`` ascending from 0."""
        ...


class HeldSteps(Protocol):
    """The offset steps of a scan's passages (dedup.offset_steps) as the main process holds
    them: packed two bits a step (``offset_steps.PackedSteps``), or where the workers that
    made them keep them (a cluster's), normalized positions then mapped back there."""

    def original_offsets(
        self,
        passage: npt.NDArray[np.int64],
        index: npt.NDArray[np.int64],
        span_start: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        """``offset_steps.original_offsets`` of each (passage, normalized ``index``), the
        passage's span starting at ``span_start``."""
        ...

    def let_go(self) -> None:
        """The steps are let go of (by the workers, where they keep them)."""
        ...


class Engine(Protocol):
    """Where a scan's tasks run. Entered (``with``) for the scan; left at once, its tasks
    dropped, after an error or an interrupt."""

    # How many tasks run at once; and the engine and its workers in words, for the summary.
    workers: int
    description: str
    # Whether a worker may hand a text back once for all the files it prepares (see
    # dedup.engine.copies): only where a worker lives for one scan and nothing it handed back
    # is computed again elsewhere.
    hands_back_texts_once: bool
    # Whether this process makes reference cycles all the scan long (a Dask client's event
    # loop does): its young ones are then collected as it runs (collector_paused).
    makes_cycles: bool

    def __enter__(self) -> Engine: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...

    def map(self, function: Callable[..., T], *arguments: Iterable[Any]) -> Iterator[T]:
        """``function`` over the arguments, one task a call; results in order."""
        ...

    def in_any_order(
        self, function: Callable[..., T], *arguments: Iterable[Any]
    ) -> Iterator[tuple[int, T]]:
        """(number, result) of each call as its task finishes; the tasks are handed out at
        once, before this returns."""
        ...

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        """``function`` over ``items``, in order, on threads of this process (compiled loops
        over data only this process holds)."""
        ...

    @property
    def thread_count(self) -> int:
        """How many threads :meth:`in_threads` runs on."""
        ...

    def compiled_ahead(self) -> None:
        """Wait for the align stage's loops where the engine has them compiled meanwhile
        (a first run's, on the local engine); at once elsewhere."""
        ...

    def kept_on_workers(self, shown: bool) -> KeptOnWorkers | None:
        """Where the workers keep the signatures and texts they make, the stages that use
        them running there (a cluster's: dedup.engine.shuffle); None where they are handed
        back here."""
        ...


def engine_for(config: ScanConfig, tasks: int) -> Engine:
    """The engine ``config`` asks for, for a scan of ``tasks`` tasks a pass (not started yet:
    see dedup.read.slices.most_tasks)."""
    if config.engine_name == "local":
        from dedup.engine.local import LocalEngine

        return LocalEngine(config, tasks)
    from dedup.engine.dask_cluster import DaskEngine

    return DaskEngine(config)


def in_threads(function: Callable[[Any], T], items: Sequence[Any], threads: int) -> Iterator[T]:
    """``function`` over ``items``, in order, on up to ``threads`` threads of this process,
    at most two items a thread ahead of the one taken: a result waits until taken, and a
    stage's chunks can each make hundreds of megabytes (verification's shingle sets)."""
    threads = min(threads, len(items))
    if threads <= 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(threads) as pool:
        ahead: deque[Future[T]] = deque()
        try:
            for item in items:
                ahead.append(pool.submit(function, item))
                if len(ahead) > 2 * threads:
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:  # stopped early (an error, an interrupt): what has not started, never will
            for future in ahead:
                future.cancel()
