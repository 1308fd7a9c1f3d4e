"""The folder a report goes into: complete, or visibly absent.

A report is written into a sibling folder named ``OUT.partial-PID`` (marked as dedup's while it
is written) and renamed to ``OUT`` once every file is in it; a report already at ``OUT`` is
replaced only then. An interrupt or an error removes the partial folder; a kill leaves it, named
as partial, beside the previous report, whole. While a report is prepared and written, ``OUT`` is
locked (``.OUT.dedup-lock`` beside it, removed afterwards), so a second dedup writing there fails at
once with a message rather than interleaving its files with the first one's.

The folder is checked before any work: ``OUT`` must be a new folder, an empty one or a report
dedup wrote (never a folder of the user's other files), and its parent writable.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import shutil
from pathlib import Path
from types import TracebackType

from dedup.display import shown
from dedup.engine.lifetime import runs_whole
from dedup.errors import ReportFolderError
from dedup.read.discover import LOCK_SUFFIX, WRITING_MARKER, is_report_folder

# Every name dedup writes into a report folder; a folder holding anything else is the user's.
REPORT_FILES = frozenset(
    {
        "report.json",
        "run.json",
        "index.html",
        "index_data",
        "matches.csv",
        "clusters.csv",
        "pairs.csv",
        "clusters.jsonl",
        WRITING_MARKER,
    }
)


class ReportFolder:
    """``with ReportFolder(out) as folder:`` checks and locks ``out``; files go into
    ``folder.path`` (the partial folder); ``folder.commit()`` puts them at ``out``."""

    def __init__(self, out: Path) -> None:
        # "." or "reports/.." name the folder by where it is: its partial sibling and lock go
        # beside it, under its own name.
        self.out = Path(os.path.abspath(out))
        if not self.out.name:
            raise ReportFolderError(
                f"--out {shown(str(out))} is the root of the file system; choose a folder for "
                "the report"
            )
        self.partial = self.out.with_name(f"{self.out.name}.partial-{os.getpid()}")
        self.lock_path = self.out.with_name(f".{self.out.name}{LOCK_SUFFIX}")
        self.given = Path(out)
        self._lock: int | None = None
        self.committed = False

    @property
    def path(self) -> Path:
        """Where the files are written until ``commit``."""
        return self.partial

    def __enter__(self) -> ReportFolder:
        self._check_out()
        self._acquire_lock()
        try:
            self._remove_stale_partials()
            try:
                self.partial.mkdir()
                (self.partial / WRITING_MARKER).touch()
            except OSError as error:
                raise self.cannot_write(self.partial, error) from error
        except BaseException:
            # an interrupt between making the folder and marking it would leave it unmarked,
            # which no later run removes (seen in CI: Ctrl-C a second into a scan)
            shutil.rmtree(self.partial, ignore_errors=True)
            self._release_lock()
            raise
        return self

    # An interrupt inside would leave the lock file, or the partial folder unremoved.
    @runs_whole
    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if not self.committed:
                shutil.rmtree(self.partial, ignore_errors=True)
        finally:
            self._release_lock()

    def commit(self) -> None:
        """Put the written report at ``out``, replacing the one there in one rename each."""
        old = self._put_in_place()
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    # Between the two renames OUT is absent: an interrupt there would leave the previous
    # report only as OUT.old-PID, which the next run removes.
    @runs_whole
    def _put_in_place(self) -> Path | None:
        """The partial folder renamed to ``out``; the previous report's new name, if any."""
        (self.partial / WRITING_MARKER).unlink()
        old = None
        if self.out.exists():
            old = self.out.with_name(f"{self.out.name}.old-{os.getpid()}")
            os.rename(self.out, old)
        os.rename(self.partial, self.out)
        self.committed = True
        return old

    def cannot_write(self, where: Path, error: OSError) -> ReportFolderError:
        reason = error.strerror or str(error)
        hint = (
            "free some space, or choose another --out"
            if error.errno in (errno.ENOSPC, errno.EDQUOT)
            else "choose another --out"
        )
        return ReportFolderError(
            f"cannot write {shown(where.as_posix())} ({reason}); {hint}. "
            f"Nothing was written to {shown(self.given.as_posix())}"
        )

    def _check_out(self) -> None:
        out = self.out
        shown_out = shown(self.given.as_posix())
        if out.exists() and not out.is_dir():
            raise ReportFolderError(
                f"--out {shown_out} is a file, not a folder; choose a folder for the report"
            )
        if out.is_dir():
            try:
                names = set(os.listdir(out))
            except OSError as error:
                raise self.cannot_write(out, error) from error
            if names and (not is_report_folder(out) or names - REPORT_FILES):
                others = ", ".join(sorted(shown(name) for name in names - REPORT_FILES)[:3])
                raise ReportFolderError(
                    f"--out {shown_out} holds files that are not a dedup report ({others}); "
                    "choose a new or empty folder: dedup replaces the whole folder"
                )
        parent = out.parent
        if not parent.is_dir():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise self.cannot_write(parent, error) from error

    # An interrupt between making the file and holding it would leave the file behind.
    @runs_whole
    def _acquire_lock(self) -> None:
        while True:
            try:
                handle = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                raise self.cannot_write(self.lock_path, error) from error
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(handle, 32).decode("ascii", "replace").strip() or "?"
                os.close(handle)
                raise ReportFolderError(
                    f"another dedup (process {holder}) is writing a report to "
                    f"{shown(self.given.as_posix())}; wait for it to finish, or choose another "
                    "--out"
                ) from None
            # The holder before us may have removed the file after we opened it: then our lock
            # is on a file nobody else will open, so take the one now at the path.
            try:
                same = os.path.samestat(os.fstat(handle), os.stat(self.lock_path))
            except FileNotFoundError:
                same = False
            if same:
                os.ftruncate(handle, 0)
                os.write(handle, f"{os.getpid()}\n".encode())
                self._lock = handle
                return
            os.close(handle)

    @runs_whole
    def _release_lock(self) -> None:
        if self._lock is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.lock_path)
        os.close(self._lock)
        self._lock = None

    def _remove_stale_partials(self) -> None:
        """Partial folders of this ``out`` left by killed runs (none can be alive: we hold the
        lock)."""
        for stale in self.out.parent.glob(f"{glob.escape(self.out.name)}.partial-*"):
            if (stale / WRITING_MARKER).exists():
                shutil.rmtree(stale, ignore_errors=True)
        for stale in self.out.parent.glob(f"{glob.escape(self.out.name)}.old-*"):
            if is_report_folder(stale) or not any(stale.iterdir()):
                shutil.rmtree(stale, ignore_errors=True)
