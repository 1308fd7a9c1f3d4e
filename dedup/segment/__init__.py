"""Segment stage: documents -> chapters -> passages (scene windows).

Chapters come from the headings scraped sites and readers write (第N章/回/节, 楔子, Chapter N).
Passages are windows over the *normalized* character stream, not over lines: sites wrap and
paragraph the same text differently. Window ends are chosen by content, not by position: a
sentence end becomes a cut when a hash of the few characters before it hits a fixed value.
Two sites carrying the same chapter therefore cut it at the same sentences, even when one of
them has an ad, a different heading or a missing paragraph in front (content-defined chunking,
as backup tools use to find shared blocks in shifted files).
"""

from dedup.segment.chapters import (
    HEADING_PATTERN,
    MIN_CHAPTER_BODY,
    PAGE_MARKER,
    VOLUME_PATTERN,
    ChapterTable,
    split_chapters,
)
from dedup.segment.passages import (
    SENTENCE_END_CHARS,
    ChapterWindows,
    PassageWindow,
    chapter_windows,
    split_passages,
    text_hashes,
    window_bounds,
)

__all__ = [
    "HEADING_PATTERN",
    "MIN_CHAPTER_BODY",
    "PAGE_MARKER",
    "SENTENCE_END_CHARS",
    "VOLUME_PATTERN",
    "ChapterTable",
    "ChapterWindows",
    "PassageWindow",
    "chapter_windows",
    "split_chapters",
    "split_passages",
    "text_hashes",
    "window_bounds",
]
