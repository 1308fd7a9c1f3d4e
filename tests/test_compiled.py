from __future__ import annotations

from typing import Any

import numba
import numpy as np
import pytest

from dedup import compiled as module


def test_without_a_writable_cache_the_loop_is_compiled_anyway(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = numba.njit

    def no_cache_anywhere(*args: Any, **options: Any) -> Any:
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'total': no locator available for file")
        return real(*args, **options)

    monkeypatch.setattr(module.numba, "njit", no_cache_anywhere)

    def total(values: Any) -> Any:
        result = 0
        for value in values:
            result += value
        return result

    loop = module.compiled(total)
    assert loop(np.arange(10)) == 45
    assert hasattr(loop, "signatures") and loop.signatures  # compiled by numba, not plain Python
