"""Line keys and the repeated-lines step: a line is known by a hash of its lowered content
characters, and the lines a source repeats in many of its chapters (learned by
dedup.normalize.repeated_lines) are dropped.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import numpy.typing as npt

from dedup.arrays import found_in
from dedup.codepoints import code_points, from_code_points
from dedup.kernels import compiled
from dedup.kernels.hashing import FNV_OFFSET, FNV_PRIME, fnv1a
from dedup.normalize.records import NormalizeConfig, NormalizeStats
from dedup.normalize.tables import (
    UNICODE_SIZE,
    content_table,
    identity_table,
    table_mask,
    unicode_facts,
)

_MIN_LINE_KEY_CHARS = 6  # shorter lines ("第一回", "完") are not learned as boilerplate


_NOT_CONTENT = re.compile(r"[\W_]+")


def line_key(line: str) -> int | None:
    """A key for a line's content, for learning the lines a source repeats; None for lines too
    short to tell boilerplate from story. The key is FNV-1a (64-bit) over the code points of
    the line's letters and digits in lower case, its two halves folded into 32 bits."""
    content = _NOT_CONTENT.sub("", line).lower()
    if len(content) < _MIN_LINE_KEY_CHARS:
        return None
    value = FNV_OFFSET
    for char in content:
        value = ((value ^ ord(char)) * FNV_PRIME) & _MASK64
    return (value ^ (value >> 32)) & 0xFFFFFFFF


_MASK64 = (1 << 64) - 1


def line_keys(text: str) -> list[int | None]:
    """``line_key`` of every line of ``text``, computed for the whole text at once. What
    line_key's pattern removes is exactly what the content table (letters and numbers) does not
    hold, so one table lookup replaces a regular expression per line, and lower case is a
    table lookup too, except for the few letters whose lower case depends on their neighbours
    or is longer than one character (then ``str.lower`` does it)."""
    return [key if key >= 0 else None for key in line_key_array(code_points(text)).tolist()]


def line_key_array(codes: npt.NDArray[np.uint32]) -> npt.NDArray[np.int64]:
    """:func:`line_keys` of the text whose code points are ``codes``, -1 where None."""
    keys, exact = _line_hashes(codes, _line_key_table(), _MIN_LINE_KEY_CHARS)
    if exact:
        return keys
    kept = table_mask(codes, content_table()) | (codes == ord("\n"))
    lowered = code_points(from_code_points(codes[kept]).lower())
    # Every character of the lowered text counts (İ's lower case brings a combining dot).
    everything = np.arange(UNICODE_SIZE, dtype=np.uint32)
    everything[ord("\n")] = _NOT_KEYED
    keys, _exact = _line_hashes(lowered, everything, _MIN_LINE_KEY_CHARS)
    return keys


# What _line_hashes makes of a character, besides its lower case: not part of the key (not a
# letter or digit, or the newline that ends a line), or one whose lower case str.lower decides.
_NOT_KEYED = 0


_CONTEXTUAL = 0xFFFFFFFF


@functools.cache
def _line_key_table() -> npt.NDArray[np.uint32]:
    """One lookup per character for line keys: its lower case if it is a letter or digit,
    _CONTEXTUAL if that lower case depends on its neighbours or is longer, else _NOT_KEYED."""
    table = np.where(content_table(), _lower_table(), _NOT_KEYED).astype(np.uint32)
    table[_contextual_lower_table()] = _CONTEXTUAL
    table[ord("\n")] = _NOT_KEYED
    return table


@functools.cache
def _lower_table() -> npt.NDArray[np.uint32]:
    """Each content character's lower case, where that is one character."""
    facts = unicode_facts()
    table = identity_table().copy()
    table[facts.lower_codes] = facts.lower_targets
    return table


@functools.cache
def _contextual_lower_table() -> npt.NDArray[np.bool_]:
    """Content characters ``str.lower`` does not map one for one: İ becomes two characters,
    and Σ becomes ς or σ by the letters around it."""
    table = np.zeros(UNICODE_SIZE, dtype=np.bool_)
    table[unicode_facts().longer_lower] = True
    table[ord("Σ")] = True
    return table


@compiled
def _line_hashes(
    codes: npt.NDArray[np.uint32], table: npt.NDArray[np.uint32], shortest: int
) -> tuple[npt.NDArray[np.int64], bool]:
    """For each line of ``codes`` (split at newlines): line_key's hash of the characters the
    table keys (by what it maps them to), or -1 if it has fewer than ``shortest`` of them; and
    False (with the keys unfinished) if a _CONTEXTUAL character came up. FNV-1a rather than a
    CRC: one multiplication a character instead of a chain of table lookups."""
    lines = 1
    for code in codes:
        lines += code == 10
    keys = np.empty(lines, dtype=np.int64)
    line = 0
    length = 0
    value = np.uint64(FNV_OFFSET)
    for code in codes:
        mapped = table[code]
        if mapped == _NOT_KEYED:
            if code == 10:
                keys[line] = _folded(value) if length >= shortest else -1
                line += 1
                length = 0
                value = np.uint64(FNV_OFFSET)
            continue
        if mapped == _CONTEXTUAL:
            return keys, False
        value = fnv1a(value, np.uint64(mapped))
        length += 1
    keys[line] = _folded(value) if length >= shortest else -1
    return keys, True


@compiled
def _folded(value: np.uint64) -> np.int64:
    return np.int64((value ^ (value >> np.uint64(32))) & np.uint64(0xFFFFFFFF))


@functools.lru_cache(maxsize=64)
def _key_array(keys: frozenset[int]) -> npt.NDArray[np.int64]:
    """A source's repeated line keys as a sorted array (one per source, made once)."""
    return np.array(sorted(keys), dtype=np.int64)


def drop_repeated_lines(
    original: str,
    codes: npt.NDArray[np.uint32],
    keep: npt.NDArray[np.bool_],
    config: NormalizeConfig,
    stats: NormalizeStats,
    texts: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None,
) -> None:
    """Drop the lines the source repeats; ``texts``: where each text of a joined batch begins
    and ends (one text, all of ``original``, when None). A text that would lose more than REPEATED_MAX_SHARE of its
    characters this way keeps them all: that is a chapter the source carries more than once
    (or a page that is all boilerplate), not story text framed by a site's lines."""
    if not config.on("repeated-lines") or not config.repeated_lines:
        return
    keys = line_key_array(codes)
    repeated_keys = _key_array(config.repeated_lines)
    repeated = np.flatnonzero(found_in(repeated_keys, keys)[1])
    if not len(repeated):
        return
    newlines = np.flatnonzero(codes == ord("\n"))
    starts = np.concatenate(([0], newlines + 1))[repeated]
    ends = np.append(newlines, len(original))[repeated]
    if texts is None:
        texts = np.array([0], dtype=np.int64), np.array([len(original)], dtype=np.int64)
    bounds, text_ends = texts
    text_of = np.searchsorted(bounds, starts, side="right") - 1
    lengths = text_ends - bounds
    dropped = np.bincount(text_of, weights=ends - starts, minlength=len(bounds))
    spared = dropped > REPEATED_MAX_SHARE * lengths
    for start, end, text in zip(starts.tolist(), ends.tolist(), text_of.tolist(), strict=True):
        if spared[text]:
            continue
        keep[start:end] = False
        stats.add("repeated-lines", 1, original[start:end].strip() if config.explain else None)


# A line is site boilerplate when its source repeats it in at least this many chapters, and in
# at least this share of them: a slogan after every chapter qualifies, a poem quoted twice not.
REPEATED_MIN_CHAPTERS = 3


REPEATED_MIN_SHARE = 0.1


# ...and a text keeps its repeated lines when they would be more than this share of it.
REPEATED_MAX_SHARE = 0.5


def repeated_lines_needed(chapters: int) -> int:
    """In how many of a source's ``chapters`` a line must occur to be boilerplate."""
    return max(REPEATED_MIN_CHAPTERS, int(np.ceil(REPEATED_MIN_SHARE * chapters)))
