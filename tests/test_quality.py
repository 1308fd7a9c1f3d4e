"""A small slice of the quality benchmark (benchmarks/quality/) as a regression check: real
cross-source chapters and synthetic site variants built from the repository's own samples, with
fixed floors on precision and recall. A change that hurts detection quality fails here."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import dedup
from benchmarks.quality import variants
from benchmarks.quality.evaluate import Labels, chapter_scores, report_pairs
from dedup.models import Document
from dedup.read.decode import decode_bytes
from dedup.segment import split_chapters

NAMES = {"贾雨村": "贾云村", "甄士隐": "甄世英", "宝玉": "宝金", "黛玉": "黛青"}
VARIANTS = {
    "s2tw": lambda text, rng: variants.convert(text, "s2tw"),
    "s2hk": lambda text, rng: variants.convert(text, "s2hk"),
    "ads": variants.with_ads,
    "rewrap": variants.rewrapped,
    "censor": variants.censored,
    "typo1": lambda text, rng: variants.typos(text, rng, 0.01),
    "typo5": lambda text, rng: variants.typos(text, rng, 0.05),
}


def _chapters(path: Path) -> list[tuple[str, str]]:
    text = decode_bytes(path.read_bytes()).text
    return [
        (c.title or "", text[c.body_start : c.end].strip())
        for c in split_chapters(Document(str(path), "", None, text))
        if c.index is not None
    ]


@pytest.fixture(scope="module")
def benchmark(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Labels]:
    root = tmp_path_factory.mktemp("quality")
    rng = random.Random(7)
    files: dict[str, dict[str, object]] = {}
    positives: list[tuple[str, str, str]] = []

    def write(relative: str, text: str, work: str, chapter: int | None, kind: str) -> str:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, "utf-8")
        files[relative] = {"work": work, "chapter": chapter, "kind": kind}
        return relative

    simplified = _chapters(samples / "site-qidian/hongloumeng.txt")
    traditional = _chapters(samples / "site-tw/hongloumeng-big5.txt")
    for number, ((h1, b1), (h2, b2)) in enumerate(zip(simplified, traditional, strict=True), 1):
        a = write(f"tennessine/hlm-{number}.txt", f"{h1}\n{b1}\n", "hlm", number, "original")
        b = write(f"pixnet/hlm-{number}.txt", f"{h2}\n{b2}\n", "hlm", number, "real")
        positives.append((a, b, "real"))
        for kind, make in VARIANTS.items():
            variant = write(
                f"{kind}/hlm-{number}.txt", f"{h1}\n{make(b1, rng)}\n", "hlm", number, kind
            )
            positives.append((a, variant, kind))
    host_title, host_body = _chapters(samples / "site-classic/sanguo.txt")[0]
    copied = variants.renamed(variants.scene(simplified[1][1], rng, 400, 900), NAMES)
    host = write("plagiarist/sanguo-1.txt", f"{host_title}\n{variants.plagiarised(host_body, copied, rng)}",
                 "sanguo", 1, "plagiarism")  # fmt: skip
    positives.append(("tennessine/hlm-2.txt", host, "plagiarism"))
    for seed in ("site-qidian/000.txt", "site-qidian/001.txt"):
        write(f"seeds/{Path(seed).name}", (samples / seed).read_text("utf-8"), seed, None, "seed")
    labels = {"files": files, "positives": positives, "excluded": []}
    return root, Labels.from_json(json.loads(json.dumps(labels)))


def test_quality_floors(benchmark: tuple[Path, Labels]) -> None:
    root, labels = benchmark
    report = dedup.scan([str(root)], jobs=1)
    predicted = report_pairs(report, root)
    real = chapter_scores(predicted, labels, {"real"})
    assert (real.precision, real.recall) == (1.0, 1.0)
    overall = chapter_scores(predicted, labels)
    assert overall.precision == 1.0, overall.false_positives
    for kind in VARIANTS:
        assert overall.recall_by_kind[kind] == 1.0, kind
    assert overall.recall_by_kind["plagiarism"] == 1.0
    seeds = {f for f, info in labels.files.items() if info["kind"] == "seed"}
    assert not any(pair <= seeds for pair in predicted)
