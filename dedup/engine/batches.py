"""The calls of a pass over files cut into batches of consecutive calls, a task each.

A task costs more than a small file takes to prepare: on a Dask cluster some milliseconds of
the scheduler's and this process's CPU, in the local engine's pool a message each way and the
task's arguments pickled again (the lines each source repeats among them). A dump of a file a
chapter (pages of ten-odd KB, as many sites are scraped) is tens of thousands of such files
(docs/performance.md)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, overload

from dedup.read import FoundFile, FoundFiles
from dedup.read.slices import FileSlice

T = TypeVar("T")


def file_batches(
    sizes: Sequence[int], threads: int, most_bytes: int, per_thread: int
) -> list[range]:
    """Batches of consecutive calls, given the size of each call's file
    (:meth:`PassCalls.file_bytes`): files up to ``most_bytes`` together, or less, so that
    there are ``per_thread`` batches per worker thread and the last ones end about together;
    a call of a slice of a file, or with no file of known size (-1), is a batch alone (a
    slice's kept passages are its own)."""
    return batches_in_pieces(sizes, threads, most_bytes, per_thread, most_bytes)[0]


def batches_in_pieces(
    sizes: Sequence[int],
    threads: int,
    most_bytes: int,
    per_thread: int,
    piece_bytes: int,
) -> tuple[list[range], list[list[range]]]:
    """:func:`file_batches`, and each batch cut the same way into pieces of files up to
    ``piece_bytes`` together: a batch's results are taken a piece at a time. The sizes
    are looked at in one sweep (and those of the first few batches once more, for how
    large a batch is), so that they may be made as they are looked at
    (:meth:`PassCalls.file_bytes`): an array of them held 8 B a file of a crawl."""
    spread = per_thread * max(threads, 1)
    limit = min(most_bytes, _total_up_to(sizes, most_bytes * spread) // spread)
    return _cut(sizes, limit, min(limit, piece_bytes))


def _total_up_to(sizes: Iterable[int], enough: int) -> int:
    """The sizes' total (of the files of known size), or a total of at least ``enough``:
    looked at only as far as that."""
    total = 0
    for size in sizes:
        total += max(size, 0)
        if total >= enough:
            break
    return total


def _cut(
    sizes: Sequence[int], limit: int, piece_limit: int
) -> tuple[list[range], list[list[range]]]:
    """The calls cut into batches of files up to ``limit`` bytes together, each batch into
    pieces of files up to ``piece_limit`` (a file larger, a slice, or a file of unknown size
    alone in both)."""
    batches: list[range] = []
    pieces: list[list[range]] = []
    batch = _Bundle(0, limit)
    piece = _Bundle(0, piece_limit)
    cut: list[range] = []
    for number, size in enumerate(sizes):
        if batch.ends_before(number, size):
            cut.append(piece.close(number))
            pieces.append(cut)
            cut = []
            batches.append(batch.close(number))
        elif piece.ends_before(number, size):
            cut.append(piece.close(number))
        batch.add(size)
        piece.add(size)
    if len(sizes):
        cut.append(piece.close(len(sizes)))
        pieces.append(cut)
        batches.append(batch.close(len(sizes)))
    return batches, pieces


class _Bundle:
    """Consecutive files being gathered up to ``limit`` bytes: the first one's number and
    the bytes held (a file of unknown size counts as the whole limit)."""

    def __init__(self, first: int, limit: int) -> None:
        self.first, self.limit, self.held = first, limit, 0

    def ends_before(self, number: int, size: int) -> bool:
        """Whether the bundle is whole before file ``number`` of ``size`` bytes."""
        return number > self.first and (
            size < 0 or self.held >= self.limit or self.held + size > self.limit
        )

    def add(self, size: int) -> None:
        self.held += self.limit if size < 0 else size

    def close(self, number: int) -> range:
        """The files up to ``number``, and the next bundle begun there."""
        files = range(self.first, number)
        self.first, self.held = number, 0
        return files


def calls_in_batch(function: Callable[..., T], calls: list[tuple[Any, ...]]) -> list[T]:
    """A batch's task: ``function`` of each call, in order."""
    return [function(*call) for call in calls]


def call_bytes(call: tuple[Any, ...]) -> int:
    """The size of the file a call prepares, if it is known and the call takes all of it,
    else -1."""
    if any(isinstance(value, FileSlice) for value in call):
        return -1
    for value in call:
        if isinstance(value, FoundFile):
            return _file_bytes(value)
    return -1


def _file_bytes(file: FoundFile) -> int:
    return -1 if file.stamp is None else file.stamp[0]


def _sized(files: Sequence[FoundFile]) -> Callable[[int], int]:
    return lambda number: _file_bytes(files[number])


class EachMade(Sequence[T]):
    """``make(number)`` for each number below ``count``, made when it is asked for: a pass's
    argument of a value a call (a file, its chapters), which the engine makes each call of
    when it hands it over rather than holding them all while the pass runs (a crawl of a
    page a file has millions)."""

    def __init__(self, count: int, make: Callable[[int], T]) -> None:
        self._count, self._make = count, make

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        if isinstance(index, slice):
            return [self._make(number) for number in range(self._count)[index]]
        return self._make(range(self._count)[index])


class TaskFiles(EachMade[FoundFile]):
    """Each task's file, ``files[file_of[task]]``, made when it is asked for, and its size
    without making it (:meth:`size`): a pass's batches are sized from every file's, once
    or twice, and making a found file from its row took some 5 µs (docs/performance.md)."""

    def __init__(self, files: Sequence[FoundFile], file_of: Sequence[int]) -> None:
        super().__init__(len(file_of), lambda task: files[file_of[task]])
        # a found file's size read from its row where the files are rows (FoundFiles)
        self._size_of = files.size_of if isinstance(files, FoundFiles) else _sized(files)
        self._file_of = file_of

    def size(self, task: int) -> int:
        """The size of task ``task``'s file when it was found, or -1 if not known."""
        return self._size_of(self._file_of[task])


class FileParts(EachMade["FileSlice | None"]):
    """Each call's part of its file (a slice, or None for all of it), made when asked for,
    and which calls have a slice known without making theirs (``sliced``). A pass given
    its parts so has no other argument that is a slice: its batches are sized from its
    files alone (:meth:`PassCalls.file_bytes`)."""

    def __init__(
        self, count: int, make: Callable[[int], FileSlice | None], sliced: Callable[[int], bool]
    ) -> None:
        super().__init__(count, make)
        self.sliced = sliced


class PassCalls(Sequence[tuple[Any, ...]]):
    """A pass's calls, each made when it is asked for from its arguments: a sequence of a
    value a call, or one value for every call (``itertools.repeat``: ``same``, by the
    argument's place), each value as the tasks get it (:meth:`_made`). An engine makes a
    batch's calls as it hands the batch over: held as tuples while the pass ran, with a
    file each, they cost this process some 300-400 B a file (a crawl of a page a file has
    millions)."""

    def __init__(self, arguments: Sequence[Iterable[Any]]) -> None:
        self.same: dict[int, Any] = {}
        self._each: dict[int, Sequence[Any]] = {}
        for place, argument in enumerate(arguments):
            if isinstance(argument, itertools.repeat):
                self.same[place] = self._made(next(argument))
            else:
                self._each[place] = argument if isinstance(argument, Sequence) else list(argument)
        self._places = len(arguments)
        self._count = min((len(values) for values in self._each.values()), default=0)

    @staticmethod
    def _made(value: Any) -> Any:
        """``value`` as a task gets it: a found file with paths of its own
        (:meth:`~dedup.read.FoundFile.to_send`)."""
        return value.to_send() if isinstance(value, FoundFile) else value

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[Any, ...]]: ...

    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | list[tuple[Any, ...]]:
        if isinstance(index, slice):
            return [self[number] for number in range(self._count)[index]]
        number = range(self._count)[index]
        same, each = self.same, self._each
        return tuple(
            same[place] if place in same else self._made(each[place][number])
            for place in range(self._places)
        )

    def file_bytes(self) -> Sequence[int]:
        """The size of the file each call prepares, if it is known and the call takes all
        of it, else -1 (:func:`call_bytes`), each made as it is looked at (an array of them
        held 8 B a call). Where the calls' parts are given as :class:`FileParts`, from each
        call's file alone; else each call is made for it, and again as it is sent (the
        arguments a task needs and sizing does not: docs/performance.md, the fifty-third
        session)."""
        parts = [values for values in self._each.values() if isinstance(values, FileParts)]
        first = self[0] if self._count else ()
        files = [
            place
            for place, value in enumerate(first)
            if isinstance(value, FoundFile) and place in self._each
        ]
        if (
            len(parts) != 1
            or not files
            or any(isinstance(value, (FoundFile, FileSlice)) for value in self.same.values())
        ):
            return EachMade(self._count, lambda number: call_bytes(self[number]))
        file_of, sliced = self._each[files[0]], parts[0].sliced
        size = file_of.size if isinstance(file_of, TaskFiles) else _sized(file_of)
        return EachMade(self._count, lambda number: -1 if sliced(number) else size(number))
