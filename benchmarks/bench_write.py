"""How long each file of a report takes to write, in one process; and the whole default report.

    python benchmarks/bench_write.py REPORT_FOLDER [--rounds 3] [--formats html,json,report]

The default report's two writers: the page (index.html and its parts) and report.json, each
in this process; and ``report``, the default report written as ``dedup scan`` writes it
(``write_report`` with two processes: the page by a forked copy, the rest by whichever is free).

Reads the report a scan wrote (``dedup scan DUMP -o REPORT_FOLDER``: report.json, its
members' texts read back from the inputs, which must still be where the scan found them),
then writes each asked-for output into a scratch folder ``--rounds`` times, in turn, and
prints each one's seconds (every round, then the fastest). The lookup tables and the page's
search folding are made first, as a scan has made them before its report is written. To
compare two versions, run it with each checkout on ``PYTHONPATH`` (this script imports the
dedup it finds, the installed one otherwise), alternating.

``dedup scan`` writes the page in a forked copy while this process writes report.json; the
tables, report.json's other lists and the page's parts of clusters fall to whichever of the two
is free (docs/performance.md).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from dedup.models import Report
from dedup.normalize import prepare_tables
from dedup.report import write_report
from dedup.report.html import search_folding, write_html
from dedup.report.record import load_report


def _json(report: Report, folder: Path) -> None:
    with open(folder / "report.json", "w", encoding="utf-8") as handle:
        report.write_json(handle)


def _whole(report: Report, folder: Path) -> None:
    write_report(report, folder / "report", two_processes=True)


WRITERS: dict[str, Callable[[Report, Path], object]] = {
    "html": write_html,
    "json": _json,
    "report": _whole,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--formats", default="html,json", help=f"of {', '.join(WRITERS)}")
    options = parser.parse_args()
    formats = [name for name in options.formats.split(",") if name]
    unknown = sorted(set(formats) - set(WRITERS))
    if unknown:
        parser.error(f"unknown formats {unknown}: choose among {', '.join(WRITERS)}")
    started = time.perf_counter()
    report = load_report(options.folder / "report.json")
    print(f"read {options.folder / 'report.json'} in {time.perf_counter() - started:.2f} s")
    prepare_tables()
    search_folding(str(report.options["script"]))
    seconds: dict[str, list[float]] = {name: [] for name in formats}
    with tempfile.TemporaryDirectory() as scratch:
        for _round in range(options.rounds):
            for name in formats:
                folder = Path(scratch) / f"{name}-{_round}"
                folder.mkdir()
                started = time.perf_counter()
                WRITERS[name](report, folder)
                seconds[name].append(time.perf_counter() - started)
    for name, taken in seconds.items():
        rounds = " / ".join(f"{value:.2f}" for value in taken)
        print(f"{name:6s} {rounds} s, fastest {min(taken):.2f} s")


if __name__ == "__main__":
    main()
