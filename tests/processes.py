"""Processes as the tests watch them, from Linux's /proc: which a process started, and
whether one still runs."""

from __future__ import annotations

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
