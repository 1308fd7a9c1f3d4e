"""The labelled benchmark: real cross-source chapters, synthetic site variants, hard negatives.

    python -m benchmarks.quality.dataset OUT [--shared ../shared] [--chapters 15] [--synthetic 12]

Layout: OUT/<source>/<work>-<chapter>.txt (one chapter per file; a few sources keep their own
encoding or format) and OUT/labels.json:

- ``files``: every file with its work, chapter number and kind;
- ``positives``: pairs of files that are the same chapter (or share a scene), with the kind of
  relation: ``real`` (the same chapter from two independent sources), ``edition`` (the same
  chapter of a heavily edited edition, the 程乙本-type copy of 红楼梦), a synthetic variant kind,
  or ``plagiarism`` (a scene copied into another novel's chapter, names changed);
- ``excluded``: pairs with the same chapter number whose text is not the same chapter (an
  edition that numbers chapters differently): neither positive nor negative.

Synthetic variants of one chapter are duplicates of each other too, not only of the original:
``Labels`` (evaluate.py) closes the positive relation over each chapter's copies.

How real labels are derived: every pair of chapters of the same work from two sources is
checked by content with a measure that is not dedup's: Jaccard similarity of Han-only character
5-grams after OpenCC t2s. A pair at or above 0.25 is positive (whatever the chapter numbers
say); a same-numbered pair below it is excluded. The 程乙本-type copy is positive with its
same-numbered chapters, as kind ``edition``. Every other pair
of files is negative, including different chapters of the same novel and the three seeds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import re
from pathlib import Path

import opencc

from benchmarks.quality import variants
from benchmarks.quality.chapters import numbered_chapters

REAL_SOURCES = {
    "hlm": {
        "tennessine": "tennessine-corpus/红楼梦.txt",
        "gutenberg": "gutenberg/24264-0.txt",
        "pixnet": "hrfz-ebook/big5-pixnet/《紅樓夢》作者：曹雪芹.txt",
        "hankinghu": "hankinghu-literature-books/红楼梦.txt",
        "pg-stripped": "pg-html-stripped-tzuyujih/紅樓夢.txt",
        "eacon-cgb": "",
        "eacon-zhiping": "",
    },
    "sgyy": {
        "tennessine": "tennessine-corpus/三国演义.txt",
        "gutenberg": "gutenberg/23950-0.txt",
        "hexhero": "hexhero-book-txt/三国演义.txt",
        "hrfz-gbk": "hrfz-ebook/web-dumps/三国演义.txt",
    },
    "xyj": {
        "tennessine": "tennessine-corpus/西游记.txt",
        "gutenberg": "gutenberg/23962-0.txt",
        "hexhero": "hexhero-book-txt/西游记.txt",
    },
}
# Sources whose chapters are files of their own, or a book without line breaks.
PER_CHAPTER = {
    ("hlm", "eacon-cgb"): "gitbook-hongloumeng-eacon/ch_cgb/{:03d}.md",
    ("hlm", "eacon-zhiping"): "gitbook-hongloumeng-eacon/ch/{:03d}.md",
}
STRIPPED = {("hlm", "pg-stripped"): "pg-html-stripped-tzuyujih/紅樓夢.txt"}
# Heavily edited editions, and an edition with inline commentary: kinds of their own, not in the
# headline figures.
EDITIONS = {("hlm", "hankinghu"): "edition", ("hlm", "eacon-zhiping"): "annotated"}
ENCODINGS = {"pixnet": "big5hkscs", "hrfz-gbk": "gb18030"}
SUFFIXES = {"eacon-cgb": ".html"}  # HTML paragraphs: read as a saved page
SHUIHU_NAMES = {
    "宋江": "宋清风", "武松": "武青松", "林冲": "林中原", "鲁智深": "鲁大深", "李逵": "李魁元",
    "吴用": "吴庸之", "晁盖": "晁开山", "杨志": "杨知远", "史进": "史金龙", "卢俊义": "卢俊才",
}  # fmt: skip
_HAN = re.compile(r"[\u4e00-\u9fff]")
_T2S = opencc.OpenCC("t2s")


def han_jaccard(a: str, b: str) -> float:
    def grams(text: str) -> set[str]:
        han = "".join(_HAN.findall(_T2S.convert(text)))
        return {han[i : i + 5] for i in range(len(han) - 4)}

    first, second = grams(a), grams(b)
    return len(first & second) / len(first | second) if first | second else 0.0


_NUMERALS = "一二三四五六七八九十"


def _chinese_number(number: int) -> str:
    tens, ones = divmod(number, 10)
    if number < 10:
        return _NUMERALS[number - 1]
    head = "" if tens == 1 else _NUMERALS[tens - 1]
    return head + "十" + (_NUMERALS[ones - 1] if ones else "")


def stripped_chapters(path: Path, chapters: int) -> dict[int, tuple[str, str]]:
    """A scrape with every line break dropped: chapters begin where 第N回 comes next in order."""
    text = path.read_text("utf-8")
    starts = []
    position = 0
    for number in range(1, chapters + 2):
        found = text.find(f"第{_chinese_number(number)}回", position)
        if found < 0:
            break
        starts.append(found)
        position = found + 3
    return {
        number: ("", text[start:end])
        for number, (start, end) in enumerate(itertools.pairwise(starts), start=1)
    }


def source_chapters(
    corpora: Path, work: str, source: str, name: str, chapters: int
) -> dict[int, tuple[str, str]]:
    if (work, source) in PER_CHAPTER:
        found = {}
        for number in range(1, chapters + 1):
            path = corpora / PER_CHAPTER[(work, source)].format(number)
            if path.exists():
                found[number] = ("", path.read_text("utf-8"))
        return found
    if (work, source) in STRIPPED:
        return stripped_chapters(corpora / name, chapters)
    return numbered_chapters(corpora / name)


class Builder:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.files: dict[str, dict[str, object]] = {}
        self.positives: list[tuple[str, str, str]] = []
        self.excluded: list[tuple[str, str]] = []

    def write(self, source: str, name: str, text: str, work: str, chapter: int | None, kind: str,
              encoding: str = "utf-8") -> str:  # fmt: skip
        relative = f"{source}/{name}"
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode(encoding, "replace"))
        self.files[relative] = {"work": work, "chapter": chapter, "kind": kind}
        return relative

    def save(self) -> None:
        labels = {"files": self.files, "positives": self.positives, "excluded": self.excluded}
        (self.out / "labels.json").write_text(
            json.dumps(labels, ensure_ascii=False, indent=1), "utf-8"
        )


def build(shared: Path, out: Path, chapters: int, synthetic: int, seed: int = 20261129) -> None:
    corpora = shared / "corpora"
    rng = random.Random(seed)
    builder = Builder(out)

    # Real cross-source chapters.
    for work, sources in REAL_SOURCES.items():
        written: list[tuple[str, str, str, int]] = []
        for source, name in sources.items():
            found = source_chapters(corpora, work, source, name, chapters)
            for number in range(1, chapters + 1):
                if number not in found:
                    continue
                heading, body = found[number]
                kind = EDITIONS.get((work, source), "real")
                text = f"{heading}\n{body}\n" if heading else body
                suffix = SUFFIXES.get(source, ".txt")
                relative = builder.write(source, f"{work}-{number:03d}{suffix}", text, work, number,
                                         kind, ENCODINGS.get(source, "utf-8"))  # fmt: skip
                written.append((relative, kind, body, number))
        # Every cross-source pair of the work is checked by content, so an edition that numbers
        # its chapters differently is labelled by what its chapters hold.
        for (a, kind_a, body_a, n_a), (b, kind_b, body_b, n_b) in itertools.combinations(
            written, 2
        ):
            if a.split("/")[0] == b.split("/")[0]:
                continue
            kind = next((k for k in (kind_a, kind_b) if k != "real"), "real")
            similar = han_jaccard(body_a, body_b) >= 0.25
            if similar or (kind != "real" and n_a == n_b):
                builder.positives.append((a, b, kind))
            elif n_a == n_b:
                builder.excluded.append((a, b))

    # Synthetic site variants of real chapters (水浒传, which the real pairs do not use).
    originals = numbered_chapters(corpora / "tennessine-corpus/水浒传.txt")
    numbers = [n for n in range(21, 21 + synthetic) if n in originals]
    makers = {
        "s2t": lambda t: variants.convert(t, "s2t"),
        "s2tw": lambda t: variants.convert(t, "s2tw"),
        "s2twp": lambda t: variants.convert(t, "s2twp"),
        "s2hk": lambda t: variants.convert(t, "s2hk"),
        "ads": lambda t: variants.with_ads(t, rng),
        "rewrap": lambda t: variants.rewrapped(t, rng),
        "censor": lambda t: variants.censored(t, rng),
        "typo1": lambda t: variants.typos(t, rng, 0.01),
        "typo5": lambda t: variants.typos(t, rng, 0.05),
        "typo10": lambda t: variants.typos(t, rng, 0.10),
    }
    original_files = {}
    page_files: dict[int, list[tuple[str, str]]] = {}
    merged_files: dict[int, str] = {}
    for number in numbers:
        heading, body = originals[number]
        original = builder.write("synth-original", f"shz-{number:03d}.txt", f"{heading}\n{body}\n",
                                 "shz", number, "original")  # fmt: skip
        original_files[number] = original
        for kind, make in makers.items():
            variant = builder.write(f"synth-{kind}", f"shz-{number:03d}.txt",
                                    f"{heading}\n{make(body)}\n", "shz", number, kind)  # fmt: skip
            builder.positives.append((original, variant, kind))
        for page, text in enumerate(variants.pages(heading, body, 3), start=1):
            split = builder.write("synth-pages", f"shz-{number:03d}-p{page}.txt", text, "shz",
                                  number, "pages")  # fmt: skip
            builder.positives.append((original, split, "pages"))
            page_files.setdefault(number, []).append((split, text))
    for first, second in zip(numbers[::2], numbers[1::2], strict=False):
        (h1, b1), (h2, b2) = originals[first], originals[second]
        merged = builder.write("synth-merged", f"shz-{first:03d}-{second:03d}.txt",
                               f"{h1}\n{b1}\n{h2}\n{b2}\n", "shz", first, "merged")  # fmt: skip
        builder.positives += [(original_files[first], merged, "merged"),
                              (original_files[second], merged, "merged")]  # fmt: skip
        merged_files[first] = merged_files[second] = merged

    # Scene plagiarism: a 水浒传 scene, names changed, inside a 西游记 chapter.
    hosts = numbered_chapters(corpora / "tennessine-corpus/西游记.txt")
    for position, number in enumerate(numbers):
        host_number = 40 + position
        original_scene = variants.scene(originals[number][1], rng)
        copied = variants.renamed(original_scene, SHUIHU_NAMES)
        heading, host_body = hosts[host_number]
        plagiarist = builder.write("plagiarist", f"xyj-{host_number:03d}.txt",
                                   f"{heading}\n{variants.plagiarised(host_body, copied, rng)}",
                                   "xyj", host_number, "plagiarism")  # fmt: skip
        builder.positives.append((original_files[number], plagiarist, "plagiarism"))
        # The merged file holds the whole source chapter; a page holds the scene if it holds at
        # least 100 of its characters.
        if number in merged_files:
            builder.positives.append((merged_files[number], plagiarist, "plagiarism"))
        for page, text in page_files.get(number, []):
            pieces = [original_scene[i : i + 100] for i in range(0, len(original_scene) - 99, 20)]
            if any(piece in text for piece in pieces):
                builder.positives.append((page, plagiarist, "plagiarism"))

    # Hard negatives: the three seeds (similar battle scenes from three different novels).
    for seed_file in sorted((shared / "seeds").glob("*.txt")):
        builder.write("seeds", seed_file.name, seed_file.read_text("utf-8"), seed_file.stem, None,
                      "seed")  # fmt: skip
    builder.save()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[2]
    parser.add_argument("out", type=Path)
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--chapters", type=int, default=15)
    parser.add_argument("--synthetic", type=int, default=12)
    args = parser.parse_args()
    build(args.shared, args.out, args.chapters, args.synthetic)
    labels = json.loads((args.out / "labels.json").read_text("utf-8"))
    print(f"{len(labels['files'])} files, {len(labels['positives'])} positive pairs, "
          f"{len(labels['excluded'])} excluded pairs in {args.out}")  # fmt: skip


if __name__ == "__main__":
    main()
