"""Which normalization steps the same scene needs to read the same, measured on real text.

    python benchmarks/bench_normalize.py [--chapters 10] [--shared ../shared]

Chapter-level character 5-gram Jaccard similarity, for every normalization step switched off in
turn (and all on), on:
- real cross-source pairs: the same chapter of 红楼梦, 西游记 and 三国演义 from independent
  sources in ../shared/corpora (Simplified vs Traditional, other editions' punctuation and
  paragraphing, web-site boilerplate);
- synthetic site variants of real chapters: OpenCC s2t, s2tw, s2hk and s2twp, site ads and URLs
  injected (half- and full-width), paragraphs merged;
- different chapters of the same novel (the highest similarity is what a threshold must clear).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path
from statistics import mean

import opencc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.quality.chapters import numbered_chapters
from dedup.config import NORMALIZE_STEPS
from dedup.fingerprint import shingles
from dedup.normalize import NormalizeConfig, normalize

WORKS = {
    "红楼梦": [
        "tennessine-corpus/红楼梦.txt",
        "gutenberg/24264-0.txt",
        "hrfz-ebook/big5-pixnet/《紅樓夢》作者：曹雪芹.txt",
    ],
    "西游记": ["tennessine-corpus/西游记.txt", "gutenberg/23962-0.txt"],
    "三国演义": [
        "tennessine-corpus/三国演义.txt",
        "gutenberg/23950-0.txt",
        "hexhero-book-txt/三国演义.txt",
    ],
}
ADS = [
    "天才一秒记住本站地址：www.biqugex.cc。手机版阅读网址：m.biqugex.cc",
    "（本章未完，请点击下一页继续阅读）",
    "最新章节请到ｗｗｗ．ｔｔｋａｎ．ｃｏ阅读，无弹窗广告！",
    "PS：今天两更，求月票！",
]


def chapters(path: Path) -> dict[int, str]:
    return {number: body for number, (_, body) in numbered_chapters(path).items()}


def with_ads(text: str, rng: random.Random) -> str:
    paragraphs = [line.strip() for line in text.splitlines() if line.strip()]
    merged = ["".join(paragraphs[i : i + 2]) for i in range(0, len(paragraphs), 2)]
    out = []
    for number, paragraph in enumerate(merged):
        out.append(paragraph)
        if number % 3 == 2:
            out.append(rng.choice(ADS))
    return "\n".join(out)


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--chapters", type=int, default=10)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    args = parser.parse_args()
    corpora = args.shared / "corpora"
    numbers = range(1, args.chapters + 1)

    real_pairs: list[tuple[str, str]] = []
    different: list[tuple[str, str]] = []
    originals: list[str] = []
    for files in WORKS.values():
        copies = [chapters(corpora / name) for name in files]
        for first, second in itertools.combinations(copies, 2):
            real_pairs += [(first[n], second[n]) for n in numbers if n in first and n in second]
        base = copies[0]
        originals += [base[n] for n in numbers if n in base]
        different += [(base[a], base[b]) for a, b in itertools.combinations(numbers, 2)]

    rng = random.Random(7)
    variants: dict[str, list[tuple[str, str]]] = {}
    for kind in ("s2t", "s2tw", "s2hk", "s2twp"):
        converter = opencc.OpenCC(kind)
        variants[kind] = [(text, converter.convert(text)) for text in originals]
    variants["ads"] = [(text, with_ads(text, rng)) for text in originals]
    variants["s2tw+ads"] = [(a, with_ads(b, rng)) for a, b in variants["s2tw"]]

    header = ["configuration", "real mean", "real min", *variants, "different max"]
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for skipped in [None, *NORMALIZE_STEPS]:
        config = NormalizeConfig(skip=frozenset({skipped} if skipped else set()))
        cache: dict[str, set[str]] = {}

        def sets(
            text: str, config: NormalizeConfig = config, cache: dict[str, set[str]] = cache
        ) -> set[str]:
            if text not in cache:
                cache[text] = set(shingles(normalize(text, config).text, 5))
            return cache[text]

        real = [jaccard(sets(a), sets(b)) for a, b in real_pairs]
        cells = [f"{mean(real):.3f}", f"{min(real):.3f}"]
        for pairs in variants.values():
            scores = [jaccard(sets(a), sets(b)) for a, b in pairs]
            cells.append(f"{mean(scores):.3f} / {min(scores):.3f}")
        cells.append(f"{max(jaccard(sets(a), sets(b)) for a, b in different):.3f}")
        name = "all steps" if skipped is None else f"without {skipped}"
        print(" | ".join([name, *cells]))
    print(
        f"\n{len(real_pairs)} real cross-source chapter pairs, {len(originals)} chapters per "
        f"variant kind (cells: mean / min), {len(different)} pairs of different chapters"
    )


if __name__ == "__main__":
    main()
