"""Build the loops dedup ships compiled (``dedup/kernels/built/``, see dedup.kernels.jit).

    python -m dedup.kernels.ship

Empties the folder, then, in a process of its own with an empty numba cache and
``DEDUP_SHIP_KERNELS=1`` (each loop compiled is then saved into the folder too), runs what
users run on ``corpus_samples/``: scans with one and two processes, a report rebuilt at
another threshold, cleaned copies by document and by passage, an index added to and
queried, and the align stage's warm-up (which runs the loops only a Dask cluster's workers
use, too). Run it from a checkout after any change to dedup's sources (the shipped entries
are keyed by a digest of them, and tests/test_kernels.py fails while they are stale), on an x86-64
machine that runs x86-64-v3 code: the loops are compiled for that level (numba's processor
chosen by ``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES``), not for the machine, so they serve
every such processor with the same numba.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dedup.kernels.jit import PORTABLE_CPU, PORTABLE_FEATURES, SHIPPED, shipped_fit

REPO = Path(__file__).resolve().parents[2]


def compile_all(samples: Path, scratch: Path) -> None:
    """What users run, each loop compiled on its way (in this process, and in the scan's
    forked processes)."""
    from dedup.cli import cli

    site, other = str(samples / "site-qidian"), str(samples / "site-tw")
    commands = [
        ["scan", str(samples), "-o", str(scratch / "one"), "-j", "1"],
        ["scan", str(samples), "-o", str(scratch / "two"), "-j", "2"],
        ["report", str(scratch / "two"), "--threshold", "0.6", "-o", str(scratch / "again")],
        ["clean", str(samples), "-o", str(scratch / "clean"), "-j", "1"],
        ["clean", str(samples), "-o", str(scratch / "strike"), "--by", "passage", "-j", "1"],
        ["index", "add", str(scratch / "index.dedup"), site, "-j", "1"],
        ["index", "query", str(scratch / "index.dedup"), other, "-o", str(scratch / "query")],
    ]
    for command in commands:
        cli.main([*command, "-q"], standalone_mode=False)
    # What a first run compiles ahead, loops only a Dask cluster's workers run among them.
    from dedup.config import ScanConfig
    from dedup.engine.local import warm_up_alignment

    warm_up_alignment(ScanConfig())


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--compile":
        compile_all(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    samples = REPO / "corpus_samples"
    if not samples.is_dir():
        raise SystemExit(f"no {samples}: build the shipped loops from a checkout of dedup")
    shutil.rmtree(SHIPPED, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        environment = {
            **os.environ,
            "DEDUP_SHIP_KERNELS": "1",
            "NUMBA_CACHE_DIR": str(Path(scratch) / "numba"),
            "NUMBA_CPU_NAME": PORTABLE_CPU,
            "NUMBA_CPU_FEATURES": PORTABLE_FEATURES,
        }
        environment.pop("DEDUP_IGNORE_SHIPPED_KERNELS", None)
        command = [sys.executable, "-m", "dedup.kernels.ship", "--compile", str(samples), scratch]
        subprocess.run(command, env=environment, check=True)
    indexes = list(SHIPPED.rglob("*.nbi"))
    size = sum(path.stat().st_size for path in SHIPPED.rglob("*") if path.is_file())
    print(f"{len(indexes)} loops shipped in {SHIPPED.relative_to(REPO)} ({size / 1e6:.1f} MB)")
    if not shipped_fit():
        raise SystemExit("the loops shipped do not serve this machine: build them on x86-64-v3")


if __name__ == "__main__":
    main()
