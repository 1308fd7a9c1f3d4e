"""Processes as the tests watch them, from Linux's /proc: which a process started, whether
one still runs, and what it has loaded."""

from __future__ import annotations

import time
from pathlib import Path


def children(pid: int) -> set[int]:
    """The processes ``pid`` started (its threads' children)."""
    try:
        found = set()
        for task in Path(f"/proc/{pid}/task").iterdir():
            found |= {int(child) for child in (task / "children").read_text().split()}
        return found
    except (FileNotFoundError, ProcessLookupError):
        return set()


def descendants(pid: int) -> set[int]:
    """Every process below ``pid``."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        below = children(todo.pop()) - found
        found |= below
        todo += list(below)
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def wait_until_loaded(pid: int, library: str, timeout: float = 60.0) -> None:
    """Wait until process ``pid`` has mapped a shared library whose path holds ``library``
    (as numba's compiler, llvmlite's): a moment of its run that does not depend on how
    loaded the machine is."""
    deadline = time.monotonic() + timeout
    maps = Path(f"/proc/{pid}/maps")
    while library not in maps.read_text():
        if time.monotonic() > deadline or not alive(pid):
            raise AssertionError(f"process {pid} did not load {library}")
        time.sleep(0.005)
