"""What the driver (the process that runs the scan) keeps of each passage once the files are in.

    python benchmarks/bench_driver_memory.py DUMP [DUMP ...] [--engine dask] [--jobs 2] [--scratch]
        [--stop-at candidates|spans] [--rounds N] [--traced] [--near-peak] [--sparse-pools]

Scans each DUMP in a fresh process of its own up to the candidates stage and stops there: the
workers' results are merged by then, and every later stage holds more (pairs, then the
report's records), which grow with what is found rather than with the passages. With
``--stop-at spans`` it stops later, where the align stage's spans are mapped back (what the
align stage holds of each passage is still held there). Prints the
process's resident set size at that point (freed memory handed back first) and its peak so
far (the learn pass's and the main pass's, for ``candidates``), the peak of each phase
(discovery, the learn pass, the main pass, the join of its passages, the rest: the
kernel's high-water mark, reset as each ends) and its CPU and wall seconds (the driver's
CPU a file in the passes says how many workers it keeps busy; and the system's share of the
CPU), and the numpy
arrays it holds with at least half a byte a passage, by the record holding them. Given two
dumps of one kind (the mirror dumps of ``mirror_sites.py`` at 250 MB and 1 GB, say), it
prints the growth between them a passage: issue 21 asks that the driver's memory not grow
with the passages. ``--engine dask`` (the default) starts a ``dask scheduler`` and ``--jobs``
single-thread ``dask worker`` processes for each dump, as a cluster's driver sees them
(``dask-local`` runs the scheduler in the driver's process, whose records of the tasks
count there too). With ``--traced`` the driver runs under ``tracemalloc`` (slower, and its
own records add to the RSS): it prints what Python allocated in all at the stop and at the
peak so far, what was held at the end of the main pass and of the join of its passages and
each one's own peak (which says where the peak is), and between two dumps the growth a
file of each line of code that allocated what is still held (the largest first), which
says what each file costs and where, and of each phase's peak. ``--near-peak`` adds the
same by line near the peak (a snapshot taken each time what is held passes the last one's
by a megabyte), which says what the peak is made of, and at the end of the main pass; the
snapshots' own objects then add to the peaks printed.
At the stop it prints how many unreachable objects a collection frees (reference cycles the
scan made and kept to there), and what the two allocators under Python hold (pymalloc's
arenas, the objects in them and what is free in them but kept; the C library's heap in use
and free), which says how much of the RSS is no object at all: pools and pages kept by a few
objects made among many that are gone. ``--sparse-pools`` says which kinds of objects those are.
``--rounds N`` measures the dumps N times over, in turn, and prints the spread: the RSS of
one run wanders by a MiB or two.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_dask_stream import start_cluster, stop_cluster


def _resident_mib() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _peak_mib() -> float:
    """This process's peak resident set size so far (the kernel's high-water mark)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# Where the probe stops: the pipeline's call, and which of its arguments has a row a passage.
_STOPS = {"candidates": ("find_candidates", 3), "spans": ("original_spans", 2)}


def _traced_lines() -> dict[str, int]:
    """What ``tracemalloc`` sees allocated and still held now, by line of code."""
    root = str(Path(__file__).resolve().parents[1]) + os.sep
    lines: dict[str, int] = {}
    for stat in tracemalloc.take_snapshot().statistics("lineno"):
        frame = stat.traceback[0]
        name = frame.filename.removeprefix(root)
        if "site-packages" + os.sep in name:
            name = name.split("site-packages" + os.sep, 1)[1]
        lines[f"{name}:{frame.lineno}"] = stat.size
    return lines


class _NearThePeak(threading.Thread):
    """Under ``tracemalloc``, what was held by line of code when the most was held, as far
    as a look every few tenths of a second sees: a snapshot is taken each time what is held
    passes the largest snapshot's by a megabyte. Says what the peak is made of, which the
    held at the stop does not."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.lines: dict[str, int] = {}
        self.held = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            held, _peak = tracemalloc.get_traced_memory()
            if held > self.held + 2**20:
                self.lines, self.held = _traced_lines(), held


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (field, ctypes.c_size_t)
        for field in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def _allocators() -> dict[str, float]:
    """What the two allocators under Python hold now, in MiB: Python's own (pymalloc: its
    arenas of 1 MiB, the objects' blocks in them, and what is free in them but kept, since
    an arena goes back to the system only when all of it is free) and the C library's
    (glibc's ``mallinfo2``: its heap's bytes in use and free, and its large blocks, each
    mapped apart). Says how much of what the process holds is no object at all."""
    with tempfile.TemporaryFile(mode="w+") as stats:
        saved = os.dup(2)
        os.dup2(stats.fileno(), 2)  # _debugmallocstats writes to the C stderr
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        stats.seek(0)
        text = stats.read()

    def figure(label: str) -> float:
        match = re.search(re.escape(label) + r".*=\s*([\d,]+)", text)
        return int(match.group(1).replace(",", "")) / 2**20 if match else float("nan")

    found = {
        "pymalloc arenas": figure("# arenas allocated current") * 2**20,  # each 1 MiB
        "pymalloc in objects": figure("# bytes in allocated blocks"),
        "pymalloc free in arenas": figure("# bytes in available blocks")
        + figure(" unused pools * 16384 bytes"),
    }
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
        mallinfo2.restype = _MallInfo2
        info = mallinfo2()
    except (OSError, AttributeError):
        return found
    found["malloc heap in use"] = info.uordblks / 2**20
    found["malloc heap free"] = info.fordblks / 2**20
    found["malloc mapped apart"] = info.hblkhd / 2**20
    return found


def _sparse_pools() -> dict[str, float]:
    """Which kinds of objects keep Python's allocator's pools in use while nearly empty:
    each object the collector sees (and each it refers to, strings and numbers too) of at
    most 512 bytes (pymalloc's) is placed in its 16 KiB pool by its address; a pool less
    than a quarter full has its free bytes shared among the kinds of object in it, by their
    count. An object no collected one refers to is missed, so a pool looks emptier than it
    is; what it says is which kinds are spread thin among the pools."""
    seen: dict[int, Any] = {}
    for holder in gc.get_objects():
        seen[id(holder)] = holder
        for referred in gc.get_referents(holder):
            seen.setdefault(id(referred), referred)
    pools: dict[int, tuple[int, collections.Counter[str]]] = {}
    for address, value in seen.items():
        try:
            size = sys.getsizeof(value)
        except TypeError:
            continue
        if size > 512:
            continue
        used, kinds = pools.get(address >> 14, (0, collections.Counter()))
        kinds[type(value).__name__] += 1
        pools[address >> 14] = (used + size, kinds)
    wasted: collections.Counter[str] = collections.Counter()
    for used, kinds in pools.values():
        if used < 2**14 // 4:
            count = sum(kinds.values())
            for kind, many in kinds.items():
                wasted[kind] += (2**14 - used) * many / count
    return {kind: size / 2**20 for kind, size in wasted.most_common(15)}


def _traced(found: dict[str, Any]) -> None:
    """What ``tracemalloc`` saw allocated and still held, by line of code, into ``found``."""
    found["traced_lines"] = _traced_lines()
    held, peak = (size / 2**20 for size in tracemalloc.get_traced_memory())
    phases = found.setdefault("phases", {})
    phases["to the stop"] = (held, peak)
    found["traced_mib"] = held
    found["traced_peak_mib"] = max(peak for _held, peak in phases.values())


def _phase_ends(found: dict[str, Any], by_line: bool) -> None:
    """Under ``tracemalloc``, what was held at the end of the main pass and of the join of
    its passages (``Prepared.passages``), and the peak of each: the peak is reset as each
    ends, so the peak of each is its own. ``by_line``: and what the main pass held at its
    end by line of code."""
    from dedup.engine import gather

    phases: dict[str, tuple[float, float]] = found.setdefault("phases", {})
    joined = gather.Prepared.passages

    def passages(self: Any) -> Any:
        phases["main pass"] = _traced_now()
        if by_line:
            gc.collect()
            found["main_pass_lines"] = _traced_lines()
        tracemalloc.reset_peak()
        made = joined(self)
        phases["joining the passages"] = _traced_now()
        tracemalloc.reset_peak()
        return made

    gather.Prepared.passages = passages  # type: ignore[method-assign]


def _phase_peaks(found: dict[str, Any]) -> None:
    """The RSS peak of each phase (discovery, the learn pass, the main pass, the join of its
    passages, the rest to the stop), untraced: the kernel's high-water mark is read as each
    phase ends and then reset (``/proc/self/clear_refs``), so each figure is the phase's own.
    And each phase's CPU and wall seconds in this process: on a cluster, the driver's CPU a
    file in the passes says how many workers it can keep busy."""
    from dedup import pipeline
    from dedup.engine import gather

    peaks: dict[str, float] = found.setdefault("phase_peaks", {})
    # each phase's CPU seconds (this process's, all its threads), wall seconds and the
    # system's share of the CPU (reading back rows on disk the page cache no longer holds)
    times: dict[str, tuple[float, float, float]] = found.setdefault("phase_times", {})

    def clock() -> list[float]:
        spent = os.times()
        return [spent.user + spent.system, time.perf_counter(), spent.system]

    last = clock()

    def ended(phase: str) -> None:
        peaks[phase] = _peak_mib()
        now = clock()
        times[phase] = (now[0] - last[0], now[1] - last[1], now[2] - last[2])
        last[:] = now
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")

    def at_the_end(phase: str, function: Any) -> Any:
        def call(*arguments: Any, **options: Any) -> Any:
            made = function(*arguments, **options)
            ended(phase)
            return made

        return call

    pipeline.discover_inputs = at_the_end("discovery", pipeline.discover_inputs)
    gather.learned_lines = at_the_end("learn pass", gather.learned_lines)
    joined = gather.Prepared.passages

    def passages(self: Any) -> Any:
        ended("main pass")
        made = joined(self)
        ended("joining the passages")
        return made

    gather.Prepared.passages = passages  # type: ignore[method-assign]
    found["phase_ended"] = ended


def _traced_now() -> tuple[float, float]:
    held, peak = tracemalloc.get_traced_memory()
    return held / 2**20, peak / 2**20


def _files_in(dump: str) -> int:
    return sum(len(files) for _folder, _folders, files in os.walk(dump))


def _probe(
    dump: str,
    engine: str,
    jobs: int,
    scheduler: str | None,
    stop_at: str,
    traced: bool,
    near_peak: bool,
    sparse: bool = False,
    scratch: str | None = None,
) -> dict[str, Any]:
    """The scan of ``dump`` in this process, stopped at ``stop_at``."""
    import numpy as np

    import dedup
    from dedup import pipeline
    from dedup.engine.memory import release_freed_memory

    class _Stop(Exception):
        pass

    found: dict[str, Any] = {}

    call, counted = _STOPS[stop_at]

    def instead(*arguments: Any, **_options: Any) -> Any:
        found.pop("phase_ended")("to the stop")  # before this probe's own look at the arrays
        found["peak_mib"] = max(found["phase_peaks"].values())
        # what the scan left for the collector (the cycles it made and held to here)
        found["unreachable"] = gc.collect()
        if traced:
            _traced(found)
        release_freed_memory()
        found["passages"] = count = len(arguments[counted])
        found["resident_mib"] = _resident_mib()
        found["allocators"] = _allocators()
        held: dict[int, tuple[Any, str]] = {}
        for holder in gc.get_objects():
            for referred in gc.get_referents(holder):
                if isinstance(referred, np.ndarray) and referred.base is None:
                    held[id(referred)] = (referred, type(holder).__name__)
        found["arrays"] = sorted(
            (
                (array.nbytes / count, str(array.dtype), list(array.shape), holder)
                for array, holder in held.values()
                if array.nbytes >= count / 2
            ),
            reverse=True,
        )
        if sparse:
            found["sparse_pools"] = _sparse_pools()
        raise _Stop

    setattr(pipeline, call, instead)
    near_the_peak = _NearThePeak()
    if traced:
        _phase_ends(found, near_peak)
        tracemalloc.start(1)
    _phase_peaks(found)
    if near_peak:
        near_the_peak.start()
    try:
        if scheduler is None:
            dedup.scan([dump], engine=engine, jobs=jobs, scratch=scratch, show_progress=False)
        else:
            dedup.scan([dump], scheduler=scheduler, scratch=scratch, show_progress=False)
    except _Stop:
        if near_peak:
            near_the_peak.done.set()
            near_the_peak.join()
            found["peak_lines"] = near_the_peak.lines
            found["peak_seen_mib"] = near_the_peak.held / 2**20
        return found
    raise RuntimeError(f"the scan never reached {call}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps", nargs="+")
    parser.add_argument("--engine", default="dask", choices=("local", "dask-local", "dask"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--stop-at", default="candidates", choices=sorted(_STOPS))
    parser.add_argument(
        "--traced", action="store_true", help="what Python allocated, by line (tracemalloc)"
    )
    parser.add_argument(
        "--near-peak",
        action="store_true",
        help="with --traced: what is held by line near the peak (its snapshots add to it)",
    )
    parser.add_argument(
        "--sparse-pools",
        action="store_true",
        help="which kinds of objects hold Python's allocator's pools nearly empty",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="the dumps this many times over, in turn: RSS wanders a MiB or two between runs",
    )
    parser.add_argument(
        "--scratch",
        action="store_true",
        help="the workers keep their parts in a scratch folder (--scratch), not under Dask's "
        "keys (a temporary folder; dask-local uses its own either way)",
    )
    parser.add_argument("--scratch-folder", help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scheduler", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.probe:  # the child: one dump
        found = _probe(
            options.dumps[0],
            options.engine,
            options.jobs,
            options.scheduler,
            options.stop_at,
            options.traced or options.near_peak,
            options.near_peak,
            options.sparse_pools,
            options.scratch_folder,
        )
        print(json.dumps(found))
        return
    rounds: list[list[dict[str, Any]]] = []
    for number in range(options.rounds):
        if options.rounds > 1:
            print(f"round {number + 1} of {options.rounds}")
        rounds.append([_measured(dump, options) for dump in options.dumps])
        _print_growth(rounds[-1], options)
    if options.rounds > 1:
        _print_rounds(rounds)


def _measured(dump: str, options: argparse.Namespace) -> dict[str, Any]:
    """The probe of ``dump`` in a process of its own (and a cluster of its own), printed."""
    command = [sys.executable, __file__, dump, "--probe", "--engine", options.engine]
    command += ["--jobs", str(options.jobs), "--stop-at", options.stop_at]
    command += ["--traced"] if options.traced else []
    command += ["--near-peak"] if options.near_peak else []
    command += ["--sparse-pools"] if options.sparse_pools else []
    with tempfile.TemporaryDirectory() as folder:
        processes = []
        if options.engine == "dask":
            processes, address = start_cluster(Path(folder), options.jobs)
            command += ["--scheduler", address]
        if options.scratch and options.engine != "local":
            os.mkdir(os.path.join(folder, "scratch"))
            command += ["--scratch-folder", os.path.join(folder, "scratch")]
        try:
            done = subprocess.run(command, capture_output=True, text=True, check=True)
        finally:
            stop_cluster(processes)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["files"] = _files_in(dump)
    print(
        f"{dump}: {result['passages']:,} passages, RSS {result['resident_mib']:.0f} MiB "
        f"(the peak so far {result['peak_mib']:.0f} MiB)"
    )
    files = result["files"]
    print(
        "  each phase's CPU / wall seconds here (CPU a file; the system's share of the CPU): "
        + "; ".join(
            f"{phase} {cpu:.1f} / {wall:.1f} s ({cpu / max(files, 1) * 1e6:.0f} µs; "
            f"system {system / max(cpu, 1e-9):.0%})"
            for phase, (cpu, wall, system) in result["phase_times"].items()
        )
    )
    print(
        "  the RSS peak of each phase: "
        + "; ".join(f"{phase} {mib:.1f}" for phase, mib in result["phase_peaks"].items())
        + " MiB"
    )
    arrays = result["arrays"]
    for per_passage, dtype, shape, holder in arrays:
        print(f"  {per_passage:6.1f} B a passage  {dtype:7} {shape} in {holder}")
    of_passages = sum(a[0] for a in arrays if a[2][0] == result["passages"])
    print(f"  arrays of one row a passage: {of_passages:.0f} B a passage")
    print(f"  unreachable objects the collector frees at the stop: {result['unreachable']:,}")
    print(
        "  allocators: "
        + "; ".join(f"{name} {mib:.1f} MiB" for name, mib in result["allocators"].items())
    )
    if "sparse_pools" in result:
        print(
            "  pools less than a quarter full, their free bytes by kind of object in them: "
            + "; ".join(f"{kind} {mib:.2f}" for kind, mib in result["sparse_pools"].items())
            + " MiB"
        )
    if options.traced or options.near_peak:
        print(
            f"  traced: {result['traced_mib']:.1f} MiB held, "
            f"{result['traced_peak_mib']:.1f} MiB at the peak so far"
        )
        print(
            "  traced at the end of each phase, held / its peak: "
            + "; ".join(
                f"{phase} {held:.1f} / {peak:.1f} MiB"
                for phase, (held, peak) in result["phases"].items()
            )
        )
    return result


def _print_growth(results: list[dict[str, Any]], options: argparse.Namespace) -> None:
    for one, other in pairwise(results):
        more = other["passages"] - one["passages"]
        grown = (other["resident_mib"] - one["resident_mib"]) * 2**20 / more
        peak = (other["peak_mib"] - one["peak_mib"]) * 2**20 / more
        print(
            f"growth from {one['passages']:,} to {other['passages']:,} passages: "
            f"{grown:.0f} B a passage (the peak so far: {peak:.0f} B a passage)"
        )
        print(
            "  the growth of each phase's RSS peak a passage: "
            + "; ".join(
                f"{phase} {(mib - one['phase_peaks'][phase]) * 2**20 / more:.0f} B"
                for phase, mib in other["phase_peaks"].items()
            )
        )
        files = other["files"] - one["files"]
        if files > 0:
            print(
                f"growth from {one['files']:,} to {other['files']:,} files, a file: RSS "
                f"{(other['resident_mib'] - one['resident_mib']) * 2**20 / files:.1f} B, "
                + ", ".join(
                    f"{name} {(mib - one['allocators'][name]) * 2**20 / files:.1f} B"
                    for name, mib in other["allocators"].items()
                )
            )
        if options.traced or options.near_peak:
            _print_traced_growth(one, other)


def _print_rounds(rounds: list[list[dict[str, Any]]]) -> None:
    """Each dump's RSS and peak in every round, and the growth a file between the first dump
    and the last in each: the spread says how much of a change the wander hides."""
    for place, result in enumerate(rounds[0]):
        resident = ", ".join(f"{r[place]['resident_mib']:.1f}" for r in rounds)
        peaks = ", ".join(f"{r[place]['peak_mib']:.1f}" for r in rounds)
        print(f"{result['passages']:,} passages: RSS {resident} MiB; the peak so far {peaks} MiB")
        for phase in result["phase_peaks"]:
            phase_peaks = ", ".join(f"{r[place]['phase_peaks'][phase]:.1f}" for r in rounds)
            print(f"  the peak of {phase}: {phase_peaks} MiB")
    files = rounds[0][-1]["files"] - rounds[0][0]["files"]
    if files <= 0:
        return
    for key, name in (("resident_mib", "RSS"), ("peak_mib", "the peak so far")):
        grown = sorted((r[-1][key] - r[0][key]) * 2**20 / files for r in rounds)
        print(
            f"{name}: growth a file from the first dump to the last, by round: "
            + ", ".join(f"{g:.0f} B" for g in grown)
            + f" (median {statistics.median(grown):.0f} B)"
        )


def _print_lines_grown(before: dict[str, int], after: dict[str, int], files: int) -> None:
    grown = sorted(
        ((after.get(line, 0) - before.get(line, 0)) / files, line) for line in {*before, *after}
    )
    for per_file, line in reversed(grown[-12:]):
        print(f"  {per_file:7.1f} B a file  {line}")


def _print_traced_growth(one: dict[str, Any], other: dict[str, Any]) -> None:
    files = other["files"] - one["files"]
    if files <= 0:
        return
    held = (other["traced_mib"] - one["traced_mib"]) * 2**20 / files
    peak = (other["traced_peak_mib"] - one["traced_peak_mib"]) * 2**20 / files
    print(
        f"traced growth from {one['files']:,} to {other['files']:,} files: {held:.1f} B a file "
        f"held ({peak:.1f} B a file at the peak so far); by line:"
    )
    _print_lines_grown(one["traced_lines"], other["traced_lines"], files)
    print(
        "the growth a file of each phase's peak: "
        + "; ".join(
            f"{phase} {(peak - one['phases'][phase][1]) * 2**20 / files:.1f} B"
            for phase, (_held, peak) in other["phases"].items()
        )
    )
    if "peak_lines" in other:
        seen = (other["peak_seen_mib"] - one["peak_seen_mib"]) * 2**20 / files
        print(
            f"held near the peak ({one['peak_seen_mib']:.1f} and "
            f"{other['peak_seen_mib']:.1f} MiB seen): {seen:.1f} B a file more; by line:"
        )
        _print_lines_grown(one["peak_lines"], other["peak_lines"], files)
        print("held at the end of the main pass: by line:")
        _print_lines_grown(one["main_pass_lines"], other["main_pass_lines"], files)


if __name__ == "__main__":
    main()
