"""End-to-end speed of `dedup scan` against a straightforward datasketch script, same passages.

    python benchmarks/bench_scan.py [--mb 10 [100 1000 ...]]
        [--dump mirror|pages|records|repeated] [--cli] [--jobs 0] [--shared ../shared]
    python benchmarks/bench_scan.py --engine dask-local --workers 1 2 [--mb 250 [1000]]

Builds a dump of about --mb MB from real text in ../shared/corpora: ``mirror`` (the default),
five mirror sites that each vary the text (benchmarks/mirror_sites.py: most passages near
copies), ``pages``, the same with each book in pages of 12 KB a file (as sites that page
their chapters are scraped: a hundred times as many files), ``records``, a JSON Lines file a
book of a record a page, or ``repeated``, the classics as found and a machine-converted copy
of part of them, repeated to reach the size (nearly every passage an exact copy). Prints the share of passages
that are exact copies after normalization. Scans it with dedup (with ``--cli``, also the
command line end to end, writing the default report, in a process of its own), then runs the baseline on the very passages dedup fingerprinted: one
datasketch.MinHash per passage, update_batch on the UTF-8 encoded shingles (default hash),
MinHashLSH insert then query. The scan and the script run --rounds times, alternating, and
each side's fastest round counts (the machine's speed wanders by a fifth within minutes).
Prints MB/s, passages/s, seconds per stage, peak RSS and the ratios.
With ``--engine dask-local``, the same dump is scanned instead by the local engine (``--jobs``
processes) and by a Dask cluster started for the scan with each of ``--workers`` single-thread
workers, each scan in a process of its own, in alternating rounds: MB/s (the cluster's start
included), the driver's peak RSS, the share of the time spent after the files are prepared
(candidates to the report's records; on Dask, candidates, verify and align run on the workers),
and the shuffle's share (the candidates stage: on Dask, the band keys shuffled by partition).
With several sizes, each is scanned in a process of its own (so each peak RSS is its own) and a
closing table shows how MB/s holds up as the dump grows. Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import opencc

import dedup
from dedup.candidates import lsh_params
from dedup.config import ScanConfig
from dedup.engine.tasks import prepare_file
from dedup.fingerprint import shingles
from dedup.read import discover_inputs
from dedup.read.decode import decode_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.mirror_sites import (
    build_mirror_dump,
    build_paged_mirror_dump,
    build_records_mirror_dump,
)

BOOKS = [
    "tennessine-corpus/红楼梦.txt",
    "tennessine-corpus/三国演义.txt",
    "tennessine-corpus/西游记.txt",
    "tennessine-corpus/水浒传.txt",
    "gutenberg/24264-0.txt",
    "gutenberg/23962-0.txt",
    "gutenberg/23950-0.txt",
    "hankinghu-literature-books/郁达夫大全集.txt",
    "hankinghu-literature-books/鲁迅全集.txt",
]


def build_dump(shared: Path, target_bytes: int, out: Path) -> int:
    converters = [opencc.OpenCC("s2tw"), opencc.OpenCC("t2s")]
    written = 0
    round_number = 0
    while written < target_bytes:
        for number, name in enumerate(BOOKS):
            text = decode_bytes((shared / "corpora" / name).read_bytes(), None, "replace").text
            variant = converters[number % 2].convert(text[: len(text) // 3])
            for site, content in ((f"site-{number}", text), (f"mirror-{number % 3}", variant)):
                path = out / f"{site}-{round_number}" / f"{Path(name).stem}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                data = content.encode("utf-8")
                path.write_bytes(data)
                written += len(data)
                if written >= target_bytes:
                    return written
        round_number += 1
    return written


# The dumps: the mirror sites (books a file each), the same in pages of 12 KB a file, or as
# JSON Lines of a record a page, and the same nine books repeated.
_BUILDERS = {
    "mirror": build_mirror_dump,
    "pages": build_paged_mirror_dump,
    "records": build_records_mirror_dump,
    "repeated": build_dump,
}


def baseline(texts: list[str], config: ScanConfig) -> float:
    from datasketch import MinHash, MinHashLSH

    started = time.perf_counter()
    bands, rows = lsh_params(config.threshold, config.num_perm)
    lsh = MinHashLSH(num_perm=config.num_perm, params=(bands, rows))
    sketches = []
    for index, text in enumerate(texts):
        sketch = MinHash(num_perm=config.num_perm, seed=config.seed)
        sketch.update_batch([shingle.encode("utf-8") for shingle in shingles(text, config.ngram)])
        lsh.insert(index, sketch)
        sketches.append(sketch)
    for sketch in sketches:
        lsh.query(sketch)
    return time.perf_counter() - started


def signature_stage(
    texts: list[str], config: ScanConfig, rounds: int = 5
) -> tuple[float, float | None]:
    """Seconds for dedup's signatures, and for rensa's RMinHash on the same shingles (shingle
    lists built beforehand, not timed), both in this one process. The rounds alternate the two
    so that both see the machine in the same state; returned: dedup's seconds in the round
    with the median ratio, and rensa's in that round."""
    from dedup.fingerprint import signatures

    def ours() -> None:
        signatures(texts, config.ngram, config.num_perm, config.seed)

    signatures(texts[:10], config.ngram, config.num_perm, config.seed)  # compiled before timing
    rensa_run = rensa_signatures(texts, config)
    if rensa_run is None:
        return min(_seconds(ours) for _ in range(rounds)), None
    timings = sorted(
        ((_seconds(rensa_run), _seconds(ours)) for _ in range(rounds)), key=lambda t: t[0] / t[1]
    )
    theirs, mine = timings[len(timings) // 2]
    return mine, theirs


def rensa_signatures(texts: list[str], config: ScanConfig) -> Callable[[], None] | None:
    """A run of rensa's RMinHash over the texts' shingles (the lists made here, not in the
    run), or None when rensa is not installed."""
    try:
        from rensa import RMinHash
    except ImportError:
        return None
    shingle_lists = [shingles(text, config.ngram) for text in texts]

    def run() -> None:
        for items in shingle_lists:
            sketch = RMinHash(num_perm=config.num_perm, seed=config.seed)
            sketch.update(items)
            sketch.digest()

    return run


def _sample(dump: Path, sample_mb: float, config: ScanConfig) -> tuple[list[str], int]:
    """dedup's normalized passages of the dump's first files, up to ``sample_mb``, and the
    bytes of those files."""
    files, _ = discover_inputs([str(dump)])
    texts: list[str] = []
    sampled = 0
    for file in files:
        if sampled > sample_mb * 1e6:
            break
        sampled += Path(file.fs_path).stat().st_size
        for item in prepare_file(file, config).inputs:
            texts += [text for text in item.normalized.texts() if text is not None]
    return texts, sampled


def _seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def _command_line(dump: Path, out: Path, jobs: int) -> float:
    """Seconds of ``dedup scan DUMP -o OUT -q`` in a process of its own (imports, the scan and
    the default report files: what a user waits for)."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "dedup", "scan", str(dump), "-o", str(out), "-q", "-j", str(jobs)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--mb", type=float, nargs="+", default=[10.0], help="dump sizes")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--no-baseline", action="store_true", help="skip the slow datasketch run")
    parser.add_argument(
        "--sample-mb",
        type=float,
        default=30.0,
        help="run the baselines on the passages of this much of the dump",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="scan and run the script this many times, alternating; each side's fastest counts",
    )
    parser.add_argument("--dump", choices=sorted(_BUILDERS), default="mirror")
    parser.add_argument(
        "--cli", action="store_true", help="also time the command line, report written"
    )
    parser.add_argument(
        "--engine", choices=["dask-local"], default=None, help="compare with the Dask engine"
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="Dask workers")
    parser.add_argument("--figures", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine is not None:
        for size in args.mb:
            compare_engines(args, size)
        return
    if len(args.mb) == 1:
        figures = run(args, args.mb[0], baselines=not args.no_baseline)
        if args.figures:
            print("figures:", json.dumps(figures))
        return
    # Several sizes: each in a process of its own, so that each peak RSS is its own; the
    # baselines run once, in the last (largest) run, on the same first --sample-mb of the dump.
    rows = []
    for number, size in enumerate(args.mb):
        last = number == len(args.mb) - 1
        command = [sys.executable, __file__, "--mb", str(size), "--jobs", str(args.jobs)]
        command += ["--shared", str(args.shared), "--sample-mb", str(args.sample_mb), "--figures"]
        command += ["--rounds", str(args.rounds), "--dump", args.dump]
        command += ["--cli"] if args.cli else []
        if args.no_baseline or not last:
            command.append("--no-baseline")
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        lines = output.splitlines()
        print("\n".join(line for line in lines if not line.startswith("figures:")) + "\n")
        rows.append(json.loads(lines[-1].removeprefix("figures:")))
    base = rows[-1].get("baseline_mb_s")
    print(
        "size     seconds   MB/s   passages/s  peak main RSS  MB/s vs first"
        + ("  vs datasketch" if base else "")
    )
    for row in rows:
        line = (
            f"{row['mb']:6.0f} MB {row['seconds']:7.1f} {row['mb_s']:6.2f} {row['passages_s']:11.0f}"
            f" {row['peak_main_mb']:10.0f} MB {row['mb_s'] / rows[0]['mb_s']:13.2f}"
        )
        print(line + (f" {row['mb_s'] / base:13.1f}x" if base else ""))


def run(args: argparse.Namespace, size_mb: float, baselines: bool) -> dict[str, float]:
    """Build a dump of ``size_mb``; scan it and run the script on a sample, in alternating
    rounds; print the figures of each side's fastest round."""
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp)
        builder = _BUILDERS[args.dump]
        size = builder(args.shared, int(size_mb * 1e6), dump)
        config = ScanConfig(jobs=args.jobs)
        # The baselines run on dedup's own normalized passages, up to --sample-mb of them,
        # made in a child process: made here, the OpenCC runs they go through would be
        # remembered here, and the scan's workers (forked from here) would start with them.
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(1, mp_context=context) as child:
            texts, sampled = child.submit(_sample, dump, args.sample_mb, config).result()
        scans: list[float] = []
        rounds: list[float] = []
        command_lines: list[float] = []
        for _round in range(args.rounds):
            if args.cli:
                command_lines.append(_command_line(dump, Path(tmp + "-report"), args.jobs))
            report = None
            gc.collect()
            started = time.perf_counter()
            report = dedup.scan([str(dump)], config)
            scans.append(time.perf_counter() - started)
            if baselines:
                # The scan's objects stay alive: keep the garbage collector from walking them
                # while the baselines allocate, which would slow the baselines for reasons of
                # this script, not of theirs.
                gc.collect()
                gc.freeze()
                rounds.append(baseline(texts, config))
                gc.unfreeze()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        children_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        gc.collect()
        gc.freeze()
        ours, rensa = signature_stage(texts, config)
        gc.unfreeze()
    assert report is not None
    # Each side's speed wanders with the machine's: each is timed --rounds times, alternating,
    # and the ratio is of the two fastest rounds.
    elapsed = min(scans)
    base = min(rounds) if rounds else None
    passages = report.summary.passages
    exact = report.summary.exact_copy_pairs / max(1, passages)
    print(
        f"dump ({args.dump}): {size / 1e6:.1f} MB, {report.summary.files} files, {passages} "
        f"passages, {exact:.0%} of them exact copies of another after normalization"
    )
    print(
        f"dedup: {elapsed:.2f} s = {size / 1e6 / elapsed:.2f} MB/s, {passages / elapsed:.0f} "
        f"passages/s, {report.summary.clusters} clusters, jobs={report.jobs} (fastest of "
        f"{', '.join(f'{seconds:.2f}' for seconds in scans)} s; stages of the last round)"
    )
    for stage, seconds in report.timings.items():
        print(f"  {stage:<12} {seconds:8.2f} s  {seconds / report.timings['total']:6.1%}")
    if command_lines:
        fastest = min(command_lines)
        print(
            f"command line end to end (dedup scan DUMP -o OUT -q, default report): "
            f"{', '.join(f'{seconds:.2f}' for seconds in command_lines)} s; fastest "
            f"{fastest:.2f} s = {size / 1e6 / fastest:.2f} MB/s"
        )
    print(f"  peak RSS: main {peak_mb:.0f} MB, largest child process {children_mb:.0f} MB")
    figures = {
        "mb": size / 1e6,
        "seconds": elapsed,
        "mb_s": size / 1e6 / elapsed,
        "passages_s": passages / elapsed,
        "peak_main_mb": peak_mb,
    }
    if base is not None:
        print(
            f"datasketch baseline (signatures + LSH only, on dedup's normalized passages of "
            f"{sampled / 1e6:.0f} MB): {', '.join(f'{r:.2f}' for r in rounds)} s; fastest "
            f"{base:.2f} s = {sampled / 1e6 / base:.2f} MB/s"
        )
        ratio = (size / elapsed) / (sampled / base)
        print(f"ratio dedup end-to-end vs baseline, fastest rounds (MB/s): {ratio:.1f}x")
        figures["baseline_mb_s"] = sampled / 1e6 / base
    print(f"signature stage, one process, {len(texts)} passages: dedup {ours:.2f} s", end="")
    if rensa is None:
        print(" (pip install rensa to compare with rensa's RMinHash)")
    else:
        print(f", rensa RMinHash {rensa:.2f} s: dedup is {rensa / ours:.2f}x rensa (median round)")
    return figures


# A scan in a process of its own: its wall time from before the import, its peak RSS (the
# driver's: Dask's workers are processes of their own) and its stages.
_ONE_SCAN = """
import hashlib, json, resource, sys, time
started = time.perf_counter()
import dedup
report = dedup.scan([sys.argv[1]], jobs=int(sys.argv[2]), engine=sys.argv[3])
seconds = time.perf_counter() - started
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

class Digest:  # report.json's sha256, written a piece at a time (a 1 GB dump's is 5 GB)
    def __init__(self): self.sha = hashlib.sha256()
    def write(self, text): self.sha.update(text.encode())
    def writelines(self, texts):
        for text in texts: self.write(text)

digest = Digest()
report.write_json(digest)
print(json.dumps({
    "seconds": seconds,
    "peak_mb": peak_mb,
    "timings": report.timings,
    "passages": report.summary.passages,
    "engine": report.engine,
    "digest": digest.sha.hexdigest(),
}))
"""

# The stages after the workers hand back their files (on a Dask cluster, candidates, verify
# and align hand their chunks to the workers; the candidates stage is the band keys' shuffle).
_LATER_STAGES = ("candidates", "verify", "align", "document texts", "cluster")


def compare_engines(args: argparse.Namespace, size_mb: float) -> None:
    """The local engine and the Dask engine with each of ``--workers`` workers on one dump,
    in alternating rounds; each side's fastest round counts."""
    runs = [("local", args.jobs or 2)] + [("dask-local", workers) for workers in args.workers]
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp)
        builder = _BUILDERS[args.dump]
        size = builder(args.shared, int(size_mb * 1e6), dump)
        results: dict[tuple[str, int], list[dict[str, object]]] = {run: [] for run in runs}
        for _round in range(args.rounds):
            for engine, workers in runs:
                output = subprocess.run(
                    [sys.executable, "-c", _ONE_SCAN, str(dump), str(workers), engine],
                    check=True,
                    capture_output=True,
                    text=True,
                    cwd=tempfile.gettempdir(),
                ).stdout
                results[(engine, workers)].append(json.loads(output.splitlines()[-1]))
    digests = {result["digest"] for rounds in results.values() for result in rounds}
    print(
        f"dump ({args.dump}): {size / 1e6:.1f} MB; {args.rounds} rounds, alternating; reports "
        + ("identical" if len(digests) == 1 else "DIFFERENT")
    )
    print(f"{'engine':<44} seconds   MB/s  vs local  driver peak RSS  later stages  shuffle")
    local_seconds = min(float(r["seconds"]) for r in results[runs[0]])  # type: ignore[arg-type]
    for run in runs:
        best = min(results[run], key=lambda result: float(result["seconds"]))  # type: ignore[arg-type]
        seconds = float(best["seconds"])  # type: ignore[arg-type]
        timings: dict[str, float] = best["timings"]  # type: ignore[assignment]
        later = sum(timings.get(stage, 0.0) for stage in _LATER_STAGES)
        print(
            f"{best['engine']!s:<44} {seconds:7.1f} {size / 1e6 / seconds:6.2f} "
            f"{local_seconds / seconds:8.2f}x {float(best['peak_mb']):11.0f} MB "  # type: ignore[arg-type]
            f"{later / timings['total']:12.0%} {timings.get('candidates', 0.0) / timings['total']:8.0%}"
        )


if __name__ == "__main__":
    main()
