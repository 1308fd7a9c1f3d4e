"""Where each normalized character of a passage came from, kept in a byte a character.

A passage's normalized character ``i`` came from the original character at ``offsets[i]``
(normalize keeps them, ascending). A scan keeps, for every passage, not those offsets (eight
bytes a character) but the steps between them: 0 for the first character (the passage's span
starts at it), then ``offsets[i] - offsets[i - 1]``, which is 1 for a character kept beside the
one before and a little more after dropped punctuation. A step of ``BIG_STEP`` or more (a
removed ad line, say) is written as ``BIG_STEP`` and kept apart, by its index. Alignment spans
are mapped back to the original text by these steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from dedup.arrays import concatenated
from dedup.kernels import compiled
from dedup.kernels.rows import with_room_for_rows

BIG_STEP = 255


@compiled
def offset_steps(
    offsets: npt.NDArray[np.int64], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The steps of each window ``offsets[starts[i]:ends[i]]``, one after another, and rows
    (index into the steps, step) of those too big for a byte."""
    total = 0
    for window in range(starts.shape[0]):
        total += ends[window] - starts[window]
    steps = np.empty(total, dtype=np.uint8)
    big = np.empty((16, 2), dtype=np.int64)
    big_count = 0
    at = 0
    for window in range(starts.shape[0]):
        for position in range(starts[window], ends[window]):
            step = 0 if position == starts[window] else offsets[position] - offsets[position - 1]
            if step >= BIG_STEP:
                big = with_room_for_rows(big, big_count, 1)
                big[big_count, 0] = at
                big[big_count, 1] = step
                big_count += 1
                step = BIG_STEP
            steps[at] = step
            at += 1
    return steps, big[:big_count].copy()


@compiled
def _big_step(big: npt.NDArray[np.int64], at: int) -> int:
    """The step kept apart for index ``at`` (``big`` sorted by index; a binary search)."""
    low, high = 0, big.shape[0] - 1
    while low < high:
        middle = (low + high) // 2
        if big[middle, 0] < at:
            low = middle + 1
        else:
            high = middle
    return int(big[low, 1])


@compiled
def original_offsets(
    steps: npt.NDArray[np.uint8],
    big: npt.NDArray[np.int64],
    first_step: npt.NDArray[np.int64],
    span_start: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """For each (passage whose steps begin at ``first_step``, whose span begins at
    ``span_start``; its normalized character ``index``): the original character's offset.
    ``big`` is sorted by its first column."""
    found = np.empty(index.shape[0], dtype=np.int64)
    for row in range(index.shape[0]):
        offset = span_start[row]
        begin = first_step[row]
        for at in range(begin + 1, begin + index[row] + 1):
            step = np.int64(steps[at])
            if step == BIG_STEP:
                step = np.int64(_big_step(big, at))
            offset += step
        found[row] = offset
    return found


def offsets_in_runs(
    runs: Sequence[tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]],
    first_step: npt.NDArray[np.int64],
    span_start: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """:func:`original_offsets` given the steps of consecutive runs of passages (each run's
    steps and big steps, as a worker keeps a file's), ``first_step`` counted from the first
    run's first step."""
    steps = concatenated([run[0] for run in runs], np.uint8)
    starts = np.cumsum([0, *(len(run[0]) for run in runs)])[:-1].tolist()
    big = concatenated(
        [run[1] + np.array([start, 0]) for run, start in zip(runs, starts, strict=True)],
        np.int64,
        columns=2,
    )
    return original_offsets(steps, big.astype(np.int64), first_step, span_start, index)
