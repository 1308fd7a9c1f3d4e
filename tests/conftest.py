from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchmarks.quality import variants
from dedup.read.decode import decode_bytes

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "corpus_samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def seed_simplified() -> str:
    """Seed novel A: a scraped Simplified chapter (typos, a censored word)."""
    return (SAMPLES / "site-qidian/000.txt").read_text("utf-8")


@pytest.fixture(scope="session")
def seed_with_ads() -> str:
    """Seed novel B: Simplified, with the scraping site's ads and URLs mid-paragraph."""
    return (SAMPLES / "site-qidian/001.txt").read_text("utf-8")


@pytest.fixture(scope="session")
def seed_traditional() -> str:
    """Seed novel C: machine-converted OpenCC-standard Traditional (爲/羣/纔)."""
    return (SAMPLES / "site-gbk/002.txt").read_bytes().decode("gb18030")


@pytest.fixture(scope="session")
def hongloumeng_simplified() -> str:
    """红楼梦 chapters 1-3, Simplified, CRLF (tennessine-corpus)."""
    return (SAMPLES / "site-qidian/hongloumeng.txt").read_bytes().decode("utf-8")


@pytest.fixture(scope="session")
def hongloumeng_big5_bytes() -> bytes:
    """The same chapters from an independent Traditional scan, Big5-HKSCS."""
    return (SAMPLES / "site-tw/hongloumeng-big5.txt").read_bytes()


def _pieces(samples: Path, least: int = 1000) -> list[tuple[str, str]]:
    """(name, text) of the sample sites' plain-text books cut at paragraph ends into pieces
    of ``least`` characters or more (the pages of a site that pages its chapters)."""
    found = []
    for path in sorted(samples.glob("site-*/*.txt")):
        text = decode_bytes(path.read_bytes()).text
        piece: list[str] = []
        for paragraph in text.splitlines():
            piece.append(paragraph)
            if sum(map(len, piece)) >= least:
                found.append((f"{path.parent.name}-{path.stem}-{len(found):03d}", "\n".join(piece)))
                piece = []
    return found


@pytest.fixture(scope="session")
def mirror_dump(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four sites carrying the sample books a page (file) each, as mirror sites do: one verbatim,
    one with its own ads and line wraps, one in Taiwan script, one with typos (and each
    leaving some chapters out): a scan with work for many tasks, and near copies to find."""
    dump = tmp_path_factory.mktemp("mirror")
    rng = random.Random(21)
    sites = {
        "site-a": lambda text: text,
        "site-b": lambda text: variants.rewrapped(variants.with_ads(text, rng), rng),
        "site-c": lambda text: variants.convert(text, "s2tw"),
        "site-d": lambda text: variants.typos(text, rng, 0.02),
    }
    for site, vary in sites.items():
        (dump / site).mkdir()
        for name, text in _pieces(samples):
            if site == "site-a" or rng.random() < 0.8:
                (dump / site / f"{name}.txt").write_text(vary(text), "utf-8")
    return dump


SLOGAN = "本书由书友云中客上传整理，欢迎加入读者群七七八八九九交流剧情"
_TWICE = "本章完，喜欢本书的书友请投推荐票收藏本站最新网址请牢记"


@pytest.fixture(scope="session")
def slogan_sites(hongloumeng_simplified: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two sites whose chapters (of 红楼梦's lines, a heading each) end with a slogan: site
    ``a`` in two files, the second carrying again the two chapters of the first that have a
    second line at their end (a line in two distinct chapters: not repeated, though it is
    there four times)."""
    folder = tmp_path_factory.mktemp("slogans")
    lines = [line for line in hongloumeng_simplified.splitlines() if len(line) > 40]
    assert len(lines) >= 24

    def body(number: int) -> str:
        after = f"{_TWICE}\n" if number < 2 else ""
        story = "\n".join(lines[2 * number : 2 * number + 2])
        return f"第{number + 1}章 其{number + 1}\n{story}\n{SLOGAN}\n{after}"

    (folder / "a").mkdir()
    (folder / "b").mkdir()
    (folder / "a" / "1.txt").write_text("".join(body(n) for n in range(6)), "utf-8")
    (folder / "a" / "2.txt").write_text("".join(body(n) for n in (0, 1, 6, 7, 8)), "utf-8")
    (folder / "b" / "1.txt").write_text("".join(body(n) for n in (9, 10, 11)), "utf-8")
    return folder


# Ideographs past U+FFFF (CJK Extension B), as classical editions carry for rare characters:
# two UTF-16 code units each where every other character is one.
RARE_IDEOGRAPHS = "𠀤𡃁𤆬𠮷𡿨𢀖"


@pytest.fixture(scope="session")
def rare_ideographs_dump(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """红楼梦's sample with a rare ideograph past U+FFFF after every 40th Han character, and
    a chapter of 三國演義 with a scene of it (ideographs and all) copied in mid-sentence: a
    match whose characters lie past many such ideographs on one side."""
    dump = tmp_path_factory.mktemp("rare")
    source = (samples / "site-qidian/hongloumeng.txt").read_text("utf-8")
    rare, count = [], 0
    for character in source:
        rare.append(character)
        if "\u4e00" <= character <= "\u9fff":
            count += 1
            if count % 40 == 0:
                rare.append(RARE_IDEOGRAPHS[count // 40 % len(RARE_IDEOGRAPHS)])
    text = "".join(rare)
    (dump / "site-rare").mkdir()
    (dump / "site-rare/hongloumeng.txt").write_text(text, "utf-8")
    start = text.index("。", len(text) // 2) + 7  # mid-sentence
    scene = text[start : start + 420]
    host = (samples / "site-classic/sanguo.txt").read_text("utf-8")
    at = host.index("。", len(host) // 2) + 5
    (dump / "site-host").mkdir()
    (dump / "site-host/sanguo.txt").write_text(host[:at] + scene + host[at:], "utf-8")
    return dump
