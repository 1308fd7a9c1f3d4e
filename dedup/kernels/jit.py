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

The loops also ship built (``dedup/kernels/built/``, made by ``python -m dedup.kernels.ship``):
numba's cache entries of the machine type the project is built and tested on, found by the
same keys as the user's own cache (the processor and its features, numba's version, each
module's content and dedup's sources' digest). On such a machine a fresh install's first
scan loads them instead of compiling for some twenty seconds; anywhere else (another
processor, another numba, edited sources) they are passed over and the loops compile into
the user's cache as before. The shipped entries are only read (``DEDUP_IGNORE_SHIPPED_KERNELS=1``
passes them over, as the tests of a fresh cache do).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numba
from llvmlite import binding
from numba.core import registry
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)

__all__ = ["SHIPPED", "compiled", "compiled_before", "full_width_features", "shipped_fit"]

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


_PACKAGE = Path(__file__).resolve().parents[1]
SHIPPED = Path(__file__).resolve().parent / "built"
# Set by dedup.kernels.ship while it builds the shipped loops: each compiled one is saved there.
_BUILDING = os.environ.get("DEDUP_SHIP_KERNELS") == "1"
_IGNORING_SHIPPED = os.environ.get("DEDUP_IGNORE_SHIPPED_KERNELS") == "1"


class _DigestKeyed(FunctionCache):
    """numba's cache of one loop, its entries keyed by dedup's sources too."""

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        key = super()._index_key(sig, codegen)  # type: ignore[no-untyped-call]
        return (*key, sources_digest())


class _ShippedLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Where a loop's shipped entries are: under SHIPPED, in the folder of its module's."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        folder = Path(py_file).resolve().parent.relative_to(_PACKAGE)
        self._cache_path = str(SHIPPED / folder)

    def ensure_cache_path(self) -> None:
        """Only read, unless built: numba's check that the folder is writable is not made."""
        if _BUILDING:
            os.makedirs(self._cache_path, exist_ok=True)

    def get_cache_path(self) -> str:
        return self._cache_path

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _ShippedLocator | None:
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None
        return cls(py_func, py_file)


class _ShippedImpl(CompileResultCacheImpl):
    _locator_classes = [_ShippedLocator]  # noqa: RUF012 - numba's attribute, a list


class _ShippedCache(_DigestKeyed):
    _impl_class = _ShippedImpl  # type: ignore[assignment]


class _PackageCache(_DigestKeyed):
    """The user's cache of one loop (beside the module, or in NUMBA_CACHE_DIR), looked up
    after the shipped one."""

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)  # type: ignore[no-untyped-call]
        self._shipped = None if _IGNORING_SHIPPED else _ShippedCache(py_func)  # type: ignore[no-untyped-call]

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        if self._shipped is not None and not _BUILDING:
            loaded = self._shipped.load_overload(sig, target_context)  # type: ignore[no-untyped-call]
            if loaded is not None:
                return loaded
        return super().load_overload(sig, target_context)  # type: ignore[no-untyped-call]

    def save_overload(self, sig: Any, data: Any) -> None:
        super().save_overload(sig, data)  # type: ignore[no-untyped-call]
        if _BUILDING and self._shipped is not None:
            self._shipped.save_overload(sig, data)  # type: ignore[no-untyped-call]


def compiled(function: F) -> F:
    options: dict[str, Any] = {"nogil": True, "boundscheck": False}
    try:
        loop: F = numba.njit(cache=True, **options)(function)
        cache = _PackageCache(function)
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
    places = [Path(config.CACHE_DIR)] if config.CACHE_DIR else [_PACKAGE]
    digest = sources_digest().encode("ascii")
    if any(digest in index.read_bytes() for place in places for index in place.rglob("*.nbi")):
        return True
    return shipped_fit()


def shipped_fit() -> bool:
    """Whether the shipped loops are for this machine and these sources: their index files
    name dedup's sources' digest and this processor with its features (the key numba's
    cache looks entries up by)."""
    if _IGNORING_SHIPPED or not SHIPPED.is_dir():
        return False
    triple, processor, features = registry.cpu_target.target_context.codegen().magic_tuple()
    wanted = [sources_digest(), triple, processor, features]
    indexes = list(SHIPPED.rglob("*.nbi"))
    return bool(indexes) and all(
        all(word.encode() in index.read_bytes() for word in wanted) for index in indexes
    )
