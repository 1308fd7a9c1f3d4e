"""Array helpers the stages share."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "concatenated",
    "key_counts",
    "numbered_afresh",
    "objects",
    "partitioned",
    "sorted_unique",
]

T = TypeVar("T", bound=np.generic)


def sorted_unique(values: npt.NDArray[T]) -> npt.NDArray[T]:
    """``np.unique(values)`` by one sort: numpy's hash-based unique, which it uses when asked
    for the values alone, is some forty times slower on a million integers."""
    ordered = np.sort(values.reshape(-1))
    if ordered.size < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def concatenated(
    parts: list[npt.NDArray[T]], dtype: type[T], columns: int | None = None
) -> npt.NDArray[T]:
    """``np.concatenate(parts)``, or when there are none an empty array of ``dtype`` (of that
    many ``columns``, for parts of rows)."""
    if parts:
        return np.concatenate(parts)
    return np.empty(0 if columns is None else (0, columns), dtype=dtype)


# The first rows of runs a scan holds for its whole length (each run's of the passages'
# table), in four bytes each while the passages fit.
Firsts = npt.NDArray[np.int32] | npt.NDArray[np.int64]


def narrowed(values: npt.NDArray[np.int64]) -> Firsts:
    """``values`` (not negative) in four bytes each where all fit, else as they are: for
    what the driver holds a document or a run of a whole scan (issue 21)."""
    if not len(values) or int(values.max()) < 2**31:
        return values.astype(np.int32)
    return values


def runs_of(firsts: Firsts, rows: Firsts) -> npt.NDArray[np.int64]:
    """The run each of ``rows`` is in, of runs of rows given by their first rows (sorted; an
    empty run's first is the next one's, and no row is in it)."""
    if firsts.dtype == np.int32 and rows.dtype != np.int32:
        # numpy would copy firsts to int64 for each search; a row past int32's range is in
        # the run it is clipped to, as firsts all fit
        bounds = np.iinfo(np.int32)
        rows = np.clip(rows, bounds.min, bounds.max).astype(np.int32)
    found: npt.NDArray[np.int64] = (np.searchsorted(firsts, rows, side="right") - 1).astype(
        np.int64, copy=False
    )
    return found


def found_in(
    values: npt.NDArray[Any], wanted: npt.NDArray[Any]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """Where each of ``wanted`` is in ``values`` (sorted), and whether it is there (where it
    is not, the place is some place in ``values``, or 0 when they are none)."""
    at = np.minimum(np.searchsorted(values, wanted), max(0, len(values) - 1))
    found = values[at] == wanted if len(values) else np.zeros(len(wanted), dtype=np.bool_)
    return at.astype(np.int64, copy=False), np.asarray(found, dtype=np.bool_)


def key_counts(
    keys: list[npt.NDArray[np.int64]], counts: list[npt.NDArray[np.int64]] | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Each distinct key of ``keys`` (sorted) with the sum of its ``counts`` (1 each when
    ``counts`` is None)."""
    if not keys:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    joined = np.concatenate(keys)
    weights = np.concatenate(counts) if counts else np.ones(len(joined), dtype=np.int64)
    if not len(joined):
        return joined, weights
    order = np.argsort(joined, kind="stable")
    joined, weights = joined[order], weights[order]
    starts = np.flatnonzero(np.append(True, joined[1:] != joined[:-1]))
    return joined[starts], np.add.reduceat(weights, starts)


# Values a slot of the marking array at least, for numbered_afresh to mark rather than sort:
# a slot is 8 bytes, and sorting keeps some 40 a value besides.
_VALUES_A_SLOT = 1 / 8


def numbered_afresh(
    parts: Sequence[npt.NDArray[np.int64]], below: int
) -> tuple[npt.NDArray[np.int64], list[npt.NDArray[np.int64]]]:
    """The distinct values of ``parts`` (integers from 0 to ``below``), sorted, and each
    part's values as their places among them: ``np.unique(joined, return_inverse=True)``,
    split by part again. Where the values are many against ``below``, they are marked in an
    array of ``below`` slots instead of sorted, which holds no sorted copy, order and
    inverse of them all beside them (and takes no sort)."""
    total = sum(len(part) for part in parts)
    if total < below * _VALUES_A_SLOT:
        named, local = np.unique(concatenated(list(parts), np.int64), return_inverse=True)
        bounds = np.cumsum([len(part) for part in parts])[:-1]
        return named, np.split(local.reshape(-1).astype(np.int64), bounds)
    place = np.zeros(below, dtype=np.int64)
    for part in parts:
        place[part] = 1
    named = np.flatnonzero(place).astype(np.int64)
    place[named] = np.arange(len(named), dtype=np.int64)
    return named, [place[part] for part in parts]


def objects(items: Sequence[Any]) -> npt.NDArray[np.object_]:
    """``items`` as an array of objects, to take from by index arrays: cheaper than Python
    lists of a million index numbers (28 bytes each), and the items are not copied."""
    array = np.empty(len(items), dtype=object)
    array[:] = items
    return array


def partitioned(keys: npt.NDArray[np.uint64], partitions: int) -> list[npt.NDArray[np.int64]]:
    """The rows of ``keys`` in each of ``partitions`` parts by a hash of their key (equal keys,
    one part), in their order within each: how a shuffle splits what a task made."""
    with np.errstate(over="ignore"):
        mixed = keys * np.uint64(0x9E3779B97F4A7C15)
    partition = ((mixed >> np.uint64(33)) % np.uint64(partitions)).astype(np.int64)
    order = np.argsort(partition, kind="stable")
    bounds = np.searchsorted(partition[order], np.arange(partitions + 1)).tolist()
    return [order[low:high] for low, high in itertools.pairwise(bounds)]
