"""Where a Dask scan's time goes, from the scheduler's task stream.

    python benchmarks/bench_dask_stream.py DUMP [--workers 2] [--warm] [--scratch]

Starts a ``dask scheduler`` and ``--workers`` fresh ``dask worker --nthreads 1`` processes (as
a user's cluster would be: the scheduler in a process of its own), scans DUMP through it, and
prints from ``Client.get_task_stream``: each task function's seconds computing and receiving
its inputs from other workers and when (from its first task's start to its last's end, in
seconds from the scan's start), each worker's busy share, and the stretches of a second or more
where no worker computed (the driver planning, or waiting on a transfer), and what moved
between the workers (bytes and seconds, by the task that made it). Needs the dask
extra. With ``--warm`` the workers scan DUMP once before the scan timed, so that they
have loaded dedup's loops (as a user's long-lived workers have): what is left is the scan's
own cost on a cluster, not the workers' start. With ``--scratch`` the workers keep their
parts in a scratch folder (a temporary one), whose largest size in the scan is printed. A dump to try: ``python benchmarks/mirror_sites.py /tmp/m250 --mb 250``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dedup
from dedup.engine.lifetime import die_with_parent

_UUID = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_IDLE_SECONDS = 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warm", action="store_true", help="scan once before the scan timed")
    parser.add_argument(
        "--scratch", action="store_true", help="the workers keep their parts in a scratch folder"
    )
    args = parser.parse_args()
    import distributed

    with tempfile.TemporaryDirectory() as folder:
        processes, address = start_cluster(Path(folder), args.workers)
        scratch = os.path.join(folder, "scratch") if args.scratch else None
        if scratch is not None:
            os.mkdir(scratch)
        try:
            with distributed.Client(address, set_as_default=False) as client:
                client.wait_for_workers(args.workers, timeout=60)
                if args.warm:
                    dedup.scan([args.dump], scheduler=client, scratch=scratch, show_progress=False)
                client.get_task_stream()  # the scheduler records the stream from now on
                client.run(_forget_transfers)
                sized = _FolderSize(scratch)
                started = time.time()
                report = dedup.scan(
                    [args.dump], scheduler=client, scratch=scratch, show_progress=False
                )
                seconds = time.time() - started
                sized.stop()
                stream = client.get_task_stream(start=started)
                transfers = client.run(_transfers)
        finally:
            stop_cluster(processes)
    print(f"scan {seconds:.1f} s on {report.engine}")
    if scratch is not None:
        print(f"the scratch folder at its largest: {sized.most / 1e6:,.1f} MB")
    print("stages:", ", ".join(f"{k} {v:.2f}" for k, v in report.timings.items()))
    _print_stream(stream, started, seconds)
    _print_transfers(transfers)


class _FolderSize(threading.Thread):
    """The largest size of the files under a folder, looked at twice a second."""

    def __init__(self, folder: str | None) -> None:
        super().__init__(daemon=True)
        self.folder, self.most, self.done = folder, 0, threading.Event()
        if folder is not None:
            self.start()

    def run(self) -> None:
        assert self.folder is not None
        while not self.done.wait(0.5):
            size = 0
            for root, _folders, files in os.walk(self.folder):
                for name in files:
                    with contextlib.suppress(OSError):
                        size += os.stat(os.path.join(root, name)).st_size
            self.most = max(self.most, size)

    def stop(self) -> None:
        self.done.set()
        if self.folder is not None:
            self.join()


def start_cluster(folder: Path, workers: int) -> tuple[list[subprocess.Popen[bytes]], str]:
    """A ``dask scheduler`` and ``workers`` single-thread workers, their logs in ``folder``:
    the processes and the scheduler's address."""
    scheduler_file = folder / "scheduler.json"
    log = open(folder / "cluster.log", "wb")  # noqa: SIM115  # open while they run
    python = [sys.executable, "-m"]
    # ended with this process, however it ends (a benchmark killed mid-run left them running)
    with_us = functools.partial(die_with_parent, os.getpid())
    scheduler = ["distributed.cli.dask_scheduler", "--port", "0", "--no-dashboard"]
    processes = [
        subprocess.Popen(
            [*python, *scheduler, "--scheduler-file", str(scheduler_file)],
            stdout=log,
            stderr=log,
            preexec_fn=with_us,
        )
    ]
    deadline = time.monotonic() + 60
    while not scheduler_file.exists() or not scheduler_file.read_text():
        if time.monotonic() > deadline:
            raise SystemExit(f"the scheduler did not start: {folder / 'cluster.log'}")
        time.sleep(0.1)
    address = json.loads(scheduler_file.read_text())["address"]
    processes += [
        subprocess.Popen(
            [*python, "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny"],
            stdout=log,
            stderr=log,
            preexec_fn=with_us,
        )
        for _ in range(workers)
    ]
    return processes, address


def stop_cluster(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a worker closing gracefully, still
            process.kill()
            process.wait()


def _forget_transfers(dask_worker: Any) -> None:
    dask_worker.transfer_incoming_log.clear()


def _transfers(dask_worker: Any) -> list[tuple[str, int, float]]:
    """What the worker received from the others: each key's task name, bytes (as Dask weighs
    them) and its share of the transfer's seconds."""
    moved = []
    for transfer in dask_worker.transfer_incoming_log:
        keys = transfer["keys"]
        for key, size in keys.items():
            name = _UUID.sub("", str(key if isinstance(key, str) else key[0]))
            moved.append((name, size, transfer["duration"] / len(keys)))
    return moved


def _print_transfers(transfers: dict[str, list[tuple[str, int, float]]]) -> None:
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for moved in transfers.values():
        for name, size, seconds in moved:
            totals[name][0] += size
            totals[name][1] += seconds
            totals[name][2] += 1
    print(f"\n{'moved between workers':<28}{'MB':>9}{'seconds':>9}{'keys':>7}")
    for name, (size, seconds, keys) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        if size >= 1e6:
            print(f"{name:<28}{size / 1e6:9.1f}{seconds:9.2f}{int(keys):7d}")


def _print_stream(stream: list[dict[str, Any]], started: float, seconds: float) -> None:
    totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0, seconds, 0.0])
    busy: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task in stream:
        name = _UUID.sub("", str(task["key"]))
        for piece in task["startstops"]:
            span = (piece["start"] - started, piece["stop"] - started)
            total = totals[(name, piece["action"])]
            total[0] += span[1] - span[0]
            total[1] += 1
            total[2], total[3] = min(total[2], span[0]), max(total[3], span[1])
            if piece["action"] == "compute":
                busy[task["worker"]].append(span)
    print(f"\n{'task function':<28}{'action':<12}{'seconds':>9}{'tasks':>8}    from - to")
    for (name, action), (spent, count, first, last) in sorted(
        totals.items(), key=lambda kv: kv[1][2]
    ):
        if spent >= 0.05:
            print(f"{name:<28}{action:<12}{spent:9.2f}{int(count):8d} {first:6.1f} - {last:4.1f} s")
    print()
    for number, (worker, spans) in enumerate(sorted(busy.items())):
        computing = sum(stop - start for start, stop in spans)
        print(f"worker {number} ({worker}): computing {computing:.1f} s, {computing / seconds:.0%}")
    spans = sorted(span for worker_spans in busy.values() for span in worker_spans)
    reached = 0.0
    print(f"\nstretches of {_IDLE_SECONDS:.0f} s or more with no worker computing:")
    for start, stop in spans:
        if start - reached >= _IDLE_SECONDS:
            print(f"  {reached:6.1f} - {start:6.1f} s")
        reached = max(reached, stop)
    if seconds - reached >= _IDLE_SECONDS:
        print(f"  {reached:6.1f} - {seconds:6.1f} s (the driver's last stages and the report)")


if __name__ == "__main__":
    main()
