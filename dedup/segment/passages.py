"""Passages (scene windows) of a chapter, over its normalized characters, cut at sentence ends
chosen by their content (see dedup.segment)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dedup.align import WINNOW_WINDOW, winnowed_seeds
from dedup.codepoints import code_points
from dedup.config import SEED_CHARS
from dedup.documents import PassageAlignment
from dedup.kernels import compiled
from dedup.kernels.crc import crc32_utf8
from dedup.kernels.hashing import FNV_OFFSET, fnv1a
from dedup.models import Chapter, Document, PassageSpan
from dedup.normalize import NormalizedText
from dedup.offset_steps import offset_steps

SENTENCE_END_CHARS = "。！？!?…"


@functools.cache
def sentence_end_table() -> npt.NDArray[np.bool_]:
    """SENTENCE_END_CHARS, as a table over every code point (made on first use)."""
    table = np.zeros(0x110000, dtype=np.bool_)
    table[[ord(char) for char in SENTENCE_END_CHARS]] = True
    return table


_ANCHOR_CONTEXT = 3  # normalized characters hashed to decide whether a sentence end is a cut

_MEAN_SENTENCE = 30  # normalized characters between sentence ends in typical prose


@dataclass(frozen=True, slots=True)
class PassageWindow:
    passage: PassageSpan
    normalized: str
    converted_share: float  # share of its characters that script conversion changed


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
        sentence_end_table(),
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
        whole = np.empty(2, dtype=np.int64)
        whole[0], whole[1] = 0, size
        return whole
    candidates = _sentence_ends_in(body, offsets, is_end)
    modulus = sentence_modulus
    if candidates.shape[0] < size // max_len * 2:
        # Text without sentence punctuation: every character boundary is a candidate.
        candidates = np.arange(1, size)
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
    alignment: PassageAlignment  # what the align stage needs of each passage


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
        space_table(),
    )
    text = normalized.text
    base = document.base + chapter.body_start
    steps, big_steps = offset_steps(normalized.offsets, starts, ends)
    # how many of each passage's first characters are the one before's (--passage-overlap)
    leads = np.zeros(len(starts), dtype=np.int64)
    leads[1:] = np.maximum(0, ends[:-1] - starts[1:])
    seeds, seed_passage = winnowed_seeds(codes, starts, ends, SEED_CHARS, WINNOW_WINDOW)
    return ChapterWindows(
        [text[start:end] for start, end in zip(starts.tolist(), ends.tolist(), strict=True)],
        original_starts + base,
        original_ends + base,
        converted / np.maximum(1, ends - starts),
        hashes,
        PassageAlignment(ends - starts, leads, steps, big_steps, seeds, seed_passage),
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
    # (loops, not array expressions: numba compiles those slowly, on a fresh install's first
    # scan)
    ends = np.empty(windows, dtype=np.int64)
    starts = np.empty(windows, dtype=np.int64)
    original_starts = np.empty(windows, dtype=np.int64)
    for window in range(windows):
        ends[window] = cuts[window + 1]
        starts[window] = max(0, cuts[window] - overlap)
        original_starts[window] = offsets[starts[window]]
    # A passage runs on to just before the next one, so it ends with its own punctuation;
    # trailing blank lines and spaces are left out.
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
        fnv = np.uint64(FNV_OFFSET)
        mixed = np.uint64(ends[window] - starts[window])
        for position in range(starts[window], ends[window]):
            code = np.uint64(codes[position])
            fnv = fnv1a(fnv, code)
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


@functools.cache
def space_table() -> npt.NDArray[np.bool_]:
    """What str.strip() strips, as a table over every code point (checked against
    str.isspace over all of Unicode in the tests; made on first use)."""
    table = np.zeros(0x110000, dtype=np.bool_)
    table[[code for code in range(0x3001) if chr(code).isspace()]] = True
    return table


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
