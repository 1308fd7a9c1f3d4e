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
import zlib
from dataclasses import dataclass

import numpy as np

from dedup.models import Chapter, Document, Passage, passage_id
from dedup.normalize import NormalizedText

_NUMERAL = "0-9０-９零〇○一二三四五六七八九十百千万萬两兩壹贰貳叁參肆伍陆陸柒捌玖拾佰仟"
HEADING_PATTERN = re.compile(
    r"^[ \t\u3000#]*[【\[]?[ \t\u3000]*"
    # A short site prefix before the heading: "正文 第N章", "《书名》目录 第N回".
    r"(?:[^\n。！？，,：:]{0,10}?[ \t\u3000]+)?"
    r"(?:"
    rf"第[ \t\u3000]*[{_NUMERAL}]+(?:[ \t\u3000]*[{_NUMERAL}]+)*[ \t\u3000]*[章回节節]"
    r"|楔子|序章|引子|尾声|尾聲|后记|後記|番外"
    r"|chapter[ \t]+[0-9]+"
    r")"
    # The keyword must end there: "第一回合" (a round of a fight) is not a heading.
    r"(?=[ \t\r\u3000:：．.、,，】\]\-—(（]|$)"
    r"[^\n]{0,60}$",
    re.MULTILINE | re.IGNORECASE,
)
# A heading followed by almost nothing is a table-of-contents line, not a chapter.
MIN_CHAPTER_BODY = 100
SENTENCE_END = re.compile(r"[。！？!?…]+")
_ANCHOR_CONTEXT = 3  # normalized characters hashed to decide whether a sentence end is a cut
_MEAN_SENTENCE = 30  # normalized characters between sentence ends in typical prose


@dataclass(frozen=True, slots=True)
class PassageWindow:
    passage: Passage
    normalized: str


def split_chapters(document: Document) -> list[Chapter]:
    """Chapters by heading; text before the first heading is a chapter with index None."""
    text = document.text
    headings = list(HEADING_PATTERN.finditer(text))
    starts: list[tuple[int, int, str]] = []  # (start, body_start, title)
    for position, match in enumerate(headings):
        following = headings[position + 1].start() if position + 1 < len(headings) else len(text)
        body = text[match.end() : following]
        if len(body.strip()) < MIN_CHAPTER_BODY:
            continue
        title = " ".join(match.group(0).strip(" \t\r\u3000#【】[]").split())
        starts.append((match.start(), match.end(), title))

    chapters: list[Chapter] = []
    first = starts[0][0] if starts else len(text)
    if text[:first].strip():
        only_title = document.title if not starts else None
        index = 0 if only_title else None
        chapters.append(Chapter(index, only_title, 0, 0, first))
    for index, (start, body_start, title) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        chapters.append(Chapter(index, title, start, body_start, end))
    return chapters


def window_bounds(
    normalized: NormalizedText, original: str, passage_chars: int
) -> list[tuple[int, int]]:
    """Cut the normalized text into windows of about ``passage_chars`` characters.

    Returns ``(start, end)`` pairs in normalized coordinates. Windows are at least half the
    target long (except a whole chapter shorter than that) and at most twice.
    """
    size = len(normalized.text)
    min_len = passage_chars // 2
    max_len = passage_chars * 2
    if size <= max_len and size < passage_chars + min_len:
        return [(0, size)] if size else []

    candidates = _sentence_ends(normalized, original)
    modulus = max(2, round((passage_chars - min_len) / _MEAN_SENTENCE))
    if len(candidates) < size // max_len * 2:
        # Text without sentence punctuation: every character boundary is a candidate.
        candidates = list(range(1, size))
        modulus = max(2, passage_chars - min_len)

    cuts = [0]
    fallback: int | None = None  # latest candidate past min_len, used if max_len is reached
    for position in [*candidates, size]:
        while position - cuts[-1] > max_len:
            cut = fallback if fallback is not None else cuts[-1] + max_len
            cuts.append(cut)
            fallback = None
        if position == size:
            break
        length = position - cuts[-1]
        if length < min_len:
            continue
        if _is_anchor(normalized.text, position, modulus):
            cuts.append(position)
            fallback = None
        else:
            fallback = position
    if size - cuts[-1] < min_len // 2 and len(cuts) > 1:
        cuts.pop()  # a short tail joins the window before it
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def _sentence_ends(normalized: NormalizedText, original: str) -> list[int]:
    ends = [match.end() for match in SENTENCE_END.finditer(original)]
    if not ends:
        return []
    positions = np.searchsorted(normalized.offsets, np.asarray(ends, dtype=np.int64))
    size = len(normalized.text)
    return sorted({int(p) for p in positions if 0 < p < size})


def _is_anchor(text: str, position: int, modulus: int) -> bool:
    context = text[max(0, position - _ANCHOR_CONTEXT) : position].encode("utf-8")
    return zlib.crc32(context) % modulus == 0


def split_passages(
    document: Document, chapter: Chapter, normalized: NormalizedText, passage_chars: int
) -> list[PassageWindow]:
    """Passages of one chapter. ``normalized`` is the chapter body normalized, with offsets
    relative to ``chapter.body_start``."""
    body = document.text[chapter.body_start : chapter.end]
    windows: list[PassageWindow] = []
    bounds = window_bounds(normalized, body, passage_chars)
    for number, (start, end) in enumerate(bounds):
        original_start = chapter.body_start + int(normalized.offsets[start])
        if number + 1 < len(bounds):
            limit = chapter.body_start + int(normalized.offsets[end])
        else:
            limit = chapter.end
        # The passage runs on to just before the next passage, so it ends with its own
        # punctuation; trailing blank lines are left out.
        original_end = original_start + len(document.text[original_start:limit].rstrip())
        passage = Passage(
            id=passage_id(document.path, document.record, original_start, original_end),
            source=document.source,
            path=document.path,
            record=document.record,
            chapter=chapter.index,
            title=chapter.title,
            start=original_start,
            end=original_end,
            text=document.text[original_start:original_end],
            record_id=document.record_id,
        )
        windows.append(PassageWindow(passage, normalized.text[start:end]))
    return windows
