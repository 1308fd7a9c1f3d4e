"""Array helpers."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dedup.arrays import (
    found_in,
    narrowed,
    numbered_afresh,
    partitioned,
    runs_of,
    sorted_unique,
)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_sorted_unique_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert sorted_unique(array).tolist() == np.unique(array).tolist()


def test_sorted_unique_of_pairs_flattens_them_as_numpy_does() -> None:
    pairs = np.array([[3, 1], [1, 2], [3, 3]], dtype=np.int64)
    assert sorted_unique(pairs).tolist() == [1, 2, 3]


@given(st.lists(st.integers(0, 40), max_size=300), st.integers(1, 7))
def test_partitioned_puts_equal_keys_together_and_every_row_once_in_order(
    keys: list[int], partitions: int
) -> None:
    array = np.array(keys, dtype=np.uint64)
    parts = partitioned(array, partitions)
    assert len(parts) == partitions
    assert sorted(row for part in parts for row in part.tolist()) == list(range(len(keys)))
    assert all(np.all(np.diff(part) > 0) for part in parts)
    home = {int(array[row]): number for number, part in enumerate(parts) for row in part}
    assert all(home[int(array[row])] == number for number, part in enumerate(parts) for row in part)


@given(st.lists(st.integers(-50, 50)), st.lists(st.integers(-60, 60)))
def test_found_in_says_where_each_wanted_value_is_and_whether_it_is_there(
    values: list[int], wanted: list[int]
) -> None:
    table = np.unique(np.array(values, dtype=np.int64))
    at, found = found_in(table, np.array(wanted, dtype=np.int64))
    assert found.tolist() == [value in set(values) for value in wanted]
    assert table[at[found]].tolist() == [value for value in wanted if value in set(values)]


@given(
    st.lists(st.lists(st.integers(0, 99), max_size=60), min_size=1, max_size=3),
    st.sampled_from([100, 10_000]),
)
def test_numbered_afresh_is_numpys_unique_with_its_inverse_split_by_part(
    parts: list[list[int]], below: int
) -> None:
    """Marked (values many against ``below``) or sorted (few), the same numbers."""
    arrays = [np.array(part, dtype=np.int64) for part in parts]
    named, local = numbered_afresh(arrays, below)
    joined = np.concatenate(arrays)
    expected, inverse = np.unique(joined, return_inverse=True)
    assert named.dtype == np.int64 and named.tolist() == expected.tolist()
    assert [part.tolist() for part in local] == [
        part.tolist()
        for part in np.split(inverse.reshape(-1), np.cumsum(list(map(len, parts)))[:-1])
    ]
    assert all(part.dtype == np.int64 for part in local)


@given(
    st.lists(st.integers(0, 2**29), max_size=40),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=40),
)
def test_runs_of_firsts_in_four_bytes_are_those_of_the_firsts_in_eight(
    sizes: list[int], rows: list[int]
) -> None:
    """The first rows of runs held in four bytes each while their count fits (a scan's runs
    of passages), searched with rows of eight bytes, even past four bytes' range:
    each row is in the run it is in among the firsts held whole."""
    sized = np.array(sizes, dtype=np.int64)
    whole = np.cumsum(sized) - sized
    compact = whole.astype(np.int32) if sum(sizes) < 2**31 else whole
    wanted = np.array(rows, dtype=np.int64)
    assert (
        runs_of(compact, wanted).tolist() == (np.searchsorted(whole, wanted, "right") - 1).tolist()
    )


@given(st.lists(st.integers(0, 2**40), max_size=20))
def test_narrowed_numbers_are_four_bytes_each_only_where_all_fit(values: list[int]) -> None:
    """What the driver holds a document (its first passage, its characters) in four bytes
    where every one fits, else in eight: the same numbers either way."""
    wide = np.array(values, dtype=np.int64)
    narrow = narrowed(wide)
    assert narrow.tolist() == values
    assert narrow.dtype == (np.int32 if all(v < 2**31 for v in values) else np.int64)
