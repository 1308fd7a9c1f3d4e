"""A scene carried by many sites with small differences: how verification scales.

    python benchmarks/bench_near_copies.py [--sites 40] [--chars 300000] [--shared ../shared]

Writes --sites copies of the first --chars characters of 红楼梦 (tennessine-corpus), each with
its own random typo every ~200 characters, one folder per site, and scans them. Exact copies are
linked without pairwise work, but near-copies are not: k copies of a passage make k(k-1)/2
candidate pairs, every one verified. Prints the pairs and the seconds of each stage.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dedup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--sites", type=int, default=40)
    parser.add_argument("--chars", type=int, default=300_000)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    args = parser.parse_args()
    source = args.shared / "corpora" / "tennessine-corpus" / "红楼梦.txt"
    text = source.read_text("utf-8")[: args.chars]
    alphabet = sorted(set(text))
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        for site in range(args.sites):
            copy = list(text)
            for _ in range(len(copy) // 200):
                copy[rng.randrange(len(copy))] = rng.choice(alphabet)
            folder = Path(tmp) / f"site-{site:02d}"
            folder.mkdir()
            (folder / "hlm.txt").write_text("".join(copy), "utf-8")
        started = time.perf_counter()
        report = dedup.scan([tmp])
        elapsed = time.perf_counter() - started
    summary = report.summary
    print(
        f"{args.sites} near-copies of {args.chars:,} characters: {summary.passages:,} passages, "
        f"{summary.candidate_pairs:,} candidate pairs, {summary.verified_pairs:,} verified, "
        f"{summary.clusters:,} clusters, {elapsed:.1f} s"
    )
    for stage, seconds in report.timings.items():
        print(f"  {stage:<12} {seconds:8.2f} s")
    pairs_per_second = summary.candidate_pairs / max(report.timings["verify"], 1e-9)
    print(f"verification: {pairs_per_second:,.0f} candidate pairs/s")


if __name__ == "__main__":
    main()
