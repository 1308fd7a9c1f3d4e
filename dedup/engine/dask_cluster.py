"""The Dask engine: a scan's per-file work (read, segment, normalize, fingerprint; the learn
pass; reading texts back) runs on the workers of a Dask cluster (small files in batches, a
task each), reached through its scheduler's address or a ``distributed.Client``, or on a
cluster of processes started on this machine for the scan (``engine="dask-local"``). The
workers keep the signatures and normalized texts they make, and the candidates stage,
verification and the alignment run there (dedup.engine.shuffle); the rest runs in this
process, as with the local engine, and each stage computes what it computes locally, so a
report is byte-identical whichever engine made it.

Workers read the inputs from the paths this machine found them at: the files must be on a
filesystem every worker mounts at the same path. A worker that cannot see a file stops the
scan with an error naming the file and the worker. A worker that dies has its tasks run again
by Dask on the others (a task is a pure function of its file, so the result is the same).

``dask``/``distributed`` are an optional extra (``pip install 'dedup[dask]'``), imported only
when this engine is used."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import logging
import multiprocessing
import multiprocessing.process
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import CancelledError
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from dedup.config import ScanConfig
from dedup.engine import lifetime
from dedup.engine.base import in_threads
from dedup.engine.batches import PassCalls, batches_in_pieces
from dedup.engine.lifetime import die_with_parent
from dedup.engine.memory import collector_restarted
from dedup.engine.scratch import (
    Scratch,
    StoredPart,
    StoredParts,
    holds_parts,
    opened_if_stored,
    sees_folder,
    store,
    with_parts_opened,
)
from dedup.errors import EngineError
from dedup.kernels.jit import sources_digest
from dedup.read import FoundFile
from dedup.read.location import exists, is_url
from dedup.read.slices import FileSlice
from dedup.version import __version__

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

    from dedup.engine.shuffle import KeptOnWorkers

T = TypeVar("T")

# How long to try reaching a scheduler, and to wait for a first worker, before giving up.
CONNECT_SECONDS = 10
# dask-local's temporary folder: this, then the id of the process that made it.
_FOLDER_PREFIX = "dedup-dask-"
# How long a dask-local worker may take to start (a first run compiles its loops) and join.
_START_SECONDS = 600
# Files one task of a pass prepares, in bytes together, at most (see file_batches), and batches
# per worker thread, at least, where there are files enough.
_BATCH_BYTES = 8_000_000
# The same for a pass whose tasks' workers keep parts of what they make (map_keeping): the
# client holds futures of each batch's to the end of the scan.
_KEPT_BATCH_BYTES = 32_000_000
_BATCHES_PER_THREAD = 8
# Batches handed to the scheduler ahead of the one whose results are taken, per worker
# thread: each thread has the next one queued as it finishes one (_Ahead).
_BATCHES_AHEAD_PER_THREAD = 2
# An array this large is sent to a worker apart from the task that takes it (DaskEngine.submit).
_SENT_APART_BYTES = 1_000_000
# Arguments this small are sent with each task rather than scattered to the workers once.
_SENT_WITH_EACH = (int, float, str, bytes, bool, type(None), FoundFile, FileSlice, ScanConfig)


class DaskEngine:
    """Where a scan's tasks run on a Dask cluster (see the module's docstring). ``with
    DaskEngine(config) as engine:`` connects (or starts the local cluster); leaving the block
    cancels the scan's tasks still queued or running and closes what it opened."""

    hands_back_texts_once = False  # workers outlive a scan, and a dead one's tasks run again
    # The client's event loop, in this process, makes reference cycles all the scan long (an
    # exception a tornado timeout, with its traceback and frames: thousands of objects a
    # minute), which a paused collector kept to the end of the scan, and which left
    # pymalloc's pools in pieces when freed.
    makes_cycles = True

    def __init__(self, config: ScanConfig) -> None:
        self.config = config
        self.workers = 0
        self.description = "dask"
        self.client: Client | None = None
        self._cluster: LocalCluster | None = None
        self._owns_client = False
        self._where = ""  # the scheduler's address, for messages
        self._local_workers: _LocalWorkers | None = None
        # Where the workers keep what they make, if not under Dask's keys (dedup.engine.scratch).
        self.scratch: Scratch | None = None
        # Each call's task until its result is taken (then None: the workers let it go).
        self._tasks: list[list[Future[Any] | None]] = []

    def __enter__(self) -> DaskEngine:
        if importlib.util.find_spec("distributed") is None:
            raise EngineError("the Dask engine needs the dask extra: pip install 'dedup[dask]'")
        try:
            if self.config.engine_name == "dask-local":
                # First: each worker's Python imports dedup and loads its loops while this
                # process imports distributed and starts the scheduler.
                self._local_workers = _LocalWorkers(self.config)
            import dask
            import distributed

            # distributed keeps the last 1,000 messages each connection sent and the
            # scheduler's last 1,000 transitions, for its own developers: here the scan's
            # task graphs, every file named in them, held by this process for the whole
            # scan (docs/performance.md). None are kept by the connections and the
            # dask-local scheduler made here (a caller's client is left as it is).
            with dask.config.set({"distributed.admin.low-level-log-length": 0}):
                self._start(distributed)
        except BaseException:  # an error or an interrupt while starting: nothing left behind
            self._close()
            raise
        return self

    def _start(self, distributed: Any) -> None:
        """Connect to the cluster (or start the local one) and wait for its workers."""
        scheduler = self.config.scheduler
        if self.config.engine_name == "dask-local":
            # No dashboard; the scheduler's HTTP server (metrics) on a free port, not 8787
            # (in use by another cluster, it fails the start).
            assert self._local_workers is not None
            self._cluster = distributed.LocalCluster(
                n_workers=0,
                dashboard_address=None,
                scheduler_kwargs={
                    "dashboard_address": "127.0.0.1:0",
                    "scheduler_file": self._local_workers.scheduler_file,
                    "local_directory": self._local_workers.folder.name,
                },
                silence_logs=logging.ERROR,
            )
            self.client = distributed.Client(self._cluster, set_as_default=False)
            self._owns_client = True
            where = self._cluster.scheduler_address
        elif isinstance(scheduler, str):
            self.client, self._owns_client = _connect(scheduler), True
            where = scheduler
        else:
            self.client = scheduler  # the caller's Client: used, left open
            where = str(getattr(scheduler.scheduler, "address", "the client's scheduler"))
        self._where = where
        if self._local_workers is not None:
            self._local_workers.joined(self.client, self.config.worker_count)
        else:  # a cluster's: one worker at least
            try:
                self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
            except (TimeoutError, OSError):
                raise EngineError(
                    f"no Dask workers joined the scheduler at {where} within "
                    f"{CONNECT_SECONDS} s: start some (dask worker {where}) and scan again"
                ) from None
        _check_workers_run_this_dedup(self.client)
        self._make_scratch()
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        self.workers = sum(worker["nthreads"] for worker in workers.values())
        kind = "local Dask cluster" if self._cluster is not None else f"Dask at {where}"
        self.description = f"{kind}, {len(workers)} workers ({self.workers} threads)"
        if self.config.scratch is not None:  # (dask-local's own folder is not the user's)
            self.description += f", their parts kept in {self.config.scratch}"

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        held = [task for tasks in self._tasks for task in tasks if task is not None]
        # Only the tasks not done are cancelled: cancelling a finished one cancels its
        # dependents too, and distributed asserts on a dependent no client wants any more.
        pending = [task for task in held if not task.done()]
        with _distributed_silenced():
            if self.client is not None and pending:
                with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
                    self.client.cancel(pending, force=True)
            # The rest let go of now, not when the caller lets go of the error: a traceback
            # kept (a notebook keeps the last one) holds the stages' futures, and a caller's
            # cluster would keep what its workers made for the scan.
            for task in held:
                task.release()
        self._tasks = []
        self._close()

    def _make_scratch(self) -> None:
        """The scan's scratch folder, if one is given (a dask-local cluster's in its own
        folder, unless given), seen by every worker."""
        assert self.client is not None
        base = self.config.scratch
        if base is None and self._local_workers is not None:
            base = self._local_workers.folder.name
        if base is None:
            return
        self.scratch = Scratch(base)
        seen = self.client.run(sees_folder, self.scratch.folder)
        self.scratch.check_seen_by(seen)

    def _close(self) -> None:
        if self.scratch is not None:
            self.scratch.remove()
            self.scratch = None
        with _distributed_silenced():
            if self.client is not None and self._owns_client:
                with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
                    self.client.close(timeout=CONNECT_SECONDS)  # a lost scheduler: given up on
            if self._local_workers is not None:
                self._local_workers.stop()
            if self._cluster is not None:
                self._cluster.close()
        self.client, self._cluster, self._local_workers = None, None, None

    def map(self, function: Callable[..., T], *arguments: Iterable[Any]) -> Iterator[T]:
        """``function`` over the arguments as tasks on the workers (small files' calls in
        batches, a task each: :func:`~dedup.engine.batches.file_batches`); results in order."""
        calls, batches, _pieces, tasks, hand_over = self._submit_batches(function, arguments)
        ahead = self._ahead(len(batches), hand_over)  # the first ones now

        def results() -> Iterator[T]:
            for number in range(len(batches)):
                ahead.through(number)
                yield from self._batch_taken(function, calls, batches, tasks, number)

        return results()

    def map_keeping(
        self,
        function: Callable[..., T],
        kept: Sequence[Callable[[T], Any]],
        handed_back: Callable[[list[T]], list[Any]],
        merged: Callable[[list[T]], T],
        *arguments: Iterable[Any],
    ) -> Iterator[tuple[Any, tuple[Any, ...]]]:
        """``function`` over the arguments as tasks on the workers, small files' calls in
        batches (:func:`~dedup.engine.batches.file_batches`): of the results
        ``handed_back(results)`` brought here, in order, a piece of the batch at a time
        (what it hands back of a piece's results: each alone, or some as one); of each
        batch's results ``merged``, each of ``kept`` of that kept by the workers (in the
        scratch folder, or under Dask's keys), what names them given with the last that
        comes back of the batch (``()`` with the others: Dask runs the task again if a
        worker dies while a future of them is held)."""
        calls, batches, pieces, tasks, hand_over_batch = self._submit_batches(
            function, arguments, _KEPT_BATCH_BYTES
        )
        assert self.client is not None
        submit = self.client.submit
        # The batches are larger than those of map: the client holds a future of each kept
        # part of each batch to the end of the scan (without a scratch folder). What comes
        # back is taken as before, a piece of _BATCH_BYTES at a time (docs/performance.md).
        every_piece = [piece for each in pieces for piece in each]
        backs: list[Future[Any] | None] = [None] * len(every_piece)
        self._tasks.append(backs)
        keeping = (
            _KeptInScratch(self, self.scratch, kept, merged, len(batches))
            if self.scratch is not None
            else _KeptAsFutures(self, kept, merged, len(batches))
        )
        firsts = list(itertools.accumulate(map(len, pieces), initial=0))  # each batch's piece

        def hand_over(number: int) -> None:
            """Batch ``number``'s task, the tasks that hand back its pieces, and those that
            keep its parts."""
            hand_over_batch(number)
            task, start = tasks[number], batches[number].start
            for at, piece in enumerate(pieces[number], firsts[number]):
                backs[at] = submit(
                    _each,
                    handed_back,
                    task,
                    piece.start - start,
                    piece.stop - start,
                    pure=False,
                    priority=-number,
                )
            assert task is not None
            keeping.made(number, task)

        ahead = self._ahead(len(batches), hand_over)
        first_piece = 0
        for number in range(len(batches)):
            ahead.through(number)
            task = tasks[number]
            assert task is not None
            held: list[T] = []  # a failed task's results, made here (_batch_taken)
            last: list[Any] = []  # yielded with the batch's kept parts, if it is its last
            for piece in range(first_piece, first_piece + len(pieces[number])):
                results = self._batch_taken(function, calls, every_piece, backs, piece)
                if task.status == "error":
                    held += results
                    continue
                for result in last + results[:-1]:
                    yield result, ()
                last = results[-1:]
            first_piece += len(pieces[number])
            if held:  # run here instead: whole, the workers kept nothing
                keep = keeping.taken(number, merged(held))
                last = handed_back(held)
                for result in last[:-1]:
                    yield result, ()
            else:
                keep = keeping.taken(number, None)
            tasks[number] = None
            yield last[-1], keep

    def kept_parts(self, part: Callable[..., Any]) -> list[Future[Any] | None] | StoredParts:
        """Where a stage keeps what names the ``part`` of each batch the workers keep (that
        :meth:`map_keeping` gives): the parts in the scratch folder, or a list of futures
        cancelled on an error (:meth:`holding`)."""
        if self.scratch is not None:
            return self.scratch.parts(part.__name__)
        return self.holding([])

    def kept_on_workers(self, shown: bool) -> KeptOnWorkers:
        """The workers keep the signatures and texts they make; the candidates stage,
        verification and the alignment run there (dedup.engine.shuffle), so this process
        never holds them."""
        from dedup.engine.shuffle import KeptOnWorkers

        return KeptOnWorkers(self, shown)

    def client_for_tasks(self) -> Client:
        """The client, for a stage that hands the workers tasks of its own (dedup.engine.shuffle):
        their futures go to :meth:`holding`, their results are taken by :meth:`as_done` or
        :meth:`in_order`."""
        assert self.client is not None, "DaskEngine used outside its with block"
        return self.client

    def submit(
        self,
        function: Callable[..., Any],
        *arguments: Any,
        named_after: Callable[..., Any] | None = None,
        first: bool = False,
    ) -> Future[Any]:
        """``function(*arguments)`` as a task of a stage of its own (dedup.engine.shuffle), its
        key named after ``function`` (or ``named_after``, what a wrapper runs); ``first``,
        run before the stage's other tasks a worker has waiting. An array of a
        megabyte or more among the arguments (in a list or tuple too) is sent to a worker on
        its own rather than in the task's graph, which goes through the scheduler: a 1 GB
        dump's tasks of 500,000 pairs had distributed warn the user of a large graph."""
        assert self.client is not None, "DaskEngine used outside its with block"
        sent = [self._sent_apart(value) for value in arguments]
        key = named(named_after or function)
        if self.scratch is not None and holds_parts(sent):  # opened by the worker that runs it
            function, sent = with_parts_opened, [function, *sent]
        future: Future[Any] = self.client.submit(
            function, *sent, key=key, priority=1 if first else 0
        )
        return future

    def _sent_apart(self, value: Any) -> Any:
        assert self.client is not None
        if isinstance(value, np.ndarray) and value.nbytes >= _SENT_APART_BYTES:
            return self.client.scatter(value, hash=False)
        if type(value) in (list, tuple):
            return type(value)(self._sent_apart(item) for item in value)
        return value

    def everywhere(self, value: Any) -> Future[Any]:
        """``value`` sent to every worker once (for many tasks of a stage of its own); the
        workers let it go once the caller lets go of the future and its tasks are done."""
        assert self.client is not None, "DaskEngine used outside its with block"
        sent: Future[Any] = self.client.scatter(value, broadcast=True, hash=False)
        return sent

    def holding(self, futures: list[Future[Any] | None]) -> list[Future[Any] | None]:
        """``futures``, cancelled when the scan stops on an error (as the engine's own tasks
        are); taking their results (:meth:`as_done`, :meth:`in_order`) lets each go."""
        self._tasks.append(futures)
        return futures

    def as_done(self, futures: list[Future[Any] | None]) -> Iterator[Any]:
        """The results of ``futures`` as they finish, each future then let go."""
        from distributed import as_completed

        assert self.client is not None
        numbers = {task.key: number for number, task in enumerate(futures) if task is not None}
        for task in as_completed([f for f in futures if f is not None], loop=self.client.loop):
            futures[numbers[task.key]] = None
            yield self._result_of(task)

    def in_order(self, futures: list[Future[Any] | None]) -> Iterator[Any]:
        """The results of ``futures`` in order, each future then let go."""
        for number, task in enumerate(futures):
            assert task is not None, "a task's result taken twice"
            futures[number] = None
            yield self._result_of(task)

    def in_any_order(
        self, function: Callable[..., T], *arguments: Iterable[Any]
    ) -> Iterator[tuple[int, T]]:
        """(number, result) of each call as the workers finish them."""
        from distributed import as_completed

        calls, tasks = self._submit(function, arguments)
        assert self.client is not None
        numbers = {task.key: number for number, task in enumerate(tasks) if task is not None}
        # Given the loop: else as_completed looks for a default client, and ours is not one.
        done = as_completed([task for task in tasks if task is not None], loop=self.client.loop)
        return (
            (numbers[task.key], self._taken(function, calls, tasks, numbers[task.key]))
            for task in done
        )

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        """On this process's threads, as the local engine does (the alignment holds data
        only this process has)."""
        return in_threads(function, items, self.config.worker_count)

    @property
    def thread_count(self) -> int:
        return self.config.worker_count

    def compiled_ahead(self) -> None:
        """Nothing compiles ahead on a cluster: this process compiles the alignment's loops
        when it reaches them."""

    def _submit(
        self, function: Callable[..., T], arguments: Sequence[Iterable[Any]]
    ) -> tuple[_Calls, list[Future[Any] | None]]:
        """The calls, and a task for each, handed to the scheduler now (earlier calls first,
        as the results are taken in order)."""
        calls = self._calls(arguments)
        tasks: list[Future[Any] | None] = [
            self._submitted(_task, function, *calls.sent(number), priority=-number)
            for number in range(len(calls))
        ]
        self._tasks.append(tasks)
        return calls, tasks

    def _submit_batches(
        self,
        function: Callable[..., T],
        arguments: Sequence[Iterable[Any]],
        most_bytes: int = _BATCH_BYTES,
    ) -> tuple[
        _Calls, list[range], list[list[range]], list[Future[Any] | None], Callable[[int], None]
    ]:
        """The calls, their batches (:func:`~dedup.engine.batches.batches_in_pieces`), each
        batch's pieces of up to ``_BATCH_BYTES``, a task for each batch (None until it is
        handed to the scheduler) and what hands batch ``number``'s over (in order, a few
        ahead of the one whose results are taken: :class:`_Ahead`)."""
        calls = self._calls(arguments)
        batches, pieces = batches_in_pieces(
            calls.file_bytes(), self.workers, most_bytes, _BATCHES_PER_THREAD, _BATCH_BYTES
        )
        tasks: list[Future[Any] | None] = [None] * len(batches)
        self._tasks.append(tasks)

        def hand_over(number: int) -> None:
            futures, sent = calls.batch_sent(batches[number])
            tasks[number] = self._submitted(_batch_task, function, futures, sent, priority=-number)

        return calls, batches, pieces, tasks, hand_over

    def _ahead(self, count: int, hand_over: Callable[[int], None]) -> _Ahead:
        """``count`` batches handed over by ``hand_over`` a few a worker thread ahead of the
        one whose results are taken, the first ones now."""
        ahead = _Ahead(count, _BATCHES_AHEAD_PER_THREAD * max(1, self.workers), hand_over)
        ahead.through(0)
        return ahead

    def _calls(self, arguments: Sequence[Iterable[Any]]) -> _Calls:
        """The calls of ``arguments``: a value given to every call (``itertools.repeat``:
        the config, the lines each source repeats) is made for the workers once, and one
        they do not get with each task is scattered to them once, its future in its place."""
        from distributed import Future

        assert self.client is not None, "DaskEngine used outside its with block"
        calls = _Calls(arguments)
        shared = {
            place: value
            for place, value in calls.same.items()
            if not isinstance(value, (*_SENT_WITH_EACH, Future))
        }
        # In a list: scatter takes a dict (the lines each source repeats) as its items.
        sent = (
            self.client.scatter(list(shared.values()), broadcast=True, hash=False) if shared else []
        )
        self._tasks.append(list(sent))  # let go of at the end
        calls.scattered = dict(zip(shared, sent, strict=True))
        return calls

    def _submitted(self, *task: Any, priority: int) -> Future[Any]:
        assert self.client is not None
        return self.client.submit(*task, pure=False, priority=priority)

    def _batch_taken(
        self,
        function: Callable[..., T],
        calls: _Calls,
        batches: list[range],
        tasks: list[Future[Any] | None],
        number: int,
    ) -> list[T]:
        """The results of batch ``number``'s calls, its task then let go; run here, should a
        file of it be gone (see :meth:`_taken`)."""
        task = tasks[number]
        assert task is not None, "a task's result taken twice"
        tasks[number] = None
        try:
            results: list[T] = self._result_of(task)
            return results
        except _NotOnWorker as missing:
            self._not_on_worker(missing)
            return [function(*_here(calls[call])) for call in batches[number]]

    def _taken(
        self,
        function: Callable[..., T],
        calls: _Calls,
        tasks: list[Future[Any] | None],
        number: int,
    ) -> T:
        """The result of call ``number``, its task then let go."""
        task = tasks[number]
        assert task is not None, "a task's result taken twice"
        tasks[number] = None
        try:
            result: T = self._result_of(task)
            return result
        except _NotOnWorker as missing:
            self._not_on_worker(missing)
            return function(*_here(calls[number]))

    @staticmethod
    def _not_on_worker(missing: _NotOnWorker) -> None:
        """Stop the scan if a file a worker did not see is here: the worker cannot see it.
        (Gone here too, it was deleted while the scan ran: run here, it is a skip.)"""
        if exists(missing.fs_path):
            raise EngineError(
                f"{missing.path}: the Dask worker {missing.worker} cannot see "
                f"{missing.fs_path}; workers read the inputs at the paths this machine "
                "finds them: put them on a filesystem every worker mounts at the same path"
            ) from None

    def _result_of(self, task: Future[Any]) -> Any:
        """The result of ``task``, or the error the scan stops with when the cluster failed
        it."""
        from distributed import KilledWorker

        try:
            return task.result()
        except (OSError, CancelledError, asyncio.CancelledError):
            # The scheduler went away (its connection closed, the task cancelled with it).
            raise EngineError(
                f"lost the Dask scheduler at {self._where} during the scan: check that it "
                "runs and this machine reaches it, and scan again"
            ) from None
        except KilledWorker as killed:
            raise EngineError(
                f"Dask workers died running a task {killed.task!r} again and again (each "
                "run lost its worker): look at the workers' logs (out of memory?)"
            ) from None


class _LocalWorkers:
    """The workers of a dask-local cluster: ``dask worker`` processes, one thread each, in a
    process group of their own (a terminal's Ctrl-C reaches this process, which stops them),
    ended with this process even by a ``kill -9`` (dedup.engine.lifetime), their logs in a
    temporary file. Each is started before the scheduler, which it finds by the file the
    scheduler writes once it listens.

    Where the system can fork, they are forked copies of this process once it has loaded
    what the per-file task needs (:func:`_ready_to_prepare`, as the local engine's workers
    inherit it) and distributed's worker: a worker's own Python took 2.3-3.0 s to import
    dedup and distributed and load numba, on cores this process needs meanwhile
    (docs/performance.md). Elsewhere they are plain subprocesses that load it first (not
    multiprocessing's spawn, which would run the caller's script again in each)."""

    def __init__(self, config: ScanConfig) -> None:
        # The scheduler's file and the workers' own folders, removed with them (or, should
        # this process be killed, by the next dask-local start).
        _remove_stale_folders()
        self.folder = tempfile.TemporaryDirectory(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-")
        self.scheduler_file = os.path.join(self.folder.name, "scheduler.json")
        self.log = tempfile.TemporaryFile()  # noqa: SIM115  # open as long as the workers run
        self.processes: list[_ForkedWorker | subprocess.Popen[bytes]] = []
        try:
            self._start(config.worker_count)
        except BaseException:  # an interrupt while loading (seconds): the folder removed too
            self.stop()
            raise

    def _start(self, count: int) -> None:
        arguments = [
            *("--no-nanny", "--nthreads", "1", "--death-timeout", "60"),
            *("--scheduler-file", self.scheduler_file, "--local-directory", self.folder.name),
        ]
        forks = lifetime.can_fork()
        if forks:  # loaded once, here, for them all
            _ready_to_prepare()
            import distributed.cli.dask_worker  # noqa: F401
        start = self._forked if forks else self._subprocess
        for _ in range(count):
            self.processes.append(start(arguments))

    def _forked(self, arguments: list[str]) -> _ForkedWorker:
        context = multiprocessing.get_context("fork")
        process = context.Process(
            target=_forked_worker, args=(os.getpid(), self.log.fileno(), arguments)
        )
        # A Ctrl-C before the copy has left this process group would reach it with this
        # process's handler; held back meanwhile (the copy lets it go once it ignores it).
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        return _ForkedWorker(process)

    def _subprocess(self, arguments: list[str]) -> subprocess.Popen[bytes]:
        code = (
            "import sys; from dedup.engine.lifetime import die_with_parent; "
            "die_with_parent(int(sys.argv[1])); "
            "from dedup.engine.dask_cluster import _ready_to_prepare; _ready_to_prepare(); "
            "from distributed.cli.dask_worker import main; "
            "sys.argv = ['dask-worker', *sys.argv[2:]]; main()"
        )
        return subprocess.Popen(
            [sys.executable, "-c", code, str(os.getpid()), *arguments],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            # A group of its own: a Ctrl-C that came while a worker's Python was starting
            # (before it could ignore it) killed it with a traceback, and the scan ended on
            # "a worker ended" rather than as interrupted. This process stops them.
            process_group=0,
        )

    def joined(self, client: Client, count: int) -> None:
        """Wait until all of them have joined the scheduler, as long as each runs: a first
        run's worker compiles its loops before it joins, which takes a minute on a slow
        machine. One that ended (or none joined in ``_START_SECONDS``) is an error, with the
        end of their log."""
        deadline = time.monotonic() + _START_SECONDS
        while True:
            try:
                client.wait_for_workers(count, timeout=1)
                return
            except (TimeoutError, OSError):
                pass
            ended = [process.returncode for process in self.processes if process.poll() is not None]
            if ended:
                raise EngineError(
                    f"a worker of the local Dask cluster ended before it joined (status "
                    f"{ended[0]}); their log ends: {self.log_tail()}"
                ) from None
            if time.monotonic() > deadline:
                raise EngineError(
                    f"the local Dask cluster's workers did not start within {_START_SECONDS} "
                    f"s; their log ends: {self.log_tail()}"
                ) from None
            time.sleep(0.05)  # an error at once (not a timeout): not a busy loop

    def log_tail(self, characters: int = 600) -> str:
        self.log.seek(0)
        text = self.log.read().decode("utf-8", "replace").strip()
        return text[-characters:] or "(nothing)"

    def stop(self) -> None:
        """Killed: what they hold was the scan's (a worker asked to close took a quarter of
        a second to), and their folders are removed here."""
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()
        self.log.close()
        self.folder.cleanup()


def _remove_stale_folders() -> None:
    """The folders of dask-local clusters whose process is gone (killed: it could not remove
    its own), named by that process's id; another process's that still runs is left."""
    for folder in Path(tempfile.gettempdir()).glob(f"{_FOLDER_PREFIX}*-*"):
        owner = folder.name[len(_FOLDER_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and not lifetime.is_running(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


class _ForkedWorker:
    """A forked dask-local worker, seen as a ``subprocess.Popen`` is."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def kill(self) -> None:
        self._process.kill()

    def wait(self) -> int | None:
        self._process.join()
        return self._process.exitcode


def _forked_worker(parent: int, log: int, arguments: list[str]) -> None:
    """In a forked copy of the scan's process: leave its process group, end with it, write
    to the log, and run distributed's ``dask worker`` with ``arguments``."""
    os.setpgid(0, 0)
    die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # ignored now
    for stream in (1, 2):
        os.dup2(log, stream)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115  # for the process's life
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    # What the caller's handlers held is theirs: distributed's log goes to the log alone.
    for handler in logging.getLogger("distributed").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sys.stderr)
    collector_restarted()
    from distributed.cli.dask_worker import main

    sys.argv = ["dask-worker", *arguments]
    main()


def _ready_to_prepare() -> None:
    """Before a dask-local worker joins (in its process, or in this one before it is forked):
    the per-file task's modules imported, its tables built and its loops loaded
    (engine.local.warm_up, on the default options: the loops' types are the same whatever
    the options)."""
    from dedup.engine.local import warm_up

    warm_up(ScanConfig())


@contextlib.contextmanager
def _distributed_silenced() -> Iterator[None]:
    """While the scan's tasks are cancelled and what it opened is closed, distributed's own
    messages are about that closing: after a Ctrl-C (which the local workers get too) the
    scheduler, still running, logs each cancelled task it cannot report to the client that
    just closed as a CRITICAL traceback. The logger's level is put back afterwards."""
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_workers_run_this_dedup(client: Client) -> None:
    """Every worker imports the dedup this process runs (the same sources): another version
    could find other pairs, and a report must not depend on where its tasks ran."""
    here = sources_digest()
    try:
        theirs: dict[str, str] = client.run(sources_digest)
    except ImportError:
        raise EngineError(
            "the Dask workers cannot import dedup: install it on every worker "
            "(pip install 'dedup[dask]', the same version as here) and start them again"
        ) from None
    other = sorted(address for address, digest in theirs.items() if digest != here)
    if other:
        raise EngineError(
            f"the Dask workers {', '.join(other)} run another dedup than this one "
            f"({__version__} here, or other sources): install the same on every worker "
            "and start them again"
        )


def _connect(address: str) -> Client:
    from distributed import Client

    try:
        _knock(address)
        return Client(address, timeout=f"{CONNECT_SECONDS}s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as error:
        raise EngineError(
            f"cannot reach the Dask scheduler at {address} ({error}): check the address, "
            "and that the scheduler runs (dask scheduler) and this machine can reach it"
        ) from None


def _knock(address: str) -> None:
    """Open and close a TCP connection to a tcp:// scheduler: a refused one fails at once,
    where the client would retry until its timeout."""
    from distributed.comm.addressing import parse_address, parse_host_port

    protocol, location = parse_address(address)
    if protocol == "tcp":
        with socket.create_connection(parse_host_port(location), timeout=CONNECT_SECONDS):
            pass


def named(function: Callable[..., Any]) -> str:
    """A task's key named after what it computes (``function``'s name), where the scheduler's
    stream and dashboard show it, rather than after the wrapper that runs it; unique, as
    ``pure=False`` makes a key."""
    return f"{function.__name__}-{uuid.uuid4()}"


def _for_workers(value: Any) -> Any:
    """An argument as a worker gets it: a file by its absolute path (a worker's working
    folder is not this process's), the config without the scheduler. A file already by its
    absolute path goes as it is, with paths of its own (``FoundFile.to_send``)."""
    if isinstance(value, FoundFile):
        sent = value.to_send()
        absolute = sent.fs_path if is_url(sent.fs_path) else os.path.abspath(sent.fs_path)
        return sent if absolute == sent.fs_path else replace(sent, fs_path=absolute)
    if isinstance(value, ScanConfig):
        return value.for_workers()
    return value


class _Ahead:
    """A pass's batches handed to the scheduler ``ahead`` of the one whose results are
    taken, not all at once: a batch's calls and the messages that hand them over are made
    as it is handed over, and a crawl of a page a file handed over at once held some 40-60
    B a file at a pass's start, as many files as the dump has (docs/performance.md)."""

    def __init__(self, count: int, ahead: int, hand_over: Callable[[int], None]) -> None:
        self.count, self.ahead, self.hand_over = count, ahead, hand_over
        self.handed = 0  # the batches handed over: the first ones

    def through(self, number: int) -> None:
        """Batch ``number`` handed over, and those up to ``ahead`` after it."""
        last = min(self.count, number + self.ahead)
        while self.handed < last:
            self.hand_over(self.handed)
            self.handed += 1


class _Calls(PassCalls):
    """A pass's calls as the workers get them (a file by its absolute path, the config
    without the scheduler), and as they are sent: the values scattered to the workers by
    their futures (``scattered``, by the argument's place). The client keeps nothing of a
    task it has handed over, so a call is made as its batch is (docs/performance.md)."""

    _made = staticmethod(_for_workers)

    def __init__(self, arguments: Sequence[Iterable[Any]]) -> None:
        super().__init__(arguments)
        self.scattered: dict[int, Future[Any]] = {}

    def sent(self, number: int) -> tuple[Any, ...]:
        """Call ``number`` as it is sent: the values scattered to the workers by their
        futures."""
        call = self[number]
        return tuple(self.scattered.get(place, value) for place, value in enumerate(call))

    def batch_sent(self, numbers: range) -> tuple[list[Future[Any] | StoredPart], _BatchCalls]:
        """Calls ``numbers`` as one task sends them: the futures among their arguments, each
        once, and the calls with each future's place among those in its stead. Dask walks
        a task's arguments for futures, and makes a node of its graph of each list and
        tuple holding one: a node a call (each holds the config's), made, pickled and
        resolved again, where a batch's few futures are what it has to find. The calls
        are made an argument at a time, for all of the batch's calls (a value every call
        is given once): a tuple a call, each of its values looked at in turn, cost this
        process more than the call's file (docs/performance.md)."""
        from distributed import Future

        futures: list[Future[Any] | StoredPart] = []
        given: dict[Any, _Given] = {}  # by the future's key: one object each, pickled once

        def placed(value: Any) -> Any:
            if isinstance(value, Future):
                key = value.key
            elif type(value) is StoredPart:  # opened once by the task
                key = value.path
            else:
                return value
            if key not in given:
                given[key] = _Given(len(futures))
                futures.append(value)
            return given[key]

        made = self._made
        columns: list[_Same | list[Any]] = []
        for place in range(self._places):
            if place in self.scattered or place in self.same:
                columns.append(_Same(placed(self.scattered.get(place, self.same.get(place)))))
            else:
                values = self._each[place][numbers.start : numbers.stop]
                columns.append([placed(made(value)) for value in values])
        return futures, _BatchCalls(len(numbers), columns)


class _Same:
    """In a batch's calls, the value of an argument every call is given."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        return _Same, (self.value,)


class _Given(int):
    """In a batch's calls, the place of a future among the batch's (:meth:`_Calls.batch_sent`)."""

    __slots__ = ()


class _BatchCalls:
    """A batch's calls as Dask hands them to the task untouched (neither a list nor a tuple,
    so not walked for futures: :meth:`_Calls.batch_sent`): ``count`` calls, an argument's
    values at a time (``columns``: a list of a value a call, or one value for all)."""

    __slots__ = ("columns", "count")

    def __init__(self, count: int, columns: list[_Same | list[Any]]) -> None:
        self.count, self.columns = count, columns

    def __reduce__(self) -> tuple[Any, ...]:
        return _BatchCalls, (self.count, self.columns)

    def given(self, values: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """Each call with the futures' ``values`` in their places."""

        def resolved(value: Any) -> Any:
            return values[value] if type(value) is _Given else value

        columns = [
            itertools.repeat(resolved(column.value), self.count)
            if isinstance(column, _Same)
            else map(resolved, column)
            for column in self.columns
        ]
        return zip(*columns, strict=True)


class _NotOnWorker(Exception):
    """A file of a task is not at its path on the worker that ran it."""

    def __init__(self, path: str, fs_path: str, worker: str) -> None:
        super().__init__(path, fs_path, worker)
        self.path, self.fs_path, self.worker = path, fs_path, worker


def _here(call: tuple[Any, ...]) -> tuple[Any, ...]:
    """A call's arguments to run it here: a future's (what a worker keeps) by its result."""
    from distributed import Future

    opened: dict[str, Any] = {}
    return tuple(
        value.result() if isinstance(value, Future) else opened_if_stored(value, opened)
        for value in call
    )


def _task(function: Callable[..., T], *arguments: Any) -> T:
    """A task as a worker runs it: ``function`` of ``arguments``, once the worker has made
    sure it can see their files."""
    for value in arguments:
        if isinstance(value, FoundFile) and not exists(value.fs_path):
            from distributed import get_worker

            raise _NotOnWorker(value.path, value.fs_path, get_worker().address)
    return function(*arguments)


def _batch_task(function: Callable[..., T], values: list[Any], calls: _BatchCalls) -> list[T]:
    """A batch's task as a worker runs it: each call's :func:`_task`, in order, ``values``
    those of the futures (and stored parts, opened here) among its arguments."""
    opened: dict[str, Any] = {}
    values = [opened_if_stored(value, opened) for value in values]
    return [_task(function, *call) for call in calls.given(values)]


def _each(function: Callable[[list[T]], Any], results: list[T], start: int, stop: int) -> Any:
    """``function`` of a piece of a batch's results, on the worker that holds them."""
    return function(results[start:stop])


def _of_merged(part: Callable[[T], Any], merged: Callable[[list[T]], T], results: list[T]) -> Any:
    """``part`` of a batch's results ``merged`` into one, on the worker that holds them."""
    return part(merged(results))


def _stored(
    parts: Sequence[Callable[[T], Any]],
    merged: Callable[[list[T]], T],
    results: list[T],
    folder: str,
    number: int,
) -> int:
    """Each of ``parts`` of a batch's results ``merged`` into one stored in the scratch
    ``folder`` as batch ``number``'s, on the worker that holds them; the bytes written."""
    whole = merged(results)
    return sum(store(part(whole), StoredPart(folder, part.__name__, number).path) for part in parts)


class _KeptAsFutures:
    """A pass's kept parts under Dask's keys: a future a part of a batch, held by the caller
    to the end of the scan (each some 2.3 KB here: docs/performance.md)."""

    def __init__(
        self,
        engine: DaskEngine,
        parts: Sequence[Callable[[T], Any]],
        merged: Callable[[list[T]], T],
        count: int,
    ) -> None:
        self.engine, self.parts, self.merged = engine, parts, merged
        # Each batch's parts one after another (let go of here once handed over).
        self.keeps: list[Future[Any] | None] = engine.holding([None] * (count * len(parts)))

    def made(self, number: int, task: Future[Any]) -> None:
        """The tasks that keep batch ``number``'s parts of its ``task``'s results."""
        client = self.engine.client_for_tasks()
        for at, part in enumerate(self.parts, number * len(self.parts)):
            self.keeps[at] = client.submit(
                _of_merged, part, self.merged, task, key=named(part), priority=-number
            )

    def taken(self, number: int, whole: Any) -> tuple[Any, ...]:
        """Batch ``number``'s parts' futures; of ``whole`` (its results merged, made here
        when its task failed), if given."""
        own = slice(number * len(self.parts), (number + 1) * len(self.parts))
        keep = tuple(future for future in self.keeps[own] if future is not None)
        self.keeps[own] = [None] * len(self.parts)
        if whole is None:
            return keep
        client = self.engine.client_for_tasks()
        return tuple(client.scatter(part(whole), hash=False) for part in self.parts)


class _KeptInScratch:
    """A pass's kept parts in the scan's scratch folder (dedup.engine.scratch): a task a
    batch stores them; the caller gets them by name, once they are there."""

    def __init__(
        self,
        engine: DaskEngine,
        scratch: Scratch,
        parts: Sequence[Callable[[T], Any]],
        merged: Callable[[list[T]], T],
        count: int,
    ) -> None:
        self.engine, self.scratch, self.parts, self.merged = engine, scratch, parts, merged
        self.stores: list[Future[Any] | None] = engine.holding([None] * count)

    def made(self, number: int, task: Future[Any]) -> None:
        """The task that stores batch ``number``'s parts of its ``task``'s results."""
        self.stores[number] = self.engine.client_for_tasks().submit(
            _stored,
            self.parts,
            self.merged,
            task,
            self.scratch.folder,
            number,
            key=named(_stored),
            priority=-number,
        )

    def taken(self, number: int, whole: Any) -> tuple[Any, ...]:
        """Batch ``number``'s parts, once stored; of ``whole`` (its results merged, made
        here when its task failed), stored here, if given."""
        stored = self.stores[number]
        self.stores[number] = None
        made = tuple(self.scratch.part(part.__name__, number) for part in self.parts)
        if whole is None:
            assert stored is not None
            self.engine._result_of(stored)
        else:
            for part, stored_part in zip(self.parts, made, strict=True):
                store(part(whole), stored_part.path)
        return made
