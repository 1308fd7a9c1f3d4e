"""Array helpers."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dedup.arrays import sorted_unique


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_sorted_unique_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert sorted_unique(array).tolist() == np.unique(array).tolist()


def test_sorted_unique_of_pairs_flattens_them_as_numpy_does() -> None:
    pairs = np.array([[3, 1], [1, 2], [3, 3]], dtype=np.int64)
    assert sorted_unique(pairs).tolist() == [1, 2, 3]
