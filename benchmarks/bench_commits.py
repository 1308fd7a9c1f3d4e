"""The scan at other commits against the working tree, on one dump, in alternating rounds.

    python benchmarks/bench_commits.py COMMIT [COMMIT ...] [--mb 100] [--dump DIR]
        [--rounds 8] [--jobs 2] [--shared ../shared]

Each COMMIT is checked out into a git worktree of its own (in a temporary folder, removed at
the end); the working tree as it is counts as ``work``. Each round runs ``dedup.scan(DUMP,
jobs=...)`` once per side, each in a fresh process started from a temporary folder with the
side's checkout first on ``PYTHONPATH``, so imports count and nothing is shared; a first run
of each side compiles its loops and is not counted (numba's cache is keyed by the sources).
The dump is --dump, or a mirror-site dump of --mb MB built from ../shared/corpora
(benchmarks/mirror_sites.py). Prints each side's wall seconds (median and fastest), its stage
seconds (medians), and the ratios to the first COMMIT. This is how issue 17's cost was
measured: ``python benchmarks/bench_commits.py 779cc53`` (before documents were aligned).
Timings are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.mirror_sites import build_mirror_dump

REPO = Path(__file__).resolve().parents[1]

_ONE_SCAN = """
import json, sys, time
started = time.perf_counter()
import dedup
report = dedup.scan([sys.argv[1]], jobs=int(sys.argv[2]))
print(json.dumps({"wall": time.perf_counter() - started, **report.timings,
                  "matches": len(getattr(report, "matches", ())),  # none before alignment
                  "clusters": len(report.clusters)}))
"""


def _scan(checkout: Path, dump: Path, jobs: int) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-c", _ONE_SCAN, str(dump), str(jobs)],
        check=True,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
        env={**os.environ, "PYTHONPATH": str(checkout)},
    ).stdout
    figures: dict[str, float] = json.loads(output.splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commits", nargs="+")
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dump = args.dump
        if dump is None:
            dump = root / "dump"
            build_mirror_dump(args.shared, int(args.mb * 1e6), dump)
        sides: dict[str, Path] = {}
        try:
            for commit in args.commits:
                place = root / f"at-{commit}"
                subprocess.run(
                    [
                        "git",
                        "-C",
                        str(REPO),
                        "worktree",
                        "add",
                        "-q",
                        "--detach",
                        str(place),
                        commit,
                    ],
                    check=True,
                )
                sides[commit] = place
            sides["work"] = REPO
            for checkout in sides.values():
                _scan(checkout, dump, args.jobs)  # compiles; not counted
            runs: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
            for _round in range(args.rounds):
                for side, checkout in sides.items():
                    runs[side].append(_scan(checkout, dump, args.jobs))
        finally:
            for place in sides.values():
                if place != REPO:
                    subprocess.run(
                        ["git", "-C", str(REPO), "worktree", "remove", "--force", str(place)],
                        check=False,
                    )
    _print(runs, args.rounds)


def _print(runs: dict[str, list[dict[str, float]]], rounds: int) -> None:
    first = next(iter(runs))
    base = statistics.median(run["wall"] for run in runs[first])
    base_fastest = min(run["wall"] for run in runs[first])
    print(f"{rounds} rounds, alternating; wall seconds with imports")
    print(
        f"{'side':<12} {'median':>8} {'fastest':>8} {'vs ' + first:>12}  matches  stages (medians)"
    )
    for side, results in runs.items():
        walls = [run["wall"] for run in results]
        median, fastest = statistics.median(walls), min(walls)
        stages = [key for key in results[0] if key not in ("wall", "total", "matches", "clusters")]
        shown = ", ".join(
            f"{stage} {statistics.median(run.get(stage, 0.0) for run in results):.2f}"
            for stage in stages
        )
        ratio = f"{median / base - 1:+.0%} ({fastest / base_fastest - 1:+.0%})"
        print(
            f"{side:<12} {median:8.2f} {fastest:8.2f} {ratio:>12}  "
            f"{int(results[0]['matches']):7,}  {shown}"
        )


if __name__ == "__main__":
    main()
