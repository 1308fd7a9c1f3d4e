"""Arrays that grow as compiled loops fill them: the room for ``more`` rows after ``count``,
doubling, so that a loop that cannot know its output's size ahead fills it in amortized
constant time."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dedup.kernels.jit import compiled

__all__ = ["with_room", "with_room_for_rows"]


@compiled
def with_room(values: npt.NDArray[np.int64], count: int, more: int) -> npt.NDArray[np.int64]:
    """``values`` if ``count + more`` fit, else a larger copy holding its first ``count``."""
    if count + more <= values.shape[0]:
        return values
    grown = np.empty(max(2 * values.shape[0], count + more), dtype=np.int64)
    grown[:count] = values[:count]
    return grown


@compiled
def with_room_for_rows(rows: npt.NDArray[np.int64], count: int, more: int) -> npt.NDArray[np.int64]:
    """``rows`` if ``count + more`` rows fit, else a larger copy holding its first ``count``."""
    if count + more <= rows.shape[0]:
        return rows
    grown = np.empty((max(2 * rows.shape[0], count + more), rows.shape[1]), dtype=np.int64)
    grown[:count] = rows[:count]
    return grown
