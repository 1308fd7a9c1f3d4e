"""Peak memory of a scan by stage: where a large dump's scan holds the most.

    python benchmarks/bench_stage_memory.py DUMP [OUT] [--jobs 2] [--engine local|dask]

Scans DUMP in this process (``dedup.scan``) while a thread samples this process's resident
set size every 0.1 s, each sample counted under the stage running then (the scan's own
timer names them; "reading the files" is the learn pass and the main pass, the workers'
results merged here as they come: the workers are other processes, not counted). With OUT, the report is then written there, in this
process alone. With ``--engine dask``, the scan runs on a ``dask scheduler`` and ``--jobs``
single-thread ``dask worker`` processes started for it, and this process is a cluster's
driver. Prints each stage's peak and the run's seconds. Run it under
``/usr/bin/time -v`` for the whole run's maximum. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dedup
from benchmarks.bench_dask_stream import start_cluster, stop_cluster
from dedup import timing
from dedup.report import write_report


def resident_gb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * 4096 / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--engine", default="local", choices=("local", "dask"))
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        scheduler = None
        if args.engine == "dask":
            folder = stack.enter_context(tempfile.TemporaryDirectory())
            processes, scheduler = start_cluster(Path(folder), args.jobs)
            stack.callback(stop_cluster, processes)
        _measured(args.dump, args.out, args.jobs, scheduler)


def _measured(dump: str, out: str | None, jobs: int, scheduler: str | None) -> None:

    current = ["starting"]
    peaks: dict[str, float] = {}
    timed = timing.StageTimer.__call__

    @contextlib.contextmanager
    def counted(self: timing.StageTimer, stage: str) -> Iterator[None]:
        current[0] = stage
        try:
            with timed(self, stage):
                yield
        finally:
            current[0] = "reading the files" if stage == "discover" else f"after {stage}"

    timing.StageTimer.__call__ = counted  # type: ignore[method-assign]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peaks[current[0]] = max(peaks.get(current[0], 0.0), resident_gb())
            time.sleep(0.1)

    threading.Thread(target=sample, daemon=True).start()
    started = time.perf_counter()
    report = dedup.scan([dump], jobs=jobs, scheduler=scheduler)
    scanned = time.perf_counter() - started
    current[0] = "the report's records held"
    time.sleep(0.3)
    if out:
        current[0] = "writing the report"
        write_report(report, out, two_processes=False)
    done.set()
    print(f"scan {scanned:.1f} s, {time.perf_counter() - started:.1f} s in all")
    for stage, peak in peaks.items():
        print(f"  {stage:<32} {peak:5.2f} GB")


if __name__ == "__main__":
    main()
