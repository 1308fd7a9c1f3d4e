"""Where a scan's time goes on the machine: each call of the pipeline, with the cores busy and
this process's memory meanwhile.

    python benchmarks/bench_timeline.py DUMP OUT [--jobs 2] [--every 0.1] [--engine dask-local]

Scans DUMP and writes its default report into OUT as `dedup scan DUMP -o OUT` does (the
library's ``scan_to``), while a thread samples every ``--every`` seconds how many of the
machine's cores are busy (/proc/stat: the workers' too, and anything else running) and this
process's resident set size. Each call ``dedup.pipeline`` makes (preparing the files, the
candidates, verification, each step of the alignment, the documents' texts, clustering,
writing the report) is timed, and printed with the busy cores' mean and this process's peak
while it ran, and the core-seconds left idle: where a stage runs on one core while the
other waits. Linux only. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_stage_memory import resident_gb
from dedup import pipeline
from dedup.config import ScanConfig

CALLS = (
    "prepare_all",
    "find_candidates",
    "minhash_estimates",
    "verify_candidates",
    "document_runs",
    "candidate_documents",
    "texts_to_align",
    "align_through_groups",
    "original_spans",
    "read_documents",
    "members_of",
    "cluster_pairs",
    "matches_of",
    "document_groups",
    "write_report",
)


def busy_and_total() -> tuple[int, int]:
    """The machine's busy and total clock ticks so far (user, nice, system, irq, softirq)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:]]
    return ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6], sum(ticks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump")
    parser.add_argument("out")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--every", type=float, default=0.1)
    parser.add_argument(
        "--engine", default="local", choices=("local", "dask-local"), help="where the scan runs"
    )
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    started = time.perf_counter()
    samples: list[tuple[float, float, float]] = []  # (seconds, busy cores, resident MiB)
    done = threading.Event()

    def sample() -> None:
        last = busy_and_total()
        while not done.wait(args.every):
            now = busy_and_total()
            busy = (now[0] - last[0]) / max(1, now[1] - last[1]) * cores
            samples.append((time.perf_counter() - started, busy, resident_gb() * 1e9 / 2**20))
            last = now

    calls: list[tuple[str, float, float]] = []

    def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*arguments: Any, **options: Any) -> Any:
            begun = time.perf_counter() - started
            try:
                return function(*arguments, **options)
            finally:
                calls.append((name, begun, time.perf_counter() - started))

        return call

    for name in CALLS:
        setattr(pipeline, name, timed(name, getattr(pipeline, name)))
    threading.Thread(target=sample, daemon=True).start()
    pipeline.scan_to(Path(args.out), [args.dump], ScanConfig(jobs=args.jobs, engine=args.engine))
    done.set()
    ended = time.perf_counter() - started

    print(f"{ended:.1f} s in all, {cores} cores; by call (busy: the mean of the cores busy)")
    print(
        f"  {'call':<22} {'from':>7} {'to':>7} {'seconds':>8} {'busy':>5} {'idle core-s':>11} {'peak MiB':>9}"
    )
    for name, begun, end in sorted(calls, key=lambda call: call[1]):
        within = [(busy, mib) for at, busy, mib in samples if begun <= at <= end]
        mean = sum(busy for busy, _mib in within) / len(within) if within else float("nan")
        idle = (cores - mean) * (end - begun) if within else float("nan")
        peak = max((mib for _busy, mib in within), default=float("nan"))
        print(
            f"  {name:<22} {begun:7.2f} {end:7.2f} {end - begun:8.2f} {mean:5.2f} "
            f"{idle:11.1f} {peak:9.0f}"
        )
    idle_all = sum((cores - busy) * args.every for _at, busy, _mib in samples)
    print(f"idle core-seconds in all: {idle_all:.1f} of {cores * ended:.1f}")


if __name__ == "__main__":
    main()
