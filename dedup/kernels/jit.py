"""The decorator for dedup's compiled loops (numba).

Each loop is compiled to machine code on first use and kept in numba's cache, next to the
module or in the user's cache folder, so later runs load it in a fraction of a second. numba
knows a cached loop is stale when its own code changed, not when a loop it calls did (in
another module, say: the alignment's chaining, called by the match stage): so dedup's loops are
cached under a digest of all of dedup's sources too, and any change to them (an upgrade, an
edit) compiles them afresh rather than running old machine code. Where
neither is writable (a read-only container, say), numba refuses to cache at all; the loops are
then compiled afresh in each run rather than failing the import.

On a processor with 512-bit vectors (AVX-512) the loops are compiled to use them: LLVM's tuning
for such processors prefers 256-bit vectors (older ones slowed their clock for the wide ones),
and the MinHash loop, a multiply-add and a minimum per shingle and permutation, runs faster
at the full width (docs/performance.md). Numba reads its CPU features once, when
its code generator is made, which the first compiled loop's definition does: so they are set
for that moment, when this module is imported, and numba's setting is put back at once (a
program that imports dedup finds ``numba.config`` as it was; its own loops share the code
generator, tuned the same). Nothing is changed where the caller has chosen CPU features
(``NUMBA_CPU_FEATURES``) or numba's code generator exists already.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numba
from llvmlite import binding
from numba.core import registry
from numba.core.caching import FunctionCache

__all__ = ["compiled", "compiled_before", "full_width_features"]

log = logging.getLogger(__name__)


def full_width_features(host_features: str) -> str | None:
    """``host_features`` (LLVM's CPU feature string) without the preference for 256-bit
    vectors, where the host has 512-bit ones; None where it has not."""
    if "+avx512f" not in host_features.split(","):
        return None
    return f"{host_features},-prefer-256-bit"


def _make_code_generator_full_width() -> None:
    """Have numba's code generator made for the full vector width, unless its CPU features
    are chosen already or it exists (it reads them when it is made)."""
    config: Any = numba.config  # numba ships no type information for its settings
    made = "_toplevel_target_context" in vars(registry.cpu_target)
    if config.CPU_FEATURES is not None or made:
        return
    features = full_width_features(binding.get_host_cpu_features().flatten())
    if features is None:
        return
    config.CPU_FEATURES = features
    try:
        registry.cpu_target.target_context  # noqa: B018 - made now, reading the features
    finally:
        config.CPU_FEATURES = None


_make_code_generator_full_width()

F = TypeVar("F", bound=Callable[..., Any])


@functools.cache
def sources_digest() -> str:
    """A digest of every Python source of the dedup package."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


class _PackageCache(FunctionCache):
    """numba's cache of one loop, its entries keyed by dedup's sources too."""

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        key = super()._index_key(sig, codegen)  # type: ignore[no-untyped-call]
        return (*key, sources_digest())


def compiled(function: F) -> F:
    options: dict[str, Any] = {"nogil": True, "boundscheck": False}
    try:
        loop: F = numba.njit(cache=True, **options)(function)
        cache = _PackageCache(function)  # type: ignore[no-untyped-call]
        loop._cache = cache  # type: ignore[attr-defined]
    except RuntimeError as error:  # numba: "cannot cache function ...: no locator available"
        log.info("compiling %s without numba's cache: %s", function.__name__, error)
        loop = numba.njit(**options)(function)
    return loop


def compiled_before() -> bool:
    """Whether dedup's loops were compiled on this machine before, for these sources: numba's
    cache index files (beside the modules, or in NUMBA_CACHE_DIR) hold its entries' keys, and
    this version's carry sources_digest(). A fresh install, or an upgrade, compiles them all
    on its first scan, which takes a while, and the command says so."""
    config: Any = numba.config
    package = Path(__file__).resolve().parents[1]
    places = [Path(config.CACHE_DIR)] if config.CACHE_DIR else [package]
    digest = sources_digest().encode("ascii")
    return any(digest in index.read_bytes() for place in places for index in place.rglob("*.nbi"))
