"""dedup.engine.local: the local pool's workers end with the scan, and so does the process
that ran it, however the scan ended."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from itertools import repeat
from pathlib import Path

import pytest

from dedup.config import ScanConfig
from dedup.engine import local
from dedup.engine.batches import PassCalls, file_batches
from dedup.engine.local import LocalEngine
from dedup.read import FoundFile, discover_inputs
from dedup.read.slices import planned_slices

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


def test_a_pass_hands_its_batches_to_the_pool_as_earlier_ones_are_taken(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool holds a task's calls until its results come back: a pass handed over at
    once held a call a file (a file made for each, some 300-400 B) while it ran. Here
    one batch goes ahead of the one taken, so only its calls are made and held."""
    monkeypatch.setattr(local, "_BATCHES_AHEAD", 1)
    config = ScanConfig(jobs=2)
    found = discover_inputs([str(samples)])[0]  # each file made when it is asked for
    first = file_batches(PassCalls([found, repeat(config)]).file_bytes(), 2, local._BATCH_BYTES, 8)[
        0
    ]
    assert len(first) < len(found)

    def files_held() -> int:
        gc.collect()
        return sum(type(held) is FoundFile for held in gc.get_objects())

    gate = tmp_path / "go"
    with LocalEngine(config, len(found)) as engine:
        held = files_held()
        results = engine.map(_planned_once_opened, found, repeat(config), repeat(gate))
        # The batch's task waits for the gate: else its results could be back and its calls
        # let go of before they are counted.
        assert files_held() - held == len(first)
        gate.touch()
        assert list(results) == [planned_slices(file, config) for file in found]


def _planned_once_opened(file: FoundFile, config: ScanConfig, gate: Path) -> object:
    """``planned_slices`` of ``file`` once ``gate`` exists (at most half a minute on)."""
    for _ in range(3000):
        if gate.exists():
            break
        time.sleep(0.01)
    return planned_slices(file, config)


def test_a_file_handed_to_the_workers_leaves_its_path_as_it_was(
    samples: Path, tmp_path: Path
) -> None:
    """Pickling a string that is not all ASCII stores its UTF-8 in it for as long as it
    lives, and a caller may hold its found files for the whole scan (a list of them; a
    ``FoundFiles`` makes each one's path afresh): the workers get a copy, and the path held
    here stays its size."""
    folder = tmp_path / "起点"
    folder.mkdir()
    (folder / "第一章.txt").write_bytes((samples / "site-qidian/000.txt").read_bytes())
    found = list(discover_inputs([str(tmp_path)])[0])
    path = found[0].path
    assert not path.isascii()
    size = sys.getsizeof(path)
    config = ScanConfig(jobs=2)
    with LocalEngine(config, 2) as engine:
        planned = list(engine.map(planned_slices, found, repeat(config)))
        read_back = list(engine.in_any_order(planned_slices, found, repeat(config)))
    assert planned == [planned_slices(found[0], config)] and read_back == [(0, planned[0])]
    assert found[0].path is path and sys.getsizeof(path) == size


# Workers gone while tasks this process cancelled are still queued (a pass stopped early, then
# the scan stopped): the pool's manager thread tells each task the pool broke.
CANCELLED_SCRIPT = """
import os, signal, threading, time
from dedup.config import ScanConfig
from dedup.engine.local import LocalEngine

try:
    with LocalEngine(ScanConfig(jobs=2), 40) as engine:
        tasks = [engine.pool.submit(time.sleep, 5) for _ in range(40)]
        time.sleep(0.5)
        for task in tasks[10:]:
            task.cancel()
        for process in list(engine.pool._processes.values()):
            os.kill(process.pid, signal.SIGKILL)
        time.sleep(1)
        raise KeyboardInterrupt
except KeyboardInterrupt:
    print("interrupted")
thread = threading.Thread(target=lambda: 1 / 0)
thread.start()
thread.join()
"""


def test_a_stopped_pool_prints_no_traceback_for_the_tasks_it_had_cancelled() -> None:
    """Python 3.11's pool printed InvalidStateError's traceback after about one Ctrl-C in
    five; another thread's error is still printed."""
    done = subprocess.run(
        [sys.executable, "-c", CANCELLED_SCRIPT],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted"
    assert "InvalidStateError" not in done.stderr, done.stderr
    assert "ZeroDivisionError" in done.stderr  # printed as before
