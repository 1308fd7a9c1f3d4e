"""One large JSON Lines file, prepared whole (one task) and in slices (a task each).

    python benchmarks/bench_slices.py MIRROR_DUMP [--rounds 3] [--jobs 2] [--engine dask-local]

Writes MIRROR_DUMP (a folder of sites, as benchmarks/mirror_sites.py makes) as one JSON
Lines file, a record a page with its site in a field (a crawl's dump), then times the
command line on it, ``dedup scan dump.jsonl --source-field site -o OUT -q``, in a fresh
process each run, with the file read whole and in slices, alternating rounds (the order
swapped each round). Prints each run (with the peak resident set of its largest process),
the medians and their ratio, and checks that both wrote the same report.json. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Runs the command line with the slice size given (a file larger than any: read whole).
_RUN = """
import sys
from dedup.read import slices
slices.SLICE_BYTES = int(sys.argv[1])
from dedup.cli import main
sys.argv = ["dedup", *sys.argv[2:]]
main()
"""


def write_jsonl(dump: Path, path: Path) -> int:
    """The pages of ``dump`` as records of one file; its size in bytes."""
    with open(path, "w", encoding="utf-8") as out:
        for page in sorted(dump.rglob("*.txt")):
            site = page.relative_to(dump).parts[0]
            text = page.read_text("utf-8", errors="replace")
            record = {"site": site, "title": page.stem, "text": text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path.stat().st_size


def run(slice_bytes: int, dump: Path, out: Path, jobs: int, engine: str) -> tuple[float, float]:
    """The run's seconds, and its peak resident set in GB (the largest of its processes)."""
    command = [sys.executable, "-c", _RUN, str(slice_bytes), "scan", str(dump)]
    command += ["--source-field", "site", "-o", str(out), "-q", "-j", str(jobs)]
    command += ["--engine", engine]
    started = time.perf_counter()
    process = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(REPO)})
    _pid, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"the scan failed: exit status {process.returncode}")
    return took, usage.ru_maxrss / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--engine", default="local", choices=["local", "dask-local"])
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from dedup.read.slices import SLICE_BYTES

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = folder / "dump.jsonl"
        size = write_jsonl(args.dump, path)
        print(
            f"{path.name}: {size / 1e6:,.0f} MB, slices of {SLICE_BYTES >> 20} MiB, "
            f"engine {args.engine}, {args.jobs} workers"
        )
        ways = {"whole": 1 << 62, "slices": SLICE_BYTES}
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        run(
            SLICE_BYTES, path, folder / "warm", args.jobs, args.engine
        )  # compiled kernels, page cache
        for number in range(args.rounds):
            order = list(ways) if number % 2 == 0 else list(reversed(ways))
            for way in order:
                took, peak = run(ways[way], path, folder / way, args.jobs, args.engine)
                seconds[way].append(took)
                print(
                    f"round {number + 1} {way:>6}: {took:6.1f} s ({size / 1e6 / took:.1f} MB/s), "
                    f"peak RSS {peak:.2f} GB"
                )
        same = (folder / "whole" / "report.json").read_bytes() == (
            folder / "slices" / "report.json"
        ).read_bytes()
        whole, sliced = (statistics.median(seconds[way]) for way in ways)
        print(f"median: whole {whole:.1f} s, slices {sliced:.1f} s: {whole / sliced:.2f}x")
        print(f"report.json byte-identical: {same}")


if __name__ == "__main__":
    main()
