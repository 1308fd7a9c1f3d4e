"""Chapters of a document, by the headings scraped sites and readers write (第N章/回/节, 楔子,
Chapter N); volume headings end a chapter, table-of-contents lines are none, the pages a site
split a chapter into are joined."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points
from dedup.kernels import compiled
from dedup.kernels.rows import search_sorted
from dedup.models import Chapter, Document

_NUMERAL = "0-9０-９零〇○一二三四五六七八九十百千万萬两兩壹贰貳叁參肆伍陆陸柒捌玖拾佰仟"

# Possessive quantifiers (*+) keep both patterns linear in the line's length: a line of spaces
# or of numerals that is not a heading used to send the matcher into cubic or exponential
# backtracking (a thousand leading spaces took a minute). They match what the plain forms
# matched, since what they refuse to give back could never complete a match.
_SPACE = r"[ \t\u3000]"

HEADING_PATTERN = re.compile(
    rf"^[ \t\u3000#]*+[【\[]?{_SPACE}*+"
    # A short site prefix before the heading: "正文 第N章", "《书名》目录 第N回".
    rf"(?:[^\n。！？，,：:]{{0,10}}?{_SPACE}+)?"
    r"(?:"
    rf"第{_SPACE}*+[{_NUMERAL}][{_NUMERAL} \t\u3000]*+[章回节節]"
    r"|楔子|序章|引子|尾声|尾聲|后记|後記|番外"
    r"|chapter[ \t]++[0-9]++"
    r")"
    # The keyword must end there: "第一回合" (a round of a fight) is not a heading.
    r"(?=[ \t\r\u3000:：．.、,，】\]\-—(（]|$)"
    r"[^\n]{0,60}$",
    re.MULTILINE | re.IGNORECASE,
)

VOLUME_PATTERN = re.compile(
    rf"^[ \t\u3000#]*+[【\[]?{_SPACE}*+(?:正文{_SPACE}*+)?"
    rf"第{_SPACE}*+[{_NUMERAL}]++{_SPACE}*+[卷部集篇]"
    r"(?=[ \t\r\u3000:：．.、,，】\]\-—(（]|$)[^\n]{0,60}$",
    re.MULTILINE,
)

# What every heading line holds, volume or chapter: only lines with one of these are tried
# against the patterns, which is several times faster than trying every line with a keyword's
# first character (第 alone starts thousands of lines of prose). The text is searched by the
# compiled loop _keyword_line_starts; this pattern says what it looks for, and the tests hold
# the loop to it.
_HEADING_KEYWORD = re.compile(
    rf"[第楔序引尾后後番cC](?:(?<=第){_SPACE}*+[{_NUMERAL}][{_NUMERAL} \t\u3000]*+[章回节節卷部集篇]"
    r"|(?<=楔)子|(?<=序)章|(?<=引)子|(?<=尾)[声聲]|(?<=后)记|(?<=後)記|(?<=番)外"
    r"|(?<=[cC])(?i:hapter)[ \t])"
)

# "第12章 标题（2）", "(2/3)", "【3】" at the end of a heading: a later page of the same chapter.
PAGE_MARKER = re.compile(
    r"\s*[（(【\[]\s*(?:[0-9０-９]+|[一二三四五六七八九十]+)\s*(?:/\s*[0-9]+\s*)?[）)】\]]$"
)

# A heading followed by almost nothing is a table-of-contents line, not a chapter.
MIN_CHAPTER_BODY = 100


@dataclass(frozen=True, slots=True)
class _Heading:
    start: int
    body_start: int
    title: str
    volume: bool


def _headings(text: str, codes: npt.NDArray[np.uint32] | None = None) -> list[_Heading]:
    found = []
    for line_start in _heading_line_candidates(text, codes):
        for pattern, volume in ((HEADING_PATTERN, False), (VOLUME_PATTERN, True)):
            match = pattern.match(text, line_start)
            if match:
                found.append(
                    _Heading(match.start(), match.end(), _clean_title(match.group(0)), volume)
                )
    return sorted(found, key=lambda heading: heading.start)


def _heading_line_candidates(text: str, codes: npt.NDArray[np.uint32] | None = None) -> list[int]:
    """The starts of the lines that could be headings: both patterns match a whole line from
    its start, and only a line holding a heading keyword (_HEADING_KEYWORD) can match. The
    keyword is looked for by a compiled loop that does what that pattern does (tested against
    it), several times faster than the pattern's own scan."""
    numerals, keyword_ends, pair_firsts = _heading_tables()
    starts: list[int] = _keyword_line_starts(
        code_points(text) if codes is None else codes,
        numerals,
        keyword_ends,
        pair_firsts,
        _KEYWORD_PAIRS,
    ).tolist()
    return starts


def _table(chars: str) -> npt.NDArray[np.bool_]:
    table = np.zeros(0x110000, dtype=np.bool_)
    table[[ord(char) for char in chars]] = True
    return table


@functools.cache
def _heading_tables() -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Numerals, the keywords that end a 第N heading, and the first characters of the named
    headings, each a table over every code point (made on first use, not on import)."""
    return (
        _table(_NUMERAL_CHARS),
        _table(_KEYWORD_ENDS),
        _table("".join(pair[0] for pair in _PAIRS)),
    )


_NUMERAL_CHARS = "0123456789０１２３４５６７８９零〇○一二三四五六七八九十百千万萬两兩壹贰貳叁參肆伍陆陸柒捌玖拾佰仟"

_KEYWORD_ENDS = "章回节節卷部集篇"

_PAIRS = ("楔子", "序章", "引子", "尾声", "尾聲", "后记", "後記", "番外")


_HAPTER = np.array([ord(char) for char in "hapter"], dtype=np.uint32)  # Chapter, any case

_KEYWORD_PAIRS = np.array(sorted((ord(p[0]) << 21) | ord(p[1]) for p in _PAIRS), dtype=np.int64)


@compiled
def _keyword_line_starts(
    codes: npt.NDArray[np.uint32],
    numeral: npt.NDArray[np.bool_],
    keyword_end: npt.NDArray[np.bool_],
    pair_first: npt.NDArray[np.bool_],
    pairs: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """The start of each line holding a match of _HEADING_KEYWORD, once, in order."""
    size = codes.shape[0]
    starts = np.empty(size, dtype=np.int64)
    count = 0
    line_start = 0
    for index in range(size):
        code = codes[index]
        if code == 10:
            line_start = index + 1
            continue
        if count and starts[count - 1] == line_start:
            continue  # this line is a candidate already
        found = False
        if code == 0x7B2C:  # 第, spaces, a numeral, numerals and spaces, 章/回/节/節/卷/部/集/篇
            after = index + 1
            while after < size and _is_space(codes[after]):
                after += 1
            if after < size and numeral[codes[after]]:
                after += 1
                while after < size and (numeral[codes[after]] or _is_space(codes[after])):
                    after += 1
                found = after < size and keyword_end[codes[after]]
        elif pair_first[code]:  # 楔子, 序章, ...
            if index + 1 < size:
                key = (np.int64(code) << 21) | np.int64(codes[index + 1])
                at = search_sorted(pairs, key)
                found = at < pairs.shape[0] and pairs[at] == key
        elif (code == 0x63 or code == 0x43) and index + 7 < size:  # c/C, "hapter", space/tab
            found = codes[index + 7] == 0x20 or codes[index + 7] == 9
            for offset in range(6):
                letter = codes[index + 1 + offset]
                if letter != _HAPTER[offset] and letter != _HAPTER[offset] - 32:
                    found = False
        if found:
            starts[count] = line_start
            count += 1
    return starts[:count].copy()


@compiled
def _is_space(code: np.uint32) -> bool:
    return bool(code == 0x20 or code == 9 or code == 0x3000)


def _clean_title(line: str) -> str:
    return " ".join(line.strip(" \t\r\u3000#【】[]").split())


def split_chapters(
    document: Document,
    carry: Chapter | None = None,
    first_index: int = 0,
    codes: npt.NDArray[np.uint32] | None = None,
) -> list[Chapter]:
    """Chapters by heading; text before the first heading is a chapter with index None.

    A heading followed by almost nothing (a table-of-contents line) is not a chapter. A volume
    heading (第N卷) ends the chapter before it; text under it before the next chapter heading is
    a section with index None. Pages of one chapter ("第12章 标题（2）") are joined back into one.

    ``carry`` is the last chapter of the previous piece of a file read in pieces: text before
    the first heading goes on with it; ``first_index`` is the number the next chapter takes.
    ``codes`` are the text's code points, if the caller has them.
    """
    text = document.text
    headings = _headings(text, codes)
    kept: list[_Heading] = []
    for position, heading in enumerate(headings):
        following = headings[position + 1].start if position + 1 < len(headings) else len(text)
        if len(text[heading.body_start : following].strip()) >= MIN_CHAPTER_BODY:
            kept.append(heading)
        elif heading.volume:
            kept.append(heading)  # still a boundary; the section itself is too short to use
    kept = _join_pages(kept)

    sections: list[Chapter] = []
    first = kept[0].start if kept else len(text)
    if text[:first].strip():
        if carry is not None:
            sections.append(Chapter(carry.index, carry.title, 0, 0, first))
        else:
            only_title = document.title if not kept else None
            sections.append(Chapter(0 if only_title else None, only_title, 0, 0, first))
    index = first_index
    for position, heading in enumerate(kept):
        end = kept[position + 1].start if position + 1 < len(kept) else len(text)
        if heading.volume:
            if len(text[heading.body_start : end].strip()) >= MIN_CHAPTER_BODY:
                sections.append(
                    Chapter(None, heading.title, heading.start, heading.body_start, end)
                )
            continue
        sections.append(Chapter(index, heading.title, heading.start, heading.body_start, end))
        index += 1
    return sections


@dataclass(frozen=True, slots=True)
class ChapterTable:
    """The chapters :func:`split_chapters` found in a document, as columns, with the length of
    the text they were found in: what the pass that learns repeated lines hands on to the pass
    that cuts passages, so that headings are looked for once per document, not twice (a table
    costs far less than Chapter objects to send between processes)."""

    text_length: int
    bounds: npt.NDArray[np.int64]  # per chapter: index (-1 for None), start, body start, end
    titles: tuple[str | None, ...]

    @classmethod
    def of(cls, document: Document, chapters: list[Chapter]) -> ChapterTable:
        bounds = np.array(
            [(-1 if c.index is None else c.index, c.start, c.body_start, c.end) for c in chapters],
            dtype=np.int64,
        ).reshape(-1, 4)
        return cls(len(document.text), bounds, tuple(c.title for c in chapters))

    def chapters(self) -> list[Chapter]:
        return [
            Chapter(None if index < 0 else index, title, start, body_start, end)
            for (index, start, body_start, end), title in zip(
                self.bounds.tolist(), self.titles, strict=True
            )
        ]


def _join_pages(headings: list[_Heading]) -> list[_Heading]:
    """Drop the headings of a chapter's later pages: same title, give or take a page marker."""
    joined: list[_Heading] = []
    for heading in headings:
        base = PAGE_MARKER.sub("", heading.title)
        if (
            joined
            and not heading.volume
            and not joined[-1].volume
            and PAGE_MARKER.sub("", joined[-1].title) == base
        ):
            previous = joined[-1]
            joined[-1] = _Heading(previous.start, previous.body_start, base, volume=False)
            continue
        joined.append(heading)
    return joined
