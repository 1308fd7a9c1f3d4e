"""Synthetic but realistic site variants of real chapters, each deterministic for a seed.

What Chinese web-novel sites do to a chapter when they republish it: convert the script,
inject ads and URLs, re-paragraph or hard-wrap it, split it across pages or merge two chapters,
censor words, let typos and homophone swaps in, and copy a scene into another novel with the
characters renamed.
"""

from __future__ import annotations

import random
import re

import opencc

ADS = [
    "天才一秒记住本站地址：www.biqugex.cc。手机版阅读网址：m.biqugex.cc",
    "（本章未完，请点击下一页继续阅读）",
    "最新章节请到ｗｗｗ．ｔｔｋａｎ．ｃｏ阅读，无弹窗广告！",
    "PS：今天两更，求月票！",
    "手机用户请浏览m.xbiquge.la阅读，更优质的阅读体验。",
]
# Pairs of characters that sound alike (or are often confused) in Mandarin; a site's OCR or a
# typist swaps one for the other.
HOMOPHONES = [
    "的地得",
    "在再",
    "做作坐",
    "他她它",
    "已己以",
    "那哪",
    "象像向",
    "到道倒",
    "候后厚",
    "是事市",
    "时十石",
    "知之只",
    "心新信",
    "里理力",
    "见件建",
    "说硕",
    "声生升",
    "意义议",
    "进近尽",
    "面免",
    "长常场",
    "身深生",
    "回会汇",
    "只纸止",
    "方放访",
    "相想向",
    "前钱",
]
_HOMOPHONE = {char: group for group in HOMOPHONES for char in group}
_HAN = re.compile(r"[\u4e00-\u9fff]")


def convert(text: str, config: str) -> str:
    return opencc.OpenCC(config).convert(text)


def paragraphs(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def with_ads(text: str, rng: random.Random) -> str:
    out = []
    for number, paragraph in enumerate(paragraphs(text)):
        out.append("　　" + paragraph)
        if number % 3 == 2:
            out.append(rng.choice(ADS))
    return "\n".join(out) + "\n"


def rewrapped(text: str, rng: random.Random, width: int = 36) -> str:
    """Paragraphs merged in pairs, then hard-wrapped at ``width`` characters."""
    merged = ["".join(paragraphs(text)[i : i + 2]) for i in range(0, len(paragraphs(text)), 2)]
    lines = []
    for paragraph in merged:
        lines += [paragraph[i : i + width] for i in range(0, len(paragraph), width)]
        lines.append("")
    return "\n".join(lines)


def censored(text: str, rng: random.Random, rate: float = 0.01) -> str:
    """Two-character words blotted out with ** or □□ at about ``rate`` of the characters."""
    chars = list(text)
    positions = [m.start() for m in _HAN.finditer(text)]
    for position in rng.sample(positions, int(len(positions) * rate / 2)):
        mark = rng.choice(["*", "□", "×"])
        chars[position] = mark
        if position + 1 < len(chars) and _HAN.match(chars[position + 1]):
            chars[position + 1] = mark
    return "".join(chars)


def typos(text: str, rng: random.Random, rate: float) -> str:
    """Homophone swaps where a homophone exists, else a random character of the same text."""
    chars = list(text)
    positions = [m.start() for m in _HAN.finditer(text)]
    pool = [text[p] for p in positions]
    for position in rng.sample(positions, int(len(positions) * rate)):
        group = _HOMOPHONE.get(chars[position])
        if group:
            chars[position] = rng.choice([c for c in group if c != chars[position]])
        else:
            chars[position] = rng.choice(pool)
    return "".join(chars)


def pages(title: str, body: str, count: int) -> list[str]:
    """A chapter as a site splits it into pages, each headed 第N回 标题（k）."""
    size = len(body) // count + 1
    parts = []
    for number in range(count):
        piece = body[number * size : (number + 1) * size]
        footer = "\n（本章未完，请点击下一页继续阅读）\n" if number + 1 < count else "\n"
        parts.append(f"{title}（{number + 1}）\n{piece}{footer}")
    return parts


def scene(body: str, rng: random.Random, low: int = 300, high: int = 1000) -> str:
    """A stretch of 300-1000 characters that starts and ends at sentence ends."""
    ends = [m.end() for m in re.finditer(r"[。！？]", body)]
    for _ in range(100):
        start = rng.choice([0, *ends])
        candidates = [e for e in ends if low <= e - start <= high]
        if candidates:
            return body[start : rng.choice(candidates)]
    return body[:high]


def renamed(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = text.replace(old, new)
    return text


def plagiarised(host_body: str, copied_scene: str, rng: random.Random) -> str:
    """``host_body`` with ``copied_scene`` inserted at a paragraph boundary."""
    parts = paragraphs(host_body)
    at = rng.randrange(1, max(2, len(parts)))
    return "\n".join([*parts[:at], copied_scene, *parts[at:]]) + "\n"
