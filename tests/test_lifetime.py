"""dedup.engine.lifetime: an interrupt is never lost, even when it comes while the process
forks (a worker, the report's writer), where the logging module's fork hooks run, or while
the garbage collector runs an object's ``__del__``."""

from __future__ import annotations

import os
import subprocess
import sys

from dedup.engine.lifetime import caused_by_interrupt

# A fork hook registered before dedup's, as the logging module's is: a signal (SIGNAL) arrives
# while it runs; then the run does AFTER_FORK inside dedup's signal handling and AFTER_RUN
# once that has ended.
SCRIPT = """
import os, signal, time

def signalled_while_forking():
    os.kill(os.getpid(), signal.SIGNAL)
    time.sleep(0.01)

os.register_at_fork(after_in_parent=signalled_while_forking)
from dedup.engine.lifetime import terminate_as_interrupt

try:
    with terminate_as_interrupt():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
        AFTER_FORK
    AFTER_RUN
except KeyboardInterrupt:
    print("interrupted")
"""


def _run(signal_name: str, after_fork: str, after_run: str) -> subprocess.CompletedProcess[str]:
    script = SCRIPT.replace("SIGNAL", signal_name)
    script = script.replace("AFTER_FORK", after_fork).replace("AFTER_RUN", after_run)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, timeout=60
    )


def test_ctrl_c_while_forking_interrupts_the_run() -> None:
    """Without dedup's care the interrupt is raised inside the hook, printed as "Exception
    ignored", and the run goes on."""
    done = _run("SIGINT", "time.sleep(2)", 'print("went on")')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted"
    assert "Exception ignored" not in done.stderr


def test_an_interrupt_put_off_past_the_end_of_the_run_is_dropped() -> None:
    """SIGTERM while forking as the run's last step: the interrupt is put off a moment, and
    that moment comes after the run has ended. Left armed, its timer went off while Python
    was ending and the process died by SIGALRM (seen as exit status -14 in the stopped-scan
    test)."""
    report = (
        "time.sleep(0.2); "
        "print('done', signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), "
        "signal.getsignal(signal.SIGALRM) == signal.SIG_DFL)"
    )
    done = _run("SIGTERM", "pass", report)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["done", "True", "True"]  # no timer, SIGALRM's handler back


def test_ctrl_c_inside_a_finalizer_interrupts_the_run() -> None:
    """A Dask future's ``__del__`` wakes the client's event loop, some frames deep: an interrupt
    raised there was printed as "Exception ignored", and the scan went on to fail otherwise
    (its scheduler, in the same process group, had stopped), exit status 1, not 130."""
    script = """
import os, signal, time
from dedup.engine.lifetime import terminate_as_interrupt

def deep():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.01)

class Held:
    def __del__(self):
        deep()

try:
    with terminate_as_interrupt():
        Held()
        time.sleep(2)
        print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""
    _assert_interrupted(script)


def test_ctrl_c_while_numba_hands_back_a_tuple_interrupts_the_run() -> None:
    """A compiled function that returns a tuple calls numba's ``_numba_unpickle`` from C. An
    interrupt raised there came out of the call as a SystemError ("returned a result with an
    exception set"), and a stopped scan ended with status 1 instead of 130 (seen in CI)."""
    script = """
import os, signal, time
import numba, numpy as np
from numba.core import serialize
from dedup.engine.lifetime import terminate_as_interrupt

@numba.njit
def pair(size):
    return np.zeros(size), np.ones(size)

pair(1)

class Signalling(dict):
    def __getitem__(self, key):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)
        return super().__getitem__(key)

serialize._unpickled_memo = Signalling(serialize._unpickled_memo)
try:
    with terminate_as_interrupt():
        pair(1)
        time.sleep(2)
        print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""
    _assert_interrupted(script)


def _assert_interrupted(script: str) -> None:
    """``script`` ran to its ``except KeyboardInterrupt``, and nothing was printed as lost
    ("Exception ignored") or turned into another error."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted"
    assert "Exception ignored" not in done.stderr and "SystemError" not in done.stderr


def test_ctrl_c_while_the_command_loads_its_handler_ends_it_as_an_interrupt() -> None:
    """Ctrl-C as the ``dedup`` command starts, while importlib's module-lock callback runs
    (from C) as it loads dedup's own handler: Python's default handler raised it there,
    printed "Exception ignored", and the scan went on to write its report, exit status 0
    (seen in CI, the machine loaded)."""
    script = """
import importlib.abc, os, signal, sys, time, weakref

class Signalling(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "dedup.engine.lifetime":
            def callback(_reference):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.01)  # the handler runs here, inside the callback
            held = Held()
            reference = weakref.ref(held, callback)
            del held
        return None

class Held:
    pass

sys.meta_path.insert(0, Signalling())
sys.argv = ["dedup", "--version"]
from dedup.__main__ import main
main()
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=os.environ, timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip() == "dedup: interrupted" and done.stdout == ""


def test_an_error_that_came_of_an_interrupt_is_an_interrupt() -> None:
    """The command's last resort, should C code turn an interrupt into an error elsewhere."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError("returned a result with an exception set") from interrupt
    except SystemError as error:
        assert caused_by_interrupt(error)
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise OSError("while cleaning up") from None
    except OSError as error:
        assert not caused_by_interrupt(error)
    assert not caused_by_interrupt(ValueError("unrelated"))
