from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pytest

from dedup.kernels import jit as module


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


def test_loops_use_512_bit_vectors_only_where_the_processor_has_them() -> None:
    wide = "+64bit,+avx,+avx2,+avx512f,+avx512bw,+sse4.2"
    assert module.full_width_features(wide) == wide + ",-prefer-256-bit"
    assert module.full_width_features("+64bit,+avx,+avx2,-avx512f,+sse4.2") is None
    assert module.full_width_features("+64bit,+avx,+avx2,+avx512fp16") is None


def test_numba_compiles_for_the_chosen_features_and_its_settings_are_left_alone(
    samples: Path,
) -> None:
    """Importing dedup leaves numba.config as it was, and numba compiles dedup's loops (and a
    scan's) for the features chosen."""
    script = (
        "import numba, dedup, dedup.pipeline, dedup.normalize, dedup.segment\n"
        "print(numba.config.CPU_FEATURES)\n"
        f"dedup.scan({str(samples)!r}, jobs=1)\n"
        "from llvmlite import binding\n"
        "from dedup.kernels import jit\n"
        "host = binding.get_host_cpu_features().flatten()\n"
        "made = numba.core.registry.cpu_target.target_context.codegen().magic_tuple()[2]\n"
        "print(made == (jit.full_width_features(host) or host))\n"
    )
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_CPU_FEATURES"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "True"]
