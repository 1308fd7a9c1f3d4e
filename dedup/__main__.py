"""``python -m dedup`` and the ``dedup`` command.

SIGTERM and Ctrl-C are handed to dedup's own handler before the library is imported (which
takes a moment), so that either, at any time, ends dedup the same way: partial output removed,
status 130.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def main() -> None:
    # First a handler that needs nothing imported, which notes the signal: importing dedup's
    # own took 0.4 s on a loaded machine, and Python's default handler then printed a
    # traceback and ended the process by SIGINT, or raised inside importlib's callbacks,
    # where the interrupt was printed as "Exception ignored" and lost: the scan went on.
    signal.signal(signal.SIGTERM, _noted)
    signal.signal(signal.SIGINT, _noted)
    try:
        from dedup.engine.lifetime import interrupted

        signal.signal(signal.SIGTERM, interrupted)
        signal.signal(signal.SIGINT, interrupted)
        if _signals_noted:
            raise KeyboardInterrupt
        from dedup.cli import main as run
    except KeyboardInterrupt:
        print("dedup: interrupted", file=sys.stderr, flush=True)
        # Not sys.exit: an interrupt inside an import can leave CPython set to end the process
        # by SIGINT instead of with this status. Nothing has been started that needs cleaning.
        os._exit(130)
    run(prog_name="dedup")


_signals_noted: list[int] = []


def _noted(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C or SIGTERM before dedup's own handler is in place: raised once it is."""
    _signals_noted.append(signum)


if __name__ == "__main__":
    main()
