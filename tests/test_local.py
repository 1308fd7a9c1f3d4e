"""dedup.engine.local: the local pool's workers end with the scan, and so does the process
that ran it, however the scan ended."""

from __future__ import annotations

import os
import subprocess
import sys

# A worker dies as one killed while it sends its result: half a message left in the result
# pipe. The scan stops with an error (the result never came); then the process must end.
SCRIPT = """
import gc, os, struct, time
from concurrent.futures import TimeoutError as Late
from multiprocessing.queues import SimpleQueue
from dedup.config import ScanConfig
from dedup.engine.local import LocalEngine

def half_a_result(_):
    results = next(o for o in gc.get_objects() if type(o) is SimpleQueue)
    os.write(results._writer.fileno(), struct.pack("!i", 1000) + b"x" * 10)
    os._exit(1)

try:
    with LocalEngine(ScanConfig(jobs=2), 2) as engine:
        result = engine.pool.submit(half_a_result, 0)
        reader = engine.pool._executor_manager_thread
        result.result(timeout=3)
except Late:
    pass
reader.join(timeout=20)
print("reader waiting:", reader.is_alive(), flush=True)
os._exit(0)  # not to wait here for a reader that waits for ever
"""


def test_a_worker_killed_while_it_sends_a_result_leaves_no_process_waiting() -> None:
    """The pool's reader thread waited for the rest of that message for ever, and Python
    waits for that thread as it ends: a library caller's process (a test run, once) never
    ended."""
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=os.environ, timeout=90
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "reader waiting: False"
