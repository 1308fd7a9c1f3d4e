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
numba's cache entries compiled for a processor level rather than for the machine they were
built on, x86-64-v3 (AVX2, FMA, BMI2: Intel since Haswell, AMD since Zen), and found by that
level instead of this processor's name and features, with numba's version, each module's
content and dedup's sources' digest as the user's own cache is. So a fresh install's first
scan on any such x86-64 processor loads them instead of compiling for half a minute (numba
keys its cache by the exact processor, which a user's machine almost never shares with the
one the loops were built on). The user's own cache is looked in first: loops compiled for this
very processor (``DEDUP_IGNORE_SHIPPED_KERNELS=1`` once compiles them all, using AVX-512
where there is some) are preferred to the shipped ones. Elsewhere (another architecture, an
older processor, another numba, edited sources, numba's processor chosen by the caller with
``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES``) the shipped entries are passed over and the
loops compile into the user's cache as before. The shipped entries are only read.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.util
import logging
import os
import sys
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
from numba.core.runtime.nrt import rtsys

__all__ = [
    "PORTABLE_CPU",
    "PORTABLE_FEATURES",
    "SHIPPED",
    "compiled",
    "compiled_before",
    "full_width_features",
    "runs_portable_loops",
    "shipped_fit",
]

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


# The level the shipped loops are compiled for, as LLVM names it, and its features spelled out
# (numba keys a cache entry by both; the processor name alone would leave LLVM to add the
# building machine's features).
PORTABLE_CPU = "x86-64-v3"
PORTABLE_FEATURES = ",".join(
    f"+{feature}"
    for feature in (
        "64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2",  # x86-64
        "cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3",  # v2
        "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave",  # v3
    )
)  # fmt: skip


def runs_portable_loops(host_features: str) -> bool:
    """Whether a processor with these features (LLVM's string) runs the shipped loops."""
    has = set(host_features.split(","))
    return all(feature in has for feature in PORTABLE_FEATURES.split(","))


def _shipped_usable() -> bool:
    """Whether this process may load the shipped loops: they are not ignored, numba's
    processor is not chosen by the caller, and this one runs them."""
    config: Any = numba.config
    if _IGNORING_SHIPPED or config.CPU_NAME or config.CPU_FEATURES:
        return False
    return _host_runs_portable_loops()


@functools.cache
def _host_runs_portable_loops() -> bool:
    triple = registry.cpu_target.target_context.codegen().magic_tuple()[0]
    host = binding.get_host_cpu_features().flatten()
    return str(triple).startswith("x86_64") and runs_portable_loops(host)


def _portable(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A cache entry's key with the portable level in place of this processor."""
    signature, (triple, _, _), *rest = key
    return (signature, (triple, PORTABLE_CPU, PORTABLE_FEATURES), *rest)


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
    """The shipped entries of one loop, keyed by the portable level whatever this processor."""

    _impl_class = _ShippedImpl  # type: ignore[assignment]

    def _index_key(self, sig: Any, codegen: Any) -> tuple[Any, ...]:
        return _portable(super()._index_key(sig, codegen))


class _PackageCache(_DigestKeyed):
    """The user's cache of one loop (beside the module, or in NUMBA_CACHE_DIR), looked up
    before the shipped one: what was compiled here is for this very processor."""

    def __init__(self, py_func: Any) -> None:
        super().__init__(py_func)  # type: ignore[no-untyped-call]
        self._shipped = None if _IGNORING_SHIPPED else _ShippedCache(py_func)  # type: ignore[no-untyped-call]

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        # before a loop's entry is read (some name numba's array functions, which are
        # imported as they are unpickled) or compiled
        _numba_targets_without_scipy()
        loaded = _loaded_as_built(self, sig, target_context)
        if loaded is None and self._shipped is not None and not _BUILDING and _shipped_usable():
            loaded = _loaded_as_built(self._shipped, sig, target_context)
        return loaded

    def save_overload(self, sig: Any, data: Any) -> None:
        super().save_overload(sig, data)  # type: ignore[no-untyped-call]
        if _BUILDING and self._shipped is not None:
            self._shipped.save_overload(sig, data)  # type: ignore[no-untyped-call]


def _loaded_as_built(cache: FunctionCache, sig: Any, target_context: Any) -> Any:
    """A loop's cached entry, or None. numba's own load first refreshes the target context,
    which installs every registry of numba's implementations (0.3 s of each run's start,
    docs/performance.md): only compiling reads them. Machine code loaded as built needs the
    runtime it calls (memory allocation), started here; a compile refreshes the context
    itself."""
    rtsys.initialize(target_context)
    with cache._guard_against_spurious_io_errors():
        return cache._load_overload(sig, target_context)  # type: ignore[no-untyped-call]
    return None  # the guard swallowed an error reading the entry (numba's own load's case)


class _Refused(importlib.abc.MetaPathFinder):
    """An import finder that refuses ``names`` (as if they were not installed)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in self.names:
            raise ModuleNotFoundError(f"{name} is held back while numba loads", name=name)


@functools.cache
def _numba_targets_without_scipy() -> None:
    """Before numba's first load or compile in this process: its array functions' module
    imports scipy.linalg (0.2-0.3 s, on every run's start) only to learn whether
    np.correlate and np.convolve may call BLAS, which dedup's loops never do. That module is
    loaded here with scipy held back, and its answer then set to what it would have been
    (whether scipy is installed), so that code that does use BLAS still does, scipy imported
    when such a call is first compiled."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    refused = _Refused(frozenset({"scipy", "scipy.linalg"} - set(sys.modules)))
    sys.meta_path.insert(0, refused)
    try:
        import numba.np.arraymath as arraymath
    finally:
        sys.meta_path.remove(refused)
    arraymath._HAVE_BLAS = importlib.util.find_spec("scipy") is not None


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
    """Whether the shipped loops serve this machine and these sources: it runs them, and
    their index files name dedup's sources' digest, this architecture and the portable
    level (the key they are looked up by)."""
    if not _shipped_usable() or not SHIPPED.is_dir():
        return False
    triple = registry.cpu_target.target_context.codegen().magic_tuple()[0]
    wanted = [sources_digest(), triple, PORTABLE_CPU, PORTABLE_FEATURES]
    indexes = list(SHIPPED.rglob("*.nbi"))
    return bool(indexes) and all(
        all(word.encode() in index.read_bytes() for word in wanted) for index in indexes
    )
