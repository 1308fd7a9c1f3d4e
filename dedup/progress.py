"""Progress bars (tqdm, on standard error) for the stages that take a while: one bar a stage,
with its unit; none unless asked (the CLI asks when standard error is a terminal and not
--quiet)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from tqdm import tqdm

if TYPE_CHECKING:
    from dedup.engine.base import Threads

T = TypeVar("T")


def progress(items: Iterable[T], stage: str, unit: str, total: int, shown: bool) -> Iterator[T]:
    """``items``, counted on a bar named ``stage`` while they are gone through."""
    return iter(tqdm(items, desc=stage, unit=unit, total=total, disable=not shown, leave=False))


def progress_by(
    items: Iterable[T], size: Callable[[T], int], stage: str, unit: str, total: int, shown: bool
) -> Iterator[T]:
    """``items``, each counted as ``size(item)`` of ``total`` (an item may stand for
    several, as a piece of files handed back as one) on a bar named ``stage``."""
    with tqdm(desc=stage, unit=unit, total=total, disable=not shown, leave=False) as bar:
        for item in items:
            yield item
            bar.update(size(item))


@dataclass(frozen=True, slots=True)
class CountedThreads:
    """An engine's threads, each run of chunks on them counted on a bar named ``stage``: a
    stage that runs its loops there (candidates, verify, align) shows how far it is."""

    threads: Threads
    stage: str
    unit: str
    shown: bool

    @property
    def thread_count(self) -> int:
        return self.threads.thread_count

    def in_threads(self, function: Callable[[Any], T], items: Sequence[Any]) -> Iterator[T]:
        done = self.threads.in_threads(function, items)
        return progress(done, self.stage, self.unit, len(items), self.shown)


def counted(threads: Threads, stage: str, unit: str, shown: bool) -> Threads:
    return CountedThreads(threads, stage, unit, shown) if shown else threads
