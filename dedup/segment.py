"""Segment stage: documents -> chapters -> passages (scene windows).

Chapters come from the headings scraped sites and readers write (第N章/回/节, 楔子, Chapter N).
Passages are windows over the *normalized* character stream, not over lines: sites wrap and
paragraph the same text differently. Window ends are chosen by content, not by position: a
sentence end becomes a cut when a hash of the few characters before it hits a fixed value.
Two sites carrying the same chapter therefore cut it at the same sentences, even when one of
them has an ad, a different heading or a missing paragraph in front (content-defined chunking,
as backup tools use to find shared blocks in shifted files).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.codepoints import code_points
from dedup.compiled import compiled
from dedup.crc import crc32_utf8
from dedup.models import Chapter, Document, PassageSpan
from dedup.normalize import NormalizedText

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
SENTENCE_END_CHARS = "。！？!?…"
_SENTENCE_END_TABLE = np.zeros(0x110000, dtype=np.bool_)
_SENTENCE_END_TABLE[[ord(char) for char in SENTENCE_END_CHARS]] = True
_ANCHOR_CONTEXT = 3  # normalized characters hashed to decide whether a sentence end is a cut
_MEAN_SENTENCE = 30  # normalized characters between sentence ends in typical prose


@dataclass(frozen=True, slots=True)
class PassageWindow:
    passage: PassageSpan
    normalized: str
    converted_share: float  # share of its characters that script conversion changed


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
    starts: list[int] = _keyword_line_starts(
        code_points(text) if codes is None else codes,
        _NUMERAL_TABLE,
        _KEYWORD_END_TABLE,
        _PAIR_FIRST_TABLE,
        _KEYWORD_PAIRS,
    ).tolist()
    return starts


def _table(chars: str) -> npt.NDArray[np.bool_]:
    table = np.zeros(0x110000, dtype=np.bool_)
    table[[ord(char) for char in chars]] = True
    return table


_NUMERAL_TABLE = _table(
    "0123456789０１２３４５６７８９零〇○一二三四五六七八九十百千万萬两兩壹贰貳叁參肆伍陆陸柒捌玖拾佰仟"
)
_KEYWORD_END_TABLE = _table("章回节節卷部集篇")
_PAIRS = ("楔子", "序章", "引子", "尾声", "尾聲", "后记", "後記", "番外")
_PAIR_FIRST_TABLE = _table("".join(pair[0] for pair in _PAIRS))
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
                at = np.searchsorted(pairs, key)
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


def window_bounds(
    normalized: NormalizedText, original: str, passage_chars: int
) -> list[tuple[int, int]]:
    """Cut the normalized text into windows of about ``passage_chars`` characters.

    Returns ``(start, end)`` pairs in normalized coordinates. Windows are at least half the
    target long (except a whole chapter shorter than that) and at most twice.
    """
    return list(itertools.pairwise(_cuts_of(normalized, code_points(original), passage_chars)))


def _cuts_of(
    normalized: NormalizedText, original: npt.NDArray[np.uint32], passage_chars: int
) -> list[int]:
    """The window cuts of :func:`window_bounds`, from 0 to the end (``original`` as code points)."""
    codes = normalized.codes if normalized.codes is not None else code_points(normalized.text)
    cuts: list[int] = _choose_cuts(
        original, normalized.offsets, codes, passage_chars, *_moduli(passage_chars)
    ).tolist()
    return cuts


def _moduli(passage_chars: int) -> tuple[int, int, npt.NDArray[np.bool_]]:
    """How often a sentence end is a cut, how often any character is (text without sentence
    punctuation), and which characters end a sentence."""
    min_len = passage_chars // 2
    return (
        max(2, round((passage_chars - min_len) / _MEAN_SENTENCE)),
        max(2, passage_chars - min_len),
        _SENTENCE_END_TABLE,
    )


@compiled
def _choose_cuts(
    body: npt.NDArray[np.uint32],
    offsets: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    passage_chars: int,
    sentence_modulus: int,
    char_modulus: int,
    is_end: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int64]:
    """The window cuts, from 0 to the end, of the normalized text ``codes`` whose characters
    come from ``body[offsets]``; none for an empty text."""
    size = codes.shape[0]
    min_len = passage_chars // 2
    max_len = passage_chars * 2
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    if size <= max_len and size < passage_chars + min_len:
        return np.array([0, size], dtype=np.int64)
    candidates = _sentence_ends_in(body, offsets, is_end)
    modulus = sentence_modulus
    if candidates.shape[0] < size // max_len * 2:
        # Text without sentence punctuation: every character boundary is a candidate.
        candidates = np.arange(1, size).astype(np.int64)
        modulus = char_modulus
    return _cuts(codes, candidates, min_len, max_len, modulus)


@compiled
def _sentence_ends_in(
    codes: npt.NDArray[np.uint32], offsets: npt.NDArray[np.int64], is_end: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """For each run of sentence ends in ``codes`` (the original text), the number of normalized
    characters that come from before the run's end (``offsets`` maps normalized positions to
    original ones, ascending); each position once, and only those strictly inside."""
    size = offsets.shape[0]
    found = np.empty(codes.shape[0], dtype=np.int64)
    count = 0
    below = 0  # normalized characters whose original offset is below the current run end
    for index in range(codes.shape[0]):
        if not is_end[codes[index]] or (index + 1 < codes.shape[0] and is_end[codes[index + 1]]):
            continue
        run_end = index + 1
        while below < size and offsets[below] < run_end:
            below += 1
        if 0 < below < size and (count == 0 or found[count - 1] != below):
            found[count] = below
            count += 1
    return found[:count].copy()


@compiled
def _cuts(
    codes: npt.NDArray[np.uint32],
    candidates: npt.NDArray[np.int64],
    min_len: int,
    max_len: int,
    modulus: int,
) -> npt.NDArray[np.int64]:
    """The window cuts, from 0 to the end: a candidate at least ``min_len`` past the last cut
    is a cut when it is an anchor; past ``max_len`` the latest candidate (or the limit itself)
    is taken; a short tail joins the window before it."""
    size = codes.shape[0]
    cuts = np.empty(size + 2, dtype=np.int64)
    cuts[0] = 0
    count = 1
    fallback = -1  # latest candidate past min_len, used if max_len is reached
    for number in range(candidates.shape[0] + 1):
        position = candidates[number] if number < candidates.shape[0] else size
        while position - cuts[count - 1] > max_len:
            cuts[count] = fallback if fallback >= 0 else cuts[count - 1] + max_len
            count += 1
            fallback = -1
        if position == size:
            break
        if position - cuts[count - 1] < min_len:
            continue
        if _is_anchor(codes, position, modulus):
            cuts[count] = position
            count += 1
            fallback = -1
        else:
            fallback = position
    if size - cuts[count - 1] < min_len // 2 and count > 1:
        count -= 1
    cuts[count] = size
    return cuts[: count + 1].copy()


@compiled
def _is_anchor(codes: npt.NDArray[np.uint32], position: int, modulus: int) -> bool:
    """Whether zlib's CRC-32 of the UTF-8 encoding of the few characters before ``position``
    is a multiple of ``modulus``."""
    return bool(crc32_utf8(codes, max(0, position - _ANCHOR_CONTEXT), position) % modulus == 0)


@dataclass(frozen=True, slots=True)
class ChapterWindows:
    """The passages of one chapter as columns: what :func:`split_passages` makes objects of,
    and what the scan keeps (passages by the million cost less as a few arrays)."""

    texts: list[str]  # each passage's normalized text
    starts: npt.NDArray[np.int64]  # its span in the file's decoded text
    ends: npt.NDArray[np.int64]
    converted: npt.NDArray[np.float64]  # share of its characters script conversion changed
    # Two hashes of each normalized text, one row a text (equal texts, equal hashes: a scan
    # finds exact copies by them, made here in the workers rather than in the main process).
    hashes: npt.NDArray[np.int64]


def chapter_windows(
    document: Document,
    chapter: Chapter,
    normalized: NormalizedText,
    passage_chars: int,
    overlap: int = 0,
) -> ChapterWindows:
    """The passages of one chapter (see :func:`split_passages`), as columns."""
    body = normalized.original_codes
    if body is None or len(body) != chapter.end - chapter.body_start:
        body = code_points(document.text[chapter.body_start : chapter.end])
    codes = normalized.codes if normalized.codes is not None else code_points(normalized.text)
    starts, ends, original_starts, original_ends, converted, hashes = _window_arrays(
        body,
        normalized.offsets,
        codes,
        normalized.converted,
        passage_chars,
        *_moduli(passage_chars),
        overlap,
        _SPACE_TABLE,
    )
    text = normalized.text
    base = document.base + chapter.body_start
    return ChapterWindows(
        [text[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)],
        original_starts + base,
        original_ends + base,
        converted / np.maximum(1, ends - starts),
        hashes,
    )


@compiled
def _window_arrays(
    body: npt.NDArray[np.uint32],
    offsets: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    converted: npt.NDArray[np.bool_],
    passage_chars: int,
    sentence_modulus: int,
    char_modulus: int,
    is_end: npt.NDArray[np.bool_],
    overlap: int,
    space: npt.NDArray[np.bool_],
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]:
    """A chapter's windows in one compiled call (its cuts, then each window's span in the
    original, its converted characters and its hash): five calls from Python cost more than
    cutting a chapter of a few thousand characters. ``body`` is the original text's code
    points, ``codes`` the normalized ones; returned: normalized starts and ends, original
    starts and ends, converted counts, hashes."""
    cuts = _choose_cuts(body, offsets, codes, passage_chars, sentence_modulus, char_modulus, is_end)
    windows = max(0, cuts.shape[0] - 1)
    ends = cuts[1:].copy()
    starts = np.maximum(0, cuts[:windows] - overlap)
    # A passage runs on to just before the next one, so it ends with its own punctuation;
    # trailing blank lines and spaces are left out.
    original_starts = offsets[starts]
    limits = np.empty(windows, dtype=np.int64)
    for window in range(windows - 1):
        limits[window] = offsets[ends[window]]
    if windows:
        limits[windows - 1] = body.shape[0]
    original_ends = _without_trailing_space(body, original_starts, limits, space)
    counts = _counts_between(converted, starts, ends)
    return starts, ends, original_starts, original_ends, counts, _window_hashes(codes, starts, ends)


@compiled
def _window_hashes(
    codes: npt.NDArray[np.uint32], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Two independent 64-bit hashes of each window ``codes[starts[i]:ends[i]]``: FNV-1a, and a
    multiply-xorshift hash (a different construction, so that texts colliding in one are no
    likelier to collide in the other). A scan takes texts whose two hashes are equal as exact
    copies: 128 bits, where (were the hashes ideal) two of a billion distinct texts would
    collide with odds of about 10^-21."""
    hashes = np.empty((starts.shape[0], 2), dtype=np.int64)
    for window in range(starts.shape[0]):
        fnv = np.uint64(0xCBF29CE484222325)
        mixed = np.uint64(ends[window] - starts[window])
        for position in range(starts[window], ends[window]):
            code = np.uint64(codes[position])
            fnv = (fnv ^ code) * np.uint64(0x100000001B3)
            mixed = (mixed + code + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
            mixed ^= mixed >> np.uint64(29)
        hashes[window, 0] = np.int64(fnv)
        hashes[window, 1] = np.int64(mixed)
    return hashes


def text_hashes(texts: Sequence[str]) -> npt.NDArray[np.int64]:
    """The two hashes of each text that a scan's windows carry (see ChapterWindows.hashes)."""
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    return _window_hashes(code_points("".join(texts)), ends - lengths, ends)


@compiled
def _counts_between(
    flags: npt.NDArray[np.bool_], starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """How many of ``flags[starts[i]:ends[i]]`` are set, for each window (windows may overlap)."""
    counts = np.zeros(starts.shape[0], dtype=np.int64)
    for window in range(starts.shape[0]):
        for position in range(starts[window], ends[window]):
            counts[window] += flags[position]
    return counts


# What str.strip() strips (checked against str.isspace over all of Unicode in the tests).
_SPACE_TABLE = np.zeros(0x110000, dtype=np.bool_)
_SPACE_TABLE[[code for code in range(0x3001) if chr(code).isspace()]] = True


@compiled
def _without_trailing_space(
    codes: npt.NDArray[np.uint32],
    starts: npt.NDArray[np.int64],
    limits: npt.NDArray[np.int64],
    space: npt.NDArray[np.bool_],
) -> npt.NDArray[np.int64]:
    """Each ``limits[i]`` moved back over the whitespace before it, not past ``starts[i]``."""
    ends = limits.copy()
    for window in range(ends.shape[0]):
        while ends[window] > starts[window] and space[codes[ends[window] - 1]]:
            ends[window] -= 1
    return ends


def split_passages(
    document: Document,
    chapter: Chapter,
    normalized: NormalizedText,
    passage_chars: int,
    overlap: int = 0,
) -> list[PassageWindow]:
    """Passages of one chapter. ``normalized`` is the chapter body normalized, with offsets
    relative to ``chapter.body_start``. Passage offsets are in the whole file's text (a piece of
    a streamed file starts at ``document.base``). With ``overlap``, each passage also takes in
    that many characters of the one before it."""
    windows = chapter_windows(document, chapter, normalized, passage_chars, overlap)
    return [
        PassageWindow(
            PassageSpan(
                source=document.source,
                path=document.path,
                record=document.record,
                chapter=chapter.index,
                title=chapter.title,
                start=start,
                end=end,
                record_id=document.record_id,
            ),
            text,
            converted,
        )
        for text, start, end, converted in zip(
            windows.texts,
            windows.starts.tolist(),
            windows.ends.tolist(),
            windows.converted.tolist(),
            strict=True,
        )
    ]
