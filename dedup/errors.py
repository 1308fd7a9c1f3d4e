"""The errors dedup raises, one tree under DedupError, and the exit codes the CLI maps them to.

- ``DedupError``: a problem the user can fix; the message says how (exit 1).
  - ``ConfigError``: an option value that cannot work, found before any work (exit 2).
  - ``InputPathError``: a path given to read does not exist or cannot be used.
  - ``ReportFolderError``: the report cannot be written where asked.
  - ``IndexFileError``: an index file that cannot be opened, made or used.
  - ``ScratchSpaceError``: the scan's temporary tables cannot be written (a full disk).
  - ``EngineError``: the engine cannot run the scan's tasks (a Dask scheduler out of reach,
    a file a worker cannot see, the dask extra not installed).
  - ``ReadError``: one input cannot be read. A scan never stops for it: the input is listed
    as skipped with the message as its reason. Its kinds say which reader gave up.
"""

from enum import IntEnum


class ExitStatus(IntEnum):
    SUCCESS = 0
    ERROR = 1
    USAGE = 2  # click's own convention for bad options
    INPUT_SKIPPED = 3  # --strict: the report was written, but some input was skipped
    INTERRUPTED = 130


class DedupError(Exception):
    """A problem the user can fix; the message says how."""


class ConfigError(DedupError):
    """An option value that cannot work."""


class InputPathError(DedupError):
    """A path given on the command line does not exist or cannot be listed."""


class ReportFolderError(DedupError):
    """The report cannot be written where the user asked; the message says what to do."""


class IndexFileError(DedupError):
    """An index file that cannot be opened, made or used with these options."""


class ScratchSpaceError(DedupError):
    """What the scan keeps on disk cannot be written: the temporary file of its tables of its
    files (TMPDIR), or a part in a Dask cluster's scratch folder (--scratch)."""


class EngineError(DedupError):
    """The engine cannot run the scan's tasks where it was asked to; the message says why."""


class ReadError(DedupError):
    """One input cannot be read (or read on, for a stream); the message is its skip reason."""


class DecodeFailure(ReadError):
    """The bytes are not text in any encoding we can trust."""


class InputTooLarge(ReadError):
    """An input grew past its size cap once decompressed."""


class NotRecords(ReadError):
    """A JSON file that holds no records."""


class NotAnEpub(ReadError):
    """A .epub that is not a readable EPUB."""


class TableError(ReadError):
    """A CSV or Parquet table that cannot be read."""
