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
# Packed, a step of 1 to 3 is its own code; code 0 is a step kept apart (a 0 when it is not).
_CODES_A_BYTE = 4
_LARGEST_CODED = 3


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


def offsets_in_runs(
    runs: Sequence[tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]],
    first_step: npt.NDArray[np.int64],
    span_start: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """:func:`original_offsets` given the steps of consecutive runs of passages (each run's
    steps and big steps, as a worker keeps a file's), ``first_step`` counted from the first
    run's first step."""
    packer = StepPacker()
    for steps, big in runs:
        packer.append(steps, big)
    return original_offsets(*packer.finished(), first_step, span_start, index)


class StepPacker:
    """Packs the steps of passage after passage as they come, a part (an input's passages) at
    a time, so that the steps as made are never all held at once."""

    def __init__(self) -> None:
        self._bytes: list[npt.NDArray[np.uint8]] = []
        self._apart: list[npt.NDArray[np.int64]] = []
        self._tail = np.empty(0, dtype=np.uint8)  # codes not yet four for a byte
        self._count = 0

    def append(self, steps: npt.NDArray[np.uint8], big: npt.NDArray[np.int64]) -> None:
        """The ``steps`` (and ``big``, those too big for a byte: see :func:`offset_steps`) of
        the passages after those appended before."""
        coded = steps <= _LARGEST_CODED
        apart = np.flatnonzero(~coded)
        if len(apart):
            values = steps[apart].astype(np.int64)
            values[values == BIG_STEP] = big[:, 1]  # big's rows are those steps, in order
            self._apart.append(np.column_stack((apart + self._count, values)))
        codes = np.concatenate((self._tail, np.where(coded, steps, np.uint8(0))))
        whole = len(codes) - len(codes) % _CODES_A_BYTE
        self._bytes.append(_packed(codes[:whole]))
        self._tail = codes[whole:]
        self._count += len(steps)

    def finished(self) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
        """The steps appended: their codes, four a byte, and the rows (index, step) of those
        kept apart, sorted by index."""
        last = np.zeros(_CODES_A_BYTE, dtype=np.uint8)
        last[: len(self._tail)] = self._tail
        codes = np.concatenate([*self._bytes, _packed(last)])
        apart = concatenated(self._apart, np.int64, columns=2)
        self._bytes, self._apart = [], []
        return codes, apart

    def packed(self, lengths: npt.NDArray[np.int64]) -> PackedSteps:
        """The steps appended, of passages of these normalized ``lengths``."""
        return PackedSteps(*self.finished(), lengths)


def _packed(codes: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """``codes`` (0 to 3, a multiple of four of them) four a byte, the first in the low bits."""
    quads = codes.reshape(-1, _CODES_A_BYTE)
    packed = quads[:, 0] | quads[:, 1] << 2 | quads[:, 2] << 4 | quads[:, 3] << 6
    return packed.astype(np.uint8, copy=False)


class PackedSteps:
    """The offset steps of a scan's passages, two bits a step (:class:`StepPacker`): an
    ``engine.base.HeldSteps``, held in this process."""

    def __init__(
        self,
        codes: npt.NDArray[np.uint8],
        apart: npt.NDArray[np.int64],
        lengths: npt.NDArray[np.int64],
    ) -> None:
        self._codes = codes
        self._apart = apart  # rows (index, step), sorted by index
        self._step_first = np.cumsum(lengths) - lengths  # each passage's first step's index

    def original_offsets(
        self,
        passage: npt.NDArray[np.int64],
        index: npt.NDArray[np.int64],
        span_start: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:
        return original_offsets(
            self._codes, self._apart, self._step_first[passage], span_start, index
        )

    def let_go(self) -> None:
        self._codes = np.empty(0, dtype=np.uint8)
        self._apart = np.empty((0, 2), dtype=np.int64)
        self._step_first = np.empty(0, dtype=np.int64)


@compiled
def _step_apart(apart: npt.NDArray[np.int64], at: int) -> int:
    """The step kept apart for index ``at`` (``apart`` sorted by index; a binary search), or 0
    where none is."""
    low, high = 0, apart.shape[0]
    while low < high:
        middle = (low + high) // 2
        if apart[middle, 0] < at:
            low = middle + 1
        else:
            high = middle
    if low < apart.shape[0] and apart[low, 0] == at:
        return int(apart[low, 1])
    return 0


@compiled
def original_offsets(
    codes: npt.NDArray[np.uint8],
    apart: npt.NDArray[np.int64],
    first_step: npt.NDArray[np.int64],
    span_start: npt.NDArray[np.int64],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """For each (passage whose steps begin at ``first_step``, whose span begins at
    ``span_start``; its normalized character ``index``): the original character's offset,
    given the steps packed (:meth:`StepPacker.finished`)."""
    found = np.empty(index.shape[0], dtype=np.int64)
    for row in range(index.shape[0]):
        offset = span_start[row]
        begin = first_step[row]
        for at in range(begin + 1, begin + index[row] + 1):
            step = (np.int64(codes[at >> 2]) >> ((at & 3) << 1)) & 3
            if step == 0:
                step = np.int64(_step_apart(apart, at))
            offset += step
        found[row] = offset
    return found
