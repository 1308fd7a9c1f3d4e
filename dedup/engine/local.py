"""The local engine: per-file tasks run in a pool of worker processes on this machine (or here,
in this process, when one worker will do).

Workers are forked where the platform can, after the lookup tables are built and the loops
compiled, so that each starts with them; they die with the process that started them, and an
interrupt or an error stops them at once rather than when their file is done."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, InvalidStateError, ProcessPoolExecutor, as_completed
from types import TracebackType
from typing import Any, TypeVar

import numpy as np

from dedup.candidates import Leaders
from dedup.codepoints import TextRun, code_points
from dedup.columns import HeldColumns, Similarity, SimilarityTable, SpanTable
from dedup.config import ScanConfig
from dedup.documents import (
    PassageAlignment,
    candidate_documents,
    document_runs,
    verified_between,
)
from dedup.engine.base import in_threads
from dedup.engine.batches import PassCalls, calls_in_batch, file_batches
from dedup.engine.lifetime import die_with_parent
from dedup.fingerprint import signatures
from dedup.kernels.jit import compiled_before
from dedup.matches import NormalizedTexts, align_through_groups, keep_order, original_spans
from dedup.models import Document, PassageSpan
from dedup.normalize import (
    line_key_array,
    normalize,
    prepare_tables,
)
from dedup.segment import (
    split_chapters,
    split_passages,
)

T = TypeVar("T")


def _quiet_about_cancelled_tasks() -> None:
    """Stop the pool's manager thread printing a traceback when a stopped scan's workers are
    gone (an interrupt or an error stops them): it tells each task not done that the pool
    broke, and a task this process had cancelled (a pass stopped early) raises
    InvalidStateError there, which Python 3.11 leaves to the thread's hook (CPython
    gh-107219, ignored there from 3.12). Seen after Ctrl-C in about one scan in five; every
    other error of every thread is printed as before."""
    global _quiet
    if _quiet:
        return
    printed = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if not (
            args.exc_type is InvalidStateError
            and type(args.thread).__name__ == "_ExecutorManagerThread"
        ):
            printed(args)

    threading.excepthook = hook
    _quiet = True


_quiet = False


def _end_of_results(results: Any) -> None:
    """With the workers gone, the pool's reader thread sees the end of its ``results`` pipe,
    not half a message it would wait on for ever: this process holds the pipe's last writing
    end. Waiting, the thread kept a library caller's process from ending (Python joins it at
    exit: a test run that hung after its last test)."""
    writer = getattr(results, "_writer", None)
    if writer is not None:
        writer.close()


class LocalEngine:
    """Where a scan's per-file tasks run: a pool of ``workers`` processes, or this process
    when one will do (``pool`` is None then). ``with LocalEngine(config, tasks) as engine:``
    starts the pool (no more workers than ``tasks``, the tasks of a pass); leaving the block
    stops it, at once after an error or an interrupt."""

    hands_back_texts_once = True
    makes_cycles = False

    def __init__(self, config: ScanConfig, tasks: int) -> None:
        self.config = config
        self.workers = min(config.worker_count, max(1, tasks))
        self.description = "local, " + (
            "1 process" if self.workers == 1 else f"{self.workers} processes"
        )
        self.pool: ProcessPoolExecutor | None = None
        self.ahead: CompilingAhead | None = None

    def __enter__(self) -> LocalEngine:
        if self.workers > 1:
            self.ahead = CompilingAhead(self.config)
            try:
                warm_up(self.config)
            except BaseException:  # an interrupt while compiling: __exit__ is not called
                self.ahead.stop()
                raise
            # fork where the platform has it: a library caller's script needs no __main__
            # guard, and workers start with the lookup tables built and the loops compiled.
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            self.pool = ProcessPoolExecutor(
                self.workers,
                mp_context=context,
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            )
            _quiet_about_cancelled_tasks()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.ahead is not None:
            self.ahead.stop()
            self.ahead = None
        if self.pool is None:
            return
        if error is not None:
            # An interrupt or an error: the workers' tasks are of no more use; stop them now
            # rather than wait for each to finish its file. The pool is not waited for: a
            # worker stopped while it was sending a result leaves half a message in the
            # result pipe, which the pool's reader thread would wait on for ever (seen as a
            # scan that outlived a SIGTERM, its workers gone); the workers themselves are.
            processes = list(getattr(self.pool, "_processes", {}).values())
            results = getattr(self.pool, "_result_queue", None)  # shutdown lets go of it
            for process in processes:
                process.terminate()
            self.pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.join(timeout=5)
                if process.is_alive():
                    process.kill()
                    process.join()
            _end_of_results(results)
        else:
            self.pool.shutdown(wait=True)
        self.pool = None

    def map(self, function: Callable[..., T], *arguments: Iterable[Any]) -> Iterator[T]:
        """``map`` in the workers (small files' calls in batches, a task each:
        :func:`~dedup.engine.batches.file_batches`), or here when there are none. Results in
        order; the first tasks are handed to the workers before this returns, and each
        later batch, its calls made then, as an earlier one's results are taken."""
        if self.pool is None:
            return map(function, *arguments)
        pool = self.pool
        calls = PassCalls(arguments)
        sizes = calls.file_bytes()
        batches = iter(file_batches(sizes, self.workers, _BATCH_BYTES, _BATCHES_PER_WORKER))
        tasks: deque[Future[list[T]]] = deque()

        def hand_over(count: int) -> None:
            for batch in itertools.islice(batches, count):
                tasks.append(pool.submit(calls_in_batch, function, calls[batch.start : batch.stop]))

        hand_over(_BATCHES_AHEAD)
        return _in_order(tasks, hand_over)

    def kept_on_workers(self, shown: bool) -> None:
        """None: the workers hand signatures and texts back (this process uses them on its
        threads)."""
        return None

    def compiled_ahead(self) -> None:
        """Wait for the align stage's loops, on a first run compiled meanwhile elsewhere."""
        if self.ahead is not None:
            self.ahead.wait()

    def in_any_order(
        self, function: Callable[..., T], *arguments: Iterable[Any]
    ) -> Iterator[tuple[int, T]]:
        """(number, result) of ``function`` over the arguments, as the workers finish them:
        the caller works on each result while the others are still being made, rather than
        waiting for them in order. The tasks are handed to the workers at once, before this
        returns."""
        if self.pool is None:
            return enumerate(map(function, *arguments))
        futures = {
            self.pool.submit(function, *call): number
            for number, call in enumerate(PassCalls(arguments))
        }
        return ((futures[future], future.result()) for future in as_completed(futures))

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        """``function`` over ``items``, in order, on as many threads of this process as the
        scan has workers: for compiled loops that release the GIL, over data only this
        process holds (the alignment of document pairs)."""
        return in_threads(function, items, self.config.worker_count)

    @property
    def thread_count(self) -> int:
        return self.config.worker_count


# Files one task prepares, in bytes together, at most, and batches per worker, at least: a
# task's own cost (its messages, its arguments pickled again) is more than a page of ten-odd
# KB takes to prepare (docs/performance.md).
_BATCH_BYTES = 1_000_000
_BATCHES_PER_WORKER = 8
# Batches handed to the pool ahead of the one whose results are taken: the pool holds a
# task's calls until its results come back, and the results of those done until they are
# taken (an index add, slower than its workers, piled them up), so all of a pass's at once
# held a call a file and results without bound. This many (some 32 MB of small files)
# keep the other workers busy while one prepares a large file (docs/performance.md).
_BATCHES_AHEAD = 32


def _in_order(tasks: deque[Future[list[T]]], hand_over: Callable[[int], None]) -> Iterator[T]:
    """The results of ``tasks``' calls, in order, each task let go of once taken (its
    results are a batch of files') and another handed over in its place; the tasks not yet
    run are cancelled should the caller stop early."""
    try:
        while tasks:
            results = tasks.popleft().result()
            hand_over(1)
            yield from results
    finally:
        for task in tasks:
            task.cancel()


def warm_up_alignment(config: ScanConfig) -> None:
    """Compile the align stage's loops (or load them from numba's cache) on two made-up
    documents of two passages each, with the types a scan gives them: what a first run's
    process compiling ahead does (:class:`CompilingAhead`)."""
    text = "他说什么著书一路预热" * 12
    texts = [text, text[::-1], text, text[:60] + "甴" + text[61:]]
    lengths = np.array([len(t) for t in texts], dtype=np.int64)
    alignment = PassageAlignment(
        lengths,
        np.zeros(4, dtype=np.int64),
        np.ones(int(lengths.sum()), dtype=np.uint8),
        np.empty((0, 2), dtype=np.int64),
        np.array([7, 9, 7, 9, 8], dtype=np.uint32),
        np.array([0, 1, 2, 3, 3], dtype=np.int64),
    )
    spans = SpanTable.of(
        [
            PassageSpan("warm-up", path, None, None, None, start, start + len(t))
            for path, start, t in (
                ("a", 0, texts[0]),
                ("a", 120, texts[1]),
                ("b", 0, texts[2]),
                ("b", 120, texts[3]),
            )
        ]
    )
    runs = HeldColumns(np.array([0, 1], dtype=np.int32), *spans.labels.columns())
    documents = document_runs(spans, runs, alignment)
    leader = Leaders.of_array(np.array([0, 1, 0, 3], dtype=np.int64))
    verified = SimilarityTable.of([Similarity(1, 3, 0.6, 0.6, 0.6, 90)])
    pairs = candidate_documents(documents, leader, alignment, verified, _HERE)
    aligned = align_through_groups(
        pairs,
        verified_between(pairs, documents, verified),
        keep_order(documents, spans, config.keep, pairs),
        documents,
        NormalizedTexts.of(TextRun.of(texts), leader.dense(), alignment),
        config.align,
        _HERE,
    )
    original_spans(aligned, documents, spans, alignment)
    # A cluster's workers hand the alignment its texts' UTF-16, and verification (here
    # too) their code points and lengths, from what they keep.
    run = TextRun.of(texts)
    run.units(np.arange(len(texts)))
    run.code_points(np.arange(len(texts)))
    run.lengths(np.arange(len(texts)))


class _ThisThread:
    thread_count = 1

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        return map(function, items)


_HERE = _ThisThread()


class CompilingAhead:
    """On a first run (nothing compiled for these sources yet), a forked process compiles the
    align stage's loops into numba's cache while this one compiles the workers' and runs the
    stages before alignment: about half of a first run's compiling, done meanwhile on the
    other core (docs/performance.md). :meth:`wait` before the align stage; the process dies
    with this one, and is stopped with the engine."""

    def __init__(self, config: ScanConfig) -> None:
        self.process: multiprocessing.process.BaseProcess | None = None
        if compiled_before() or "fork" not in multiprocessing.get_all_start_methods():
            return
        context = multiprocessing.get_context("fork")
        self.process = context.Process(
            target=_compile_ahead, args=(config, os.getpid()), daemon=True
        )
        self.process.start()

    def wait(self) -> None:
        """Until the loops are compiled (a process that failed has this one compile them)."""
        if self.process is not None:
            self.process.join()
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.process = None


def _compile_ahead(config: ScanConfig, parent: int) -> None:
    die_with_parent(parent)
    warm_up_alignment(config)


def warm_up(config: ScanConfig) -> None:
    """Build the lookup tables and compile the loops (or load them from numba's cache) on a
    tiny chapter, once, before the workers fork, so that they inherit them all."""
    prepare_tables()
    text = "第一章 预热\n" + "他说什么著書，一路预热。" * 100
    line_key_array(code_points(text))
    document = Document("warm-up", "warm-up", None, text)
    for chapter in split_chapters(document):
        body = text[chapter.body_start : chapter.end]
        windows = split_passages(document, chapter, normalize(body), config.passage_chars)
        signatures([w.normalized for w in windows], config.ngram, config.num_perm, config.seed)
