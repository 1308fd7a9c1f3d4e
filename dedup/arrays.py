"""Array helpers the stages share."""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["sorted_unique"]

T = TypeVar("T", bound=np.generic)


def sorted_unique(values: npt.NDArray[T]) -> npt.NDArray[T]:
    """``np.unique(values)`` by one sort: numpy's hash-based unique, which it uses when asked
    for the values alone, is some forty times slower on a million integers."""
    ordered = np.sort(values.reshape(-1))
    if ordered.size < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
