"""The README's pasted outputs, run again: ``python tests/readme_examples.py`` rewrites them
from a fresh run (and the pasted test count from the suite), and tests/test_readme.py fails
when one no longer matches what dedup prints.

Two kinds of example are checked. A code block that follows the comment
``<!-- output of: COMMAND -->`` holds what COMMAND prints (standard error, then standard
output), and a code block whose first line is ``$ COMMAND`` holds its output below that line.
Commands run in a scratch folder holding a copy of corpus_samples/, so paths read as they do
for a user in a checkout. What differs from run to run (seconds, the worker count) is
compared by its shape only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
_MARKER = re.compile(r"<!-- output of: (?P<command>.+?) -->\n+```\n(?P<output>.*?)```", re.S)
_DOLLAR = re.compile(r"```\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", re.S)
# Figures that differ between runs of the same command, replaced before outputs are compared.
_VARYING = [
    (
        re.compile(r"^time \d+\.\d+s on [^;]+; per stage, summed over workers:\n  .*$", re.M),
        "time (seconds per stage)",
    ),
]


@dataclass(frozen=True)
class Example:
    command: str
    shown: str  # as the README has it
    start: int  # where ``shown`` is in the README
    end: int


def examples(readme: str) -> list[Example]:
    found = [
        Example(m["command"], m["output"], m.start("output"), m.end("output"))
        for pattern in (_MARKER, _DOLLAR)
        for m in pattern.finditer(readme)
    ]
    return sorted(found, key=lambda example: example.start)


def shape(output: str) -> str:
    for pattern, replacement in _VARYING:
        output = pattern.sub(replacement, output)
    return output


def run(command: str, where: Path) -> str:
    """What ``command`` prints in ``where``, standard error first (as a terminal shows a scan:
    its skipped-input lines come before the summary)."""
    environment = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run(
        ["bash", "-c", command], cwd=where, capture_output=True, text=True, env=environment
    )
    return done.stderr + done.stdout


def scratch() -> tempfile.TemporaryDirectory[str]:
    folder = tempfile.TemporaryDirectory(prefix="dedup-readme-")
    shutil.copytree(REPO / "corpus_samples", Path(folder.name) / "corpus_samples")
    return folder


def collected() -> int:
    """How many tests the suite has (collected, not run)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"^(\d+) tests? collected", done.stdout, re.M)
    assert found is not None, done.stdout[-500:]
    return int(found.group(1))


def test_count(shown: str, total: int) -> str:
    """The pasted pytest line with ``total`` tests: the skips as pasted (they depend on the
    machine: CI, as root, skips one), the rest passed."""
    skipped = re.search(r"(\d+) skipped", shown)
    skips = int(skipped.group(1)) if skipped else 0
    return re.sub(r"\d+ passed", f"{total - skips} passed", shown, count=1)


def rewrite() -> None:
    text = README.read_text("utf-8")
    with scratch() as folder:
        for example in reversed(examples(text)):
            if example.command.startswith("pytest"):
                output = test_count(example.shown, collected())
            else:
                output = run(example.command, Path(folder))
            text = text[: example.start] + output + text[example.end :]
    README.write_text(text, "utf-8")


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--write"]):
        sys.exit("usage: python tests/readme_examples.py [--write]")
    rewrite()
