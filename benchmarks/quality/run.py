"""Detection quality of dedup on real Chinese novels, against the tools people use today.

    python -m benchmarks.quality.run [--data DIR] [--shared ../shared] [--quick] [--no-baselines]

Builds the labelled benchmark (benchmarks/quality/dataset.py) if DIR has none, scans it with
dedup's defaults, sweeps of n-gram size, threshold, num_perm and passage length, and with each
normalization step switched off; runs the baselines (text-dedup's MinHash, plain datasketch
character 5-grams, jieba words) in a virtual environment of their own that this script creates
(they never become dependencies of dedup); prints one Markdown table per measure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import dedup
from benchmarks.quality.dataset import build
from benchmarks.quality.evaluate import (
    Labels,
    Pair,
    chapter_ari,
    chapter_scores,
    match_pairs,
    passage_scores,
    report_pairs,
)
from dedup.config import NORMALIZE_STEPS
from dedup.read import discover_inputs, read_file

VARIANT_KINDS = ["s2t", "s2tw", "s2twp", "s2hk", "ads", "rewrap", "pages", "merged", "censor",
                 "typo1", "typo5", "typo10", "plagiarism", "edition", "annotated"]  # fmt: skip
BASELINES = ["text-dedup", "text-dedup-chars", "datasketch-5gram", "jieba-words"]
BASELINE_PACKAGES = ["text-dedup==0.4.0", "jieba==0.42.1", "datasketch>=2,<3"]


def configurations(quick: bool) -> list[tuple[str, dict[str, object]]]:
    configs: list[tuple[str, dict[str, object]]] = [("dedup defaults", {})]
    if quick:
        return configs
    configs += [(f"ngram {n}", {"ngram": n}) for n in (2, 4, 5, 6, 7, 8)]
    configs += [(f"threshold {t}", {"threshold": t}) for t in (0.3, 0.5, 0.6, 0.7)]
    configs += [(f"containment {c}", {"containment": c}) for c in (0.6, 0.8, 0.9)]
    configs += [("before this benchmark: ngram 5, threshold 0.5, containment 0.8",
                 {"ngram": 5, "threshold": 0.5, "containment": 0.8})]  # fmt: skip
    configs += [(f"num_perm {p}", {"num_perm": p}) for p in (64, 256)]
    configs += [(f"passage_chars {c}", {"passage_chars": c}) for c in (200, 800)]
    configs += [(f"without {step}", {"skip_steps": (step,)}) for step in NORMALIZE_STEPS]
    return configs


def baseline_python(where: Path) -> Path:
    python = where / "bin" / "python"
    if not python.exists():
        venv.create(where, with_pip=True)
        subprocess.run([python, "-m", "pip", "install", "-q", *BASELINE_PACKAGES], check=True)
    return python


def write_documents(data: Path, target: Path) -> None:
    files, _ = discover_inputs([str(data)])
    with open(target, "w", encoding="utf-8") as out:
        for file in files:
            for result in read_file(file, dedup.ScanConfig()):
                text = "\n".join(document.text for document in result.documents)
                path = Path(result.path).relative_to(data).as_posix()
                out.write(json.dumps({"path": path, "text": text}, ensure_ascii=False) + "\n")


def row(name: str, predicted: set[Pair], labels: Labels, seconds: float,
        passages: tuple[float, dict[str, float]] | None) -> dict[str, object]:  # fmt: skip
    real = chapter_scores(predicted, labels, {"real"})
    overall = chapter_scores(predicted, labels)
    seeds = [f for f, info in labels.files.items() if info["kind"] == "seed"]
    merged_seeds = any(pair <= set(seeds) for pair in predicted)
    return {
        "name": name,
        "real": real,
        "overall": overall,
        "ari": chapter_ari(predicted, labels),
        "seconds": seconds,
        "passages": passages,
        "seeds_merged": merged_seeds,
    }


def print_tables(rows: list[dict[str, object]]) -> None:
    print("\n### Chapter level\n")
    print(
        "configuration | real P | real R | real F1 | all P | all R | ARI | seeds merged | seconds"
    )
    print("--- | --- | --- | --- | --- | --- | --- | --- | ---")
    for r in rows:
        real, overall = r["real"], r["overall"]
        print(f"{r['name']} | {real.precision:.3f} | {real.recall:.3f} | {real.f1:.3f} | "  # type: ignore[attr-defined]
              f"{overall.precision:.3f} | {overall.recall:.3f} | {r['ari']:.3f} | "  # type: ignore[attr-defined]
              f"{'yes' if r['seeds_merged'] else 'no'} | {r['seconds']:.1f}")  # fmt: skip
    print("\n### Chapter-level recall per variant kind\n")
    print("configuration | " + " | ".join(VARIANT_KINDS))
    print(" | ".join(["---"] * (len(VARIANT_KINDS) + 1)))
    for r in rows:
        recall = r["overall"].recall_by_kind  # type: ignore[attr-defined]
        print(f"{r['name']} | " + " | ".join(f"{recall.get(k, 0):.2f}" for k in VARIANT_KINDS))
    print("\n### Passage level (dedup only)\n")
    print("configuration | passage P | " + " | ".join(["real", *VARIANT_KINDS]))
    print(" | ".join(["---"] * (len(VARIANT_KINDS) + 3)))
    for r in rows:
        if r["passages"] is None:
            continue
        precision, recall = r["passages"]  # type: ignore[misc]
        cells = [f"{recall.get(k, 0):.2f}" for k in ["real", *VARIANT_KINDS]]
        print(f"{r['name']} | {precision:.3f} | " + " | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "dedup-quality")
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--baseline-venv", type=Path,
                        default=Path(tempfile.gettempdir()) / "dedup-quality-baselines")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="dedup defaults only")
    parser.add_argument("--no-baselines", action="store_true")
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()

    data = args.data.resolve()
    if not (data / "labels.json").exists():
        build(args.shared, data, chapters=15, synthetic=12)
    labels = Labels.from_json(json.loads((data / "labels.json").read_text("utf-8")))
    print(f"{len(labels.files)} files, {len(labels.positives)} positive pairs", file=sys.stderr)

    rows = []
    for name, options in configurations(args.quick):
        started = time.perf_counter()
        report = dedup.scan([str(data)], jobs=args.jobs, **options)  # type: ignore[arg-type]
        seconds = time.perf_counter() - started
        predicted = report_pairs(report, data)
        rows.append(row(name, predicted, labels, seconds, passage_scores(report, data, labels)))
        if name == "dedup defaults":
            by_matches = match_pairs(report, data)
            rows.append(row(f"{name}, by document matches", by_matches, labels, seconds, None))
        print(f"  {name}: {seconds:.1f}s", file=sys.stderr)

    if not args.no_baselines:
        python = baseline_python(args.baseline_venv)
        docs = data.parent / (data.name + "-docs.jsonl")
        write_documents(data, docs)
        script = Path(__file__).with_name("baselines.py")
        for method in BASELINES:
            output = subprocess.run([python, script, method, docs], capture_output=True, text=True,
                                    check=True, env={"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
                                                     "PATH": "/usr/bin:/bin"})  # fmt: skip
            result = json.loads(output.stdout.strip().splitlines()[-1])
            predicted = {frozenset(pair) for pair in result["pairs"]}
            rows.append(row(f"baseline: {method}", predicted, labels, result["seconds"], None))
            print(f"  {method}: {result['seconds']:.1f}s", file=sys.stderr)
    print_tables(rows)


if __name__ == "__main__":
    main()
