"""dedup.engine.lifetime: an interrupt is never lost, even when it comes while the process
forks (a worker, the report's writer), where the logging module's fork hooks run."""

from __future__ import annotations

import os
import subprocess
import sys

# A fork hook registered before dedup's, as the logging module's is: Ctrl-C arrives while it
# runs. Without dedup's care the interrupt is raised inside it, printed as "Exception
# ignored", and the run goes on.
SCRIPT = """
import os, signal, time

def ctrl_c_while_forking():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)

os.register_at_fork(after_in_parent=ctrl_c_while_forking)
from dedup.engine.lifetime import terminate_as_interrupt

try:
    with terminate_as_interrupt():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
        time.sleep(2)
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_while_forking_interrupts_the_run() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=os.environ, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted"
    assert "Exception ignored" not in done.stderr


# SIGTERM while forking, as the run's last step: the interrupt is put off a moment, and that
# moment comes after the run has ended.
AFTER_THE_RUN = """
import os, signal, time

def terminated_while_forking():
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.001)

os.register_at_fork(after_in_parent=terminated_while_forking)
from dedup.engine.lifetime import terminate_as_interrupt

try:
    with terminate_as_interrupt():
        child = os.fork()
        if child == 0:
            os._exit(0)
        os.waitpid(child, 0)
    time.sleep(0.2)
    alarm = signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
    print("done", signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0), alarm)
except KeyboardInterrupt:
    print("interrupted after the run")
"""


def test_an_interrupt_put_off_past_the_end_of_the_run_is_dropped() -> None:
    """Left armed, its timer went off while Python was ending and the process died by
    SIGALRM (seen as exit status -14 in the stopped-scan test)."""
    done = subprocess.run(
        [sys.executable, "-c", AFTER_THE_RUN],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["done", "True", "True"]  # no timer, SIGALRM's handler back
