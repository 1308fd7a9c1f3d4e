"""Progress bars (tqdm, on standard error) for the stages that take a while: one bar a stage,
with its unit; none unless asked (the CLI asks when standard error is a terminal and not
--quiet)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm import tqdm

T = TypeVar("T")


def progress(items: Iterable[T], stage: str, unit: str, total: int, shown: bool) -> Iterator[T]:
    """``items``, counted on a bar named ``stage`` while they are gone through."""
    return iter(tqdm(items, desc=stage, unit=unit, total=total, disable=not shown, leave=False))
