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


def test_fnv1a_over_code_points_is_fnv1a_of_their_bytes_for_ascii() -> None:
    from dedup.kernels.hashing import FNV_OFFSET, fnv1a

    value = np.uint64(FNV_OFFSET)
    for char in "dedup":
        value = fnv1a(value, np.uint64(ord(char)))
    expected = FNV_OFFSET
    for byte in b"dedup":  # the reference definition, over bytes
        expected = ((expected ^ byte) * 0x100000001B3) % (1 << 64)
    assert int(value) == expected


def test_a_table_of_records_finds_what_it_holds_after_growing() -> None:
    from dedup.kernels.tables import empty_table, probe, rehashed

    key, match, used = 0, 1, 2
    table = empty_table(8, 3, used, -1)
    stored = [(5, 50), (13, 130), (21, 210)]  # one low 3 bits (5): they collide
    for first, second in stored:
        slot = probe(table, first, key, first, match, second, used, -1)
        assert table[slot, used] == -1
        table[slot] = (first, second, 1)
    assert sorted(int(table[s, key]) for s in range(8) if table[s, used] != -1) == [5, 13, 21]
    grown = rehashed(table, 32, key, used, -1)
    for first, second in stored:
        slot = probe(grown, first, key, first, match, second, used, -1)
        assert (grown[slot, key], grown[slot, match]) == (first, second)
    missing = probe(grown, 5, key, 5, match, 51, used, -1)
    assert grown[missing, used] == -1, "a key with another match is not found"


def test_a_stamped_set_is_emptied_by_a_new_stamp() -> None:
    from dedup.kernels.tables import stamped_add, stamped_slot

    keys = np.zeros(16, dtype=np.uint64)
    stamps = np.zeros(16, dtype=np.int64)
    mask = np.uint64(15)
    added = [stamped_add(keys, stamps, mask, 1, np.uint64(key)) for key in (3, 19, 35, 7)]
    assert added == [3, 4, 5, 7]  # 3, 19 and 35 collide: each in the next free slot
    found = [stamped_slot(keys, stamps, mask, 1, np.uint64(k)) for k in (3, 19, 35, 7, 4)]
    assert found == [3, 4, 5, 7, -1]
    stamped_add(keys, stamps, mask, 2, np.uint64(19))
    assert [stamped_slot(keys, stamps, mask, 2, np.uint64(k)) for k in (3, 19, 35)] == [-1, 3, -1]


def test_a_fresh_cache_is_known_as_such(tmp_path: Path) -> None:
    """The first scan says it compiles; dedup tells by numba's cache, here a fresh one that
    one compiled loop then fills."""
    script = (
        "import numpy as np\n"
        "from dedup.kernels.jit import compiled_before\n"
        "before = compiled_before()\n"
        "from dedup.kernels.hashing import fnv1a\n"
        "fnv1a(np.uint64(1), np.uint64(2))\n"
        "print(before, compiled_before())\n"
    )
    assert _with_a_fresh_cache(script, tmp_path).split() == ["False", "True"]


def test_loops_compiled_for_other_sources_do_not_count(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """After an upgrade (other sources) the loops are compiled afresh: the command says so
    again, as on a fresh install, though numba's cache holds an earlier version's index."""
    cache = tmp_path / "cache"
    (cache / "dedup").mkdir(parents=True)
    (cache / "dedup" / "hashing.fnv1a-10.py311.nbi").write_bytes(b"an earlier version's index")
    monkeypatch.setattr(module.numba.config, "CACHE_DIR", str(cache))
    monkeypatch.setattr(module, "_IGNORING_SHIPPED", True)  # as on another machine
    assert not module.compiled_before()
    (cache / "dedup" / "hashing.fnv1a-11.py311.nbi").write_bytes(
        b"...(" + module.sources_digest().encode("ascii") + b")..."
    )
    assert module.compiled_before()


def test_cached_loops_are_keyed_by_all_of_dedups_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba alone would reuse a cached loop after a loop it calls changed (in another module):
    dedup's cache entries carry a digest of the whole package's sources."""
    from dedup.align import aligned_spans
    from dedup.kernels import jit

    cache = aligned_spans._cache
    assert isinstance(cache, jit._PackageCache)
    signature = aligned_spans.signatures[0] if aligned_spans.signatures else None
    codegen = aligned_spans.targetctx.codegen()
    key = cache._index_key(signature, codegen)
    assert jit.sources_digest() in key
    monkeypatch.setattr(jit, "sources_digest", lambda: "an edited dedup")
    assert cache._index_key(signature, codegen) != key


def test_a_first_run_compiles_the_alignment_in_a_process_of_its_own(
    samples: Path, tmp_path: Path
) -> None:
    """On a first run a forked process compiles the align stage's loops while the scan
    compiles and runs the stages before; the scan then loads them from numba's cache rather
    than compiling them again, and the process is gone when the scan returns."""
    script = (
        "import multiprocessing, sys\n"
        "import dedup\n"
        "from dedup.documents import _text_pair_counts\n"
        "from dedup.matches import _align_chunk\n"
        "report = dedup.scan([sys.argv[1]], jobs=2)\n"
        "print(len(report.matches) > 0, multiprocessing.active_children())\n"
        "for loop in (_align_chunk, _text_pair_counts):\n"
        "    print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))\n"
    )
    assert _with_a_fresh_cache(script, tmp_path, str(samples)).splitlines() == [
        "True []",
        "1 0",
        "1 0",
    ]


def _with_a_fresh_cache(script: str, tmp_path: Path, *arguments: str) -> str:
    """What ``script`` prints, run in a process of its own with an empty numba cache."""
    environment = {
        **os.environ,
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "DEDUP_IGNORE_SHIPPED_KERNELS": "1",  # as on a machine they were not built for
    }
    done = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_shipped_loops_are_built_for_these_sources() -> None:
    """The loops shipped compiled (dedup/kernels/built/) are keyed by a digest of dedup's
    sources: after an edit they serve no one until built again."""
    from dedup.kernels import jit

    indexes = sorted(jit.SHIPPED.rglob("*.nbi"))
    assert len(indexes) >= 60
    digest = jit.sources_digest().encode("ascii")
    stale = [index.name for index in indexes if digest not in index.read_bytes()]
    assert not stale, f"stale shipped loops {stale[:3]}: run python -m dedup.kernels.ship"


def test_the_shipped_loops_serve_any_processor_of_their_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The shipped loops are found by the x86-64-v3 level, not by the processor that built
    them: a processor with every feature of the level runs them, one short of one does not,
    and a caller who chose numba's processor is not given them."""
    from dedup.kernels import jit

    zen3 = "+64bit,+adx,+aes,+avx,+avx2,-avx512f,+bmi,+bmi2,+cmov,+crc32,+cx16,+cx8,+f16c,"
    zen3 += "+fma,+fxsr,+lzcnt,+mmx,+movbe,+popcnt,+sahf,+sha,+sse,+sse2,+sse3,+sse4.1,"
    zen3 += "+sse4.2,+sse4a,+ssse3,+xsave,+xsaveopt"
    assert jit.runs_portable_loops(zen3)
    assert jit.runs_portable_loops(zen3.replace("-avx512f", "+avx512f"))
    assert not jit.runs_portable_loops(zen3.replace("+avx2", "-avx2"))  # Sandy Bridge
    assert not jit.runs_portable_loops(zen3.replace("+fma", "-fma"))

    from dedup.align import aligned_spans

    cache = aligned_spans._cache
    codegen = aligned_spans.targetctx.codegen()
    signature = aligned_spans.signatures[0] if aligned_spans.signatures else None
    own = cache._index_key(signature, codegen)
    shipped = cache._shipped._index_key(signature, codegen)
    assert own[1] == codegen.magic_tuple()  # this processor, as numba names it
    assert shipped[1] == (own[1][0], jit.PORTABLE_CPU, jit.PORTABLE_FEATURES)
    assert (shipped[0], *shipped[2:]) == (own[0], *own[2:])

    monkeypatch.setattr(jit.numba.config, "CPU_NAME", "generic")
    assert not jit.shipped_fit()


def test_a_first_scan_loads_the_shipped_loops_and_compiles_none(
    samples: Path, tmp_path: Path
) -> None:
    """On a processor of the level they were built for, a fresh install (an empty numba
    cache) loads every loop a scan uses from the shipped ones: none is compiled, none written to the
    user's cache, and the command does not say it compiles."""
    from dedup.kernels import jit

    if not jit.shipped_fit():
        pytest.skip("the shipped loops are for another processor level or numba")
    script = (
        "import sys\n"
        "import dedup\n"
        "from dedup.kernels.jit import compiled_before\n"
        "from dedup.matches import _align_chunk\n"
        "from dedup.fingerprint import _sign_kernel\n"
        "print(compiled_before())\n"
        "report = dedup.scan([sys.argv[1]], jobs=2)\n"
        "print(len(report.clusters) > 0 and len(report.matches) > 0)\n"
        "for loop in (_align_chunk, _sign_kernel):\n"
        "    print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))\n"
    )
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    environment.pop("DEDUP_IGNORE_SHIPPED_KERNELS", None)
    done = subprocess.run(
        [sys.executable, "-c", script, str(samples)],
        capture_output=True, text=True, env=environment, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "1", "0", "1", "0"]
    assert not list((tmp_path / "cache").rglob("*.nbi"))


def test_loading_the_loops_leaves_scipy_and_numbas_registries_unloaded() -> None:
    """numba imports scipy.linalg on its first load only to learn whether BLAS is there, and
    installs every registry of its implementations before it loads a cached loop (together
    0.5 s of every run's start); dedup loads its loops without either, and a caller's loops
    that call BLAS still compile and run, loading them then."""
    code = (
        "import sys, numpy as np, numba\n"
        "from dedup.codepoints import utf16_code_points\n"
        "units = np.frombuffer('天地'.encode('utf-16-le'), np.uint16)\n"
        "print(utf16_code_points(units, np.zeros(1, np.int64), np.full(1, 2)).tolist())\n"
        "registries = 'numba.np.random.generator_core'\n"
        "print('scipy.linalg' in sys.modules, registries in sys.modules)\n"
        "f = numba.njit(lambda a, b: (np.dot(a, b), np.correlate(a, b)[0], np.sort(b)[0]))\n"
        "print(*f(np.arange(5.0), np.ones(5)))\n"
        "print('scipy.linalg' in sys.modules, registries in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert done.stdout.split("\n")[:4] == [
        str([ord("天"), ord("地")]),
        "False False",
        "10.0 10.0 1.0",
        "True True",
    ]
