"""The persistent index against plain scans of the same data: add and query speed, size.

    python benchmarks/bench_index.py [--mb 100] [--query-mb 10] [--rounds 2] [--jobs 0]
        [--pages] [--shared ../shared]

Builds a mirror-site dump of about --mb MB (benchmarks/mirror_sites.py: five sites that each
vary the text; with --pages, each book in pages of 12 KB, a file a page) and holds one site
out: the first of its files, up to --query-mb MB, are the query (a new dump to check). In alternating rounds (compiled loops warmed first):

- ``scan`` of the stored sites vs ``index add`` of them into a new SQLite file (add / scan);
- ``index query`` of the query files vs a ``scan`` of the stored sites and them (the question
  a query answers, asked without an index);
- the index's size on disk against the input's text as UTF-8 (decoded), and per passage;
- the latency of querying one chapter against an index of every text in ../shared/corpora.

Each side's fastest round counts. Timings are printed, never asserted (docs/performance.md).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import dedup
from dedup import index
from dedup.config import ScanConfig
from dedup.read import discover_inputs
from dedup.read.decode import decode_bytes

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.mirror_sites import build_mirror_dump


def utf8_bytes(folders: list[Path]) -> int:
    files, _skipped = discover_inputs([str(folder) for folder in folders])
    return sum(len(decode_bytes(Path(f.fs_path).read_bytes()).text.encode()) for f in files)


def fastest(label: str, rounds: list[float]) -> float:
    best = min(rounds)
    print(f"  {label:<34} {best:8.2f} s   (rounds: {', '.join(f'{r:.2f}' for r in rounds)})")
    return best


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--query-mb", type=float, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--pages", action="store_true", help="each book in pages of 12 KB")
    parser.add_argument(
        "--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared"
    )
    arguments = parser.parse_args()
    config = ScanConfig(jobs=arguments.jobs)
    work = Path(tempfile.mkdtemp(prefix="dedup-bench-index-"))
    try:
        dump = work / "dump"
        build_mirror_dump(arguments.shared, arguments.mb * 1_000_000, dump, arguments.pages)
        sites = sorted(path for path in dump.iterdir() if path.is_dir())
        stored = sites[:-1]
        held_out = work / "query" / sites[-1].name
        held_out.mkdir(parents=True)
        query_bytes = 0
        for file in sorted(path for path in sites[-1].rglob("*") if path.is_file()):
            if query_bytes >= arguments.query_mb * 1e6:
                break
            copy = held_out / file.relative_to(sites[-1])
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(file, copy)
            query_bytes += file.stat().st_size
        stored_bytes = sum(f.stat().st_size for s in stored for f in s.rglob("*") if f.is_file())
        stored_files = sum(1 for s in stored for f in s.rglob("*") if f.is_file())
        print(
            f"dump: {len(sites)} sites, {stored_bytes / 1e6:.1f} MB stored in {stored_files:,} "
            f"files, {query_bytes / 1e6:.1f} MB queried ({held_out.name})"
        )
        # compile the loops once, outside the rounds
        warm = work / "warm.dedup"
        index.add(warm, [held_out], config)
        index.query(warm, [held_out], config)
        store = work / "index.dedup"
        scan_rounds, add_rounds, query_rounds, whole_rounds = [], [], [], []
        for _round in range(arguments.rounds):
            scan_rounds.append(timed(lambda: dedup.scan(stored, config)))
            store.unlink(missing_ok=True)
            Path(f"{store}-wal").unlink(missing_ok=True)
            add_rounds.append(timed(lambda: index.add(store, stored, config)))
            whole_rounds.append(timed(lambda: dedup.scan([*stored, held_out], config)))
            query_rounds.append(timed(lambda: index.query(store, [held_out], config)))
        print("seconds (fastest round of each):")
        scan = fastest("scan of the stored sites", scan_rounds)
        add = fastest("index add of them", add_rounds)
        whole = fastest("scan of the stored sites and query", whole_rounds)
        asked = fastest("index query of the query files", query_rounds)
        about = index.info(store)
        text = utf8_bytes(stored)
        print(
            f"add / scan: {add / scan:.2f} (target <= 1.30); "
            f"add {stored_bytes / 1e6 / add:.1f} MB/s, scan {stored_bytes / 1e6 / scan:.1f} MB/s"
        )
        print(
            f"query / scan of stored and query: {asked / whole:.2f} (target < 1); "
            f"query {query_bytes / 1e6 / asked:.1f} MB/s of queried input"
        )
        print(
            f"index: {about.size_on_disk / 1e6:.1f} MB on disk for {text / 1e6:.1f} MB of "
            f"UTF-8 text: {about.size_on_disk / text:.2f}x (target <= 1.5), "
            f"{about.size_on_disk / max(1, about.passages):.0f} bytes per passage "
            f"({about.passages:,} passages)"
        )
        corpora = work / "corpora.dedup"
        built = timed(lambda: index.add(corpora, [arguments.shared / "corpora"], config))
        book = (arguments.shared / "corpora/tennessine-corpus/红楼梦.txt").read_text("utf-8")
        chapter = work / "submission" / "chapter.txt"
        chapter.parent.mkdir()
        start = book.index("第五回")
        chapter.write_text(book[start : start + 8000], "utf-8")
        latencies = [timed(lambda: index.query(corpora, [chapter], config)) for _ in range(3)]
        corpus = index.info(corpora)
        print(
            f"one chapter (8,000 characters) against ../shared/corpora "
            f"({corpus.files} files, {corpus.bytes / 1e6:.1f} MB, built in {built:.1f} s): "
            f"{min(latencies):.2f} s"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
