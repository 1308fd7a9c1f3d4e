"""Each worker stage on its own, in one process, in CPU seconds (best of --repeat runs).

    python benchmarks/bench_stages.py [--shared ../shared] [--repeat 3]

Wall-clock time on a shared virtual machine wanders by a third from run to run; CPU time of one
process much less, so this is the script to compare two versions of a stage with. On real text
from ../shared/corpora (红楼梦 in Simplified, and its Traditional Project Gutenberg edition), per
chapter as a scan does it, it prints characters per second for:

- script conversion: dedup.normalize.opencc.convert against OpenCC converting the whole text (the result
  is checked to be identical);
- normalize (all steps): a chapter at a time, and chapters together as a scan does
  (``normalize_many`` in batches of ``normalize.BATCH_CHARS``); segment (passage windows) on
  the normalized chapters;
- signatures: dedup's compiled loop against rensa's RMinHash on prebuilt shingle lists and
  datasketch's MinHash.update_batch (the datasketch run on the first 2,000 passages only).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import opencc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.bench_scan import rensa_signatures
from dedup.config import ScanConfig
from dedup.fingerprint import shingles, signatures
from dedup.models import Document
from dedup.normalize import (
    BATCH_CHARS,
    NormalizeConfig,
    in_batches,
    normalize,
    normalize_many,
    prepare_tables,
)
from dedup.normalize import opencc as script
from dedup.normalize.opencc import convert
from dedup.read.decode import decode_bytes
from dedup.segment import split_chapters, split_passages

BOOKS = {
    "Simplified (tennessine 红楼梦)": "tennessine-corpus/红楼梦.txt",
    "Traditional (Gutenberg 紅樓夢)": "gutenberg/24264-0.txt",
}
CONFIGS = ("tw2s", "hk2s")


def _batches(chapters: list[str]) -> list[list[str]]:
    """The chapters in batches of about BATCH_CHARS characters, as a scan normalizes them."""
    return list(in_batches(chapters, map(len, chapters), BATCH_CHARS))


def cpu_seconds(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    config = ScanConfig()
    prepare_tables()
    converters = [opencc.OpenCC(name) for name in CONFIGS]

    def opencc_whole(text: str) -> str:
        for converter in converters:
            text = converter.convert(text)
        return text

    for label, name in BOOKS.items():
        raw = decode_bytes((args.shared / "corpora" / name).read_bytes(), None, "replace").text
        bench_book(label, name, raw, config, opencc_whole, args.repeat)


def bench_book(
    label: str,
    name: str,
    raw: str,
    config: ScanConfig,
    opencc_whole: Callable[[str], str],
    repeat: int,
) -> None:
    document = Document(name, "bench", None, raw)
    chapters = [raw[c.body_start : c.end] for c in split_chapters(document)]
    chars = sum(map(len, chapters))
    content = [
        normalize(c, NormalizeConfig(skip=frozenset({"script", "variants"}))).text for c in chapters
    ]
    content_chars = sum(map(len, content))
    print(
        f"{label}: {len(chapters)} chapters, {chars:,} characters ({content_chars:,} story characters)"
    )

    # Each process remembers the runs OpenCC converted (dedup.normalize.opencc): time the book once with
    # that cache empty (as a scan meets its first book), then with the book's runs remembered.
    def convert_afresh() -> list[str]:
        script._run_cache.cache_clear()
        return [convert(c, CONFIGS) for c in content]

    cold = cpu_seconds(convert_afresh, repeat)
    assert [convert(c, CONFIGS) for c in content] == [opencc_whole(c) for c in content]
    ours = cpu_seconds(lambda: [convert(c, CONFIGS) for c in content], repeat)
    theirs = cpu_seconds(lambda: [opencc_whole(c) for c in content], repeat)
    print(
        f"  script conversion: dedup {content_chars / cold / 1e6:6.2f} M chars/s with an empty "
        f"run cache, {content_chars / ours / 1e6:6.2f} M chars/s with the book's runs remembered; "
        f"OpenCC on the whole text {content_chars / theirs / 1e6:6.2f} M chars/s: "
        f"{theirs / cold:.1f}x and {theirs / ours:.1f}x (identical)"
    )

    normalized = [normalize(c) for c in chapters]
    seconds = cpu_seconds(lambda: [normalize(c) for c in chapters], repeat)
    batches = _batches(chapters)
    together = cpu_seconds(lambda: [normalize_many(batch) for batch in batches], repeat)
    print(
        f"  normalize (all steps): {chars / seconds / 1e6:6.2f} M chars/s a chapter at a time, "
        f"{chars / together / 1e6:6.2f} M chars/s {len(chapters) / len(batches):.1f} chapters "
        "together (as a scan does)"
    )
    parts = list(zip(split_chapters(document), normalized, strict=True))
    seconds = cpu_seconds(
        lambda: [split_passages(document, c, n, config.passage_chars) for c, n in parts],
        repeat,
    )
    print(f"  segment (passage windows): {chars / seconds / 1e6:6.2f} M chars/s")

    texts = [
        w.normalized for c, n in parts for w in split_passages(document, c, n, config.passage_chars)
    ]
    signatures(texts[:10], config.ngram, config.num_perm, config.seed)  # compile first
    ours = cpu_seconds(
        lambda: signatures(texts, config.ngram, config.num_perm, config.seed), repeat
    )
    line = f"  signatures of {len(texts):,} passages: dedup {len(texts) / ours:,.0f}/s"
    rensa_run = rensa_signatures(texts, config)
    if rensa_run is None:
        line += " (pip install rensa to compare with rensa)"
    else:
        # Rounds alternate the two, so that both see the machine in the same state; the
        # ratio of each round is kept and the median reported with the range.
        ratios = []
        for _ in range(max(repeat, 5)):
            mine = cpu_seconds(
                lambda: signatures(texts, config.ngram, config.num_perm, config.seed), 1
            )
            ratios.append(cpu_seconds(rensa_run, 1) / mine)
        ratios.sort()
        line += (
            f", rensa: {ratios[len(ratios) // 2]:.2f}x rensa (median of {len(ratios)} alternating "
            f"rounds, {ratios[0]:.2f}-{ratios[-1]:.2f})"
        )
    from datasketch import MinHash

    sample = [[s.encode("utf-8") for s in shingles(t, config.ngram)] for t in texts[:2000]]

    def datasketch_run() -> None:
        for encoded in sample:
            MinHash(num_perm=config.num_perm, seed=config.seed).update_batch(encoded)

    theirs = cpu_seconds(datasketch_run, 1) / len(sample) * len(texts)
    print(line + f", datasketch {len(texts) / theirs:,.0f}/s: {theirs / ours:.0f}x datasketch")


if __name__ == "__main__":
    main()
