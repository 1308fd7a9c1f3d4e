"""``python -m dedup`` and the ``dedup`` command.

SIGTERM is made an interrupt before the library is imported (which takes a moment), so that a
``kill`` at any time ends dedup as Ctrl-C does: partial output removed, status 130.
"""

from __future__ import annotations

import os
import signal
import sys

from dedup.engine.lifetime import interrupted


def main() -> None:
    signal.signal(signal.SIGTERM, interrupted)
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
