"""Chapters of the real books in ../shared/corpora, by chapter number."""

from __future__ import annotations

import re
from pathlib import Path

from dedup.models import Document
from dedup.read.decode import decode_bytes
from dedup.segment import split_chapters

_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")}


def chapter_number(title: str) -> int | None:
    """第一二零回 / 第一百二十回 / 第120章 -> 120."""
    match = re.search(r"第\s*([0-9]+|[零一二三四五六七八九十百○〇 ]+)\s*[回章]", title)
    if not match:
        return None
    numeral = match.group(1).replace(" ", "").replace("○", "零").replace("〇", "零")
    if numeral.isdigit():
        return int(numeral)
    if "十" in numeral or "百" in numeral:
        value = current = 0
        for char in numeral:
            if char in "十百":
                value += (current or 1) * (10 if char == "十" else 100)
                current = 0
            else:
                current = _DIGITS[char]
        return value + current
    return int("".join(str(_DIGITS[char]) for char in numeral))


def numbered_chapters(path: Path) -> dict[int, tuple[str, str]]:
    """chapter number -> (heading, body); the longest wins where a number repeats (a table of
    contents)."""
    text = decode_bytes(path.read_bytes(), None, "replace").text
    found: dict[int, tuple[str, str]] = {}
    for chapter in split_chapters(Document(str(path), "", None, text)):
        number = chapter_number(chapter.title or "") if chapter.index is not None else None
        body = text[chapter.body_start : chapter.end].strip("\r\n")
        if number is not None and len(body) > len(found.get(number, ("", ""))[1]):
            found[number] = (chapter.title or "", body)
    return found
