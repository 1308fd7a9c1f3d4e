"""Build corpus_samples/ from ../shared/seeds and public-domain texts in ../shared/corpora.

    python benchmarks/make_corpus_samples.py [--shared ../shared] [--out corpus_samples]

Each "site" folder republishes some of the same chapters its own way (script, encoding,
paragraphing, injected ads, JSON Lines dump). The output is deterministic; corpus_samples/README.md
says where every file comes from and which clusters a scan must find.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import opencc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dedup.models import Document
from dedup.read.decode import decode_bytes
from dedup.segment import split_chapters

SEEDS = {
    "000": "000_d2b23829dc8734f0.txt",
    "001": "001_8be6951557aa234b.txt",
    "002": "002_08d7ccf6c908004d.txt",
}
ADS_TRADITIONAL = [
    "天才一秒記住本站地址：www.biqugex.cc。手機版閱讀網址：m.biqugex.cc",
    "（本章未完，請點擊下一頁繼續閱讀）",
    "最新章節請到 www.ttkan.co 閱讀，無彈窗廣告！",
]


def read_text(path: Path) -> str:
    return decode_bytes(path.read_bytes(), None, "replace").text


def first_chapters(path: Path, count: int) -> str:
    """The text of the first ``count`` chapters (headings included) of a whole-book file."""
    text = read_text(path)
    chapters = [
        c for c in split_chapters(Document(str(path), "", None, text)) if c.index is not None
    ]
    return text[chapters[0].start : chapters[count - 1].end].strip() + "\n"


def chapter_texts(path: Path, count: int) -> list[tuple[str, str]]:
    text = read_text(path)
    chapters = [
        c for c in split_chapters(Document(str(path), "", None, text)) if c.index is not None
    ]
    return [(c.title or "", text[c.body_start : c.end].strip()) for c in chapters[:count]]


def inject_ads(text: str, rng: random.Random) -> str:
    """Re-paragraph (two paragraphs become one) and put a site ad in every few paragraphs."""
    paragraphs = [line.strip() for line in text.splitlines() if line.strip()]
    merged = ["".join(paragraphs[i : i + 2]) for i in range(0, len(paragraphs), 2)]
    out = []
    for number, paragraph in enumerate(merged):
        out.append("　　" + paragraph)
        if number % 4 == 3:
            out.append(rng.choice(ADS_TRADITIONAL))
    return "\n\n".join(out) + "\n"


def build(shared: Path, out: Path) -> None:
    seeds = shared / "seeds"
    corpora = shared / "corpora"
    rng = random.Random(20261129)
    s2tw = opencc.OpenCC("s2tw")
    t2s = opencc.OpenCC("t2s")

    files: dict[str, bytes] = {}
    # site-qidian: Simplified originals, UTF-8.
    files["site-qidian/000.txt"] = (seeds / SEEDS["000"]).read_bytes()
    files["site-qidian/001.txt"] = (seeds / SEEDS["001"]).read_bytes()
    files["site-qidian/hongloumeng.txt"] = first_chapters(
        corpora / "tennessine-corpus/红楼梦.txt", 3
    ).encode("utf-8")

    # site-tw: machine-converted to Taiwan Traditional, re-paragraphed, ads injected; Big5 book.
    seed_000 = (seeds / SEEDS["000"]).read_text("utf-8")
    files["site-tw/000.txt"] = inject_ads(s2tw.convert(seed_000), rng).encode("utf-8")
    big5_book = corpora / "hrfz-ebook/big5-pixnet/《紅樓夢》作者：曹雪芹.txt"
    files["site-tw/hongloumeng-big5.txt"] = first_chapters(big5_book, 3).encode("big5hkscs")

    # site-gbk: OpenCC-standard Traditional (爲/羣) saved as GB18030, as some mirrors do.
    seed_002 = (seeds / SEEDS["002"]).read_text("utf-8")
    files["site-gbk/002.txt"] = seed_002.encode("gb18030")

    # site-mirror: a scraper's JSON Lines dump, Simplified, one record per chapter, one broken line.
    records = [
        {"title": "第二百一十章 渡江", "content": t2s.convert(seed_002).replace("\n", "")},
    ]
    for title, body in chapter_texts(corpora / "hexhero-book-txt/西游记.txt", 2):
        records.append({"title": title, "content": body})
    lines = [json.dumps(record, ensure_ascii=False) for record in records]
    lines.insert(2, '{"title": "第三回", "content": "四海千山皆拱伏，九幽十类尽除名')  # cut off
    files["site-mirror/dump.jsonl"] = ("\n".join(lines) + "\n").encode("utf-8")

    # site-classic: Project Gutenberg (Traditional): the same 西游记 chapters, plus unrelated text.
    files["site-classic/xiyouji.txt"] = first_chapters(
        corpora / "gutenberg/23962-0.txt", 2
    ).encode()
    files["site-classic/sanguo.txt"] = first_chapters(corpora / "gutenberg/23950-0.txt", 1).encode()

    for name, data in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        print(f"{path}  {len(data):>8} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[1]
    parser.add_argument("--shared", type=Path, default=here.parent / "shared")
    parser.add_argument("--out", type=Path, default=here / "corpus_samples")
    args = parser.parse_args()
    build(args.shared, args.out)


if __name__ == "__main__":
    main()
