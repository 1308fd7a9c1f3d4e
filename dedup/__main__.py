"""``python -m dedup`` and the ``dedup`` command.

SIGTERM and Ctrl-C are handed to dedup's own handler before the library is imported (which
takes a moment), so that either, at any time, ends dedup the same way: partial output removed,
status 130.
"""

from __future__ import annotations

import os
import signal
import sys

from dedup.engine.lifetime import interrupted


def main() -> None:
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    try:
        from dedup.cli import main as run
    except KeyboardInterrupt:
        print("dedup: interrupted", file=sys.stderr, flush=True)
        # Not sys.exit: an interrupt inside an import can leave CPython set to end the process
        # by SIGINT instead of with this status. Nothing has been started that needs cleaning.
        os._exit(130)
    run(prog_name="dedup")


if __name__ == "__main__":
    main()
