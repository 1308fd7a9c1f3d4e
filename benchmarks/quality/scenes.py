"""Scene-level quality: copied scenes found, with the right characters (issue 17).

    PYTHONPATH=. python -m benchmarks.quality.scenes [--cases 160] [--shared ../shared] [--sweep]

Builds, from ``../shared/corpora`` and ``../shared/seeds``:

- **scene cases**: a stretch of 150-900 characters of a 水浒传 chapter (starting and ending
  anywhere, mid-sentence too) spliced at a random character offset (mid-paragraph too) into a
  chapter of 西游记 or 三国演义, one host chapter per case. Kinds: ``verbatim``; ``reworded``
  (characters renamed, and 2-5% of the characters changed); ``script`` (the scene in
  Traditional script, s2t); ``reworded+script``. The source chapters are files of their own.
- **pages**: five source chapters as a site splits them, each into three page files
  (第N回 标题（k）), besides the whole chapter.
- **seeds**: the three seeds, different novels with similar battle scenes: never to match.

Scores (PAN text-alignment style, on the decoded text of the files):

- scene recall: the share of scenes of which the match between host and source covers at least
  half of the scene's characters on the host side; character recall and precision on the host
  side (precision over every span any match puts in a host file); the share of found scenes
  whose span ends are within 20 characters of the truth on both ends, on both sides.
- chapter-pair precision, recall and F1 over the file pairs a match joins (scene and page pairs
  positive, every other pair negative); seed pairs matched.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import opencc

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import dedup
from benchmarks.quality.chapters import numbered_chapters
from benchmarks.quality.dataset import SHUIHU_NAMES
from benchmarks.quality.variants import pages, renamed, typos

KINDS = ("verbatim", "reworded", "script", "reworded+script")
_S2T = opencc.OpenCC("s2t")
_HAN = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Scene:
    kind: str
    host: str  # file, relative to the dump
    host_span: tuple[int, int]
    source: str
    source_span: tuple[int, int]


@dataclass
class Dump:
    scenes: list[Scene]
    page_pairs: set[frozenset[str]]
    seeds: list[str]
    # each page file: its source chapter's file and the stretch of it the page carries
    page_spans: dict[str, tuple[str, tuple[int, int]]]

    def positives(self, least: int = 60) -> set[frozenset[str]]:
        """File pairs that share text: a scene and its source; a page and its chapter; and
        two hosts (or a host and a page) whose scenes came from overlapping stretches of one
        source chapter (at least ``least`` characters)."""
        found = {frozenset((s.host, s.source)) for s in self.scenes} | self.page_pairs
        carried = [(s.host, s.source, s.source_span) for s in self.scenes] + [
            (page, source, span) for page, (source, span) in self.page_spans.items()
        ]
        for number, (name, source, span) in enumerate(carried):
            for other, other_source, other_span in carried[number + 1 :]:
                if source == other_source and _overlap(span, other_span) >= least:
                    found.add(frozenset((name, other)))
        return found


def build(shared: Path, out: Path, cases: int, seed: int = 17) -> Dump:
    corpora = shared / "corpora" / "tennessine-corpus"
    rng = random.Random(seed)
    sources = numbered_chapters(corpora / "水浒传.txt")
    hosts = [
        (work, number, body)
        for work, name in (("xyj", "西游记.txt"), ("sgyy", "三国演义.txt"))
        for number, (_title, body) in sorted(numbered_chapters(corpora / name).items())
    ]
    rng.shuffle(hosts)
    source_numbers = list(range(30, 70))
    source_files: dict[int, tuple[str, int]] = {}  # number -> (file, where the body starts)
    for number in source_numbers:
        title, body = sources[number]
        path = out / "source" / f"shz-{number:03d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = f"{title}\n{body}\n"
        path.write_text(text, "utf-8")
        source_files[number] = (f"source/{path.name}", len(title) + 1)
    scenes = []
    for case in range(cases):
        kind = KINDS[case % len(KINDS)]
        work, host_number, host_body = hosts[case]
        number = rng.choice(source_numbers)
        body = sources[number][1]
        length = rng.randint(150, 900)
        start = rng.randrange(0, max(1, len(body) - length))
        copied = body[start : start + length]
        if "reworded" in kind:
            copied = typos(renamed(copied, SHUIHU_NAMES), rng, rng.uniform(0.02, 0.05))
        if "script" in kind:
            copied = _S2T.convert(copied)
        at = rng.randrange(len(host_body) // 5, len(host_body) * 4 // 5)
        heading = f"第{host_number}回\n"
        text = heading + host_body[:at] + copied + host_body[at:] + "\n"
        name = f"host/{work}-{host_number:03d}-{kind}.txt"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text, "utf-8")
        source_name, body_start = source_files[number]
        scenes.append(
            Scene(
                kind,
                name,
                (len(heading) + at, len(heading) + at + len(copied)),
                source_name,
                (body_start + start, body_start + start + length),
            )
        )
    page_pairs: set[frozenset[str]] = set()
    page_spans: dict[str, tuple[str, tuple[int, int]]] = {}
    for number in source_numbers[:5]:
        title, body = sources[number]
        size = len(body) // 3 + 1  # as variants.pages cuts
        source_name, body_start = source_files[number]
        for page, text in enumerate(pages(title, body, 3), start=1):
            name = f"paged/shz-{number:03d}-{page}.txt"
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(text, "utf-8")
            page_pairs.add(frozenset((name, source_name)))
            begin = body_start + (page - 1) * size
            page_spans[name] = (source_name, (begin, min(begin + size, body_start + len(body))))
    seeds = []
    for path in sorted((shared / "seeds").glob("*.txt")):
        name = f"seeds/{path.name}"
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(path.read_bytes())
        seeds.append(name)
    return Dump(scenes, page_pairs, seeds, page_spans)


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def score(report: dedup.Report, dump: Dump, root: Path) -> dict[str, Any]:
    def relative(path: str) -> str:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()

    by_files: dict[frozenset[str], list[tuple[str, dedup.SharedSpan, str]]] = {}
    host_spans: dict[str, list[tuple[int, int]]] = {}
    for match in report.matches:
        a, b = relative(match.a.path), relative(match.b.path)
        for span in match.spans:
            by_files.setdefault(frozenset((a, b)), []).append((a, span, b))
            for path, where in ((a, (span.a_start, span.a_end)), (b, (span.b_start, span.b_end))):
                if path.startswith("host/"):
                    host_spans.setdefault(path, []).append(where)
    found = covered = truth_chars = ends_close = 0
    per_kind: dict[str, list[int]] = {kind: [0, 0] for kind in KINDS}
    for scene in dump.scenes:
        spans = by_files.get(frozenset((scene.host, scene.source)), [])
        host_side = []
        source_side = []
        for a, span, _b in spans:
            if a == scene.host:
                host_side.append((span.a_start, span.a_end))
                source_side.append((span.b_start, span.b_end))
            else:
                host_side.append((span.b_start, span.b_end))
                source_side.append((span.a_start, span.a_end))
        hit = sum(_overlap(where, scene.host_span) for where in host_side)
        length = scene.host_span[1] - scene.host_span[0]
        truth_chars += length
        covered += min(hit, length)
        per_kind[scene.kind][1] += 1
        if hit * 2 >= length:
            found += 1
            per_kind[scene.kind][0] += 1
            near = [w for w in host_side if _overlap(w, scene.host_span)]
            near_source = [w for w in source_side if _overlap(w, scene.source_span)]
            if (
                near
                and near_source
                and all(
                    abs(min(w[0] for w in side) - truth[0]) <= 20
                    and abs(max(w[1] for w in side) - truth[1]) <= 20
                    for side, truth in ((near, scene.host_span), (near_source, scene.source_span))
                )
            ):
                ends_close += 1
    truth_by_host = {scene.host: scene.host_span for scene in dump.scenes}
    predicted_chars = sum(w[1] - w[0] for spans in host_spans.values() for w in spans)
    correct_chars = sum(
        _overlap(w, truth_by_host[path]) for path, spans in host_spans.items() for w in spans
    )
    truth_pairs = dump.positives()
    predicted_pairs = set(by_files)
    true_positive = len(predicted_pairs & truth_pairs)
    precision = true_positive / max(1, len(predicted_pairs))
    recall = true_positive / max(1, len(truth_pairs))
    seeds = set(dump.seeds)
    return {
        "scene recall": found / max(1, len(dump.scenes)),
        "char recall": covered / max(1, truth_chars),
        "char precision": correct_chars / max(1, predicted_chars),
        "ends within 20": ends_close / max(1, found),
        "pair P": precision,
        "pair R": recall,
        "pair F1": 2 * precision * recall / max(1e-9, precision + recall),
        "seed pairs": sum(1 for pair in predicted_pairs if pair <= seeds),
        "by kind": {kind: f"{hit}/{total}" for kind, (hit, total) in per_kind.items()},
        "align s": report.timings.get("align", 0.0),
        "total s": report.timings.get("total", 0.0),
    }


@contextmanager
def variant(
    seeds: bool = True, min_shared_seeds: int | None = None, window: int | None = None
) -> Iterator[None]:
    """A design choice switched for one run: seed retrieval off (only verified passage pairs
    propose documents to align), a different least number of shared seeds, or a different
    winnowing window (the workers are forked from this process, so they see it)."""
    from dedup import documents
    from dedup.segment import passages

    saved = documents.MIN_SHARED_SEEDS, passages.WINNOW_WINDOW
    if not seeds:
        documents.MIN_SHARED_SEEDS = 1 << 40
    elif min_shared_seeds is not None:
        documents.MIN_SHARED_SEEDS = min_shared_seeds
    if window is not None:
        passages.WINNOW_WINDOW = window
    try:
        yield
    finally:
        documents.MIN_SHARED_SEEDS, passages.WINNOW_WINDOW = saved


def configurations(sweep: bool) -> list[tuple[str, Callable[[], Any], dict[str, Any]]]:
    rows: list[tuple[str, Callable[[], Any], dict[str, Any]]] = [
        ("defaults", variant, {}),
        ("no seed retrieval (passage pairs only)", lambda: variant(seeds=False), {}),
    ]
    if sweep:
        rows += [
            (f"min shared seeds {n}", lambda n=n: variant(min_shared_seeds=n), {})
            for n in (1, 3, 5, 8)
        ]
        rows += [(f"winnowing window {n}", lambda n=n: variant(window=n), {}) for n in (8, 12, 24)]
        rows += [
            (f"min match chars {n}", variant, {"min_match_chars": n}) for n in (30, 60, 90, 120)
        ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--cases", type=int, default=160)
    parser.add_argument("--sweep", action="store_true", help="also other settings")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dump = build(args.shared, root, args.cases)
        dedup.scan([str(root)], jobs=2)  # compiles, so that no row pays for it
        header = (
            "configuration | scene recall | char R | char P | ends ≤20 | pair P | pair R "
            "| pair F1 | seed pairs | align s | total s | found by kind"
        )
        print(header)
        print(" | ".join(["---"] * 12))
        for name, switch, options in configurations(args.sweep):
            with switch():
                started = time.perf_counter()
                report = dedup.scan([str(root)], jobs=2, **options)
                elapsed = time.perf_counter() - started
            result = score(report, dump, root)
            result["total s"] = elapsed
            kinds = ", ".join(f"{k} {v}" for k, v in result["by kind"].items())
            print(
                f"{name} | {result['scene recall']:.3f} | {result['char recall']:.3f} | "
                f"{result['char precision']:.3f} | {result['ends within 20']:.3f} | "
                f"{result['pair P']:.3f} | {result['pair R']:.3f} | {result['pair F1']:.3f} | "
                f"{result['seed pairs']} | {result['align s']:.2f} | {result['total s']:.2f} | "
                f"{kinds}"
            )


if __name__ == "__main__":
    main()
