"""The index's storage: one SQLite file (the standard library's), behind the small interface
the index operations use (``IndexStore``), so that a server store (PostgreSQL, for a team
that shares one index) can be added without touching them.

What is kept, per stored file: where it was (source, path), its size, modification time and
sha256, its bytes (compressed: queries and reports read the stored files, never the original
paths, which may be gone), its passages' LSH band keys (to find the stored files a new text
may share passages with), and the lines its source repeats as they were learned when it was
prepared. Per index: the options that shape fingerprints; a query with others is refused.

The file is in WAL mode, so readers can query while one writer adds; an ``add`` is written in
one transaction, so a kill at any moment leaves every file of it stored fully or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import zlib
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dedup.errors import IndexFileError

# "ddup" as SQLite's application id: what tells a dedup index from any other SQLite file.
APPLICATION_ID = 0x64647570
# Stored files are compressed for speed more than size (level 6 took three times as long,
# for a few percent less: docs/performance.md).
CONTENT_LEVEL = 1
# The layout of the tables; a file of another version is refused, not misread.
SCHEMA_VERSION = 1
# SQLite's page cache for an open index, in KiB (its default is 2 MiB): the bands table's
# B-tree is inserted into at random places, and a cache that holds it saves reading its
# pages back at every insert (docs/performance.md).
CACHE_KIB = 256 * 1024
# Band rows are written this many at a time, sorted, from the files added since the last
# write: sorted across many files they fall in fewer places of the B-tree.
BAND_ROWS_AT_ONCE = 250_000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    path TEXT NOT NULL UNIQUE,
    format TEXT NOT NULL,
    compression TEXT,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    passages INTEGER NOT NULL,
    characters INTEGER NOT NULL,
    content BLOB NOT NULL,
    band_keys BLOB NOT NULL,
    repeated_lines BLOB NOT NULL
);
CREATE INDEX files_by_source ON files (source);
CREATE TABLE bands (
    band INTEGER NOT NULL,
    key INTEGER NOT NULL,
    file INTEGER NOT NULL,
    passage INTEGER NOT NULL,
    PRIMARY KEY (band, key, file, passage)
) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file as the index holds it (its bytes apart: ``IndexStore.content``)."""

    id: int
    source: str
    path: str
    format: str
    compression: str | None
    size: int
    mtime_ns: int
    sha256: str
    passages: int
    characters: int


@dataclass(frozen=True, slots=True)
class NewFile:
    """A file to store: what StoredFile says of it, its bytes, its passages' band keys (one
    row per passage, one column per band) and the repeated lines it was prepared with."""

    source: str
    path: str
    format: str
    compression: str | None
    size: int
    mtime_ns: int
    sha256: str
    characters: int
    content: bytes
    band_keys: npt.NDArray[np.int64]
    repeated_lines: frozenset[int]


class Store(Protocol):
    """What the index operations (dedup.index.collection) ask of storage: all of it. A server
    store (PostgreSQL, for a team sharing an index) would be a second class with these."""

    path: Path

    def transaction(self) -> AbstractContextManager[None]: ...
    def options(self) -> dict[str, Any] | None: ...
    def set_options(self, options: dict[str, Any]) -> None: ...
    def files(self, source: str | None = None) -> list[StoredFile]: ...
    def content(self, file: int) -> bytes: ...
    def repeated_lines(self, file: int) -> frozenset[int]: ...
    def remove(self, file: int) -> None: ...
    def add(self, new: NewFile) -> int: ...
    def files_sharing(self, band_keys: npt.NDArray[np.int64]) -> list[int]: ...
    def size_on_disk(self) -> int: ...


class IndexStore:
    """An index file, opened (and made, if ``create`` and it does not exist): the SQLite
    Store."""

    def __init__(self, path: str | os.PathLike[str], create: bool = False) -> None:
        self.path = Path(path)
        self._wrote = False
        self._bands = _PendingBands()
        if not self.path.exists() and not create:
            raise IndexFileError(
                f"{self.path}: no index here; make one with dedup index add {self.path} PATH..."
            )
        if self.path.is_dir():
            raise IndexFileError(f"{self.path}: a folder, not an index file; give a file name")
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        try:
            self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout = 60000")
            if fresh:
                self._make()
            else:
                self._check()
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        except sqlite3.DatabaseError as error:
            raise IndexFileError(
                f"{self.path}: not a dedup index ({error}); give the index file dedup index add "
                "made, or a new file name to make one"
            ) from error

    def _make(self) -> None:
        with self.transaction():  # executescript would commit part way: one at a time
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _check(self) -> None:
        (application,) = self._db.execute("PRAGMA application_id").fetchone()
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if application != APPLICATION_ID:
            raise IndexFileError(
                f"{self.path}: an SQLite file, but not a dedup index; it is left as it is. "
                "Give the index file dedup index add made, or a new file name"
            )
        if version != SCHEMA_VERSION:
            raise IndexFileError(
                f"{self.path}: a dedup index of layout {version}, which this version does not "
                f"read (it reads {SCHEMA_VERSION}); make a new index from the same files"
            )

    def close(self) -> None:
        # After writing, the write-ahead log is folded back into the file and emptied, so
        # that the index is one file again between commands; without waiting (a reader still
        # busy would hold this writer up: what it uses is folded in by a later writer).
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        if self._wrote:
            self._db.execute("PRAGMA busy_timeout = 0")
            with contextlib.suppress(sqlite3.OperationalError):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self._db.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, kind: object, error: BaseException | None, trace: object) -> None:
        try:
            self.close()
        except sqlite3.DatabaseError:
            if error is None:
                raise
        if _disk_full(error):
            # Not damage: what this command wrote is rolled back (a new index is removed by
            # its add), so the index is as it was before it.
            raise IndexFileError(
                f"{self.path}: cannot write the index: its disk is full ({error}); nothing of "
                "this command was kept. Free some space, or put the index on another disk"
            ) from error
        if isinstance(error, sqlite3.DatabaseError | zlib.error):
            # A file that opened but is damaged inside (cut short, overwritten in part): said
            # as such, not as a traceback.
            raise IndexFileError(
                f"{self.path}: the index is damaged ({error}); it was left as it is. Make a new "
                "index from the same files (dedup index add NEW PATH...)"
            ) from error

    def transaction(self) -> _Transaction:
        self._wrote = True
        return _Transaction(self._db, self._bands)

    # The options the index was built with.
    def options(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'options'").fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def set_options(self, options: dict[str, Any]) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('options', ?)",
            (json.dumps(options, sort_keys=True),),
        )

    def files(self, source: str | None = None) -> list[StoredFile]:
        """The stored files (of ``source``), by path."""
        query = (
            "SELECT id, source, path, format, compression, size, mtime_ns, sha256, passages, "
            "characters FROM files"
        )
        rows = (
            self._db.execute(query + " ORDER BY path")
            if source is None
            else self._db.execute(query + " WHERE source = ? ORDER BY path", (source,))
        )
        return [StoredFile(*row) for row in rows]

    def content(self, file: int) -> bytes:
        (blob,) = self._db.execute("SELECT content FROM files WHERE id = ?", (file,)).fetchone()
        return zlib.decompress(blob)

    def repeated_lines(self, file: int) -> frozenset[int]:
        (blob,) = self._db.execute(
            "SELECT repeated_lines FROM files WHERE id = ?", (file,)
        ).fetchone()
        return frozenset(np.frombuffer(blob, dtype=np.int64).tolist())

    def remove(self, file: int) -> None:
        """A stored file and its band keys (inside a transaction)."""
        self._bands.write(self._db)
        (blob,) = self._db.execute("SELECT band_keys FROM files WHERE id = ?", (file,)).fetchone()
        keys = _keys_of(blob)
        self._db.executemany(
            "DELETE FROM bands WHERE band = ? AND key = ? AND file = ?",
            ((band, key, file) for band, key in _band_rows(keys)),
        )
        self._db.execute("DELETE FROM files WHERE id = ?", (file,))

    def add(self, new: NewFile) -> int:
        """A file and its band keys (inside a transaction); its id."""
        keys = np.ascontiguousarray(new.band_keys, dtype=np.int64)
        lines = np.array(sorted(new.repeated_lines), dtype=np.int64)
        cursor = self._db.execute(
            "INSERT INTO files (source, path, format, compression, size, mtime_ns, sha256, "
            "passages, characters, content, band_keys, repeated_lines) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                new.source,
                new.path,
                new.format,
                new.compression,
                new.size,
                new.mtime_ns,
                new.sha256,
                len(keys),
                new.characters,
                zlib.compress(new.content, CONTENT_LEVEL),
                zlib.compress(np.array(keys.shape, dtype=np.int64).tobytes() + keys.tobytes(), 1),
                lines.tobytes(),
            ),
        )
        file = cursor.lastrowid
        assert file is not None
        self._bands.add(keys, file)
        if self._bands.rows >= BAND_ROWS_AT_ONCE:
            self._bands.write(self._db)
        return file

    def files_sharing(self, band_keys: npt.NDArray[np.int64]) -> list[int]:
        """The ids of the stored files with a passage that shares a band with any of these
        (one row per passage, one column per band), sorted."""
        self._bands.write(self._db)
        keys = np.ascontiguousarray(band_keys, dtype=np.int64)
        found: set[int] = set()
        # A band's keys given as one JSON array, which SQLite reads in C: putting them in a
        # table of their own to join took several times as long (docs/performance.md).
        for band in range(keys.shape[1]):
            wanted = ",".join(map(str, np.unique(keys[:, band]).tolist()))
            found.update(
                file
                for (file,) in self._db.execute(
                    "SELECT DISTINCT file FROM bands WHERE band = ? AND key IN "
                    "(SELECT value FROM json_each(?))",
                    (band, f"[{wanted}]"),
                )
            )
        return sorted(found)

    def size_on_disk(self) -> int:
        return sum(
            path.stat().st_size for path in (self.path, Path(f"{self.path}-wal")) if path.exists()
        )


class _Transaction:
    """``with store.transaction():``: BEGIN IMMEDIATE (one writer at a time) ... COMMIT (the
    band rows still pending written first), or ROLLBACK on any error."""

    def __init__(self, db: sqlite3.Connection, bands: _PendingBands) -> None:
        self._db = db
        self._bands = bands

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self._bands.write(self._db)
            self._db.execute("COMMIT")
        else:
            self._bands.clear()
            # SQLite rolls some failures back itself (a full disk, say): rolling back again
            # would raise in place of the error that stopped it.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")


class _PendingBands:
    """The band rows of the files added since the last write, (band, key, file, passage)
    each, written in the table's order: the B-tree then grows in runs rather than being
    split all over."""

    def __init__(self) -> None:
        self._parts: list[npt.NDArray[np.int64]] = []
        self.rows = 0

    def add(self, keys: npt.NDArray[np.int64], file: int) -> None:
        passages, bands = np.indices(keys.shape)
        rows = np.column_stack(
            (bands.ravel(), keys.ravel(), np.full(keys.size, file), passages.ravel())
        )
        self._parts.append(rows.astype(np.int64, copy=False))
        self.rows += len(rows)

    def write(self, db: sqlite3.Connection) -> None:
        if not self._parts:
            return
        rows = np.concatenate(self._parts)
        self.clear()
        rows = rows[np.lexsort(rows.T[::-1])]
        # Column by column (one list each, zipped) rather than a list of lists, which takes
        # three times as long.
        db.executemany(
            "INSERT OR IGNORE INTO bands (band, key, file, passage) VALUES (?, ?, ?, ?)",
            zip(*(column.tolist() for column in rows.T), strict=True),
        )

    def clear(self) -> None:
        self._parts, self.rows = [], 0


def _disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` is SQLite's "database or disk is full"."""
    return (
        isinstance(error, sqlite3.Error)
        and getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    )


def _keys_of(blob: bytes) -> npt.NDArray[np.int64]:
    raw = np.frombuffer(zlib.decompress(blob), dtype=np.int64)
    rows, columns = raw[:2].tolist()
    return raw[2:].reshape(rows, columns)


def _passage_band_rows(keys: npt.NDArray[np.int64]) -> Iterator[tuple[int, int, int]]:
    for passage, row in enumerate(keys.tolist()):
        for band, key in enumerate(row):
            yield passage, band, key


def _band_rows(keys: npt.NDArray[np.int64]) -> Iterable[tuple[int, int]]:
    return ((band, key) for _passage, band, key in _passage_band_rows(keys))
