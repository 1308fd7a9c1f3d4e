"""Child processes (scan workers, the forked report writer) end with the process that started
them, and the signals that stop a run (Ctrl-C, SIGTERM) stop it the same way.

A worker killed with its parent is the system's doing where it can be (Linux's parent-death
signal): a ``kill -9`` of dedup leaves no worker reading files or writing a report behind it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging  # noqa: F401 - its fork hooks registered before ours (see _forking)
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import CodeType, FrameType
from typing import Any, TypeVar

_PR_SET_PDEATHSIG = 1


@functools.cache
def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux, or no symbols to look in
        return None


def can_fork() -> bool:
    """Whether copies of this process can be forked here (a dask-local worker, the report's
    second writer): Linux's fork, whose parent-death signal ends them with this process."""
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()


def is_running(pid: int) -> bool:
    """Whether process ``pid`` runs on this machine (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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


def interrupted(signum: int, frame: FrameType | None) -> None:
    """A signal handler that stops the run as Ctrl-C does. Python runs a handler in whatever
    Python code is running, and an exception raised in a callback that C code called (numba's
    compiler handing llvmlite its object code, importlib's module-lock cleanup, an object's
    ``__del__``) is printed as "Exception ignored" and lost: the run would go on. There the
    interrupt is raised again a moment later instead, once that callback has returned; and so
    it is while this process forks (a worker, the report's writer), whose fork hooks (the
    logging module's) are such callbacks too.

    Nor is it raised while numba compiles (its compiler lock held by this thread): raised
    between the lock's acquire and the ``with`` block it guards, the interrupt left the lock
    held for ever, and the next thread to compile (the alignment's) waited on it for ever;
    it is raised once the loop is compiled, a few seconds at most. And so it is while a
    function marked ``runs_whole`` runs."""
    if frame is not None and (
        _in_a_callback_from_c(frame)
        or _compiling()
        or _forking
        or frame.f_code in _FORK_HOOKS
        or _in_a_whole_run(frame)
    ):
        signal.signal(signal.SIGALRM, interrupted)
        signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
        return
    raise KeyboardInterrupt


_RETRY_SECONDS = 0.01
# Python functions that C code calls back, where an exception cannot propagate.
_CALLBACK_FILES = ("llvmlite", "<frozen importlib._bootstrap>", "weakref")


Function = TypeVar("Function", bound=Callable[..., Any])
_RUN_WHOLE: set[CodeType] = set()


def runs_whole(function: Function) -> Function:
    """Mark ``function`` as steps that must run all or none, such as making a lock file and
    holding it, or letting it go and removing the file (an interrupt between the two left a
    stale lock file, seen in CI). An interrupt that comes while it runs, from its first
    instruction (where Python checks for signals first) to its last, is raised a moment
    after it returns. For a few quick steps: Ctrl-C waits for them."""
    _RUN_WHOLE.add(function.__code__)
    return function


def _in_a_whole_run(frame: FrameType) -> bool:
    caller: FrameType | None = frame
    while caller is not None:
        if caller.f_code in _RUN_WHOLE:
            return True
        caller = caller.f_back
    return False


# Whether this process is forking: set before the fork hooks registered earlier run (they
# run in the reverse order), cleared after theirs have (in the order registered).
_forking = False


def _fork_starts() -> None:
    global _forking
    _forking = True


def _fork_ends() -> None:
    global _forking
    _forking = False


# An interrupt can come inside these two as well, before or after the flag is changed.
_FORK_HOOKS = (_fork_starts.__code__, _fork_ends.__code__)
os.register_at_fork(before=_fork_starts, after_in_parent=_fork_ends, after_in_child=_fork_ends)


def _compiling() -> bool:
    """Whether this thread holds numba's compiler lock (numba is not imported for this)."""
    module = sys.modules.get("numba.core.compiler_lock")
    return module is not None and bool(module.global_compiler_lock.is_locked())


def _in_a_callback_from_c(frame: FrameType) -> bool:
    """Whether ``frame`` is in a callback from C, or anywhere under a finalizer (``__del__``)
    that the garbage collector runs: what one raises is printed and ignored (a Dask future's
    ``__del__`` tells the client's event loop it is released, deep inside asyncio); or under
    numba's ``_numba_unpickle``, which a compiled function calls as it hands back a tuple:
    raised there, the interrupt came out of the call as a SystemError, and the scan ended
    with status 1 instead of 130."""
    filename = frame.f_code.co_filename
    if any(part in filename for part in _CALLBACK_FILES):
        return True
    caller: FrameType | None = frame
    while caller is not None:
        if caller.f_code.co_name in _CALLED_FROM_C:
            return True
        caller = caller.f_back
    return False


_CALLED_FROM_C = ("__del__", "_numba_unpickle")


def caused_by_interrupt(error: BaseException) -> bool:
    """Whether ``error`` came of an interrupt: one raised where C code turned it into another
    error (a SystemError "returned a result with an exception set") is still an interrupt."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        # as Python's traceback follows it: "raise ... from None" ends the chain
        cause = cause.__cause__ or (None if cause.__suppress_context__ else cause.__context__)
    return False


_STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Ctrl-C and SIGTERM both stop the run by ``interrupted`` (a KeyboardInterrupt, raised
    where it can propagate): partial output removed, workers stopped, exit status 130.
    Python's own Ctrl-C handler raises inside numba's compiler callbacks too, where the
    interrupt is lost and the compilation left broken."""
    try:
        previous = [signal.signal(signum, interrupted) for signum in _STOPPING]
    except ValueError:  # not the main thread: leave signals to whoever owns it
        yield
        return
    alarm = signal.getsignal(signal.SIGALRM)
    try:
        yield
    finally:
        # An interrupt put off a moment (see interrupted) whose moment comes after the run
        # has ended is dropped: the run's work is done. Left armed, its timer went off while
        # Python was ending, its handlers gone, and the system's default ended the process by
        # SIGALRM.
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, alarm)
        for signum, handler in zip(_STOPPING, previous, strict=True):
            signal.signal(signum, handler)
