"""Child processes (scan workers, the forked report writer) end with the process that started
them, and the signals that stop a run (Ctrl-C, SIGTERM) stop it the same way.

A worker killed with its parent is the system's doing where it can be (Linux's parent-death
signal): a ``kill -9`` of dedup leaves no worker reading files or writing a report behind it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import signal
from collections.abc import Iterator
from typing import Any

_PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux, or no symbols to look in
        return None


def die_with_parent(parent: int) -> None:
    """In a child process: be killed when ``parent`` (the process that forked this one) ends,
    and leave stopping to it: Ctrl-C reaches the whole process group, and the parent, not
    each worker, decides what an interrupt means."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    prctl = _prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def interrupted(signum: int, frame: object) -> None:
    """A signal handler that stops the run as Ctrl-C does."""
    raise KeyboardInterrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM handled as Ctrl-C is (KeyboardInterrupt): partial output removed, workers
    stopped, exit status 130."""
    try:
        previous = signal.signal(signal.SIGTERM, interrupted)
    except ValueError:  # not the main thread: leave signals to whoever owns it
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
