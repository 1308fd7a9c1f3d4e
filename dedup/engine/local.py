"""The local engine: per-file tasks run in a pool of worker processes on this machine (or here,
in this process, when one worker will do).

Workers are forked where the platform can, after the lookup tables are built and the loops
compiled, so that each starts with them; they die with the process that started them, and an
interrupt or an error stops them at once rather than when their file is done."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from types import TracebackType
from typing import Any, TypeVar

from dedup.codepoints import code_points
from dedup.config import ScanConfig
from dedup.engine.base import in_threads
from dedup.engine.lifetime import die_with_parent
from dedup.fingerprint import signatures
from dedup.models import Document
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


class LocalEngine:
    """Where a scan's per-file tasks run: a pool of ``workers`` processes, or this process
    when one will do (``pool`` is None then). ``with LocalEngine(config, files) as engine:``
    starts the pool; leaving the block stops it, at once after an error or an interrupt."""

    hands_back_texts_once = True

    def __init__(self, config: ScanConfig, files: int) -> None:
        self.config = config
        self.workers = min(config.worker_count, max(1, files))
        self.description = "local, " + (
            "1 process" if self.workers == 1 else f"{self.workers} processes"
        )
        self.pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalEngine:
        if self.workers > 1:
            warm_up(self.config)
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
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.pool is None:
            return
        if error is not None:
            # An interrupt or an error: the workers' tasks are of no more use; stop them now
            # rather than wait for each to finish its file. The pool is not waited for: a
            # worker stopped while it was sending a result leaves half a message in the
            # result pipe, which the pool's reader thread would wait on for ever (seen as a
            # scan that outlived a SIGTERM, its workers gone); the workers themselves are.
            processes = list(getattr(self.pool, "_processes", {}).values())
            for process in processes:
                process.terminate()
            self.pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.join(timeout=5)
                if process.is_alive():
                    process.kill()
                    process.join()
        else:
            self.pool.shutdown(wait=True)
        self.pool = None

    def map(self, function: Callable[..., T], *arguments: Iterable[Any]) -> Iterator[T]:
        """``map`` in the workers (one call a task), or here when there are none."""
        if self.pool is None:
            return map(function, *arguments)
        return self.pool.map(function, *arguments, chunksize=1)

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
            for number, call in enumerate(zip(*arguments, strict=False))
        }
        return ((futures[future], future.result()) for future in as_completed(futures))

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        """``function`` over ``items``, in order, on as many threads of this process as the
        scan has workers: for compiled loops that release the GIL, over data only this
        process holds (the alignment of document pairs)."""
        return in_threads(function, items, self.config.worker_count)


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
