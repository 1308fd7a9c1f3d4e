"""A folder a Dask cluster's workers and this process share (``--scratch``), where the
workers keep what they make of each batch of files (its signatures, texts, offset steps,
seeds, hashes and spans; the learn pass's line keys and chapters) as files, rather than in
their memory under Dask's keys.

Kept under Dask's keys, each part of each batch is a future this process holds to the end of
the scan (Dask names data by key, one future a key): some 2.3 KB each, six a 32 MB batch, so
the driver's memory grew with the dump (docs/performance.md, the fifty-seventh and
fifty-eighth sessions). Kept here, a part is named by what it is and its batch's number
(:class:`StoredPart`, made when needed from a number this process keeps), and a stage's
task opens the parts it is given as memory-mapped arrays (:func:`with_parts_opened`), reading
the pages of the passages it looks at alone.

A part's file is written whole under another name and renamed (:func:`store`): a worker
killed while it writes leaves no part behind, and Dask runs its task again. The scan's
folder is removed when the scan ends; a driver killed leaves it, and the next scan started
on the same machine removes it (:func:`remove_stale_folders`)."""

from __future__ import annotations

import contextlib
import functools
import mmap
import os
import pickle
import shutil
import socket
import struct
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, overload

from dedup.engine.lifetime import is_running
from dedup.errors import EngineError, ScratchSpaceError

T = TypeVar("T")

_PREFIX = "dedup-scratch-"
# A part's file: this, the number of out-of-band buffers and the pickle's length, each
# buffer's offset and length, the pickle, then the buffers, each at a multiple of _ALIGN.
_MAGIC = b"dedupkp1"
_COUNTS = struct.Struct("<8sQQ")
_BUFFER = struct.Struct("<QQ")
_ALIGN = 64
# A part this large is memory-mapped; a smaller one is read (a map holds a file descriptor as
# long as an array of it lives, and a task may name some thousands of small parts).
_MAPPED_BYTES = 1 << 20
# The file a driver writes in its folder for the workers to find (their own folder at the
# same path, on another machine, would not hold it).
_PROBE = "driver-was-here"


@dataclass(frozen=True, slots=True)
class StoredPart:
    """Part ``name`` of batch ``number``, stored whole in the scan's scratch ``folder``: a
    task given one gets what it holds (:func:`with_parts_opened`)."""

    folder: str
    name: str
    number: int

    @property
    def path(self) -> str:
        return os.path.join(self.folder, f"{self.name}-{self.number}.part")


class Scratch:
    """The scan's own folder in ``base``, which every worker must see at the same path: made
    here, checked from each worker (:meth:`check_seen_by`), removed by :meth:`remove`."""

    def __init__(self, base: str) -> None:
        self.base = os.path.abspath(base)
        if not os.path.isdir(self.base):
            raise EngineError(
                f"{base}: the scratch folder does not exist: make it on a filesystem every "
                "Dask worker mounts at the same path, or leave out --scratch"
            )
        remove_stale_folders(self.base)
        name = f"{_PREFIX}{os.getpid()}@{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
        self.folder = os.path.join(self.base, name)
        try:
            os.mkdir(self.folder)
            Path(self.folder, _PROBE).write_text(name, encoding="utf-8")
        except OSError as error:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise EngineError(
                f"{base}: cannot write the scan's scratch folder there ({error.strerror}): "
                "give --scratch a folder you can write to"
            ) from None

    def check_seen_by(self, seen: dict[str, bool]) -> None:
        """``seen``: whether each worker (by address) found this folder's probe file."""
        blind = sorted(worker for worker, found in seen.items() if not found)
        if blind:
            raise EngineError(
                f"{self.base}: the Dask worker {blind[0]} cannot see the scratch folder "
                f"{self.folder} this machine made there: give --scratch a folder on a "
                "filesystem every worker mounts at the same path"
            )

    def parts(self, name: str) -> StoredParts:
        """The parts named ``name`` of the batches, as they are added."""
        return StoredParts(self.folder, name)

    def part(self, name: str, number: int) -> StoredPart:
        return StoredPart(self.folder, name, number)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def sees_folder(folder: str) -> bool:
    """On a worker: whether it sees the scratch folder the driver made (its probe file)."""
    return os.path.isfile(os.path.join(folder, _PROBE))


class StoredParts(Sequence[StoredPart]):
    """The parts named ``name`` of a scan's batches in its scratch folder, a run each, as a
    sequence of :class:`StoredPart`: this process keeps 8 B a run (its batch's number), where
    a future of each held some 2.3 KB. :meth:`clear` removes their files."""

    def __init__(self, folder: str, name: str) -> None:
        self.folder, self.name = folder, name
        self.numbers = array("q")

    def append(self, part: StoredPart) -> None:
        self.numbers.append(part.number)

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, at: int) -> StoredPart: ...

    @overload
    def __getitem__(self, at: slice) -> list[StoredPart]: ...

    def __getitem__(self, at: int | slice) -> StoredPart | list[StoredPart]:
        if isinstance(at, slice):
            return [self._part(number) for number in self.numbers[at]]
        return self._part(self.numbers[at])

    def __iter__(self) -> Iterator[StoredPart]:
        return map(self._part, self.numbers)

    def _part(self, number: int) -> StoredPart:
        return StoredPart(self.folder, self.name, number)

    def clear(self) -> None:
        """Let go of them: their files removed (a task still reading one keeps its map)."""
        for part in self:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(part.path)
        self.numbers = array("q")


def store(value: Any, path: str) -> int:
    """``value`` written to ``path`` whole (under another name, then renamed), its arrays
    apart from the pickle, each where it can be mapped; the bytes written."""
    buffers: list[pickle.PickleBuffer] = []
    pickled = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    head = _COUNTS.size + _BUFFER.size * len(raws) + len(pickled)
    offsets, at = [], _aligned(head)
    for raw in raws:
        offsets.append(at)
        at = _aligned(at + raw.nbytes)
    temporary = f"{path}.{uuid.uuid4().hex[:8]}.writing"
    try:
        with open(temporary, "wb") as file:
            file.write(_COUNTS.pack(_MAGIC, len(raws), len(pickled)))
            for offset, raw in zip(offsets, raws, strict=True):
                file.write(_BUFFER.pack(offset, raw.nbytes))
            file.write(pickled)
            for offset, raw in zip(offsets, raws, strict=True):
                file.write(bytes(offset - file.tell()))
                file.write(raw)
            written = file.tell()
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise ScratchSpaceError(
            f"{path}: cannot write a part of the scan to the scratch folder "
            f"({error.strerror}): free space there, or give --scratch a folder with room"
        ) from None
    finally:
        for buffer in buffers:
            buffer.release()
    return written


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def opened(part: StoredPart) -> Any:
    """What ``part`` holds, its arrays views of the file's map (or of its bytes, for a small
    one). The map is copy-on-write, not read-only: numba types a read-only array apart, so
    the shipped loops, built for arrays that can be written, would compile again for one
    on a worker's first scan; a task that writes changes its own copy of the page, never
    the file."""
    _as_many_files_as_allowed()
    try:
        with open(part.path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            data: mmap.mmap | bytearray = (
                mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
                if size >= _MAPPED_BYTES
                else bytearray(file.read())
            )
    except FileNotFoundError:
        raise EngineError(
            f"{part.path}: a part of the scan is gone from the scratch folder: was the folder "
            "removed or cleaned during the scan? Scan again"
        ) from None
    except OSError as error:
        raise EngineError(
            f"{part.path}: cannot open a part of the scan in the scratch folder "
            f"({error.strerror}): check the folder's filesystem and scan again (a cluster "
            "given --scratch can be given another folder, or none)"
        ) from None
    view = memoryview(data)
    magic, count, length = _COUNTS.unpack_from(view)
    if magic != _MAGIC:
        raise EngineError(f"{part.path}: not a part dedup wrote: scan again")
    spans = [_BUFFER.unpack_from(view, _COUNTS.size + _BUFFER.size * at) for at in range(count)]
    start = _COUNTS.size + _BUFFER.size * count
    return pickle.loads(
        view[start : start + length],
        buffers=[view[offset : offset + size] for offset, size in spans],
    )


@functools.cache
def _as_many_files_as_allowed() -> None:
    """This process's limit of open files raised to the most it may have: each mapped part
    holds a file open while an array of it lives, and a task may name thousands of parts
    (a scan's MinHash estimates, a run each of its pairs)."""
    try:
        import resource
    except ImportError:  # not a Unix
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def opened_if_stored(value: Any, cache: dict[str, Any]) -> Any:
    """``value``, or what it holds if it is a :class:`StoredPart` (opened once: ``cache``)."""
    if type(value) is not StoredPart:
        return value
    if value.path not in cache:
        cache[value.path] = opened(value)
    return cache[value.path]


def holds_parts(values: Iterable[Any]) -> bool:
    """Whether a :class:`StoredPart` is among ``values``, or in a list or tuple among them
    (the runs a stage's task is given: a part each)."""
    return any(
        type(value) is StoredPart
        or (type(value) in (list, tuple) and any(type(item) is StoredPart for item in value))
        for value in values
    )


def with_parts_opened(function: Callable[..., T], *arguments: Any) -> T:
    """On a worker: ``function`` of ``arguments``, each stored part among them (or in a list
    or tuple among them) opened, once however often it is named."""
    cache: dict[str, Any] = {}

    def given(value: Any) -> Any:
        if type(value) in (list, tuple):
            return type(value)(opened_if_stored(item, cache) for item in value)
        return opened_if_stored(value, cache)

    return function(*map(given, arguments))


def remove_stale_folders(base: str) -> None:
    """The scratch folders in ``base`` of scans started on this machine whose process is gone
    (killed: it could not remove its own); another scan's that still runs is left, and so
    are other machines' (their next scan removes them)."""
    host = socket.gethostname()
    for folder in Path(base).glob(f"{_PREFIX}*@*-*"):
        owner, _at, rest = folder.name[len(_PREFIX) :].partition("@")
        if rest.rsplit("-", 1)[0] == host and owner.isdigit() and not is_running(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)
