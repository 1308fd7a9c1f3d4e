"""What an index does with the collection it holds: add files (a site, a submission), remove a
source, check new files against everything stored (query), report on all of it, and describe
itself.

A stored file is prepared (read, normalized, fingerprinted) as a scan prepares it, and its
passages' band keys are kept. A query prepares its own files, finds the stored files that share
a band with any of their passages, and scans those together with the query, each stored file
read from the index (not from where it once was) and normalized with the lines its source
repeats as learned over all of that source's stored files: so it finds exactly the pairs a
scan of everything would find that involve the query. ``report`` is such a scan of every
stored file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dedup.candidates import CANDIDATE_CEILING, band_keys, lsh_params
from dedup.config import ScanConfig
from dedup.engine.base import engine_for
from dedup.engine.batches import TaskFiles
from dedup.engine.gather import PassTasks, file_slices, learned_lines, prepare_all
from dedup.engine.tasks import PreparedFile, PreparedInput
from dedup.errors import IndexFileError
from dedup.fingerprint import SignatureTable
from dedup.index.store import IndexStore, NewFile, Store, StoredFile
from dedup.models import PairTable, Passage, Report, Skipped
from dedup.normalize.repeated_lines import RepeatedLines
from dedup.pipeline import path_list, scan_files
from dedup.read import FoundFile, FoundFiles, discover_inputs, file_stamp
from dedup.read.location import open_input, read_all
from dedup.read.slices import most_tasks
from dedup.read.zip import outer_path
from dedup.report.rebuild import narrowed
from dedup.timing import StageTimer
from dedup.version import __version__

# The options that shape what an index stores (how text is read, normalized, cut into
# passages and fingerprinted): a query or an add with other values would compare unlike
# fingerprints, so it is refused. Threshold, containment, keep and the alignment's options
# apply at query time and may differ.
FINGERPRINT_OPTIONS = (
    "script", "ngram", "num_perm", "seed", "passage_chars", "passage_overlap",
    "min_passage_chars", "text_fields", "title_fields", "id_fields", "source_fields",
    "encoding", "errors", "max_file_mb", "max_whole_file_mb", "skip_steps",
)  # fmt: skip


# The options given once a value (--source-field a --source-field b), for the fields that
# hold them all.
_REPEATED_OPTIONS = {
    "text_fields": "--text-field",
    "title_fields": "--title-field",
    "id_fields": "--id-field",
    "source_fields": "--source-field",
    "skip_steps": "--skip-step",
}


def index_options(config: ScanConfig) -> dict[str, Any]:
    """What the index records of ``config``: the fingerprint options, the LSH bands, and the
    dedup version (whose normalization made the fingerprints)."""
    options = config.to_dict()
    bands, rows = lsh_params(min(config.threshold, CANDIDATE_CEILING), config.num_perm)
    return {
        **{name: options[name] for name in FINGERPRINT_OPTIONS},
        "bands": bands,
        "rows": rows,
        "dedup_version": __version__,
    }


def as_built(store: Store, config: ScanConfig) -> ScanConfig:
    """``config`` with each fingerprint option it leaves at its default taken from what the
    index was built with: an index remembers them, so that an add, a query or a report need
    not repeat ``--source-field`` or ``--ngram``. One set to another value is still refused
    (_check_options)."""
    built = store.options()
    if built is None:
        return config
    defaults, given = ScanConfig().to_dict(), config.to_dict()
    taken = {
        name: tuple(built[name]) if isinstance(built[name], list) else built[name]
        for name in FINGERPRINT_OPTIONS
        if name in built and given[name] == defaults[name] != built[name]
    }
    return ScanConfig.with_options(config, taken)


def _check_options(store: Store, config: ScanConfig) -> dict[str, Any]:
    wanted = index_options(config)
    built = store.options()
    if built is None:
        return wanted
    differ = [name for name in wanted if built.get(name) != wanted[name]]
    if not differ:
        return built
    name = differ[0]
    if name == "dedup_version":
        hint = (
            f"it was built by dedup {built.get(name)}, whose fingerprints this version "
            f"({__version__}) does not compare; build a new index from the same files"
        )
    elif name in ("bands", "rows"):
        hint = (
            f"its LSH bands are for a threshold of at least {CANDIDATE_CEILING}; query at "
            f"--threshold {CANDIDATE_CEILING} or above, or build a new index"
        )
    else:
        option = _REPEATED_OPTIONS.get(name, "--" + name.replace("_", "-"))
        hint = (
            f"it was built with {name} = {built.get(name)!r}, not {wanted[name]!r}; give "
            f"{option} as it was built (dedup index info {store.path} lists its options), or "
            "build a new index with these"
        )
    raise IndexFileError(f"{store.path}: {hint}")


@dataclass(frozen=True, slots=True)
class AddResult:
    """What ``add`` did: files stored (new or changed), files left as they were (unchanged),
    files of the touched sources stored again (prepared with their source's lines learned
    anew), and the inputs it skipped, with their reasons."""

    added: tuple[str, ...]
    unchanged: tuple[str, ...]
    prepared_again: tuple[str, ...]
    skipped: tuple[Skipped, ...]


def add(
    index: str | os.PathLike[str],
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    config: ScanConfig | None = None,
    source: str | None = None,
) -> AddResult:
    """Store the files under ``paths`` in ``index`` (made if it does not exist), all under
    ``source`` if given (else each folder under a given folder is a source, as in a scan).
    An unchanged file (same path, same sha256) is left as it is; a changed one replaces its
    old rows. A source's lines are learned over all of its files (stored and new), so that a
    query normalizes them as a scan of all would: the other files of a source that gets new
    ones are prepared again. All of it is written in one transaction, as the files are
    prepared: an add that is interrupted leaves the index as it was."""
    config = config or ScanConfig()
    found, skipped = discover_inputs(path_list(paths), config.follow_links)
    if source is not None:
        found = FoundFiles(dataclasses.replace(file, source=source) for file in found)
    made = not os.path.exists(index)
    try:
        with IndexStore(index, create=True) as store:
            config = as_built(store, config)
            options = _check_options(store, config)
            stored = {file.path: file for file in store.files()}
            digests = {file.path: _sha256(file.fs_path) for file in found}
            changed = [
                f for f in found if f.path not in stored or stored[f.path].sha256 != digests[f.path]
            ]
            changed_paths = {file.path for file in changed}
            unchanged = [f.path for f in found if f.path not in changed_paths]
            touched = sorted({file.source for file in changed})
            with _materialized(store) as materialize:
                # Every touched source's files: its new and changed ones, and the others it has
                # (given again, or stored), whose passages depend on the lines learned over all.
                files = [file for file in found if file.source in touched]
                for name in touched:
                    files += materialize([f for f in store.files(name) if f.path not in digests])
                files.sort()
                prepared_again = [file.path for file in files if file.path not in changed_paths]
                known = {path: file.sha256 for path, file in stored.items()}
                writer = _FileWriter(store, options, {**known, **digests}, stored)
                with store.transaction():
                    if store.options() is None:
                        store.set_options(options)
                    _prepare_into(files, config, writer)
            skipped += writer.skipped
    except BaseException:
        if made:  # an add that made the index and did not finish leaves no index behind
            for leftover in (Path(index), Path(f"{index}-wal"), Path(f"{index}-shm")):
                leftover.unlink(missing_ok=True)
        raise
    return AddResult(
        tuple(file.path for file in changed),
        tuple(unchanged),
        tuple(sorted(prepared_again)),
        tuple(skipped),
    )


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open_input(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _prepare_into(files: Sequence[FoundFile], config: ScanConfig, writer: _FileWriter) -> None:
    """``files`` (all the files of their sources) prepared as a scan prepares them, each
    source's lines learned over all of its files, and each stored by ``writer`` as it comes
    (while the workers prepare the next)."""
    with engine_for(config, most_tasks(files, config)) as engine:
        slices = file_slices(files, config, engine)  # a large JSON Lines file in slices
        tasks = PassTasks.of(slices)
        learned = learned_lines(
            engine,
            engine.kept_on_workers(config.show_progress),
            TaskFiles(files, tasks.file),
            config,
            tasks.part,
        ).repeated
        if "repeated-lines" in config.skip_steps:
            learned = {}
        writer.lines = {file.source: learned.get(file.source, frozenset()) for file in files}
        prepare_all(files, config, StageTimer(), engine, writer.lines, each=writer, slices=slices)


class _FileWriter:
    """Stores each prepared file in the index: its bytes, its passages' band keys (a later
    copy of a text, handed back without its signature by dedup.engine.copies, takes those
    of the first), the lines its source repeats; the old rows of its path replaced."""

    def __init__(
        self,
        store: Store,
        options: dict[str, Any],
        digests: dict[str, str],
        stored: dict[str, StoredFile],
    ) -> None:
        self.store = store
        self.keys = _BandKeys(options)
        self.digests = digests
        self.stored = stored
        self.lines: RepeatedLines = {}
        self.skipped: list[Skipped] = []

    def __call__(self, file: FoundFile, result: PreparedFile) -> None:
        keys = self.keys.of(result)
        self.skipped += [item.skipped for item in result.inputs if item.skipped is not None]
        characters = sum(int((i.passages.end - i.passages.start).sum()) for i in result.inputs)
        stamp = file_stamp(file.fs_path) or (0, 0)
        old = self.stored.get(file.path)
        if old is not None:
            self.store.remove(old.id)
        self.store.add(
            NewFile(
                source=file.source,
                path=file.path,
                format=file.format,
                compression=file.compression,
                size=stamp[0],
                mtime_ns=stamp[1],
                sha256=self.digests[file.path],
                characters=characters,
                content=read_all(file.fs_path),
                band_keys=keys,
                repeated_lines=self.lines.get(file.source, frozenset()),
            )
        )


class _BandKeys:
    """Each prepared passage's LSH band keys, file by file as the workers hand them back; a
    later copy of a text (handed back without its signature: dedup.engine.copies) takes
    those of the first, which came before it."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.bands, self.rows = int(options["bands"]), int(options["rows"])
        self._first: dict[tuple[int, int], npt.NDArray[np.int64]] = {}

    def of(self, result: PreparedFile) -> npt.NDArray[np.int64]:
        """The band keys of every passage of ``result`` (one row each)."""
        parts = [self._of_input(item) for item in result.inputs]
        return np.concatenate(parts) if parts else np.empty((0, self.bands), dtype=np.int64)

    def _of_input(self, item: PreparedInput) -> npt.NDArray[np.int64]:
        signed = item.normalized.held()
        keys = np.empty((len(signed), self.bands), dtype=np.int64)
        keys[signed] = band_keys(SignatureTable.of(item.signatures), self.bands, self.rows)
        for row, (held, pair) in enumerate(zip(signed.tolist(), item.hashes.tolist(), strict=True)):
            twins = (pair[0], pair[1])
            if not held:
                keys[row] = self._first[twins]
            elif twins not in self._first:
                self._first[twins] = keys[row]
        return keys


@contextmanager
def _materialized(store: Store) -> Iterator[Any]:
    """``materialize(stored files)``: each written from the index into a temporary folder
    (removed after), as the FoundFile a scan reads: its path and source as stored."""
    with tempfile.TemporaryDirectory(prefix="dedup-index-") as folder:

        def materialize(files: Sequence[StoredFile]) -> list[FoundFile]:
            found = []
            for file in files:
                name = Path(file.path).name
                place = Path(folder, f"{file.id}-{name[-60:]}")
                content = store.content(file.id)
                try:
                    place.write_bytes(content)
                except OSError as error:
                    raise IndexFileError(
                        f"{store.path}: cannot write its stored files into the temporary "
                        f"folder {folder} ({error.strerror or error}); free some space there, "
                        "or set TMPDIR to a folder with room for them"
                    ) from error
                found.append(
                    FoundFile(
                        path=file.path,
                        source=file.source,
                        format=file.format,
                        fs_path=str(place),
                        compression=file.compression,
                        stamp=file_stamp(str(place)),
                    )
                )
            return found

        yield materialize


def remove(index: str | os.PathLike[str], source: str) -> int:
    """Remove every file of ``source`` from ``index`` (in one transaction); how many."""
    with IndexStore(index) as store:
        files = store.files(source)
        if not files:
            names = ", ".join(sorted({file.source for file in store.files()})) or "none"
            raise IndexFileError(f"{store.path}: no source {source!r} in it (its sources: {names})")
        with store.transaction():
            for file in files:
                store.remove(file.id)
        return len(files)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    name: str
    files: int
    passages: int
    bytes: int


@dataclass(frozen=True, slots=True)
class IndexInfo:
    path: str
    sources: tuple[SourceInfo, ...]
    files: int
    passages: int
    bytes: int  # the stored files' bytes, as they were on disk
    size_on_disk: int
    options: dict[str, Any]


def info(index: str | os.PathLike[str]) -> IndexInfo:
    """What ``index`` holds, and the options it was built with."""
    with IndexStore(index) as store:
        files = store.files()
        sources = []
        for name in sorted({file.source for file in files}):
            own = [file for file in files if file.source == name]
            sources.append(
                SourceInfo(
                    name,
                    len(own),
                    sum(file.passages for file in own),
                    sum(file.size for file in own),
                )
            )
        return IndexInfo(
            str(store.path),
            tuple(sources),
            len(files),
            sum(file.passages for file in files),
            sum(file.size for file in files),
            store.size_on_disk(),
            store.options() or {},
        )


def report(index: str | os.PathLike[str], config: ScanConfig | None = None) -> Report:
    """The report of everything stored, from the index alone: the scan of its files."""
    config = config or ScanConfig()
    with IndexStore(index) as store:
        config = as_built(store, config)
        _check_options(store, config)
        stored = store.files()
        with _materialized(store) as materialize:
            files = materialize(stored)
            return scan_files(sorted(files), [], config, _stored_lines(store, stored))


def _stored_lines(store: Store, files: Sequence[StoredFile]) -> RepeatedLines:
    """Per source of ``files``, the lines it repeats, as stored (the same for each of its
    files: an add writes all of a source in one transaction)."""
    lines: RepeatedLines = {}
    for file in files:
        if file.source not in lines:
            lines[file.source] = store.repeated_lines(file.id)
    return lines


def query(
    index: str | os.PathLike[str],
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    config: ScanConfig | None = None,
    source: str | None = None,
    within: bool = False,
) -> Report:
    """What the files under ``paths`` share with the files stored in ``index``: the report a
    scan of both would give, cut to the pairs and matches between a queried file and a
    stored one (and, ``within``, between two queried files too). A stored file of the same
    path as a queried one is left out: the queried one stands for it. Every pair of copies
    is aligned (``every_pair``): a queried copy whose group keeps another queried copy would
    otherwise be matched with that one alone, and the cut would leave it none."""
    config = dataclasses.replace(config or ScanConfig(), every_pair=True)
    found, skipped = discover_inputs(path_list(paths), config.follow_links)
    if source is not None:
        found = FoundFiles(dataclasses.replace(file, source=source) for file in found)
    queried = {file.path for file in found}
    with IndexStore(index) as store:
        config = as_built(store, config)
        options = _check_options(store, config)
        keys = _BandKeys(options)
        parts: list[npt.NDArray[np.int64]] = []
        with engine_for(config, most_tasks(found, config)) as engine:
            each = lambda _file, result: parts.append(keys.of(result))  # noqa: E731
            prepare_all(found, config, StageTimer(), engine, each=each)
        wanted = np.concatenate(parts) if parts else np.empty((0, keys.bands), dtype=np.int64)
        hit = set(store.files_sharing(wanted))
        stored = [file for file in store.files() if file.id in hit and file.path not in queried]
        with _materialized(store) as materialize:
            files = sorted([*found, *materialize(stored)])
            whole = scan_files(files, skipped, config, _stored_lines(store, stored))
    return _between(whole, queried, within)


def _in(path: str, paths: set[str]) -> bool:
    """Whether a member's or document's path is one of ``paths`` (or an entry of one: an
    archive's members are named ``archive!/entry``)."""
    return path in paths or outer_path(path) in paths


def _between(whole: Report, queried: set[str], within: bool) -> Report:
    """``whole`` cut to what joins a queried file to a stored one (and two queried files,
    ``within``): its pairs, clustered again, and its matches, grouped again."""

    def wanted(a: str, b: str) -> bool:
        one, two = _in(a, queried), _in(b, queried)
        return one != two or (within and one and two)

    def wanted_pairs(pairs: PairTable, members: Sequence[Passage]) -> npt.NDArray[np.bool_]:
        inside = np.array([_in(member.path, queried) for member in members], dtype=np.bool_)
        one, two = inside[pairs.a], inside[pairs.b]
        keep: npt.NDArray[np.bool_] = (one != two) | (one & two & within)
        return keep

    return narrowed(whole, wanted_pairs, lambda match: wanted(match.a.path, match.b.path))
