"""Errors the library raises and the exit codes the CLI maps them to."""

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
